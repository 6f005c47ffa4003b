"""The written rubric a benchmark instance is reviewed against (docs/review-rubric.md), and the
accept rates of a set of reviews.

A review scores each criterion `ok`, `minor` (a blemish a reader notices but that does not change
what is asked or how it is graded) or `fail` (the instance misleads, can be passed without the
work, or fails a person who did the work right). The decision follows from the scores: an
instance with a `fail` cannot be accepted, and a reject names at least one failed criterion.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable

from ..errors import ClawgymError


@dataclass(frozen=True)
class Criterion:
    key: str
    question: str


CRITERIA: tuple[Criterion, ...] = (
    Criterion("clarity", "Does every sentence parse, with one reading that the checks grade?"),
    Criterion(
        "hidden_conventions",
        "Does the instruction state every format a check enforces (or do the checks accept the equivalent forms)?",
    ),
    Criterion(
        "lazy_credit",
        "Does an output that did no analysis (empty, skeleton, copied numbers, constant guesses, the unfiltered input) score 0 or close to it?",
    ),
    Criterion("sense", "Does every step and aggregation mean something, with no count or answer given away?"),
    Criterion("realism", "Would a person ask for this, and does the story fit the work done?"),
    Criterion("persona_fit", "Does the persona fit the records, the reason and the tone?"),
    Criterion("category", "Do the category and subcategory describe what the task does?"),
)
KEYS = tuple(c.key for c in CRITERIA)
VERDICTS = ("ok", "minor", "fail")


def parse_rubric(items: Iterable[str]) -> dict[str, str]:
    """`--rubric clarity=ok --rubric sense=minor` (or comma-separated) as {criterion: verdict};
    every criterion must be scored once."""
    scores: dict[str, str] = {}
    for item in items:
        for part in filter(None, (p.strip() for p in str(item).split(","))):
            key, sep, verdict = part.partition("=")
            key, verdict = key.strip(), verdict.strip().lower()
            if not sep or key not in KEYS:
                raise ClawgymError(
                    f"--rubric {part!r}: expected CRITERION=VERDICT with a criterion of the review rubric",
                    hint=f"criteria: {', '.join(KEYS)}; verdicts: {', '.join(VERDICTS)} (docs/review-rubric.md)",
                )
            if verdict not in VERDICTS:
                raise ClawgymError(
                    f"--rubric {part!r}: unknown verdict {verdict!r}", hint=f"one of: {', '.join(VERDICTS)}"
                )
            if key in scores:
                raise ClawgymError(f"--rubric scores {key!r} twice", hint="give each criterion once")
            scores[key] = verdict
    missing = [k for k in KEYS if k not in scores]
    if scores and missing:
        raise ClawgymError(
            f"--rubric leaves {', '.join(missing)} unscored",
            hint="score every criterion of docs/review-rubric.md, e.g. --rubric " + ",".join(f"{k}=ok" for k in KEYS),
        )
    return {k: scores[k] for k in KEYS if k in scores}


def check_decision(decision: str, rubric: dict[str, str]) -> None:
    """An accept has no failed criterion; a reject names at least one."""
    failed = [k for k, v in rubric.items() if v == "fail"]
    if decision == "accept" and failed:
        raise ClawgymError(
            f"cannot accept an instance that fails {', '.join(failed)}",
            hint="reject it (--decision reject --comment WHY) or re-score the criterion",
        )
    if decision == "reject" and rubric and not failed:
        raise ClawgymError(
            "a reject scored against the rubric must fail at least one criterion",
            hint="mark the criterion the instance fails, e.g. --rubric ...,sense=fail",
        )


@dataclass(frozen=True)
class ReviewSummary:
    """Decisions over a set of instances: counts, accept rate and the criteria that failed or were
    marked minor."""

    reviewed: int
    unreviewed: int
    decisions: dict[str, int]
    by_category: dict[str, dict[str, int]]
    criteria: dict[str, dict[str, int]]

    @property
    def accept_rate(self) -> float:
        return self.decisions.get("accept", 0) / self.reviewed if self.reviewed else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "reviewed": self.reviewed,
            "unreviewed": self.unreviewed,
            "decisions": self.decisions,
            "accept_rate": round(self.accept_rate, 3),
            "by_category": self.by_category,
            "criteria": self.criteria,
        }


def summarize(latest: Iterable[tuple[str, dict[str, Any] | None]]) -> ReviewSummary:
    """`latest` pairs each instance's category with its newest current accept/reject (or None)."""
    decisions: Counter[str] = Counter()
    by_category: dict[str, Counter[str]] = {}
    criteria: dict[str, Counter[str]] = {k: Counter() for k in KEYS}
    reviewed = unreviewed = 0
    for category, record in latest:
        if not record:
            unreviewed += 1
            continue
        reviewed += 1
        decision = str(record.get("decision"))
        decisions[decision] += 1
        by_category.setdefault(category, Counter())[decision] += 1
        for key, verdict in (record.get("rubric") or {}).items():
            if key in criteria:
                criteria[key][str(verdict)] += 1
    return ReviewSummary(
        reviewed,
        unreviewed,
        dict(decisions),
        {c: dict(v) for c, v in sorted(by_category.items())},
        {k: dict(v) for k, v in criteria.items()},
    )
