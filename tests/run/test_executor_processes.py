"""The local executor with worker processes: the same results folder, resume, timeouts and caps as
threads, caps holding across the processes, a worker that dies costing only its own trials, and
the automatic choice by concurrency and cores."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from clawgym import trial_controls as control
from clawgym.agent.base import Agent
from clawgym.cli.main import main
from clawgym.errors import ClawgymError
from clawgym.files.tempdirs import work_root
from clawgym.policy.base import Completion, Policy
from clawgym.registry import _REGISTRY, register
from clawgym.run import executors
from clawgym.run.plan import RunPlan


def _log(folder: str, what: str, start: float) -> None:
    """One line per interval, appended by whichever process ran it (O_APPEND writes do not tear)."""
    with open(os.path.join(folder, "intervals.log"), "a") as f:
        f.write(json.dumps({"what": what, "pid": os.getpid(), "start": start, "end": time.monotonic()}) + "\n")


class _Holder(Agent):
    """Holds its sandbox for `seconds`, logging the interval; with `die_once` the first try kills its
    own worker process (a stand-in for a worker killed from outside)."""

    type = "holder"
    schema = {
        "type": "object",
        "properties": {
            "type": {},
            "seconds": {"type": "number"},
            "log": {"type": "string"},
            "die_once": {"type": "boolean"},
        },
    }

    def run(self, task, sandbox):
        marker = Path(self.config["log"]) / f"died-{task.seed}"
        if self.config.get("die_once") and task.seed == 0 and not marker.exists():
            marker.write_text("x")
            os.kill(os.getpid(), signal.SIGKILL)
        start = time.monotonic()
        assert sandbox.exec("true").exit_code == 0
        control.sleep(float(self.config.get("seconds", 0.3)))
        _log(self.config["log"], "sandbox", start)
        return self.new_trajectory(task).finish("completed")


class _Timed(Policy):
    """Answers after `latency_s`, logging the interval (inside the run's model-request slot)."""

    type = "timed_test"
    schema = {"type": "object", "properties": {"type": {}, "latency_s": {"type": "number"}, "log": {"type": "string"}}}

    def complete(self, messages, tools=None, **sampling):
        start = time.monotonic()
        time.sleep(float(self.config.get("latency_s", 0.2)))
        _log(self.config["log"], "request", start)
        return Completion(message={"role": "assistant", "content": "done"})


@pytest.fixture
def lib(lib):
    register("agent", "holder")(_Holder)
    register("policy", "timed_test")(_Timed)
    (lib / "log").mkdir()
    yield lib
    _REGISTRY["agent"].pop("holder", None)
    _REGISTRY["policy"].pop("timed_test", None)


def run_spec(root: Path, agents: str, extra: str = "", seeds: str = "{count: 8}") -> None:
    (root / "specs" / "run.yaml").write_text(
        f"apiVersion: clawgym/v1\nkind: Run\nname: t\ntasks: [good.yaml]\nseeds: {seeds}\nagents: {agents}\n"
        f"out: out\nexecutor: {{type: local, processes: 2}}\n{extra}"
    )


def invoke(*args: str):
    result = CliRunner().invoke(main, ["run", *args, "--quiet"])
    assert result.exit_code == 0, result.output + (result.stderr or "")
    return result


def records(root: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in (root / "out" / "trials").glob("*/record.json")}


def intervals(root: Path, what: str) -> list[dict]:
    lines = (root / "log" / "intervals.log").read_text().splitlines()
    return [row for row in map(json.loads, lines) if row["what"] == what]


def most_at_once(rows: list[dict]) -> int:
    events = sorted([(r["start"], 1) for r in rows] + [(r["end"], -1) for r in rows], key=lambda e: (e[0], e[1]))
    now = most = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


def test_caps_hold_across_worker_processes(lib):
    log = lib / "log"
    run_spec(lib, f"[{{type: holder, seconds: 0.5, log: '{log}'}}]", "concurrency: 8\nmax_sandboxes: 3\n")
    invoke("specs/run.yaml")
    rows = intervals(lib, "sandbox")
    assert len(rows) == 8 and len(records(lib)) == 8
    assert len({r["pid"] for r in rows}) == 2, "both worker processes ran trials"
    assert os.getpid() not in {r["pid"] for r in rows}, "the runner's own process ran none"
    assert most_at_once(rows) == 3

    (lib / "out").rename(lib / "out-sandboxes")
    run_spec(lib, f"[{{type: claw, policy: {{type: timed_test, latency_s: 0.4, log: '{log}'}}}}]", "concurrency: 8\n")
    invoke("specs/run.yaml", "--max-model-requests", "2")
    rows = intervals(lib, "request")
    assert len(rows) == 8 and len({r["pid"] for r in rows}) == 2
    assert most_at_once(rows) == 2
    assert all(r["status"] == "failed" for r in records(lib).values())  # ran, answered, graded


def test_same_results_folder_timeouts_and_resume(lib):
    log = lib / "log"
    run_spec(
        lib,
        f"[{{type: holder, name: slow, seconds: 30, log: '{log}'}}, {{type: oracle}}]",
        "concurrency: 4\nretries: {max: 0}\n",
        seeds="[0, 1]",
    )
    t0 = time.monotonic()
    invoke("specs/run.yaml", "--trial-timeout", "2")
    assert time.monotonic() - t0 < 25
    recs = records(lib)
    for seed in (0, 1):
        slow, oracle = recs[f"good.s{seed}.slow.a0"], recs[f"good.s{seed}.oracle.a0"]
        assert slow["status"] == "error" and slow["error"] == "the trial timed out after 2s"
        assert oracle["status"] == "passed"
        assert (lib / "out" / "trials" / f"good.s{seed}.oracle.a0" / "trajectory.json").is_file()
    manifest = json.loads((lib / "out" / "run.json").read_text())
    assert manifest["executor"] == {"type": "local", "processes": 2}

    kept = recs["good.s1.oracle.a0"]["finished_at"]
    (lib / "out" / "trials" / "good.s0.oracle.a0" / "record.json").unlink()
    result = invoke("--resume", "out", "--trial-timeout", "2")
    assert "resuming: 1 of 4" in result.output  # the lost trial and the two errors run again
    after = records(lib)
    assert after["good.s0.oracle.a0"]["status"] == "passed" and after["good.s1.oracle.a0"]["finished_at"] == kept


def test_a_worker_that_dies_costs_only_its_own_trials(lib):
    log = lib / "log"
    run_spec(
        lib,
        f"[{{type: holder, seconds: 0.2, die_once: true, log: '{log}'}}]",
        "concurrency: 4\nretries: {max: 1, backoff: 0.1}\n",
        seeds="{count: 4}",
    )
    invoke("specs/run.yaml")
    recs = records(lib)
    assert len(recs) == 4 and all(r["status"] == "failed" for r in recs.values())  # graded, none lost
    assert recs["good.s0.holder.a0"]["tries"] == 2  # its worker died on the first try
    assert len({r["pid"] for r in intervals(lib, "sandbox")}) >= 2


def test_the_slots_of_a_worker_that_dies_are_given_back(lib):
    """The worker killed while its trial held the run's one sandbox slot: the slot is free again
    for the retry and the other trials (before, the run waited on it until the trials timed out)."""
    log = lib / "log"
    run_spec(
        lib,
        f"[{{type: holder, seconds: 0.2, die_once: true, log: '{log}'}}]",
        "concurrency: 4\nmax_sandboxes: 1\nretries: {max: 1, backoff: 0.1}\n",
        seeds="{count: 4}",
    )
    t0 = time.monotonic()
    invoke("specs/run.yaml", "--trial-timeout", "30")
    assert time.monotonic() - t0 < 20
    recs = records(lib)
    assert len(recs) == 4 and all(r["status"] == "failed" for r in recs.values())
    assert recs["good.s0.holder.a0"]["tries"] == 2
    assert most_at_once(intervals(lib, "sandbox")) == 1


def test_killing_the_runner_ends_its_workers(lib):
    """kill -9 of the runner: the workers see their pipe close, cancel their trials and exit."""
    run_spec(
        lib,
        "[{type: claw, policy: {type: scripted, latency_s: 60, turns: [done]}}]",
        "concurrency: 4\n",
        seeds="{count: 4}",
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "clawgym.cli.main", "run", "specs/run.yaml", "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    workers: list[int] = []
    while time.monotonic() < deadline and len(workers) < 2:
        time.sleep(0.2)
        out = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
        workers = [int(p) for p in out]
    assert len(workers) >= 2, "the runner forked its workers"
    time.sleep(1.5)  # trials are inside their sandboxes
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(_alive(p) for p in workers):
        time.sleep(0.2)
    assert not any(_alive(p) for p in workers), "workers outlived the runner"
    assert not [p for w in workers for p in work_root().glob(f"clawgym-*-{w}-*")], "work folders left behind"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _plan(concurrency: int, agent: dict | None = None) -> RunPlan:
    from clawgym.run.trial import Trial

    class _T:
        name, seed = "t", 0

    return RunPlan(
        name="p",
        trials=[Trial(_T(), agent or {"type": "oracle"})],
        out=Path("out"),  # type: ignore[arg-type]
        concurrency=concurrency,
    )


def test_processes_are_chosen_by_concurrency_and_cores(monkeypatch):
    from clawgym.run.executors import processes

    monkeypatch.setattr(processes, "usable_cores", lambda: 2)
    assert executors.local_processes(_plan(4)) == 1
    assert executors.local_processes(_plan(127)) == 1
    assert executors.local_processes(_plan(128)) == 2
    assert executors.local_processes(_plan(1024)) == 2
    assert executors.local_processes(_plan(1024, {"type": "claw", "policy": {"type": "hf", "model": "m"}})) == 1
    assert executors.local_processes(_plan(4), 3) == 3
    monkeypatch.setattr(processes, "usable_cores", lambda: 1)
    assert executors.local_processes(_plan(1024)) == 1
    monkeypatch.setattr(processes, "usable_cores", lambda: 16)
    assert executors.local_processes(_plan(300)) == 3
    with pytest.raises(ClawgymError, match="live"):
        executors.local_processes(_plan(8, {"type": "claw", "policy": {"type": "hf", "model": "live:x"}}), 2)
