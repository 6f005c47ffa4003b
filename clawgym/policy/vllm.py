"""`vllm`: generation on a vLLM engine, with each sampled token's id and log-probability.

Without a `base_url` the policy uses the engine this process (or the run) started for its
settings (`clawgym.engines.shared`): started once per run and shared by every trial, from the
environment `clawgym engines install vllm` made, with automatic prefix caching and at most
`max_concurrency` sequences at once. With a `base_url` it talks to an already-running vLLM
server (`clawgym serve --engine vllm`, or any `vllm serve`) and starts nothing.

The prompt is rendered here, exactly as the `hf` policy renders it (`prompt.ChatPrompt`: the
model's chat template with the tool schemas, or our Hermes tool format for templates that ignore
tools), and sent as token ids to the engine's `/v1/completions`; the engine answers with the
sampled token ids (`return_token_ids`) and their log-probabilities (`logprobs: 0`: the sampled
token's only). The text is decoded and the tool calls parsed here. So the recorded prompt and
completion ids are exactly what the engine computed on, the same as the `hf` policy would record,
and a trainer can recompute the log-probabilities on the same tokens. (vLLM's chat endpoint would
render the conversation with its own copy of the template, which for SmolLM2 drops the tools.)

Log-probabilities are the engine's `processed_logprobs` (see `engines/vllm.py`): log softmax of
the logits after temperature, the distribution sampled from; with top_p = 1 that is what the
`hf` policy records. Requests, retries, timeouts and the concurrency cap are the `openai`
policy's, over the same SDK client.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from ..errors import ClawgymError, PrerequisiteError
from ..registry import register
from ..spec.validate import raw_schema
from .base import Completion
from .busy import busy
from .chat_format import read_template
from .embedded import INSTALL_HINT
from .openai import Malformed, OpenAIPolicy
from .prompt import ChatPrompt, end_token_ids, room_to_generate, turn_from_tokens

DEFAULT_CONCURRENCY = 8
_TOKENIZERS: dict[str, Any] = {}
_TOKENIZERS_LOCK = threading.Lock()
_WINDOW_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")

# how the engine is started: one definition, shared with the RL and Train specs (`rollout.server.engine`, `eval.engine`)
ENGINE_SCHEMA: dict[str, Any] = raw_schema("common")["$defs"]["engine"]


def _tokenizer(source: str) -> Any:
    """The tokenizer of a model folder or hub id, loaded once per process."""
    with _TOKENIZERS_LOCK:
        if source not in _TOKENIZERS:
            try:
                from transformers import AutoTokenizer
                from transformers.utils import logging as hf_logging
            except ImportError as exc:
                raise PrerequisiteError(
                    f"the vllm policy renders prompts with transformers' tokenizer ({exc})", hint=INSTALL_HINT
                ) from None
            hf_logging.disable_progress_bar()
            try:
                _TOKENIZERS[source] = AutoTokenizer.from_pretrained(source)
            except (OSError, ValueError) as exc:
                raise ClawgymError(
                    f"cannot load the tokenizer of {source!r}: {str(exc).splitlines()[0][:300]}",
                    key="policy.model",
                    hint="give a local Hugging Face model folder, a hub id, or 'embedded'",
                ) from None
        return _TOKENIZERS[source]


def _config_window(source: str) -> int | None:
    """The context window a model folder's config.json states (None for a hub id or none stated)."""
    try:
        config = json.loads((Path(source) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    for key in _WINDOW_KEYS:
        if isinstance(config.get(key), int) and config[key] > 0:
            return int(config[key])
    return None


def _served_name(base_url: str) -> str | None:
    """The one model an endpoint serves (GET /models), or None when it does not say just one."""
    from ..engines.vllm import http_json

    status, data = http_json(base_url.rstrip("/") + "/models", timeout=10)
    models = data.get("data") if status == 200 and isinstance(data, dict) else None
    if isinstance(models, list) and len(models) == 1 and isinstance(models[0], dict):
        return str(models[0].get("id") or "") or None
    return None


@register("policy", "vllm")
class VLLMPolicy(OpenAIPolicy):
    """A model on a vLLM engine (started once per run, or already running at `base_url`), with
    sampled token ids and log-probabilities."""

    type = "vllm"
    builds_requests = True  # the prompt's token ids and every parameter are ours: a 4xx is the engine's
    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            **{k: v for k, v in OpenAIPolicy.schema["properties"].items() if k not in ("logprobs", "return_token_ids")},
            "model": {
                "type": "string",
                "default": "embedded",
                "description": "Local model folder, hub id or 'embedded' (SmolLM2-135M-Instruct): what the "
                "engine serves, and where the prompt's tokenizer and chat template come from.",
            },
            "base_url": {
                "type": ["string", "null"],
                "default": None,
                "description": "An already-running vLLM server (…/v1); default: start an engine for the run.",
            },
            "served_model_name": {
                "type": ["string", "null"],
                "default": None,
                "description": "The model name requests use; default: the one model the server lists, else `model`.",
            },
            "timeout": {"type": "number", "exclusiveMinimum": 0, "default": 600, "description": "Seconds per request."},
            "max_concurrency": {
                "type": "integer",
                "minimum": 1,
                "default": DEFAULT_CONCURRENCY,
                "description": "Most requests in flight on the engine (also the engine's max_num_seqs when "
                "the policy starts it).",
            },
            "chat_template": {
                "type": ["string", "null"],
                "default": None,
                "description": "A Jinja chat template (text or a file path) replacing the model's.",
            },
            "context_window": {
                "type": ["integer", "null"],
                "minimum": 2,
                "default": None,
                "description": "Most tokens (prompt + completion); default: engine.max_model_len, else the "
                "model config's max_position_embeddings. A longer prompt is a context overflow.",
            },
            "engine": ENGINE_SCHEMA,
        },
    }

    def __init__(self, config: dict[str, Any]):
        config = {"model": "embedded", **config}
        from ..engines.vllm import EngineSettings, resolve_model

        settings = EngineSettings.from_config(config)  # unknown engine settings fail here
        source = resolve_model(str(config["model"]))
        tokenizer = _tokenizer(source)
        self._prompt = ChatPrompt(tokenizer, read_template(config.get("chat_template")))
        self._end_ids = end_token_ids(tokenizer, _generation_eos(source))
        self._window = config.get("context_window") or (settings.max_model_len if not config.get("base_url") else None)
        self._window = self._window or _config_window(source)
        if config.get("base_url"):
            base_url = str(config["base_url"]).rstrip("/")
            served = config.get("served_model_name") or _served_name(base_url) or str(config["model"])
            self.engine: dict[str, Any] = {"external": True}
        else:
            from ..engines.shared import ensure

            ref = ensure(settings)
            base_url, served = ref.base_url, ref.served_name
            self.engine = {k: v for k, v in ref.info.items() if k in ("engine", "version", "device", "package")}
        super().__init__(
            {
                **{k: v for k, v in config.items() if k in OpenAIPolicy.schema["properties"]},
                "model": served,
                "base_url": base_url,
                "timeout": config.get("timeout", 600),
                "max_concurrency": config.get("max_concurrency") or DEFAULT_CONCURRENCY,
            }
        )
        self.config = config
        self.tokenizer = tokenizer

    @property
    def context_window(self) -> int | None:
        return int(self._window) if self._window else None

    def prompt_ids(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> list[int]:
        """The token ids of the prompt this policy sends."""
        return self._prompt.ids(messages, tools)

    def token_strings(self, ids: list[int]) -> list[str]:
        return self._prompt.token_strings(ids)

    def _answer(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, sampling: dict[str, Any]
    ) -> Completion:
        prompt = self.prompt_ids(messages, tools)
        max_tokens = room_to_generate(prompt, int(sampling["max_tokens"]), self.context_window, self.config["model"])
        body: dict[str, Any] = {"model": self.model, "prompt": prompt, "max_tokens": max_tokens, "logprobs": 0}
        for key in ("temperature", "top_p", "seed"):
            if sampling.get(key) is not None:
                body[key] = sampling[key]
        extra = {
            "return_token_ids": True,
            "return_tokens_as_token_ids": True,  # ids in the logprobs too, for servers without return_token_ids
            "skip_special_tokens": False,
            "stop_token_ids": self._end_ids,
            "top_k": -1,  # no truncation the request did not ask for, whatever the server's defaults
            "min_p": 0.0,
            "repetition_penalty": 1.0,
        }
        with busy(self.base_url):
            raw = self._get_client().completions.with_raw_response.create(**body, extra_body=extra)
        try:
            data = json.loads(raw.text)
        except ValueError as exc:
            raise Malformed(f"the response body is not JSON ({exc}): {raw.text[:200]!r}") from None
        ids, logprobs = sampled_tokens(data)
        return turn_from_tokens(self.tokenizer, prompt, ids, logprobs, self._end_ids, tools)

    def describe(self) -> dict[str, Any]:
        return super().describe() | {"engine_build": self.engine}


def sampled_tokens(data: Any) -> tuple[list[int], list[float]]:
    """The sampled token ids and their log-probabilities in a `/v1/completions` answer; Malformed."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise Malformed(f"the response has no choices: {json.dumps(data)[:300]}")
    choice = choices[0]
    logprobs = choice.get("logprobs") if isinstance(choice.get("logprobs"), dict) else {}
    values = logprobs.get("token_logprobs")
    ids = choice.get("token_ids")
    if ids is None and isinstance(logprobs.get("tokens"), list):
        try:
            ids = [int(str(t).removeprefix("token_id:")) for t in logprobs["tokens"]]
        except ValueError:
            raise Malformed("the answer has neither token_ids nor tokens as token_id:N") from None
    if not isinstance(ids, list) or not isinstance(values, list) or len(ids) != len(values):
        raise Malformed(
            f"the answer has {len(ids) if isinstance(ids, list) else 'no'} token ids and "
            f"{len(values) if isinstance(values, list) else 'no'} log-probabilities (the server must "
            "return both: vLLM with return_token_ids and logprobs)"
        )
    try:
        return [int(i) for i in ids], [float(v) for v in values]
    except (TypeError, ValueError):
        raise Malformed(f"token ids or log-probabilities are not numbers: {str(ids)[:100]}") from None


def _generation_eos(source: str) -> Any:
    """The eos_token_id a model folder's generation_config.json (else config.json) states."""
    for name in ("generation_config.json", "config.json"):
        try:
            value = json.loads((Path(source) / name).read_text(encoding="utf-8")).get("eos_token_id")
        except (OSError, ValueError, AttributeError):
            continue
        if value is not None:
            return value
    return None
