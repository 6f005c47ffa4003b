"""How a trial ended: one closed vocabulary, and what evaluation and training do with each outcome.

Every trial record carries exactly one `outcome` from `OUTCOMES`. The record states the fact; the
rules below are the policy its readers apply, each in one place:

- **evaluation** (`clawgym report`, `compare`, `bench`): `score` counts the trial's reward (an
  infrastructure outcome scored this way counts as 0), `exclude` leaves it out of every mean and
  counts it, `retry` has the runner try it again (up to the run's `retries`) and, if it still ends
  so, excludes and counts it.
- **training** (SFT selection, GRPO groups): `reward` uses the trial's reward, `drop` removes the
  rollout from its group (no statistics, no loss), `mask` keeps its reward in the group's
  statistics but gives its tokens no loss (as a truncated completion is masked).

The defaults follow what the field converged on: infrastructure never becomes a reward of 0 (it is
retried, then excluded and counted; in training it is dropped), while the agent's own timeout,
budget and crash are its failures and are scored. A Run spec (`outcomes.evaluation`) or an RL spec
(`outcomes.training`) overrides a rule per outcome.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping


@dataclass(frozen=True)
class OutcomeRule:
    """One outcome: whose it is, what it means, and the default rule for evaluation and for training."""

    name: str
    infrastructure: bool  # the harness failed, not the agent: never graded, never a reward of 0 by default
    evaluation: str  # score | exclude | retry
    training: str  # reward | drop | mask
    meaning: str


_RULES = (
    OutcomeRule("completed", False, "score", "reward", "the agent stopped by itself (or its last step ran)"),
    OutcomeRule("agent_timeout", False, "score", "reward", "the agent used up the task's wall time"),
    OutcomeRule("budget_exhausted", False, "score", "reward", "the agent used up its turn or token budget"),
    OutcomeRule(
        "context_overflow", False, "score", "mask", "the prompt outgrew the model's context window, before generation"
    ),
    OutcomeRule("agent_crash", False, "score", "reward", "the agent's own program or script failed or gave up"),
    OutcomeRule(
        "model_error",
        True,
        "retry",
        "drop",
        "the model endpoint failed: unreachable, a 5xx after retries, or a request timeout before any token",
    ),
    OutcomeRule("sandbox_error", True, "retry", "drop", "the sandbox could not start or died under the agent"),
    OutcomeRule(
        "grader_error", True, "retry", "drop", "the grading machinery failed (not a grader's verdict on the workspace)"
    ),
    OutcomeRule("judge_error", True, "retry", "drop", "the rubric judge's endpoint failed (connection, 5xx, timeout)"),
    OutcomeRule(
        "harness_error", True, "retry", "drop", "our own machinery failed outside the above (a bug, a worker that died)"
    ),
    OutcomeRule("cancelled", True, "retry", "drop", "the run was stopped, or the trial ran past the run's timeout"),
)

RULES: dict[str, OutcomeRule] = {r.name: r for r in _RULES}
OUTCOMES: tuple[str, ...] = tuple(RULES)
INFRASTRUCTURE: frozenset[str] = frozenset(r.name for r in _RULES if r.infrastructure)
EVALUATION_RULES = ("score", "exclude", "retry")
TRAINING_RULES = ("reward", "drop", "mask")

# The words agents and older records used, read as the contract's.
LEGACY = {
    "done": "completed",
    "timeout": "agent_timeout",
    "max_turns": "budget_exhausted",
    "failed": "agent_crash",
    "error": "model_error",
}


def normalize(outcome: Any, *, status: str | None = None, error: str | None = None) -> str:
    """The contract's word for an outcome as any agent or older record wrote it.

    A record without an outcome (older files) is `completed` when it was graded and
    `sandbox_error` when it was an error; an unknown word from a graded trial is `agent_crash`.
    """
    if isinstance(outcome, str) and outcome in RULES:
        if status == "error" and not RULES[outcome].infrastructure:
            return infrastructure_outcome(error)
        return outcome
    if status == "error":
        return infrastructure_outcome(error)
    if isinstance(outcome, str) and outcome in LEGACY:
        return LEGACY[outcome]
    return "completed" if outcome is None else "agent_crash"


def infrastructure_outcome(error: str | None) -> str:
    """Which infrastructure outcome an error text of an older record (no outcome recorded) names."""
    text = (error or "").lower()
    if "cancel" in text or "interrupt" in text or "ran past the run's" in text:
        return "cancelled"
    if "judge" in text:
        return "judge_error"
    if "verif" in text or "grader" in text or "grading" in text:
        return "grader_error"
    if "policy" in text or "model" in text or "endpoint" in text:
        return "model_error"
    if "sandbox" in text or "bubblewrap" in text or "docker" in text:
        return "sandbox_error"
    return "harness_error"


def _checked(overrides: Mapping[str, Any] | None, allowed: tuple[str, ...], what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, rule in (overrides or {}).items():
        if name not in RULES:
            raise ValueError(f"{what}: unknown outcome {name!r}; expected one of {', '.join(OUTCOMES)}")
        if rule not in allowed:
            raise ValueError(f"{what}.{name}: unknown rule {rule!r}; expected one of {', '.join(allowed)}")
        out[name] = str(rule)
    return out


def evaluation_rules(overrides: Mapping[str, Any] | None = None) -> dict[str, str]:
    """outcome -> score | exclude | retry: the defaults with a Run spec's `outcomes.evaluation` applied."""
    return {**{r.name: r.evaluation for r in _RULES}, **_checked(overrides, EVALUATION_RULES, "outcomes.evaluation")}


def training_rules(overrides: Mapping[str, Any] | None = None) -> dict[str, str]:
    """outcome -> reward | drop | mask: the defaults with an RL spec's `outcomes.training` applied."""
    return {**{r.name: r.training for r in _RULES}, **_checked(overrides, TRAINING_RULES, "outcomes.training")}


def counted_reward(outcome: str, reward: float | None, rules: Mapping[str, str]) -> float | None:
    """The reward evaluation counts for one trial, or None when its outcome is excluded."""
    if rules.get(outcome, "score") != "score":
        return None
    return 0.0 if reward is None else float(reward)


def rates(outcomes: Iterable[str]) -> dict[str, float]:
    """The share of each non-`completed` outcome among `outcomes` (only those that occur)."""
    items = list(outcomes)
    if not items:
        return {}
    counts: dict[str, int] = {}
    for o in items:
        if o != "completed":
            counts[o] = counts.get(o, 0) + 1
    return {o: counts[o] / len(items) for o in OUTCOMES if o in counts}


def table_markdown() -> str:
    """The contract as a markdown table (docs and `clawgym docs`)."""
    lines = ["| outcome | whose | evaluation | training | meaning |", "|---|---|---|---|---|"]
    for r in _RULES:
        whose = "infrastructure" if r.infrastructure else "agent"
        lines.append(f"| `{r.name}` | {whose} | {r.evaluation} | {r.training} | {r.meaning} |")
    return "\n".join(lines)
