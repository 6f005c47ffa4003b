"""`openai`: any OpenAI-compatible chat-completions endpoint, through the openai SDK.

Retries (exponential backoff with jitter) on timeouts, connection errors (a connection dropped
mid-response included), HTTP 408/429/5xx and malformed responses (no choices, tool-call arguments
that are not JSON, a body that does not parse). Other 4xx answers fail at once. Either way the
failure is a PolicyError naming the endpoint, the model and the last error: the trial becomes
`model_error`, never reward 0. A 400 saying the prompt is past the model's context window
(OpenAI's `context_length_exceeded`, vLLM's "maximum context length") is a ContextOverflow.
Concurrent requests are capped per (base_url, model) across the process.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import threading
import time
from typing import Any

from .. import trial_controls as control
from ..errors import ClawgymError
from ..registry import register
from .base import COMMON_POLICY_PROPS, Completion, ContextOverflow, Policy, PolicyError, RequestRejected
from .toolcalls import new_call_id

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_SEMAPHORES: dict[tuple[str, str], threading.BoundedSemaphore] = {}
_SEMAPHORES_LOCK = threading.Lock()
_OVERFLOW = re.compile(
    r"context[_ ]length[_ ]exceeded|maximum context length|context window|prompt is too long|too many tokens", re.I
)


class Malformed(Exception):
    """The endpoint answered 200 with something that is not a usable completion."""


def _semaphore(key: tuple[str, str], size: int) -> threading.BoundedSemaphore:
    """The process-wide cap for one (base_url, model); the first policy created sets its size."""
    with _SEMAPHORES_LOCK:
        if key not in _SEMAPHORES:
            _SEMAPHORES[key] = threading.BoundedSemaphore(max(1, size))
        return _SEMAPHORES[key]


def _normalise_calls(calls: Any) -> list[dict[str, Any]]:
    out = []
    for call in calls or []:
        function = call.get("function") or {}
        name, arguments = function.get("name"), function.get("arguments")
        if not isinstance(name, str) or not name:
            raise Malformed(f"a tool call has no function name: {json.dumps(call)[:200]}")
        if isinstance(arguments, (dict, list)):
            arguments = json.dumps(arguments)
        elif arguments is None or (isinstance(arguments, str) and not arguments.strip()):
            arguments = "{}"
        try:
            json.loads(arguments)
        except (TypeError, ValueError) as exc:
            raise Malformed(
                f"tool call {name!r} has arguments that are not JSON ({exc}): {str(arguments)[:200]}"
            ) from None
        out.append(
            {
                "id": call.get("id") or new_call_id(),
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
        )
    return out


def parse_response(data: Any) -> Completion:
    """A Completion from a chat.completion body (a dict); raises Malformed."""
    if not isinstance(data, dict):
        raise Malformed(f"the response is not a JSON object: {str(data)[:200]}")
    choices = data.get("choices")
    if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise Malformed(f"the response has no choices: {json.dumps(data)[:300]}")
    choice = choices[0]
    msg = choice.get("message")
    if not isinstance(msg, dict):
        raise Malformed(f"the first choice has no message: {json.dumps(choice)[:300]}")
    content = msg.get("content")
    if content is not None and not isinstance(content, str):
        raise Malformed(f"the message content is not a string: {json.dumps(content)[:200]}")
    message: dict[str, Any] = {"role": "assistant", "content": content}
    calls = _normalise_calls(msg.get("tool_calls"))
    if calls:
        message["tool_calls"] = calls
    usage = {
        k: int(v)
        for k, v in (data.get("usage") or {}).items()
        if k in ("prompt_tokens", "completion_tokens", "total_tokens") and isinstance(v, int)
    }
    logprobs = None
    entries = (choice.get("logprobs") or {}).get("content") if isinstance(choice.get("logprobs"), dict) else None
    if entries:
        logprobs = [float(e["logprob"]) for e in entries if isinstance(e, dict) and "logprob" in e]
    token_ids = choice.get("token_ids")
    prompt_ids = data.get("prompt_token_ids") or choice.get("prompt_token_ids")
    finish = choice.get("finish_reason") or ("tool_calls" if calls else "stop")
    return Completion(
        message=message,
        finish_reason=finish,
        usage=usage,
        prompt_token_ids=list(prompt_ids) if prompt_ids else None,
        token_ids=list(token_ids) if token_ids else None,
        logprobs=logprobs,
        raw_text=content,
    )


@register("policy", "openai")
class OpenAIPolicy(Policy):
    """Chat completions from an OpenAI-compatible endpoint (OpenAI, vLLM, `clawgym serve`...)."""

    # False: the request carries the caller's messages as they came, so an HTTP 4xx (other than a
    # rate limit or an overflow) is the request's doing (RequestRejected, never retried). A policy
    # that renders every request itself (`vllm`) sets True: a 4xx is then the endpoint failing
    # (vLLM answers 400 when it cannot serialise its own answer), retried and in the end a PolicyError.
    builds_requests = False

    type = "openai"
    schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["model"],
        "properties": {
            **COMMON_POLICY_PROPS,
            "model": {"type": "string", "description": "Model name sent to the endpoint."},
            "base_url": {
                "type": ["string", "null"],
                "default": None,
                "description": "Endpoint base URL (…/v1); default $OPENAI_BASE_URL, else OpenAI's.",
            },
            "api_key_env": {
                "type": "string",
                "default": "OPENAI_API_KEY",
                "description": "Name of the environment variable holding the API key (a local endpoint needs none).",
            },
            "timeout": {"type": "number", "exclusiveMinimum": 0, "default": 120, "description": "Seconds per request."},
            "max_retries": {
                "type": "integer",
                "minimum": 0,
                "default": 4,
                "description": "Retries after the first attempt.",
            },
            "backoff": {
                "type": "number",
                "minimum": 0,
                "default": 1.0,
                "description": "First retry delay in seconds; doubles each retry, with jitter.",
            },
            "max_concurrency": {
                "type": ["integer", "null"],
                "minimum": 1,
                "default": None,
                "description": "Most requests in flight per (base_url, model), process-wide "
                "(default: no cap here; a run caps with `max_model_requests`).",
            },
            "logprobs": {
                "type": "boolean",
                "default": False,
                "description": "Ask the endpoint for per-token log-probabilities.",
            },
            "return_token_ids": {
                "type": "boolean",
                "default": False,
                "description": "Ask for token ids (vLLM and `clawgym serve` support it).",
            },
        },
    }

    def __init__(self, config: dict[str, Any]):
        super().__init__(config)
        if not config.get("model"):
            raise ClawgymError(
                "the openai policy needs a `model`",
                key="policy.model",
                hint="e.g. model: gpt-4o-mini, or the name `clawgym serve` prints",
            )
        self.model = str(config["model"])
        self.base_url = (config.get("base_url") or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.timeout = float(config.get("timeout", 120))
        self.max_retries = int(config.get("max_retries", 4))
        self.backoff = float(config.get("backoff", 1.0))
        cap = config.get("max_concurrency")
        self._semaphore = _semaphore((self.base_url, self.model), int(cap)) if cap else contextlib.nullcontext()
        self._client: Any = None
        self._client_lock = threading.Lock()

    def _get_client(self) -> Any:
        with self._client_lock:
            if self._client is None:
                import openai  # lazy: keeps `import clawgym` light

                key_env = self.config.get("api_key_env") or "OPENAI_API_KEY"
                key = os.environ.get(key_env) or "unused"  # local endpoints ignore the key
                self._client = openai.OpenAI(base_url=self.base_url, api_key=key, timeout=self.timeout, max_retries=0)
            return self._client

    def _request(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, sampling: dict[str, Any]
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:
            body["tools"] = tools
        for key in ("temperature", "top_p", "max_tokens", "seed"):
            if sampling.get(key) is not None:
                body[key] = sampling[key]
        if self.config.get("logprobs"):
            body["logprobs"] = True
        extra = {"return_token_ids": True} if self.config.get("return_token_ids") else None
        raw = self._get_client().chat.completions.with_raw_response.create(**body, extra_body=extra)
        try:
            return json.loads(raw.text)
        except ValueError as exc:
            raise Malformed(f"the response body is not JSON ({exc}): {raw.text[:200]!r}") from None

    def _answer(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, sampling: dict[str, Any]
    ) -> Completion:
        """One attempt: the request and its parsed answer (a subclass may ask another endpoint)."""
        return parse_response(self._request(messages, tools, sampling))

    def _delay(self, attempt: int, exc: Exception | None) -> float:
        delay = self.backoff * (2**attempt) * random.uniform(0.5, 1.5)
        retry_after = getattr(getattr(exc, "response", None), "headers", {}).get("retry-after")
        try:
            delay = max(delay, float(retry_after)) if retry_after else delay
        except ValueError:
            pass
        return min(delay, 60.0)

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, **sampling: Any
    ) -> Completion:
        import openai

        settings = self.sampling(sampling)
        last: str = "no attempt made"
        for attempt in range(self.max_retries + 1):
            start = time.monotonic()
            failure: Exception | None = None
            try:
                with self._semaphore:
                    completion = self._answer(messages, tools, settings)
                completion.latency_s = time.monotonic() - start
                return completion
            except openai.APIStatusError as exc:
                failure = exc
                last = f"HTTP {exc.status_code}: {_short(exc)}"
                if exc.status_code in (400, 413) and _overflow(exc):
                    raise ContextOverflow(
                        f"endpoint {self.base_url} (model {self.model!r}): the prompt is past the model's "
                        f"context window: {_short(exc)}"
                    ) from None
                if exc.status_code not in (408, 429) and exc.status_code < 500 and not self.builds_requests:
                    raise RequestRejected(
                        f"endpoint {self.base_url} (model {self.model!r}) refused the request: {last}"
                    ) from None
            except openai.APITimeoutError:
                last = f"timed out after {self.timeout:g} s"
            except openai.APIConnectionError as exc:
                cause = exc.__cause__ or exc.__context__
                last = f"connection error: {cause or exc}"
            except (Malformed, openai.APIResponseValidationError) as exc:
                last = f"malformed response: {exc}"
            if attempt < self.max_retries:
                control.sleep(self._delay(attempt, failure))
        raise self._error(last, attempts=self.max_retries + 1)

    def _error(self, last: str, attempts: int) -> PolicyError:
        return PolicyError(
            f"endpoint {self.base_url} (model {self.model!r}) failed after "
            f"{attempts} attempt{'s' * (attempts != 1)}: {last}"
        )

    def close(self) -> None:
        with self._client_lock:
            if self._client is not None:
                self._client.close()
                self._client = None


def _overflow(exc: Exception) -> bool:
    """Whether an endpoint's 4xx says the prompt does not fit the model's context window."""
    body = getattr(exc, "body", None)
    err = body.get("error", body) if isinstance(body, dict) else None
    code = str(err.get("code") or "") if isinstance(err, dict) else ""
    return code == "context_length_exceeded" or bool(_OVERFLOW.search(_short(exc)))


def _short(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        return str(err.get("message", err) if isinstance(err, dict) else err)[:300]
    return str(exc)[:300]
