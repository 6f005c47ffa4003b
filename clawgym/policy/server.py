"""`clawgym serve`: an OpenAI-compatible chat-completions server over an `hf` model (or any policy).

Endpoints: `POST /v1/chat/completions` (tools and tool_calls in OpenAI format, usage, optional
`logprobs`, `stream: true` as server-sent events, and vLLM-style `return_token_ids`),
`GET /v1/models`, `GET /health`, and `POST /v1/load_weights {"path": FOLDER}` that swaps in
the weights saved in a model folder (how `clawgym train rl` keeps an external server on-policy).
Errors are OpenAI-style JSON (`{"error": {...}}`) with proper
status codes (a prompt past the model's context window: 400 `context_length_exceeded`). Any `model` name in a request is accepted and answered by the served model. Built
on the standard library's threading HTTP server; the policy serialises generation itself.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..errors import ClawgymError, InfraError
from .base import Completion, ContextOverflow, Policy, make_policy

SAMPLING_KEYS = ("temperature", "top_p", "seed")
OVERFLOW_PREFIX = "This model's maximum context length is"  # OpenAI's and vLLM's wording

log = logging.getLogger(__name__)


class _BadRequest(Exception):
    def __init__(self, message: str, status: int = 400, param: str | None = None):
        super().__init__(message)
        self.status, self.param = status, param


def _error_body(message: str, status: int, param: str | None = None) -> dict[str, Any]:
    kind = "invalid_request_error" if status < 500 else "server_error"
    code = {
        404: "not_found",
        405: "method_not_allowed",
        411: "length_required",
        413: "request_too_large",
        429: "budget_exhausted",
    }.get(status)
    if param == "messages" and status == 400 and message.startswith(OVERFLOW_PREFIX):
        code = "context_length_exceeded"  # OpenAI's code: clients tell it from other bad requests
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def _sampling(body: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in SAMPLING_KEYS:
        if body.get(key) is not None:
            if not isinstance(body[key], (int, float)) or isinstance(body[key], bool):
                raise _BadRequest(f"'{key}' must be a number", param=key)
            out[key] = body[key]
    limit = body.get("max_completion_tokens") or body.get("max_tokens")
    if limit is not None:
        if not isinstance(limit, int) or limit < 1:
            raise _BadRequest("'max_tokens' must be a positive integer", param="max_tokens")
        out["max_tokens"] = limit
    return out


def _validate(body: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    if not isinstance(body, dict):
        raise _BadRequest("the request body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) and "role" in m for m in messages):
        raise _BadRequest("'messages' must be a non-empty list of {role, content} objects", param="messages")
    if body.get("n", 1) != 1:
        raise _BadRequest("only n=1 is supported", param="n")
    tools = body.get("tools") or None
    if tools is not None and (
        not isinstance(tools, list) or not all(isinstance(t, dict) and "function" in t for t in tools)
    ):
        raise _BadRequest("'tools' must be a list of {type: function, function: {...}} objects", param="tools")
    if body.get("tool_choice") == "none":
        tools = None
    return messages, tools


def overflow_message(exc: ContextOverflow) -> str:
    """A context overflow in the words OpenAI-compatible clients recognise."""
    window = exc.context_window if exc.context_window is not None else "?"
    return f"{OVERFLOW_PREFIX} {window} tokens. However, your messages resulted in {exc.prompt_tokens} tokens: {exc}"


class ChatServing:
    """What a chat-completions server holds (the policy, the served name) and how it shapes
    answers; mixed into a TCP server here and into a Unix-socket server by the recording proxy."""

    daemon_threads = True
    max_request_bytes = 64 << 20  # a bigger body is refused (413) before it is read

    def setup_chat(self, policy: Policy, model_name: str) -> None:
        self.policy, self.model_name, self.created = policy, model_name, int(time.time())

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up before its answer (an agent cut off by its timeout) is not an error
        worth a traceback on the console; anything else is logged."""
        import sys

        exc = sys.exc_info()[1]
        if isinstance(exc, (BrokenPipeError, ConnectionResetError)):
            return
        log.warning("chat server: request from %s failed", client_address or "a client", exc_info=exc)

    def request_refused(self, status: int, reason: str) -> None:
        """Called when a request is refused before it reaches the policy (the proxy records it)."""

    def admit(self) -> str | None:
        """Why the next chat request may not reach the policy (e.g. a spent turn budget), or None."""
        return None

    def completion_body(self, body: dict[str, Any], out: Completion) -> dict[str, Any]:
        choice: dict[str, Any] = {
            "index": 0,
            "message": out.message,
            "finish_reason": out.finish_reason,
            "logprobs": self._logprobs(out) if body.get("logprobs") else None,
        }
        result = {
            "id": "chatcmpl-" + uuid.uuid4().hex,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model_name,
            "choices": [choice],
            "usage": self._usage(out),
        }
        if body.get("return_token_ids"):
            choice["token_ids"] = out.token_ids
            result["prompt_token_ids"] = out.prompt_token_ids
        return result

    def _usage(self, out: Completion) -> dict[str, int]:
        prompt, completion = int(out.usage.get("prompt_tokens", 0)), int(out.usage.get("completion_tokens", 0))
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    def _logprobs(self, out: Completion) -> dict[str, Any] | None:
        if not out.token_ids or out.logprobs is None:
            return None
        strings = getattr(self.policy, "token_strings", lambda ids: [str(i) for i in ids])(out.token_ids)
        return {
            "content": [
                {"token": s, "logprob": lp, "bytes": list(s.encode()), "top_logprobs": []}
                for s, lp in zip(strings, out.logprobs)
            ]
        }

    def stream_chunks(self, body: dict[str, Any], out: Completion) -> list[dict[str, Any]]:
        """The whole completion as chat.completion.chunk objects (generated first, then sent)."""
        base = {
            "id": "chatcmpl-" + uuid.uuid4().hex,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": self.model_name,
        }

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
            return {
                **base,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
                **extra,
            }

        chunks = [chunk({"role": "assistant", "content": ""})]
        if out.message.get("content"):
            chunks.append(chunk({"content": out.message["content"]}))
        for i, call in enumerate(out.tool_calls):
            chunks.append(chunk({"tool_calls": [{"index": i, **call}]}))
        chunks.append(chunk({}, out.finish_reason))
        if (body.get("stream_options") or {}).get("include_usage"):
            chunks.append({**base, "choices": [], "usage": self._usage(out)})
        return chunks


class ChatServer(ChatServing, ThreadingHTTPServer):
    """The HTTP server on a TCP address."""

    def __init__(self, address: tuple[str, int], policy: Policy, model_name: str):
        ThreadingHTTPServer.__init__(self, address, ChatHandler)
        self.setup_chat(policy, model_name)


class ChatHandler(BaseHTTPRequestHandler):
    server: ChatServing
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet by default
        pass

    def _send(self, status: int, body: dict[str, Any]) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:  # noqa: N802
        path = self.path.split("?")[0].rstrip("/")
        if path == "/health":
            self._send(200, {"status": "ok", "model": self.server.model_name})
        elif path in ("/v1/models", "/models"):
            self._send(
                200,
                {
                    "object": "list",
                    "data": [
                        {
                            "id": self.server.model_name,
                            "object": "model",
                            "created": self.server.created,
                            "owned_by": "clawgym",
                        }
                    ],
                },
            )
        else:
            self._send(404, _error_body(f"no route GET {path}", 404))

    def do_POST(self) -> None:  # noqa: N802
        path = self.path.split("?")[0].rstrip("/")
        if path in ("/v1/load_weights", "/load_weights"):
            self._load_weights()
            return
        if path not in ("/v1/chat/completions", "/chat/completions"):
            self._send(404, _error_body(f"no route POST {path}", 404))
            return
        try:
            body = json.loads(self._body() or b"null")
        except _BadRequest as exc:
            self.server.request_refused(exc.status, str(exc))
            self.close_connection = True
            self._send(exc.status, _error_body(str(exc), exc.status, exc.param))
            return
        except ValueError as exc:
            self._send(400, _error_body(f"the request body is not JSON: {exc}", 400))
            return
        refusal = self.server.admit()
        if refusal is not None:
            self.server.request_refused(429, refusal)
            self._send(429, _error_body(refusal, 429))
            return
        try:
            messages, tools = _validate(body)
            out = self.server.policy.complete(messages, tools=tools, **_sampling(body))
        except _BadRequest as exc:
            self._send(exc.status, _error_body(str(exc), exc.status, exc.param))
            return
        except ContextOverflow as exc:  # a 400 as OpenAI answers it: asking again cannot help
            self._send(400, _error_body(overflow_message(exc), 400, "messages"))
            return
        except (InfraError, ClawgymError) as exc:
            self._send(500, _error_body(f"the model failed: {exc}", 500))
            return
        except Exception as exc:  # noqa: BLE001 - a server answers errors, it does not die
            self._send(500, _error_body(f"internal error: {type(exc).__name__}: {exc}", 500))
            return
        if body.get("stream"):
            self._stream(self.server.stream_chunks(body, out))
        else:
            self._send(200, self.server.completion_body(body, out))

    def _body(self) -> bytes:
        """The request body, refused (413) past `max_request_bytes` before any of it is read."""
        if self.headers.get("Transfer-Encoding"):
            raise _BadRequest("chunked request bodies are not supported: send Content-Length", 411)
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise _BadRequest("Content-Length is not a number", 400) from None
        if length < 0:
            raise _BadRequest("Content-Length is negative", 400)
        cap = self.server.max_request_bytes
        if length > cap:
            raise _BadRequest(f"the request body has {length:,} bytes, more than the {cap:,} allowed", 413)
        return self.rfile.read(length)

    def _load_weights(self) -> None:
        """`{"path": FOLDER}`: serve the weights saved there from now on (an RL trainer's weight sync)."""
        reload = getattr(self.server.policy, "reload", None)
        try:
            body = json.loads(self._body() or b"{}")
            folder = body.get("path") if isinstance(body, dict) else None
            if reload is None:
                raise _BadRequest(f"the {self.server.policy.type} policy cannot load weights", 400)
            if not isinstance(folder, str) or not folder:
                raise _BadRequest('expected {"path": "MODEL_FOLDER"}', 400, "path")
            reload(folder)
        except ValueError as exc:
            self._send(400, _error_body(f"the request body is not JSON: {exc}", 400))
        except _BadRequest as exc:
            self._send(exc.status, _error_body(str(exc), exc.status, exc.param))
        except ClawgymError as exc:
            self._send(400, _error_body(str(exc), 400, "path"))
        else:
            self._send(200, {"status": "ok", "path": folder})

    def _stream(self, chunks: list[dict[str, Any]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for chunk in chunks:
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def _make(model: str | None, policy: Policy | None, policy_config: dict[str, Any]) -> tuple[Policy, str]:
    if policy is None:
        policy = make_policy({"type": "hf", "model": model or "embedded", **policy_config})
    name = model or policy.config.get("model") or policy.type
    return policy, str(name)


class ServerThread:
    """Run the server in a background thread (port 0 picks a free one): `.url` is the root,
    `.base_url` the OpenAI base URL (…/v1); `.stop()` shuts it down. Usable as a context manager."""

    def __init__(
        self,
        model: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        policy: Policy | None = None,
        served_name: str | None = None,
        **policy_config: Any,
    ):
        self.policy, name = _make(model, policy, policy_config)
        self.server = ChatServer((host, port), self.policy, served_name or name)
        self.host, self.port = self.server.server_address[0], self.server.server_address[1]
        self.url = f"http://{self.host}:{self.port}"
        self.base_url = self.url + "/v1"
        self.model_name = self.server.model_name
        self._thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, name="clawgym-serve", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> "ServerThread":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def serve(model: str, host: str = "127.0.0.1", port: int = 8000, **policy_config: Any) -> None:
    """Serve `model` (a model folder, hub id or 'embedded') until interrupted."""
    policy, name = _make(model, None, policy_config)
    try:
        server = ChatServer((host, port), policy, name)
    except OSError as exc:
        raise ClawgymError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            hint="pick another --port, or stop what is using this one",
        ) from None
    print(f"serving {name!r} at http://{host}:{server.server_address[1]}/v1 (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        policy.close()
