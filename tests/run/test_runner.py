"""The asyncio runner: caps on trials, sandboxes and model requests; per-trial timeouts; Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from clawgym import trial_controls as control
from clawgym.agent.base import Agent
from clawgym.cli.main import main
from clawgym.files.tempdirs import work_root
from clawgym.policy.base import Completion, Policy
from clawgym.registry import _REGISTRY, register


class Gauge:
    """Counts how many callers are inside at once (thread-safe) and remembers the most."""

    def __init__(self) -> None:
        self.lock, self.now, self.most = threading.Lock(), 0, 0

    def __enter__(self) -> None:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)

    def __exit__(self, *exc: object) -> None:
        with self.lock:
            self.now -= 1


SANDBOXES, REQUESTS = Gauge(), Gauge()


class _Sleeper(Agent):
    """Holds its sandbox for `seconds` (counted by SANDBOXES), running one command in it."""

    type = "sleeper"
    schema = {"type": "object", "properties": {"type": {}, "seconds": {"type": "number"}}}

    def run(self, task, sandbox):
        with SANDBOXES:
            assert sandbox.exec("true").exit_code == 0
            control.sleep(float(self.config.get("seconds", 0.3)))  # ends early when the trial is cancelled
        return self.new_trajectory(task).finish("completed")


class _SlowPolicy(Policy):
    """Answers after `latency_s`, counted by REQUESTS."""

    type = "slow_test"
    schema = {"type": "object", "properties": {"type": {}, "latency_s": {"type": "number"}}}

    def complete(self, messages, tools=None, **sampling):
        with REQUESTS:
            time.sleep(float(self.config.get("latency_s", 0.2)))
        return Completion(message={"role": "assistant", "content": "done"})


@pytest.fixture
def lib(lib):
    """The fixture library, with this module's test agent and policy registered."""
    register("agent", "sleeper")(_Sleeper)
    register("policy", "slow_test")(_SlowPolicy)
    SANDBOXES.most = REQUESTS.most = 0
    yield lib
    _REGISTRY["agent"].pop("sleeper", None)
    _REGISTRY["policy"].pop("slow_test", None)


def run_spec(root: Path, agents: str, extra: str = "", seeds: str = "{count: 8}") -> Path:
    spec = root / "specs" / "run.yaml"
    spec.write_text(
        f"apiVersion: clawgym/v1\nkind: Run\nname: t\ntasks: [good.yaml]\nseeds: {seeds}\n"
        f"agents: {agents}\nout: out\n{extra}"
    )
    return spec


def records(root: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in (root / "out" / "trials").glob("*/record.json")}


def invoke(*args: str):
    result = CliRunner().invoke(main, ["run", *args, "--quiet"])
    assert result.exit_code == 0, result.output + (result.stderr or "")
    return result


def test_live_sandboxes_are_capped_separately_from_trials(lib):
    run_spec(lib, "[{type: sleeper, seconds: 0.4}]", "concurrency: 6\nmax_sandboxes: 2\n")
    invoke("specs/run.yaml")
    assert SANDBOXES.most == 2
    assert len(records(lib)) == 8


def test_model_requests_are_capped_across_trials(lib):
    agent = "[{type: claw, policy: {type: slow_test, latency_s: 0.3}}]"
    run_spec(lib, agent, "concurrency: 8\n")
    invoke("specs/run.yaml", "--max-model-requests", "3")
    assert REQUESTS.most == 3
    assert all(r["status"] == "failed" for r in records(lib).values())  # ran, answered, graded


def test_without_a_cap_requests_run_as_wide_as_trials(lib):
    run_spec(lib, "[{type: claw, policy: {type: slow_test, latency_s: 0.3}}]", "concurrency: 8\n")
    invoke("specs/run.yaml")
    assert REQUESTS.most == 8


def test_a_trial_past_its_timeout_is_an_error_and_the_rest_go_on(lib):
    agents = "[{type: sleeper, name: slow, seconds: 30}, {type: oracle}]"
    run_spec(lib, agents, "concurrency: 4\nretries: {max: 0}\n", seeds="[0, 1]")
    before = set(work_root().glob("clawgym-trial-*"))
    t0 = time.monotonic()
    invoke("specs/run.yaml", "--trial-timeout", "1.5")
    assert time.monotonic() - t0 < 20
    recs = records(lib)
    for seed in (0, 1):
        slow, oracle = recs[f"good.s{seed}.slow.a0"], recs[f"good.s{seed}.oracle.a0"]
        assert slow["status"] == "error" and slow["error"] == "the trial timed out after 1.5s"
        assert oracle["status"] == "passed"
    # the cancelled trials cleaned up: no work folder of this process is left
    assert not (set(work_root().glob(f"clawgym-trial-{os.getpid()}-*")) - before)


def test_timeout_cancels_a_model_wait_and_kills_the_sandbox(lib):
    """A claw trial stuck waiting on its model ends at the timeout, not when the model answers."""
    agent = "[{type: claw, policy: {type: scripted, latency_s: 60, turns: [done]}}]"
    run_spec(lib, agent, "retries: {max: 1, backoff: 0.1}\n", seeds="[0]")
    t0 = time.monotonic()
    invoke("specs/run.yaml", "--trial-timeout", "1")
    assert time.monotonic() - t0 < 15
    rec = records(lib)["good.s0.claw.a0"]
    assert rec["status"] == "error" and "timed out after 1s" in rec["error"] and rec["tries"] == 2


def test_manifest_records_the_caps_and_executor(lib):
    run_spec(lib, "[{type: oracle}]", "concurrency: 3\nmax_model_requests: 2\ntrial_timeout: 90\n", seeds="[0]")
    invoke("specs/run.yaml", "--max-sandboxes", "2")
    manifest = json.loads((lib / "out" / "run.json").read_text())
    assert (manifest["concurrency"], manifest["max_sandboxes"], manifest["max_model_requests"]) == (3, 2, 2)
    assert manifest["trial_timeout"] == 90 and manifest["executor"] == {"type": "local"}


def _default_sigint() -> None:
    """Ctrl-C reaches the child even when these tests were started with SIGINT ignored (in the background)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_stops_promptly_keeps_finished_trials_and_resume_completes(lib):
    slow = (
        (lib / "specs" / "good.yaml")
        .read_text()
        .replace("  - exec: mkdir -p output", "  - exec: sleep 0.5\n  - exec: mkdir -p output")
        .replace("name: good", "name: slow")
    )
    (lib / "specs" / "slow.yaml").write_text(slow)
    spec = lib / "specs" / "run.yaml"
    spec.write_text(
        "apiVersion: clawgym/v1\nkind: Run\nname: t\ntasks: [slow.yaml]\nseeds: {count: 40}\n"
        "agents: [{type: oracle}]\nconcurrency: 4\nout: out\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "clawgym.cli.main", "run", str(spec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )
    deadline = time.time() + 60
    while time.time() < deadline and len(list((lib / "out" / "trials").glob("*/record.json"))) < 6:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    t0 = time.monotonic()
    _, err = proc.communicate(timeout=60)
    assert time.monotonic() - t0 < 15, "Ctrl-C should stop the run within seconds"
    assert proc.returncode != 0
    assert "interrupted; the" in err and "--resume out" in err and "Traceback" not in err
    kept = records(lib)
    assert 6 <= len(kept) < 40 and all(r["status"] == "passed" for r in kept.values())
    assert not list(work_root().glob(f"clawgym-*-{proc.pid}-*")), "work folders left behind"
    result = invoke("--resume", "out")
    assert f"resuming: {len(kept)} of 40" in result.output
    done = records(lib)
    assert len(done) == 40 and all(r["status"] == "passed" for r in done.values())
    assert all(done[t]["finished_at"] == r["finished_at"] for t, r in kept.items())
