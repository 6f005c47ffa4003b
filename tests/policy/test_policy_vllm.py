"""The `vllm` policy against a fake vLLM `/v1/completions` endpoint (no engine needed): the prompt
goes as the token ids the `hf` policy would generate from, the answer's sampled ids and their
log-probabilities come back into the turn, tool calls are parsed from the decoded text, and
malformed answers, context overflows and the served name are handled. The real engine is in
tests/engines/test_engine_vllm.py."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import tiny_models
from clawgym.policy import ContextOverflow, PolicyError, make_policy

tiny_model = tiny_models.tiny_model  # the fixture: a tiny random Llama and its tokenizer, built offline

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]
MESSAGES = [{"role": "system", "content": "you can call tools"}, {"role": "user", "content": "read the file a.txt"}]


class FakeVLLM:
    """Answers `/v1/completions` with `answer(body)` and `/v1/models` with one model."""

    def __init__(self, answer):
        self.requests: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                self._send(200, {"object": "list", "data": [{"id": "served-smol", "object": "model"}]})

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append({"path": self.path, **body})
                self._send(*answer(body))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _answer(ids: list[int], logprobs: list[float] | None = None, *, with_ids: bool = True) -> dict:
    logprobs = logprobs if logprobs is not None else [-0.5] * len(ids)
    choice: dict[str, Any] = {
        "index": 0,
        "text": "ignored: the policy decodes the ids itself",
        "logprobs": {"tokens": [f"token_id:{i}" for i in ids], "token_logprobs": logprobs},
        "finish_reason": "stop",
    }
    if with_ids:
        choice["token_ids"] = ids
    return {"id": "cmpl-1", "object": "text_completion", "choices": [choice], "usage": {}}


@pytest.fixture
def tokenizer(tiny_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)


def _policy(tiny_model, fake, **config):
    return make_policy(
        {"type": "vllm", "model": tiny_model, "base_url": fake.base_url, "max_retries": 0, "backoff": 0, **config}
    )


def test_prompt_ids_in_sampled_ids_and_logprobs_out(tiny_model, tokenizer):
    call = '<tool_call>\n{"name": "read", "arguments": {"path": "a.txt"}}\n</tool_call>'
    ids = tokenizer(call, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    fake = FakeVLLM(lambda body: (200, _answer(ids, [-0.25] * len(ids))))
    try:
        policy = _policy(tiny_model, fake, max_tokens=40, temperature=0.7, seed=3)
        out = policy.complete(MESSAGES, tools=TOOLS)
        (request,) = fake.requests
        assert request["path"] == "/v1/completions"
        assert request["model"] == "served-smol", "the one model the server lists"
        assert request["prompt"] == policy.prompt_ids(MESSAGES, TOOLS) == out.prompt_token_ids
        assert request["logprobs"] == 0 and request["return_token_ids"] is True
        assert request["max_tokens"] == 40 and request["temperature"] == 0.7 and request["seed"] == 3
        assert tokenizer.eos_token_id in request["stop_token_ids"] and request["skip_special_tokens"] is False
        assert out.token_ids == ids and out.logprobs == [-0.25] * len(ids)
        assert out.finish_reason == "tool_calls"
        assert [c["function"]["name"] for c in out.tool_calls] == ["read"]
        assert json.loads(out.tool_calls[0]["function"]["arguments"]) == {"path": "a.txt"}
        assert out.usage == {
            "prompt_tokens": len(request["prompt"]),
            "completion_tokens": len(ids),
            "total_tokens": len(request["prompt"]) + len(ids),
        }
        assert policy.describe()["type"] == "vllm" and policy.describe()["engine_build"] == {"external": True}
    finally:
        fake.close()


def test_the_hf_policy_renders_the_same_prompt(tiny_model):
    """The two token-level policies prompt a model with the same ids (so their records compare)."""
    hf = tiny_models.hf_policy(tiny_model)
    fake = FakeVLLM(lambda body: (200, _answer([5])))
    try:
        assert _policy(tiny_model, fake).prompt_ids(MESSAGES, TOOLS) == hf.prompt_ids(MESSAGES, TOOLS)
    finally:
        fake.close()


def test_ids_from_the_logprobs_when_the_server_has_no_return_token_ids(tiny_model, tokenizer):
    ids = tokenizer("hello", add_special_tokens=False)["input_ids"]
    fake = FakeVLLM(lambda body: (200, _answer(ids, with_ids=False)))
    try:
        out = _policy(tiny_model, fake).complete(MESSAGES)
        assert out.token_ids == ids and out.finish_reason == "length" and out.message["content"] == "hello"
    finally:
        fake.close()


def test_an_answer_without_logprobs_for_every_token_is_malformed(tiny_model):
    fake = FakeVLLM(lambda body: (200, _answer([5, 6, 7], [-1.0])))
    try:
        with pytest.raises(PolicyError, match="3 token ids and 1 log-probabilities"):
            _policy(tiny_model, fake).complete(MESSAGES)
    finally:
        fake.close()


def test_context_overflow_before_any_request(tiny_model):
    fake = FakeVLLM(lambda body: (200, _answer([5])))
    try:
        policy = _policy(tiny_model, fake, context_window=8)
        with pytest.raises(ContextOverflow, match="at most 8"):
            policy.complete(MESSAGES)
        assert fake.requests == []
        policy = _policy(tiny_model, fake, context_window=len(policy.prompt_ids(MESSAGES)) + 5, max_tokens=100)
        policy.complete(MESSAGES)
        assert fake.requests[-1]["max_tokens"] == 5, "only the room left in the window"
    finally:
        fake.close()


def test_the_window_defaults_to_the_model_config(tiny_model):
    fake = FakeVLLM(lambda body: (200, _answer([5])))
    try:
        assert _policy(tiny_model, fake).context_window == 1024
        assert _policy(tiny_model, fake, served_model_name="x").model == "x"
    finally:
        fake.close()


def test_a_server_error_is_a_policy_error_naming_the_endpoint(tiny_model):
    fake = FakeVLLM(lambda body: (500, {"error": {"message": "engine dead"}}))
    try:
        with pytest.raises(PolicyError, match="engine dead") as err:
            _policy(tiny_model, fake).complete(MESSAGES)
        assert fake.base_url in str(err.value)
    finally:
        fake.close()


def test_a_400_from_the_engine_is_its_failure_retried_not_the_agents_rejected_request(tiny_model, tokenizer):
    """The vllm policy renders every request itself, so a 400 that is not an overflow is the engine
    failing (vLLM answers 400 when it cannot serialise a -inf log-probability it sampled): retried,
    and in the end a PolicyError (an infrastructure outcome), never a RequestRejected (the agent's doing)."""
    from clawgym.policy import RequestRejected

    ids = tokenizer("fine", add_special_tokens=False)["input_ids"]
    bad = (400, {"error": {"message": "Out of range float values are not JSON compliant", "code": 400}})
    answers = iter([bad, (200, _answer(ids))])
    fake = FakeVLLM(lambda body: next(answers))
    try:
        out = _policy(tiny_model, fake, max_retries=1).complete(MESSAGES)
        assert out.token_ids == ids and len(fake.requests) == 2
    finally:
        fake.close()
    fake = FakeVLLM(lambda body: bad)
    try:
        with pytest.raises(PolicyError, match="Out of range float") as err:
            _policy(tiny_model, fake, max_retries=1).complete(MESSAGES)
        assert not isinstance(err.value, RequestRejected) and len(fake.requests) == 2
    finally:
        fake.close()
