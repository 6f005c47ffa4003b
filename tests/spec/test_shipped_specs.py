"""Every shipped spec validates, and every shipped task passes the lint on three seeds:
the reference solution scores 1.0 and doing nothing scores at most 0.1."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from clawgym.cli.main import main
from clawgym.compile.compiler import compile_task, load_task_spec
from clawgym.run.lint import lint_tasks
from clawgym.spec.task import CATEGORY_LABELS

ROOT = Path(__file__).resolve().parents[2]
TASK_SPECS = sorted((ROOT / "specs" / "tasks").rglob("*.yaml"))
SEEDS = (0, 1, 2)


def test_static_validation_of_everything_shipped(monkeypatch):
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(main, ["validate", "--static", "specs", "personas", "skills", "workspaces"])
    assert result.exit_code == 0, result.stderr


def test_content_inventory():
    assert len(list((ROOT / "personas").glob("*.yaml"))) >= 12
    assert len(list((ROOT / "skills").glob("*/SKILL.md"))) >= 12
    assert len(list((ROOT / "workspaces").glob("*/workspace.yaml"))) >= 6
    assert len(TASK_SPECS) >= 24
    categories = {load_task_spec(p).data["category"] for p in TASK_SPECS}
    assert categories == set(CATEGORY_LABELS)


@pytest.mark.parametrize("spec_path", TASK_SPECS, ids=lambda p: p.stem)
def test_oracle_scores_one_and_nop_at_most_a_tenth(spec_path, bwrap):
    spec = load_task_spec(spec_path)
    tasks = [compile_task(spec, seed) for seed in SEEDS]
    assert len({t.hash for t in tasks}) == len(SEEDS), "seeds must give distinct instances"
    problems = lint_tasks(tasks, jobs=2)
    assert not problems, "\n".join(p.format() for p in problems)


@pytest.mark.parametrize("spec_path", TASK_SPECS, ids=lambda p: p.stem)
def test_hand_written_tasks_pass_the_synthesis_filters(spec_path, bwrap):
    """The same bar as synthesized tasks: truncating the inputs and answering for what is left
    scores no more than doing nothing (and the reference, determinism and nop filters hold)."""
    from clawgym.synth.filters import FilterSettings, run_filters

    report = run_filters(compile_task(load_task_spec(spec_path), 0), FilterSettings(paths_mentioned=False))
    assert report.passed, report.to_dict()
    assert report.results["tamper"] <= report.results["nop"]
