"""The model's side of a trial's ending: a prompt past the context window is a ContextOverflow
(hf, a `clawgym serve` endpoint, the openai client), a generation nobody waits for is stopped (the
agent hung up on the recording proxy, the trial ended, the interpreter exits)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import tiny_models
from clawgym import trial_controls as control
from clawgym.agent.proxy import SOCKET_NAME, RecordingProxy
from clawgym.policy import ContextOverflow
from clawgym.policy.openai import OpenAIPolicy
from clawgym.policy.scripted import ScriptedPolicy
from clawgym.policy.server import ServerThread
from clawgym.records.trajectory import Trajectory
from tiny_models import hf_policy

tiny_model = tiny_models.tiny_model  # the fixture: a tiny random Llama built offline
ROOT = Path(__file__).resolve().parents[2]
LONG = {"max_tokens": 20_000, "context_window": 30_000}  # runs for minutes unless stopped
USER = [{"role": "user", "content": "read the file a.txt and write hello"}]


def test_hf_prompt_past_the_window_is_a_context_overflow(tiny_model) -> None:
    assert hf_policy(tiny_model).context_window == 1024  # the model config's max_position_embeddings
    policy = hf_policy(tiny_model, context_window=24, temperature=0)
    prompt = len(policy.prompt_ids(USER))
    with pytest.raises(ContextOverflow, match="context window") as err:
        policy.complete(USER * 3)
    assert err.value.context_window == 24 and err.value.prompt_tokens > 24
    roomy = hf_policy(tiny_model, context_window=prompt + 2, temperature=0, max_tokens=50)
    out = roomy.complete(USER)
    assert len(out.token_ids) <= 2  # only the room left in the window is generated


def test_a_generation_stops_when_its_trial_is_cancelled(tiny_model) -> None:
    from clawgym.policy import hf, hf_batch

    policy = hf_policy(tiny_model, temperature=0)
    loaded = policy._loaded
    rows = hf_batch.generate_rows(
        hf._libs(),
        loaded.model,
        loaded.device,
        [-1],
        "tiny",
        [policy.prompt_ids(USER)],
        (0.0, 1.0, 500),
        should_stop=lambda: True,
    )
    assert len(rows[0].token_ids) == 1  # stopped at its first token instead of 500
    token = control.CancelToken()
    token.cancel("the agent hung up")
    with control.use(control.Controls(token=token)), pytest.raises(control.TrialCancelled, match="hung up"):
        policy.complete(USER)


def test_the_proxy_stops_a_generation_when_the_agent_hangs_up(tiny_model, tmp_path) -> None:
    policy = hf_policy(tiny_model, temperature=1.0, **LONG)
    policy._eos_ids = [-1]  # it never ends by itself
    traj = Trajectory(task={}, agent={})
    proxy = RecordingProxy(policy, traj, tmp_path, "m")
    conn = socket.socket(socket.AF_UNIX)
    conn.connect(str(tmp_path / SOCKET_NAME))
    body = json.dumps({"model": "m", "messages": USER}).encode()
    conn.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    deadline = time.monotonic() + 30
    while not proxy.calls and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    conn.close()  # the agent's own request timeout: it hangs up
    while proxy.calls[0]["status"] == "running" and time.monotonic() < deadline:
        time.sleep(0.05)
    started = time.monotonic()
    proxy.stop()
    assert time.monotonic() - started < 5  # nothing left running
    assert proxy.calls[0]["status"] == "abandoned" and "hung up" in proxy.calls[0]["error"], proxy.calls
    assert proxy.calls[0]["seconds"] < 20 and not traj.turns


def test_a_generation_running_at_exit_is_stopped_not_aborted(tiny_model, tmp_path) -> None:
    """A request whose agent went away still generating in a daemon thread when the process exits:
    torch's native frames then abort the process (`terminate called without an active exception`)."""
    script = tmp_path / "exit.py"
    script.write_text(
        "import atexit, threading, time\n"
        "from clawgym.policy.hf import HFPolicy\n"
        "ended = []\n"
        "def work():\n"
        "    try:\n"
        f"        policy.complete({USER!r})\n"
        "    except Exception as exc:\n"
        "        ended.append(str(exc))\n"
        "worker = threading.Thread(target=work, daemon=True)\n"
        "atexit.register(lambda: print('ended:', worker.join(10) or ended, flush=True))  # runs after hf's\n"
        f"policy = HFPolicy({{'type': 'hf', 'model': {tiny_model!r}, 'device': 'cpu', 'temperature': 1.0, "
        f"'max_tokens': {LONG['max_tokens']}, 'context_window': {LONG['context_window']}}})\n"
        "policy._eos_ids = [-1]\n"
        "worker.start()\n"
        "time.sleep(1.0)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ended: ['generation stopped: the process is exiting']" in done.stdout, done.stdout + done.stderr[-2000:]


def test_an_endpoints_context_overflow_reaches_the_client_as_one(tmp_path) -> None:
    scripted = ScriptedPolicy({"type": "scripted", "turns": [{"context_overflow": "9000 tokens > 8192"}]})
    with ServerThread(policy=scripted, served_name="m") as server:
        client = OpenAIPolicy({"type": "openai", "model": "m", "base_url": server.base_url, "backoff": 0})
        with pytest.raises(ContextOverflow, match="context window"):
            client.complete(USER)
        client.close()
    assert len(scripted.calls) == 1  # not retried: asking again cannot help


def test_hung_up_requests_do_not_keep_the_proxy_busy(tmp_path) -> None:
    slow = ScriptedPolicy({"type": "scripted", "turns": ["late"], "latency_s": 600})
    traj = Trajectory(task={}, agent={})
    proxy = RecordingProxy(slow, traj, tmp_path, "m")
    sender = threading.Thread(target=_post_and_wait, args=(tmp_path / SOCKET_NAME,), daemon=True)
    sender.start()
    deadline = time.monotonic() + 10
    while not proxy.calls and time.monotonic() < deadline:
        time.sleep(0.05)
    started = time.monotonic()
    proxy.stop()  # the agent's run is over while its request still waits for the model
    assert time.monotonic() - started < 5
    assert proxy.calls[0]["status"] == "abandoned" and "run is over" in proxy.calls[0]["error"]


def _post_and_wait(path: Path) -> None:
    conn = socket.socket(socket.AF_UNIX)
    conn.connect(str(path))
    body = json.dumps({"model": "m", "messages": USER}).encode()
    conn.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    try:
        conn.recv(65536)
    except OSError:
        pass
    finally:
        conn.close()


def test_only_what_the_agent_cannot_cause_at_will_is_a_model_error():
    from clawgym.agent.proxy import model_ending

    answered = {"index": 0, "status": "answered", "seconds": 1.0}
    hung_up = {"index": 0, "status": "abandoned", "seconds": 0.2, "error": "the agent hung up"}
    rejected = {"index": 0, "status": "rejected", "seconds": 0.0, "error": "RequestRejected: HTTP 400"}
    failed = {"index": 0, "status": "failed", "seconds": 3.0, "error": "PolicyError: connection refused"}
    assert model_ending([failed]) == ("model_error", "model call 1 failed: PolicyError: connection refused")
    assert model_ending([hung_up]) is None  # a black box that hangs up at once chose to
    assert model_ending([hung_up], patience=30) is None  # ... long before its own model timeout
    assert model_ending([{**hung_up, "seconds": 29.0}], patience=30)[0] == "model_error"  # the model was too slow
    assert model_ending([rejected]) is None  # a request the endpoint refused is the request's doing
    assert model_ending([answered, {**hung_up, "index": 1}], patience=0.1) is None


def test_a_black_box_agent_cannot_ask_for_a_longer_turn_than_the_run_allows():
    from clawgym.agent.proxy import RecordingPolicy
    from clawgym.policy.base import Completion, Policy
    from clawgym.records.trajectory import Trajectory

    class Upstream(Policy):
        type = "upstream_test"
        seen: list = []

        def complete(self, messages, tools=None, **sampling):
            self.seen.append(sampling.get("max_tokens"))
            return Completion(message={"role": "assistant", "content": "ok"})

    upstream = Upstream({"type": "upstream_test", "max_tokens": 256})
    recorder = RecordingPolicy(upstream, Trajectory(task={}, agent={}))
    for asked in (100000, 64, None):
        recorder.complete([{"role": "user", "content": "hi"}], max_tokens=asked)
    assert upstream.seen == [256, 64, None]  # cut to the run's 256; a smaller or no request stays as asked
