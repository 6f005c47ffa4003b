"""Harness comparison: the same tasks (and model) run under several harnesses (the claw agent,
OpenClaw versions, command agents), side by side.

For each harness, overall, per category and per task: trials, errors, mean reward, pass rate,
model turns, tokens and the agent's wall time, each mean with a bootstrap 95% CI over task
instances (their trials pooled), and the paired difference in mean reward against the first
harness on the instances both ran. Records come from any results folders: one run with several
agents, or one run per harness.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from ..records.outcomes import rates as outcome_rates
from ..records.trial_record import TrialRecord, as_record
from .stats import DEFAULT_BOOT, DEFAULT_SEED, bootstrap_ratio_ci
from .summary import format_outcomes

METRICS = ("reward", "passed", "turns", "tokens", "wall_s")
LABELS = {
    "reward": "mean reward",
    "passed": "pass rate",
    "turns": "model turns",
    "tokens": "tokens",
    "wall_s": "agent wall time (s)",
}


def harness_label(rec: TrialRecord) -> str:
    """The harness a record ran under: the agent's name, with the version where the name lacks it."""
    name = rec.agent_name
    version = rec.agent.get("version")
    if rec.agent.get("type") == "openclaw" and version and str(version) not in name:
        return f"{name}@{version}"
    return name


def _values(rec: TrialRecord, rules: Mapping[str, str] | None = None) -> dict[str, float | None]:
    """Per-trial measures (None where the trial has none: an excluded outcome has no reward)."""
    usage = rec.usage
    counted = rec.counted(rules)
    tokens = None
    if usage is not None and (usage.prompt_tokens is not None or usage.completion_tokens is not None):
        tokens = float(usage.total_tokens)
    wall = rec.timings.get("agent_s")
    return {
        "reward": counted[0] if counted is not None else None,
        "passed": float(counted[1]) if counted is not None else None,
        "turns": float(usage.model_calls) if usage is not None and not rec.is_error else None,
        "tokens": tokens if not rec.is_error else None,
        "wall_s": float(wall) if isinstance(wall, (int, float)) and not rec.is_error else None,
    }


@dataclass
class Cell:
    """One metric of one group: mean over trials and its CI over instances."""

    mean: float | None = None
    ci: tuple[float, float] | None = None
    n: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"mean": self.mean, "ci": list(self.ci) if self.ci else None, "n": self.n}


@dataclass
class Group:
    """One harness in one slice (all tasks, a category or a task)."""

    harness: str
    slice: str
    trials: int = 0
    errors: int = 0  # trials left out of the means by their outcome
    outcomes: dict[str, float] = field(default_factory=dict)  # share of each non-completed outcome
    metrics: dict[str, Cell] = field(default_factory=dict)
    delta_reward: Cell | None = None  # against the first harness, paired by instance

    def to_dict(self) -> dict[str, Any]:
        return {
            "harness": self.harness,
            "slice": self.slice,
            "trials": self.trials,
            "errors": self.errors,
            "outcomes": dict(self.outcomes),
            **{k: c.to_dict() for k, c in self.metrics.items()},
            "delta_reward": self.delta_reward.to_dict() if self.delta_reward else None,
        }


def _cell(per_instance: Mapping[str, list[float]], n_boot: int, seed: int) -> Cell:
    sums = [sum(v) for v in per_instance.values() if v]
    counts = [float(len(v)) for v in per_instance.values() if v]
    if not counts:
        return Cell()
    return Cell(sum(sums) / sum(counts), bootstrap_ratio_ci(sums, counts, n_boot=n_boot, seed=seed), int(sum(counts)))


def _by_instance(
    recs: Iterable[TrialRecord], metric: str, rules: Mapping[str, str] | None = None
) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(list)
    for rec in recs:
        value = _values(rec, rules)[metric]
        if value is not None:
            out[rec.task_hash or f"{rec.task_name}@{rec.seed}"].append(value)
    return out


def _paired(ref: Mapping[str, list[float]], other: Mapping[str, list[float]], n_boot: int, seed: int) -> Cell | None:
    shared = [k for k in other if other[k] and ref.get(k)]
    if not shared:
        return None
    diffs = [sum(other[k]) / len(other[k]) - sum(ref[k]) / len(ref[k]) for k in shared]
    ones = [1.0] * len(diffs)
    return Cell(sum(diffs) / len(diffs), bootstrap_ratio_ci(diffs, ones, n_boot=n_boot, seed=seed), len(diffs))


def compare_harnesses(
    records: Iterable[TrialRecord | Mapping[str, Any]],
    *,
    order: Sequence[str] | None = None,
    n_boot: int = DEFAULT_BOOT,
    seed: int = DEFAULT_SEED,
    rules: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """{harnesses, overall, categories, tasks}: each a list of Group dicts (see the module docstring).
    `order` puts these harnesses first (the first is the reference for the paired difference);
    `rules` are the evaluation rules per outcome (`clawgym.records.outcomes`; defaults when None)."""
    recs = [as_record(r) for r in records]
    found = sorted({harness_label(r) for r in recs})
    harnesses = [h for h in (order or []) if h in found] + [h for h in found if h not in (order or [])]
    slices: dict[str, dict[str, dict[str, list[TrialRecord]]]] = {
        "overall": defaultdict(lambda: defaultdict(list)),
        "categories": defaultdict(lambda: defaultdict(list)),
        "tasks": defaultdict(lambda: defaultdict(list)),
    }
    for rec in recs:
        h = harness_label(rec)
        slices["overall"]["all"][h].append(rec)
        slices["categories"][rec.category or "?"][h].append(rec)
        slices["tasks"][rec.task_name][h].append(rec)
    out: dict[str, Any] = {"harnesses": harnesses, "reference": harnesses[0] if harnesses else None}
    for kind, by_slice in slices.items():
        rows = []
        for name in sorted(by_slice):
            ref_rewards = _by_instance(by_slice[name].get(harnesses[0], []), "reward", rules) if harnesses else {}
            for h in harnesses:
                group_recs = by_slice[name].get(h, [])
                if not group_recs:
                    continue
                excluded = sum(r.counted(rules) is None for r in group_recs)
                g = Group(h, name, len(group_recs), excluded, outcome_rates(r.ended for r in group_recs))
                for metric in METRICS:
                    g.metrics[metric] = _cell(_by_instance(group_recs, metric, rules), n_boot, seed)
                if h != harnesses[0]:
                    g.delta_reward = _paired(ref_rewards, _by_instance(group_recs, "reward", rules), n_boot, seed)
                rows.append(g.to_dict())
        out[kind] = rows
    return out


# ---------------------------------------------------------------------------------------------
# Text and HTML


def _fmt(cell: Mapping[str, Any] | None, pct: bool = False, digits: int = 3) -> str:
    if not cell or cell.get("mean") is None:
        return "-"
    scale, unit = (100.0, "%") if pct else (1.0, "")
    d = 1 if pct else digits
    text = f"{cell['mean'] * scale:.{d}f}{unit}"
    if cell.get("ci"):
        lo, hi = cell["ci"]
        text += f" [{lo * scale:.{d}f}, {hi * scale:.{d}f}]"
    return text


def _big(cell: Mapping[str, Any] | None) -> str:
    if not cell or cell.get("mean") is None:
        return "-"
    lo, hi = cell.get("ci") or (None, None)
    text = f"{cell['mean']:,.0f}" if cell["mean"] >= 100 else f"{cell['mean']:.1f}"
    return text + (
        f" [{lo:,.0f}, {hi:,.0f}]"
        if lo is not None and cell["mean"] >= 100
        else f" [{lo:.1f}, {hi:.1f}]"
        if lo is not None
        else ""
    )


COLUMNS = (
    "harness",
    "trials",
    "excluded",
    "mean reward",
    "Δ reward vs ref",
    "pass rate",
    "other outcomes",
    "turns",
    "tokens",
    "agent s",
)


def table_rows(groups: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """Cells of COLUMNS for each group (means with 95% CIs)."""
    return [
        [
            g["harness"],
            str(g["trials"]),
            str(g["errors"]),
            _fmt(g["reward"]),
            _fmt(g["delta_reward"]) if g["delta_reward"] else "(ref)" if g.get("is_ref") else "-",
            _fmt(g["passed"], pct=True),
            format_outcomes(g.get("outcomes")),
            _big(g["turns"]),
            _big(g["tokens"]),
            _big(g["wall_s"]),
        ]
        for g in groups
    ]


def mark_reference(result: dict[str, Any]) -> dict[str, Any]:
    for kind in ("overall", "categories", "tasks"):
        for g in result.get(kind, []):
            g["is_ref"] = g["harness"] == result["reference"]
    return result


def html_page(result: Mapping[str, Any], title: str = "Harness comparison") -> str:
    """One static page with the three tables (every string HTML-escaped with its controls and bidi
    characters made visible; no script, no outside fetch)."""
    from ..files.textsafe import html_safe as escape

    def table(groups: Sequence[Mapping[str, Any]], first: str | None) -> str:
        head = "".join(f"<th>{escape(c)}</th>" for c in ((first,) if first else ()) + COLUMNS)
        body = []
        for g, cells in zip(groups, table_rows(groups)):
            lead = f"<td>{escape(str(g['slice']))}</td>" if first else ""
            body.append("<tr>" + lead + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
        return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"

    ref = escape(str(result.get("reference") or "-"))
    return (
        '<!doctype html><html><head><meta charset="utf-8">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>{escape(title)}</title><style>body{{font-family:sans-serif;margin:2em}}"
        "table{border-collapse:collapse;margin-bottom:2em}td,th{border:1px solid #ccc;padding:4px 8px;"
        "text-align:right}td:first-child,th:first-child{text-align:left}</style></head><body>"
        f"<h1>{escape(title)}</h1><p>Means over trials with bootstrap 95% CIs over task instances; "
        f"Δ reward is paired by instance against the reference harness, {ref}.</p>"
        f"<h2>Overall</h2>{table(result.get('overall', []), None)}"
        f"<h2>By category</h2>{table(result.get('categories', []), 'category')}"
        f"<h2>By task</h2>{table(result.get('tasks', []), 'task')}</body></html>"
    )
