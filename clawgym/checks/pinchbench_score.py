"""PinchBench's scoring rules, as its runner applies them (pure functions, no I/O).

- automated: the unweighted mean of the numeric values `grade()` returned; an empty dict or an
  exception scores 0;
- LLM judge: the judge's `total`, or the mean of its criterion scores when `total` is missing or
  above 1 (the `(Weight: X%)` of the rubric headings is not applied);
- hybrid: `(automated * w_a + judge * w_j) / (w_a + w_j)`, 0.5 / 0.5 by default;
- a run: the sum of the task means (a task's mean over its runs) divided by the number of tasks
  run, so a subset run reports on a smaller denominator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

DEFAULT_WEIGHTS = (0.5, 0.5)


def automated_score(values: Mapping[str, Any] | None) -> float:
    """The mean of the numeric values (booleans count 1 / 0); 0 for none."""
    numbers = [float(v) for v in (values or {}).values() if isinstance(v, (int, float)) and not isinstance(v, complex)]
    return sum(numbers) / len(numbers) if numbers else 0.0


def judge_total(answer: Mapping[str, Any] | None) -> float:
    """The judge's score as the runner reads its answer `{"scores": {...}, "total": t, "notes": ...}`."""
    answer = answer or {}
    total = answer.get("total")
    if isinstance(total, (int, float)) and not isinstance(total, bool) and math.isfinite(total) and total <= 1:
        return float(total)
    scores = answer.get("scores")
    values = [
        float(v)
        for v in (scores.values() if isinstance(scores, dict) else scores if isinstance(scores, list) else [])
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    ]
    return sum(values) / len(values) if values else 0.0


def hybrid_score(automated: float, judge: float, weights: tuple[float, float] | None = None) -> float:
    """The weighted combination of the automated and judge scores."""
    w_a, w_j = weights or DEFAULT_WEIGHTS
    if w_a + w_j <= 0:
        w_a, w_j = DEFAULT_WEIGHTS
    return (automated * w_a + judge * w_j) / (w_a + w_j)


def judge_share(weights: tuple[float, float] | None) -> float:
    """The judge's share of a hybrid score: our `rubric_weight` for the same combination."""
    w_a, w_j = weights or DEFAULT_WEIGHTS
    if w_a + w_j <= 0:
        w_a, w_j = DEFAULT_WEIGHTS
    return w_j / (w_a + w_j)


@dataclass
class RunScore:
    """PinchBench's score of a run, and what it was computed over."""

    score: float  # sum of task means / tasks run
    tasks_run: int
    suite_size: int | None = None  # tasks in the imported suite, when known
    task_means: dict[str, float] = field(default_factory=dict)
    missing_core: list[str] = field(default_factory=list)
    sanity_failed: bool = False  # task_sanity scored 0: the original runner aborts there

    @property
    def subset(self) -> bool:
        return self.suite_size is not None and self.tasks_run < self.suite_size

    def describe(self) -> str:
        """One line, e.g. 'PinchBench score 61.3% (12 tasks; a subset of 147: the denominator is 12)'."""
        text = f"PinchBench score {self.score * 100:.1f}% ({self.tasks_run} task{'s' if self.tasks_run != 1 else ''}"
        if self.subset:
            text += f"; a subset of {self.suite_size}: the denominator is {self.tasks_run}, as PinchBench reports it"
        text += ")"
        if self.sanity_failed:
            text += "; task_sanity scored 0, where the original runner stops the run"
        return text


def run_score(
    rewards: Iterable[tuple[str, float]],
    suite_size: int | None = None,
    core: Iterable[str] = (),
    sanity: str = "task_sanity",
) -> RunScore:
    """The run score of (task id, reward) pairs, one pair per run of a task."""
    by_task: dict[str, list[float]] = {}
    for task, reward in rewards:
        by_task.setdefault(task, []).append(float(reward))
    means = {t: sum(v) / len(v) for t, v in by_task.items()}
    score = sum(means.values()) / len(means) if means else 0.0
    return RunScore(
        score,
        len(means),
        suite_size,
        means,
        [c for c in core if c not in means],
        sanity in means and means[sanity] == 0,
    )
