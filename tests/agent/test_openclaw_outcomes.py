"""How the openclaw and command agents end, in the contract's words, and how long OpenClaw waits for
the model. A fake sandbox stands in for OpenClaw: each `exec` is one OpenClaw run that talks to the
recording proxy's Unix socket the way OpenClaw's relay does, so no install or bubblewrap is needed."""

from __future__ import annotations

import http.client
import json
import socket
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from clawgym.agent.command import CommandAgent
from clawgym.agent.openclaw import agent as oc_agent
from clawgym.agent.openclaw.install import Install
from clawgym.agent.openclaw.recorder import BUDGET_REPLY
from clawgym.agent.proxy import SOCKET_NAME
from clawgym.sandbox import ExecResult

from test_claw_tools import make_task

OK = {"payloads": [{"text": "All done."}], "meta": {"durationMs": 5}}
TIMED_OUT = {
    "payloads": [{"text": "Request timed out before a response was generated."}],
    "meta": {"durationMs": 61453, "aborted": True},
}


class _Unix(http.client.HTTPConnection):
    def __init__(self, path: Path, timeout: float):
        super().__init__("localhost", timeout=timeout)
        self.path = str(path)

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def ask(box: "FakeOpenClaw", content: str = "hi", wait: float = 10.0) -> tuple[int, dict] | None:
    """One model request through the proxy, as OpenClaw sends it; None when it gave up waiting
    (`wait` seconds, its model timeout) and hung up."""
    conn = _Unix(box.private_dir / SOCKET_NAME, wait)
    body = {"model": "clawgym-model", "messages": [{"role": "user", "content": content}]}
    try:
        conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    except TimeoutError:
        return None
    finally:
        conn.close()


class FakeOpenClaw:
    """A sandbox whose every `exec` runs `script(self)`: one OpenClaw run."""

    def __init__(self, tmp_path: Path, script: Callable[["FakeOpenClaw"], ExecResult]):
        self.private_dir = tmp_path / "private"
        self.private_dir.mkdir(parents=True)
        self.workspace, self.mount = tmp_path / "ws", "/root/.openclaw/workspace"
        self.script, self.commands, self.answers = script, [], []
        self.config: dict = {}

    def exec(self, command: Any, timeout: float | None = None, **kwargs: Any) -> ExecResult:
        self.commands.append(command)
        if (self.private_dir / "openclaw.json").exists():
            self.config = json.loads((self.private_dir / "openclaw.json").read_text())
        return self.script(self)


def result(payload: dict | None, exit_code: int | None = 0, timed_out: bool = False, text: str = "") -> ExecResult:
    output = text + ("\n" + json.dumps(payload) if payload is not None else "")
    return ExecResult(exit_code=exit_code, output=output, timed_out=timed_out)


@pytest.fixture
def installed(monkeypatch, tmp_path):
    """Any OpenClaw version counts as installed (the fake sandbox never runs it)."""
    monkeypatch.setattr(
        oc_agent, "find", lambda version: Install(version, tmp_path / "install", "22.23.5", f"OpenClaw {version}")
    )


def openclaw(tmp_path: Path, script: Callable, turns: list, limits: dict | None = None, **config: Any):
    """Run the openclaw agent on a fake sandbox; `latency_s` slows the scripted model."""
    policy = {"type": "scripted", "turns": turns, "latency_s": config.pop("latency_s", 0)}
    agent = oc_agent.OpenClawAgent({"type": "openclaw", "policy": policy, **config})
    box = FakeOpenClaw(tmp_path, script)
    try:
        traj = agent.run(make_task(limits=limits), box)
    finally:
        agent.close()
    return traj, box


def answered(box: FakeOpenClaw, n: int = 1, payload: dict | None = OK, **end: Any) -> ExecResult:
    """An OpenClaw run whose `n` model requests are answered, ending with `payload`."""
    for _ in range(n):
        box.answers.append(ask(box))
    return result(payload, **end)


# ------------------------------------------------------------------ how long OpenClaw waits


def test_openclaw_waits_for_the_model_as_long_as_the_trial_allows(tmp_path, installed):
    traj, box = openclaw(tmp_path / "a", answered, ["done"], limits={"seconds": 321})
    defaults = box.config["agents"]["defaults"]
    assert defaults["llm"] == {"idleTimeoutSeconds": 321} and defaults["timeoutSeconds"] == 321  # not its 60 s
    assert traj.agent["model_timeout"] == {"seconds": 321, "key": "agents.defaults.llm.idleTimeoutSeconds"}
    assert traj.outcome == "completed" and box.answers[0][0] == 200

    traj, box = openclaw(tmp_path / "b", answered, ["done"], limits={"seconds": 321}, model_timeout=900)
    assert box.config["agents"]["defaults"]["llm"] == {"idleTimeoutSeconds": 900}
    assert traj.agent["model_timeout"]["seconds"] == 900

    traj, box = openclaw(tmp_path / "c", answered, ["done"], limits={"seconds": 321}, version="2026.9.6")
    assert box.config["models"]["providers"]["clawgym"]["timeoutSeconds"] == 321
    assert "llm" not in box.config["agents"]["defaults"]  # 2026.9.6 rejects agents.defaults.llm
    assert traj.agent["model_timeout"] == {"seconds": 321, "key": "models.providers.clawgym.timeoutSeconds"}


# ------------------------------------------------------------------ endings


def test_a_model_that_never_answers_is_a_model_error_and_its_generation_stops(tmp_path, installed):
    def gives_up(box: FakeOpenClaw) -> ExecResult:
        box.answers.append(ask(box, wait=1.0))  # OpenClaw's own model timeout (1 s) fires: it hangs up
        return result(TIMED_OUT)

    started = time.monotonic()
    traj, box = openclaw(tmp_path, gives_up, ["too late"], limits={"seconds": 600}, latency_s=600, model_timeout=1)
    assert box.answers == [None]
    assert traj.outcome == "model_error" and "never answered" in traj.error, traj.error
    assert [s["reason"] for s in traj.steps if s["kind"] == "model_call_abandoned"], traj.steps
    assert time.monotonic() - started < 15  # the 600 s model call was stopped, not waited for
    assert not traj.turns


def test_openclaw_giving_up_on_a_later_call_before_the_trials_end_is_a_model_error(tmp_path, installed):
    def second_times_out(box: FakeOpenClaw) -> ExecResult:
        box.answers += [ask(box), ask(box, wait=1.0)]  # the model takes 2 s: past its 1 s timeout the second time
        return result(TIMED_OUT)

    traj, box = openclaw(tmp_path, second_times_out, ["ok", "late"], latency_s=2, model_timeout=1)
    assert box.answers[0][0] == 200 and box.answers[1] is None
    assert traj.outcome == "model_error" and "gave up on model call 2" in traj.error, traj.error
    assert traj.agent["model_timeout"]["seconds"] == 1

    def answered_then_cut(box: FakeOpenClaw) -> ExecResult:
        box.answers.append(ask(box))
        return result(TIMED_OUT, exit_code=None, timed_out=True)

    traj, box = openclaw(tmp_path / "cut", answered_then_cut, ["ok"])
    assert traj.outcome == "agent_timeout"  # the model answered; OpenClaw used up the trial's time


def test_hanging_up_before_its_own_model_timeout_is_the_agents_doing_not_an_infrastructure_error(tmp_path, installed):
    def hangs_up(box: FakeOpenClaw) -> ExecResult:
        box.answers.append(ask(box, wait=0.3))  # long before its 30 s model timeout
        return result(TIMED_OUT)

    traj, box = openclaw(tmp_path, hangs_up, ["late"], latency_s=5, model_timeout=30)
    assert box.answers == [None]
    assert traj.outcome == "agent_crash" and "before its model timeout of 30 s" in traj.error, traj.error


def test_a_failing_model_is_a_model_error(tmp_path, installed):
    def failing(box: FakeOpenClaw) -> ExecResult:
        box.answers.append(ask(box))
        return result(None, exit_code=1, text="LLM request failed.")

    traj, box = openclaw(tmp_path, failing, [{"error": "upstream 503 after 5 attempts"}])
    assert box.answers[0][0] == 500
    assert traj.outcome == "model_error" and "upstream 503" in traj.error


def test_a_prompt_past_the_context_window_is_a_context_overflow(tmp_path, installed):
    def overflowing(box: FakeOpenClaw) -> ExecResult:
        box.answers += [ask(box), ask(box)]
        return result({"payloads": [{"text": "Context overflow: prompt too large for the model."}], "meta": {}})

    traj, box = openclaw(tmp_path, overflowing, ["ok", {"context_overflow": "9000 > 8192 tokens"}])
    status, body = box.answers[1]
    assert status == 400 and body["error"]["code"] == "context_length_exceeded"
    assert traj.outcome == "context_overflow" and "9000 > 8192" in traj.error


def test_budget_crash_reported_error_and_timeout_are_the_agents(tmp_path, installed):
    traj, box = openclaw(tmp_path / "budget", lambda b: answered(b, 2), ["one", "two"], max_turns=1)
    assert box.answers[1][1]["choices"][0]["message"]["content"] == BUDGET_REPLY
    assert traj.outcome == "budget_exhausted" and "turn budget of 1" in traj.error

    traj, _ = openclaw(
        tmp_path / "crash", lambda b: answered(b, payload=None, exit_code=134, text="Segmentation fault"), ["ok"]
    )
    assert traj.outcome == "agent_crash" and "Segmentation fault" in traj.error

    error = {"ok": False, "payloads": [{"text": "Tool loop failed"}], "meta": {}}
    traj, _ = openclaw(tmp_path / "reported", lambda b: answered(b, payload=error), ["ok"])
    assert traj.outcome == "agent_crash" and "Tool loop failed" in traj.error

    traj, _ = openclaw(tmp_path / "slow", lambda b: answered(b, payload=None, exit_code=None, timed_out=True), ["ok"])
    assert traj.outcome == "agent_timeout"


def test_an_endpoint_openclaw_cannot_reach_is_a_model_error(tmp_path, installed):
    refused = "LLM request failed: connection refused by the provider endpoint."
    traj, _ = openclaw(tmp_path, lambda b: result({"payloads": [{"text": refused}], "meta": {}}, exit_code=1), [])
    assert traj.outcome == "model_error" and "could not reach" in traj.error


# ------------------------------------------------------------------ the command agent


def command(tmp_path: Path, script: Callable, turns: list, limits: dict | None = None):
    agent = CommandAgent({"type": "command", "run": "my-agent", "policy": {"type": "scripted", "turns": turns}})
    box = FakeOpenClaw(tmp_path, script)
    try:
        return agent.run(make_task(limits=limits), box), box
    finally:
        agent.close()


def test_command_agent_endings(tmp_path):
    assert command(tmp_path / "ok", lambda b: answered(b, payload=None), ["hi"])[0].outcome == "completed"
    traj, _ = command(tmp_path / "crash", lambda b: answered(b, payload=None, exit_code=3), ["hi"])
    assert traj.outcome == "agent_crash" and "code 3" in traj.error
    traj, _ = command(tmp_path / "slow", lambda b: answered(b, payload=None, exit_code=None, timed_out=True), ["hi"])
    assert traj.outcome == "agent_timeout"
    traj, _ = command(tmp_path / "down", lambda b: answered(b, payload=None, exit_code=1), [{"error": "down"}])
    assert traj.outcome == "model_error" and "down" in traj.error
    traj, _ = command(
        tmp_path / "budget", lambda b: answered(b, 3, payload=None, exit_code=1), ["a", "b", "c"], limits={"turns": 2}
    )
    assert traj.outcome == "budget_exhausted" and "budget of 2" in traj.error
    traj, _ = command(tmp_path / "long", lambda b: answered(b, payload=None, exit_code=1), [{"context_overflow": "x"}])
    assert traj.outcome == "context_overflow"
