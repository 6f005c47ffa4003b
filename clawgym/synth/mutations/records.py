"""What the mutation gates return and how they grade: the `Mutation` record and its verdicts, and
in-process grading of a task's checks on a workspace."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...checks.base import CheckContext
from ...records.trajectory import Trajectory
from ...spec.task import Task, thaw
from ...verify import Verdict, combine, run_checks

OK, PROBLEM, SKIPPED = "ok", "problem", "skipped"
EPS = 1e-9


@dataclass(frozen=True)
class Mutation:
    """One mutation or variant and its grade. `gate`: "step", "check name", "format" or "all"
    (nothing mutated: the reference's output fails); `name`: what was changed; `target`: the step,
    check or file it is about; `score`: the reward (steps, formats) or the check's score (check
    names), None when not graded; `verdict`: OK, PROBLEM or SKIPPED; `reason`: why, as a sentence."""

    gate: str
    name: str
    target: str
    score: float | None
    verdict: str
    reason: str

    @property
    def problem(self) -> bool:
        return self.verdict == PROBLEM


class Skip(Exception):
    """A mutation that does not apply here; the message says why."""


class Grading:
    """Grades workspaces of one task in this process, against one pristine copy."""

    def __init__(self, task: Task, pristine: Path, trajectory: dict | None, sandbox: dict | None):
        self.task, self.pristine, self.sandbox = task, Path(pristine), sandbox
        self.trajectory = trajectory or Trajectory(task=task.summary(), agent={"type": "oracle"}).to_dict()
        self.checks = [dict(c) for c in thaw(task.checks)]

    def verdict(self, workspace: Path, checks: list[dict] | None = None) -> Verdict:
        """The verdict of `checks` (default: all the task's checks) on `workspace`."""
        task = self.task
        ctx = CheckContext(
            workspace=Path(workspace),
            original=self.pristine,
            task_dir=Path(task.task_dir) if task.task_dir else None,
            params=thaw(task.params),
            mount=task.mount,
            trajectory=self.trajectory,
            sandbox=self.sandbox,
        )
        return combine(run_checks(self.checks if checks is None else checks, ctx))


def failing(verdict: Verdict) -> str:
    """The checks a verdict fails, with their scores (the first three)."""
    bad = [r for r in verdict.results if r.score < 1 - EPS]
    text = ", ".join(f"'{r.name}' ({r.score:.2f})" for r in bad[:3])
    return text + (f" and {len(bad) - 3} more" if len(bad) > 3 else "")


def unpassed(gate: str, verdict: Verdict, target: str) -> Mutation:
    """The one SKIPPED record of a gate whose reference output does not score 1.0."""
    why = f"the reference's own output scores {verdict.reward:.3f} (failing: {failing(verdict)}): nothing to mutate"
    return Mutation(gate, "every mutation", target, verdict.reward, SKIPPED, why)
