"""The outcome contract end to end: every way a trial ends gets its outcome, and evaluation obeys
each outcome's rule (retried, excluded and counted, or scored), overridable in the Run spec."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from clawgym.agent.base import Agent
from clawgym.cli.main import main
from clawgym.errors import InfraError
from clawgym.policy.base import PolicyError
from clawgym.records.outcomes import OUTCOMES
from clawgym.registry import _REGISTRY, register

SOLVE = "mkdir -p output && awk '{s+=$1} END {print s}' input/numbers.txt > output/total.txt"


class _Ends(Agent):
    """Solves the task (or not), then reports the outcome its config names; or raises."""

    type = "ends_as"
    schema = {
        "type": "object",
        "properties": {"type": {}, "name": {}, "outcome": {"type": "string"}, "solve": {}, "raise": {}},
    }

    def run(self, task, sandbox):
        if self.config.get("solve"):
            assert sandbox.exec(SOLVE).exit_code == 0
        kind = self.config.get("raise")
        if kind == "policy":
            raise PolicyError("connection refused by the model endpoint")
        if kind == "infra":
            raise InfraError("the sandbox was killed from outside (bubblewrap ended by signal 9)")
        if kind == "bug":
            raise KeyError("a bug of ours")
        return self.new_trajectory(task).finish(self.config.get("outcome") or "completed", "as configured")


@pytest.fixture
def lib(lib):
    register("agent", "ends_as")(_Ends)
    yield lib
    _REGISTRY["agent"].pop("ends_as", None)


def run(lib: Path, agents: list[dict], extra: str = "", *args: str) -> dict[str, dict]:
    spec = lib / "specs" / "run.yaml"
    spec.write_text(
        "apiVersion: clawgym/v1\nkind: Run\nname: t\ntasks: [good.yaml]\nseeds: [0]\n"
        f"agents: {json.dumps(agents)}\nout: out\nretries: {{max: 1, backoff: 0}}\n{extra}"
    )
    result = CliRunner().invoke(main, ["run", str(spec), "--quiet", *args])
    assert result.exit_code == 0, result.output
    return {
        p.parent.name.split(".")[2]: json.loads(p.read_text()) for p in (lib / "out" / "trials").glob("*/record.json")
    }


def agent(name: str, **config) -> dict:
    return {"type": "ends_as", "name": name, **config}


def test_each_way_a_trial_ends_gets_its_outcome_and_only_the_agents_own_are_graded(lib):
    recs = run(
        lib,
        [
            agent("done", solve=True),
            agent("slow", solve=True, outcome="agent_timeout"),
            agent("budget", outcome="budget_exhausted"),
            agent("overflow", outcome="context_overflow"),
            agent("crash", outcome="failed"),  # an older agent's word
            agent("nomodel", outcome="model_error"),
            agent("policy", **{"raise": "policy"}),
            agent("sandbox", **{"raise": "infra"}),
            agent("bug", **{"raise": "bug"}),
        ],
    )
    ended = {name: (r["outcome"], r["status"], r["reward"]) for name, r in recs.items()}
    assert ended == {
        "done": ("completed", "passed", 1.0),
        "slow": ("agent_timeout", "passed", 1.0),  # the work was done: its timeout is graded as it stands
        "budget": ("budget_exhausted", "failed", 0.0),
        "overflow": ("context_overflow", "failed", 0.0),
        "crash": ("agent_crash", "failed", 0.0),
        "nomodel": ("model_error", "error", None),  # infrastructure: never a reward of 0
        "policy": ("model_error", "error", None),
        "sandbox": ("sandbox_error", "error", None),
        "bug": ("harness_error", "error", None),
    }
    assert all(r["outcome"] in OUTCOMES for r in recs.values())
    # infrastructure outcomes were retried (retries: max 1), the agent's own were not
    assert {n: r["tries"] for n, r in recs.items() if r["status"] == "error"} == dict.fromkeys(
        ("nomodel", "policy", "sandbox", "bug"), 2
    )
    assert all(r["tries"] == 1 for r in recs.values() if r["status"] != "error")


def test_a_verifier_failure_is_a_grader_error_and_a_judge_endpoint_failure_a_judge_error(lib, monkeypatch):
    from clawgym.run import trial
    from clawgym.verify.judge import JudgeError

    def broken_verifier(*args, **kwargs):
        raise InfraError("the verifier timed out after 20s")

    verify_task = trial.verify_task
    monkeypatch.setattr(trial, "verify_task", broken_verifier)
    recs = run(lib, [agent("a", solve=True)])
    assert (recs["a"]["outcome"], recs["a"]["status"], recs["a"]["reward"]) == ("grader_error", "error", None)

    monkeypatch.setattr(trial, "verify_task", verify_task)
    shutil.rmtree(lib / "out")
    spec = lib / "specs" / "good.yaml"
    spec.write_text(spec.read_text() + "rubric:\n  - {criterion: The total is right, weight: 1}\n")

    def judge_down(*args, **kwargs):
        raise JudgeError("the rubric judge failed: connection refused")

    monkeypatch.setattr(trial, "_judge", judge_down)
    recs = run(lib, [agent("a", solve=True)], "judge: {type: scripted, turns: ['{}']}\n")
    assert (recs["a"]["outcome"], recs["a"]["status"], recs["a"]["reward"]) == ("judge_error", "error", None)


def test_the_run_spec_overrides_how_evaluation_counts_an_outcome(lib):
    agents = [
        agent("ok", solve=True),
        agent("slow", solve=True, outcome="agent_timeout"),
        agent("down", outcome="model_error"),
    ]
    recs = run(lib, agents, "outcomes: {evaluation: {agent_timeout: exclude, model_error: score}}\n")
    assert recs["down"]["tries"] == 1  # scored, so not retried
    summary = json.loads((lib / "out" / "summary.json").read_text())
    rows = {r["agent"]: r for r in summary["rows"] if r["category"] == "all"}
    assert (rows["ok"]["mean_reward"], rows["ok"]["errors"]) == (1.0, 0)
    assert (rows["slow"]["mean_reward"], rows["slow"]["errors"]) == (None, 1)  # excluded and counted
    assert (rows["down"]["mean_reward"], rows["down"]["pass_rate"], rows["down"]["errors"]) == (0.0, 0.0, 0)
    assert rows["down"]["outcomes"] == {"model_error": 1.0}
    manifest = json.loads((lib / "out" / "run.json").read_text())
    assert manifest["outcomes"]["evaluation"]["agent_timeout"] == "exclude"

    report = CliRunner().invoke(main, ["report", "out"])
    assert report.exit_code == 0, report.output
    assert "model_error* 100%" in report.output and "agent_timeout 100%" in report.output
    compare = CliRunner().invoke(main, ["compare", "out", "--json", "compare.json"])
    assert compare.exit_code == 0, compare.output
    overall = {g["harness"]: g for g in json.loads((lib / "compare.json").read_text())["overall"]}
    assert (overall["down"]["outcomes"], overall["down"]["reward"]["mean"]) == ({"model_error": 1.0}, 0.0)
    assert (overall["slow"]["errors"], overall["slow"]["reward"]["mean"]) == (1, None)


def test_by_default_an_infrastructure_outcome_is_excluded_and_counted_never_a_zero(lib):
    run(lib, [agent("ok", solve=True), agent("down", outcome="model_error")])
    rows = {r["agent"]: r for r in json.loads((lib / "out" / "summary.json").read_text())["rows"]}
    assert (rows["down"]["mean_reward"], rows["down"]["errors"], rows["down"]["outcomes"]) == (
        None,
        1,
        {"model_error": 1.0},
    )


def test_a_bad_override_is_refused_at_its_line(lib):
    spec = lib / "specs" / "run.yaml"
    spec.write_text(
        "apiVersion: clawgym/v1\nkind: Run\nname: t\ntasks: [good.yaml]\nagents: [{type: nop}]\n"
        "outcomes:\n  evaluation:\n    model_eror: score\n    agent_timeout: forgive\n"
    )
    result = CliRunner().invoke(main, ["run", str(spec), "--quiet"])
    assert result.exit_code == 2
    assert "run.yaml:8" in result.output and "model_eror" in result.output
    assert "run.yaml:9" in result.output and "forgive" in result.output
    assert "Traceback" not in result.output
