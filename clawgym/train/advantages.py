"""Groups of rollouts and their advantages (GRPO), with the reasons a rollout or a group is dropped.

A group is the G rollouts of one task instance with the same policy. Its advantages are the
rewards centred on the group mean, divided by the group's standard deviation (`normalise: std`,
GRPO) or not (`mean`, Dr. GRPO). What a rollout's outcome means here is the training rule of
`clawgym.records.outcomes`: `reward` uses its reward; `drop` removes it from its group with its
reason (by default every infrastructure outcome: a sandbox, model endpoint, grader or judge failure
never counts as reward 0); `mask` keeps its reward in the group's statistics but its tokens get no
loss (by default `context_overflow`). A group is dropped when fewer than `min_valid` rollouts
remain, or when all of them have the same reward: every advantage would be 0 and it would only
dilute the step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..records.outcomes import INFRASTRUCTURE, normalize, training_rules

EPS = 1e-6


@dataclass
class Rollout:
    """One sampled attempt: its trial record and where its trajectory is."""

    trial_id: str
    task_key: str  # the task instance (name@seed): rollouts of one key form a group
    status: str  # passed, failed or error
    reward: float | None
    error: str | None = None
    trajectory_path: Path | None = None
    advantage: float = 0.0
    outcome: str = "completed"  # the trial outcome (clawgym.records.outcomes)
    masked: bool = False  # in its group's statistics, but its tokens get no loss

    def __post_init__(self) -> None:
        self.outcome = normalize(self.outcome, status=self.status, error=self.error)

    @classmethod
    def from_record(cls, record: Any, trials_dir: Path) -> "Rollout":
        task = record.get("task") or {}
        return cls(
            trial_id=record["trial_id"],
            task_key=str(task.get("id") or task.get("name")),
            status=record.get("status", "error"),
            reward=record.get("reward"),
            error=record.get("error"),
            trajectory_path=trials_dir / record["trial_id"] / "trajectory.json",
            outcome=normalize(record.get("outcome"), status=record.get("status"), error=record.get("error")),
        )


@dataclass
class Group:
    """The valid rollouts of one task instance and their advantages."""

    task_key: str
    rollouts: list[Rollout] = field(default_factory=list)

    @property
    def rewards(self) -> list[float]:
        return [float(r.reward) for r in self.rollouts if r.reward is not None]


@dataclass
class Grouping:
    """The groups kept for the update, and what was dropped and why (for the log)."""

    kept: list[Group] = field(default_factory=list)
    dropped_rollouts: list[tuple[str, str]] = field(default_factory=list)  # (trial id, reason)
    dropped_groups: list[tuple[str, str]] = field(default_factory=list)  # (task key, reason)


def advantages(rewards: Sequence[float], normalise: str = "std") -> list[float]:
    """Group-normalised advantages: (r - mean) / std (population std), or r - mean."""
    n = len(rewards)
    mean = sum(rewards) / n
    centred = [r - mean for r in rewards]
    if normalise == "mean":
        return centred
    std = math.sqrt(sum(c * c for c in centred) / n)
    return [c / (std + EPS) for c in centred]


def form_groups(
    rollouts: Iterable[Rollout], *, min_valid: int = 2, normalise: str = "std", rules: Mapping[str, str] | None = None
) -> Grouping:
    """Group rollouts by task instance, apply each outcome's training rule (`rules`: outcome ->
    reward | drop | mask, the defaults when None), drop useless groups, set advantages."""
    rules = rules or training_rules()
    by_task: dict[str, list[Rollout]] = {}
    out = Grouping()
    for r in rollouts:
        by_task.setdefault(r.task_key, [])
        rule = rules.get(r.outcome, "drop")
        if rule == "drop" or (r.reward is None and r.outcome not in INFRASTRUCTURE):
            out.dropped_rollouts.append((r.trial_id, f"{r.outcome}: {r.error or 'no reward'}"))
            continue
        if r.reward is None:  # an infrastructure outcome the spec says to count: reward 0
            r.reward = 0.0
        r.masked = rule == "mask"
        by_task[r.task_key].append(r)
    for key, valid in by_task.items():
        rewards = [float(r.reward) for r in valid]  # type: ignore[arg-type]
        if len(valid) < min_valid:
            out.dropped_groups.append((key, f"{len(valid)} valid rollout(s), fewer than {min_valid}"))
            continue
        if max(rewards) - min(rewards) < EPS:
            out.dropped_groups.append((key, f"all {len(valid)} rewards equal ({rewards[0]:g})"))
            continue
        for r, a in zip(valid, advantages(rewards, normalise)):
            r.advantage = a
        out.kept.append(Group(key, valid))
    return out
