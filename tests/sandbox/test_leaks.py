"""After a run, nothing is left behind: sandbox processes, work folders, cgroups, containers,
open files, threads or child processes (`benchmarks/leak_check.py` does the same at 1,000 trials)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import leak_check  # noqa: E402

from clawgym.run.runner import execute  # noqa: E402


def assert_nothing_left(before: dict, after: dict) -> None:
    for key, value in before.items():
        if isinstance(value, list):
            assert sorted(set(after[key]) - set(value)) == [], f"{key} left behind"
        else:
            assert after[key] <= value, f"{key}: {value} before, {after[key]} after"


def test_mixed_run_leaves_nothing_behind(tmp_path, bwrap):
    before = leak_check.census()
    records = execute(leak_check.leak_plan(tmp_path / "run", trials=120, concurrency=24))
    statuses = [r["status"] for r in records]
    # oracle passes; nop and the daemon-starting agent fail; the stuck one is cancelled by the timeout
    assert statuses.count("passed") == 30 and statuses.count("failed") == 60 and statuses.count("error") == 30
    assert_nothing_left(before, leak_check.census())


@pytest.mark.docker
def test_docker_run_leaves_no_container(tmp_path):
    from clawgym.sandbox.docker import docker_problem

    problem = docker_problem()
    if problem:
        pytest.skip(problem)
    before = leak_check.census()
    plan = leak_check.leak_plan(tmp_path / "run", trials=24, concurrency=6)
    plan.trials = [t for t in plan.trials if t.agent["type"] in ("oracle", "nop")]
    plan.sandbox, plan.trial_timeout = {"type": "docker"}, 120
    records = execute(plan)
    assert all(r["status"] != "error" for r in records), [r["error"] for r in records if r["error"]]
    assert_nothing_left(before, leak_check.census())
