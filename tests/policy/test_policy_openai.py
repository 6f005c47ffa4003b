"""The `openai` policy against a tiny fake endpoint: success, retries, faults, the concurrency cap."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from clawgym.policy import PolicyError, RequestRejected, make_policy


def _completion(content: str | None = "hi", tool_calls: list | None = None, **extra: Any) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
        **extra,
    }


class FakeEndpoint:
    """Answers each request with the next scripted action (the last one repeats)."""

    def __init__(self, actions: list[Any]):
        self.actions = list(actions)
        self.requests: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            answering = False

            def send_response(self, *args: Any, **kwargs: Any) -> None:
                self._answered()  # counted out before the client can see the answer and send again
                super().send_response(*args, **kwargs)

            def _answered(self) -> None:
                with fake.lock:
                    if self.answering:
                        fake.in_flight -= 1
                        self.answering = False

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake.lock:
                    fake.requests.append(body)
                    action = fake.actions[min(len(fake.requests) - 1, len(fake.actions) - 1)]
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                    self.answering = True
                try:
                    fake.act(self, action)
                finally:
                    self._answered()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def act(self, handler: BaseHTTPRequestHandler, action: Any) -> None:
        if isinstance(action, tuple) and action[0] == "sleep":
            time.sleep(action[1])
            action = action[2]
        if action == "drop":  # promise a long body, send half of it, hang up
            payload = json.dumps(_completion("cut short")).encode()
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(payload) * 2))
            handler.end_headers()
            handler.wfile.write(payload[: len(payload) // 2])
            handler.wfile.flush()
            handler.close_connection = True
            return
        status, body = action if isinstance(action, tuple) else (200, action)
        payload = (body if isinstance(body, str) else json.dumps(body)).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint():
    made: list[FakeEndpoint] = []

    def make(*actions: Any) -> FakeEndpoint:
        made.append(FakeEndpoint(list(actions)))
        return made[-1]

    yield make
    for fake in made:
        fake.close()


def _policy(url: str, **config: Any):
    return make_policy(
        {
            "type": "openai",
            "model": "m",
            "base_url": url,
            "api_key_env": "NO_SUCH_KEY_VAR",
            "timeout": 2,
            "max_retries": 2,
            "backoff": 0.01,
            **config,
        }
    )


SERVER_ERROR = (500, {"error": {"message": "boom", "type": "server_error"}})
CALL = {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": '{"path": "a.txt"}'}}


def test_success_with_tool_calls_and_sampling(endpoint) -> None:
    fake = endpoint(_completion(None, [CALL, {"type": "function", "function": {"name": "exec", "arguments": ""}}]))
    policy = _policy(fake.url, temperature=0.2, seed=7)
    tools = [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}]
    out = policy.complete([{"role": "user", "content": "go"}], tools=tools, max_tokens=50)
    assert out.finish_reason == "tool_calls"
    assert out.tool_calls[0] == CALL
    assert out.tool_calls[1]["function"]["arguments"] == "{}" and out.tool_calls[1]["id"].startswith("call_")
    assert out.usage == {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
    assert out.latency_s > 0
    sent = fake.requests[0]
    assert sent["tools"] == tools and sent["temperature"] == 0.2 and sent["seed"] == 7 and sent["max_tokens"] == 50
    assert "return_token_ids" not in sent and "logprobs" not in sent
    assert "key" not in json.dumps(policy.describe()).lower()


def test_logprobs_and_token_ids_are_read(endpoint) -> None:
    body = _completion("ok", prompt_token_ids=[1, 2])
    body["choices"][0]["logprobs"] = {"content": [{"token": "o", "logprob": -0.5}, {"token": "k", "logprob": -1.0}]}
    body["choices"][0]["token_ids"] = [10, 11]
    fake = endpoint(body)
    out = _policy(fake.url, logprobs=True, return_token_ids=True).complete([{"role": "user", "content": "x"}])
    assert (out.logprobs, out.token_ids, out.prompt_token_ids) == ([-0.5, -1.0], [10, 11], [1, 2])
    assert fake.requests[0]["logprobs"] is True and fake.requests[0]["return_token_ids"] is True


def test_timeout_then_success(endpoint) -> None:
    fake = endpoint(("sleep", 1.5, _completion("late")), _completion("on time"))
    out = _policy(fake.url, timeout=0.5).complete([{"role": "user", "content": "x"}])
    assert out.message["content"] == "on time" and len(fake.requests) == 2


def test_server_errors_exhaust_retries(endpoint) -> None:
    fake = endpoint(SERVER_ERROR)
    with pytest.raises(PolicyError) as info:
        _policy(fake.url).complete([{"role": "user", "content": "x"}])
    assert len(fake.requests) == 3
    text = str(info.value)
    assert fake.url in text and "'m'" in text and "HTTP 500" in text and "boom" in text and "3 attempts" in text


def test_rate_limit_is_retried_then_succeeds(endpoint) -> None:
    fake = endpoint((429, {"error": {"message": "slow down"}}), _completion("fine"))
    assert _policy(fake.url).complete([{"role": "user", "content": "x"}]).message["content"] == "fine"


def test_client_error_fails_at_once(endpoint) -> None:
    fake = endpoint((400, {"error": {"message": "bad model name"}}))
    with pytest.raises(RequestRejected, match="HTTP 400: bad model name"):  # the request's doing, a PolicyError
        _policy(fake.url).complete([{"role": "user", "content": "x"}])
    assert len(fake.requests) == 1


@pytest.mark.parametrize(
    "bad",
    [
        _completion(None, [{"id": "c", "type": "function", "function": {"name": "read", "arguments": '{"path": '}}]),
        {"id": "x", "object": "chat.completion", "choices": []},
        "this is not json",
    ],
)
def test_malformed_responses_are_retried_then_fail(endpoint, bad) -> None:
    fake = endpoint(bad)
    with pytest.raises(PolicyError, match="malformed response"):
        _policy(fake.url).complete([{"role": "user", "content": "x"}])
    assert len(fake.requests) == 3


def test_malformed_then_good(endpoint) -> None:
    bad = _completion(None, [{"id": "c", "type": "function", "function": {"name": "read", "arguments": "{oops"}}])
    fake = endpoint(bad, _completion(None, [CALL]))
    assert _policy(fake.url).complete([{"role": "user", "content": "x"}]).tool_calls == [CALL]


def test_connection_dropped_mid_response_is_retried(endpoint) -> None:
    fake = endpoint("drop", _completion("whole"))
    out = _policy(fake.url).complete([{"role": "user", "content": "x"}])
    assert out.message["content"] == "whole" and len(fake.requests) == 2


def test_connection_refused_gives_policy_error() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(PolicyError, match="connection error"):
        _policy(f"http://127.0.0.1:{port}/v1", max_retries=1).complete([{"role": "user", "content": "x"}])


def test_concurrency_cap(endpoint) -> None:
    fake = endpoint(("sleep", 0.2, _completion("ok")))
    policy = _policy(fake.url, model="capped-model", max_concurrency=2)
    other = _policy(fake.url, model="capped-model", max_concurrency=2)  # shares the process-wide cap
    threads = [
        threading.Thread(target=p.complete, args=([{"role": "user", "content": "x"}],)) for p in [policy, other] * 3
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(fake.requests) == 6 and fake.max_in_flight == 2


def test_missing_model_is_a_user_error() -> None:
    from clawgym.errors import ClawgymError

    with pytest.raises(ClawgymError, match="needs a `model`"):
        make_policy({"type": "openai"})
