"""`clawgym validate`'s lint runs the lazy agents on every instance whose reference passes: a task
paying one more than 0.1 is a problem at the first check that paid, naming the spec file, the
variant, its score and the checks, with how to fix it."""

from __future__ import annotations

from pathlib import Path

import lazy_tasks as lt
from clawgym.compile.compiler import compile_task, load_task_spec
from clawgym.run.lint import lint_report, lint_tasks


def instances(lib: Path, name: str, checks: list[dict]):
    spec = load_task_spec(lt.write_spec(lib / "specs", name, checks))
    return [compile_task(spec, 0)]


def test_a_lazy_proof_task_has_no_problem_and_reports_its_lazy_score(lib):
    tasks = instances(lib, "north-good", lt.GOOD)
    report = lint_report(tasks, jobs=1)
    assert report.problems == []
    assert report.scores(tasks[0].spec_file) == "oracle 1.000, nop 0.000, tamper 0.000, lazy 0.000"


def test_a_task_paying_a_lazy_agent_is_a_problem_at_the_paying_check(lib):
    tasks = instances(lib, "north-skeleton", lt.HEADER_PAYS)
    report = lint_report(tasks, jobs=1)
    [problem] = report.problems
    spec = tasks[0].spec_file
    assert problem.file == spec and problem.key == "checks[1]"
    lines = Path(spec).read_text().splitlines()
    assert lines[problem.line - 1].lstrip("- ").startswith("type: text_contains")  # the header check
    assert problem.what == (
        "a lazy agent scores more than 0.1 on seed 0: the worst, on seed 0, is skeleton (every output with its "
        "name and format, no content) scores 0.500; paying: north columns 1.000"
    )
    assert problem.hint == (
        "make the checks depend on the computed content: no weight on a file's existence or on untouched inputs, "
        "no lone number, no partial credit for the unfiltered input"
    )
    assert report.scores(spec).endswith("lazy 0.500")
    # lint_tasks leaves the slower agents to `validate` unless asked
    assert lint_tasks(tasks, jobs=1) == [] and len(lint_tasks(tasks, jobs=1, lazy=True)) == 1
