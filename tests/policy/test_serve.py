"""`clawgym serve` end to end: the openai SDK and the `openai` policy against ServerThread."""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.request

import pytest

from clawgym.policy import make_policy
from clawgym.policy.scripted import ScriptedPolicy, tool_call
from clawgym.policy.server import ServerThread

from test_policy_hf import TOOLS, tiny_model  # noqa: F401  (fixture)

CALL = tool_call("write", call_id="call_w", path="hello.txt", content="hi")


@pytest.fixture
def scripted_server():
    policy = ScriptedPolicy({"type": "scripted", "turns": [{"content": "on it", "tool_calls": [CALL]}, "done."] * 5})
    with ServerThread(policy=policy, served_name="scripted-model") as server:
        yield server


def _post(url: str, body: bytes, path: str = "/v1/chat/completions") -> tuple[int, dict]:
    request = urllib.request.Request(url + path, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_sdk_client_tool_calls_and_models(scripted_server) -> None:
    import openai

    client = openai.OpenAI(base_url=scripted_server.base_url, api_key="unused")
    assert [m.id for m in client.models.list().data] == ["scripted-model"]
    reply = client.chat.completions.create(
        model="anything", messages=[{"role": "user", "content": "go"}], tools=TOOLS, temperature=0.5, max_tokens=20
    )
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content == "on it"
    assert choice.message.tool_calls[0].function.name == "write"
    assert json.loads(choice.message.tool_calls[0].function.arguments) == {"path": "hello.txt", "content": "hi"}
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens
    asked = scripted_server.policy.calls[0]
    assert asked["tools"] == TOOLS and asked["sampling"] == {"temperature": 0.5, "max_tokens": 20}


def test_openai_policy_against_the_server(scripted_server) -> None:
    policy = make_policy(
        {"type": "openai", "model": "scripted-model", "base_url": scripted_server.base_url, "max_retries": 0}
    )
    first = policy.complete([{"role": "user", "content": "go"}], tools=TOOLS)
    assert first.tool_calls == [CALL] and first.finish_reason == "tool_calls"
    second = policy.complete(
        [{"role": "user", "content": "go"}, first.message, {"role": "tool", "tool_call_id": "call_w", "content": "ok"}],
        tools=TOOLS,
    )
    assert second.message == {"role": "assistant", "content": "done."} and second.finish_reason == "stop"


def test_streaming(scripted_server) -> None:
    import openai

    client = openai.OpenAI(base_url=scripted_server.base_url, api_key="unused")
    chunks = list(
        client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "go"}],
            tools=TOOLS,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    calls = [tc for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or [])]
    assert text == "on it" and calls[0].function.name == "write" and calls[0].id == "call_w"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert chunks[-1].usage is not None


def test_errors_are_openai_style(scripted_server) -> None:
    url = scripted_server.url
    status, body = _post(url, b"{not json")
    assert status == 400 and body["error"]["type"] == "invalid_request_error"
    status, body = _post(url, json.dumps({"model": "m", "messages": []}).encode())
    assert status == 400 and body["error"]["param"] == "messages"
    status, body = _post(
        url, json.dumps({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"}).encode()
    )
    assert status == 400 and body["error"]["param"] == "temperature"
    status, body = _post(url, b"{}", path="/v1/nothing")
    assert status == 404 and "error" in body
    with urllib.request.urlopen(url + "/health", timeout=5) as response:
        assert json.loads(response.read())["status"] == "ok"


def test_policy_failure_is_a_500_and_the_openai_policy_retries_then_errors() -> None:
    from clawgym.policy import PolicyError

    with ServerThread(
        policy=ScriptedPolicy({"type": "scripted", "turns": [{"error": "model fell over"}] * 3})
    ) as server:
        status, body = _post(server.url, json.dumps({"messages": [{"role": "user", "content": "x"}]}).encode())
        assert status == 500 and "model fell over" in body["error"]["message"]
        policy = make_policy(
            {"type": "openai", "model": "scripted", "base_url": server.base_url, "max_retries": 1, "backoff": 0.01}
        )
        with pytest.raises(PolicyError, match="HTTP 500"):
            policy.complete([{"role": "user", "content": "x"}])


def test_hf_model_served_with_logprobs_and_token_ids(tiny_model) -> None:  # noqa: F811
    with ServerThread(tiny_model, device="cpu", max_tokens=8) as server:
        policy = make_policy(
            {
                "type": "openai",
                "model": server.model_name,
                "base_url": server.base_url,
                "logprobs": True,
                "return_token_ids": True,
                "seed": 1,
                "max_retries": 0,
            }
        )
        out = policy.complete([{"role": "user", "content": "read the file"}], tools=TOOLS)
        assert out.token_ids and len(out.token_ids) == len(out.logprobs) == out.usage["completion_tokens"]
        assert all(lp <= 0 and math.isfinite(lp) for lp in out.logprobs) and out.prompt_token_ids


@pytest.mark.slow
def test_embedded_model_through_serve_and_the_openai_policy() -> None:
    import time

    start = time.monotonic()
    with ServerThread("embedded", max_tokens=48) as server:
        load_s = time.monotonic() - start
        policy = make_policy(
            {
                "type": "openai",
                "model": "embedded",
                "base_url": server.base_url,
                "seed": 0,
                "temperature": 0.7,
                "timeout": 300,
                "max_retries": 0,
            }
        )
        messages = [
            {"role": "system", "content": "You work in the user's files."},
            {"role": "user", "content": "Write 'hi' to hello.txt."},
        ]
        out = policy.complete(messages, tools=TOOLS)
        assert out.message["content"] or out.tool_calls
        assert out.usage["completion_tokens"] > 0
        follow = messages + [out.message]
        if out.tool_calls:
            follow += [{"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in out.tool_calls]
        else:
            follow += [{"role": "user", "content": "Now use the write tool."}]
        second = policy.complete(follow, tools=TOOLS)
        assert second.usage["prompt_tokens"] > out.usage["prompt_tokens"]
        print(f"serve embedded: load {load_s:.1f} s, turn 1 {out.latency_s:.1f} s, turn 2 {second.latency_s:.1f} s")


def test_load_weights_errors_say_what_to_send(scripted_server, tiny_model) -> None:  # noqa: F811
    def post(server, body: bytes) -> tuple[int, dict]:
        return _post(server.url, body, path="/v1/load_weights")

    status, body = post(scripted_server, b'{"path": "x"}')
    assert status == 400 and "cannot load weights" in body["error"]["message"]
    with ServerThread(tiny_model, device="cpu", max_tokens=4) as server:
        assert post(server, b"[1, 2")[0] == 400
        status, body = post(server, b"{}")
        assert status == 400 and body["error"]["param"] == "path"
        status, body = post(server, b'{"path": "/nonexistent/model"}')
        assert status == 400 and "cannot load the model" in body["error"]["message"]
        status, body = post(server, json.dumps({"path": str(tiny_model)}).encode())
        assert status == 200 and body["status"] == "ok"
