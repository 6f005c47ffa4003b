"""Trials that end in `error` are retried with backoff within the run; failures are not."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from clawgym.agent.base import Agent
from clawgym.cli.main import main
from clawgym.errors import InfraError
from clawgym.registry import _REGISTRY, register

FIXTURES = Path(__file__).parent.parent / "fixtures" / "lib"


class _Flaky(Agent):
    """Fails with an infrastructure error on the first `fail` calls per task instance, then does nothing."""

    type = "flaky"
    schema = {"type": "object", "properties": {"type": {}, "fail": {"type": "integer"}}}
    calls: dict[str, int] = {}
    lock = threading.Lock()

    def run(self, task, sandbox):
        with self.lock:
            n = self.calls[task.id] = self.calls.get(task.id, 0) + 1
        if n <= int(self.config.get("fail", 1)):
            raise InfraError(f"simulated sandbox death #{n}")
        return self.new_trajectory(task).finish("completed")


@pytest.fixture
def flaky(tmp_path, monkeypatch, bwrap):
    register("agent", "flaky")(_Flaky)
    _Flaky.calls = {}
    root = tmp_path / "lib"
    shutil.copytree(FIXTURES, root, ignore=shutil.ignore_patterns("bad"))
    monkeypatch.chdir(root)
    yield root
    _REGISTRY["agent"].pop("flaky", None)


def _run(root: Path, fail: int, retries: int) -> dict[str, dict]:
    (root / "specs" / "run.yaml").write_text(f"""apiVersion: clawgym/v1
kind: Run
name: flaky
tasks: [good.yaml]
seeds: [0, 1]
agents: [{{type: flaky, fail: {fail}}}]
retries: {{max: {retries}, backoff: 0.05}}
out: out
""")
    result = CliRunner().invoke(main, ["run", "specs/run.yaml", "--quiet"])
    assert result.exit_code == 0, result.output + result.stderr
    return {p.parent.name: json.loads(p.read_text()) for p in (root / "out" / "trials").glob("*/record.json")}


def test_errors_are_retried_until_they_succeed(flaky):
    records = _run(flaky, fail=2, retries=2)
    assert len(records) == 2
    for rec in records.values():
        assert rec["status"] == "failed" and rec["reward"] == 0.0 and rec["tries"] == 3  # nop-like: graded 0


def test_errors_left_after_the_retries_stay_errors(flaky):
    records = _run(flaky, fail=5, retries=1)
    for rec in records.values():
        assert rec["status"] == "error" and rec["reward"] is None and rec["tries"] == 2
        assert "simulated sandbox death #2" in rec["error"]
