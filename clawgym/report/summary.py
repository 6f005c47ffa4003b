"""Summaries of trial records: tables by agent and category, with pass@k, pass^k and 95% CIs.

`summarize` gives one row per (agent, category) plus an `all` row per agent; `print_summary` shows
them; `compare_table` puts the rows of several run folders side by side. The statistics and the
bootstrap are in `clawgym.report.stats`; the static HTML page is `clawgym.report.html`.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .stats import DEFAULT_BOOT, DEFAULT_KS, DEFAULT_SEED, group_stats
from ..spec.task import CATEGORY_LABELS
from ..files.textsafe import printable
from ..records.outcomes import INFRASTRUCTURE
from ..records.outcomes import rates as outcome_rates
from ..records.trial_record import TrialRecord, as_record


def plain(value: Any) -> Text:
    """A table cell or title that shows `value` literally: no rich markup, no control characters."""
    return Text(printable("" if value is None else str(value)))


def _title(title: str) -> Text:
    return Text(printable(title), style="table.title")


def agent_name(rec: TrialRecord | Mapping[str, Any]) -> str:
    return as_record(rec).agent_name


def summarize(
    records: Iterable[TrialRecord | Mapping[str, Any]],
    *,
    ks: Sequence[int] = DEFAULT_KS,
    n_boot: int = DEFAULT_BOOT,
    seed: int = DEFAULT_SEED,
    rules: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Rows of (agent, category) with trial counts, mean reward and pass rate; `all` rows per agent.

    Trials count as the evaluation `rules` say (outcome -> score | exclude | retry; the defaults of
    `clawgym.records.outcomes` when None): `errors` is how many were left out of the means, and
    `outcomes` the share of each non-`completed` outcome among all the trials of the row.

    Each row also has `instances`, `mean_reward_ci`, `pass_rate_ci` and, for each k in `ks`,
    `pass@k`, `pass^k` and their CIs (see `report_stats.group_stats`; None where no instance has k
    graded attempts). The bootstrap is seeded, so the same records give the same intervals.
    """
    groups: dict[tuple[str, str], list[TrialRecord]] = defaultdict(list)
    for rec in map(as_record, records):
        groups[(rec.agent_name, rec.category)].append(rec)
        groups[(rec.agent_name, "all")].append(rec)
    rows = []
    for (agent, category), recs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] == "all", kv[0][1])):
        counted = [c for c in (r.counted(rules) for r in recs) if c is not None]
        rewards = [reward for reward, _ in counted]
        row = {
            "agent": agent,
            "category": category,
            "trials": len(recs),
            "errors": len(recs) - len(counted),
            "mean_reward": sum(rewards) / len(rewards) if rewards else None,
            "pass_rate": sum(passed for _, passed in counted) / len(counted) if counted else None,
            "min_reward": min(rewards) if rewards else None,
            "max_reward": max(rewards) if rewards else None,
            "outcomes": outcome_rates(r.ended for r in recs),
        }
        row.update(group_stats(recs, ks=ks, n_boot=n_boot, seed=seed, rules=rules))
        rows.append(row)
    return rows


def _fmt(value: float | None, pct: bool = False) -> str:
    if value is None:
        return "-"
    return f"{100 * value:.1f}%" if pct else f"{value:.3f}"


def fmt_ci(value: float | None, ci: Sequence[float] | None, pct: bool = False) -> str:
    """'0.512 [0.480, 0.544]' or '51.2% [48.0, 54.4]'; '-' without a value."""
    if value is None:
        return "-"
    if not ci:
        return _fmt(value, pct)
    if pct:
        return f"{100 * value:.1f}% [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"
    return f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"


def _two_lines(value: float | None, ci: Sequence[float] | None, pct: bool = False) -> str:
    """The value, and its CI on a second line (narrow columns for side-by-side tables)."""
    text = fmt_ci(value, ci, pct)
    return text.replace(" [", "\n[", 1)


def row_ks(rows: Sequence[dict[str, Any]]) -> list[int]:
    """The k values the rows carry that at least one row has a value for."""
    ks = sorted({int(key[5:]) for row in rows for key in row if key.startswith("pass@") and key[5:].isdigit()})
    return [k for k in ks if any(row.get(f"pass@{k}") is not None for row in rows)]


def category_label(category: str) -> str:
    return "all" if category == "all" else CATEGORY_LABELS.get(category, category)


def summary_table(rows: list[dict[str, Any]], title: str = "Results") -> Table:
    """Agent, category, trials, errors, mean reward, pass rate, pass@k (and pass^k for k > 1), min, max.

    Values carry their bootstrap 95% CI in brackets (on a second line); k columns without any value are left out.
    """
    ks = row_ks(rows)
    caption = (
        "in brackets: bootstrap 95% CI over task instances; excluded: trials left out of the means by "
        "their outcome (* infrastructure, see docs/outcomes.md)"
    )
    table = Table(title=_title(title), caption=caption if rows else None)
    shown_outcomes = any(row.get("outcomes") for row in rows)  # the column only where some trial did not complete
    columns = [
        ("agent", "left"),
        ("category", "left"),
        ("trials", "right"),
        ("excluded", "right"),
        ("mean reward", "right"),
        ("pass rate", "right"),
        *([("other outcomes", "left")] if shown_outcomes else []),
    ]
    columns += [(f"pass@{k}", "right") for k in ks] + [(f"pass^{k}", "right") for k in ks if k > 1]
    columns += [("min", "right"), ("max", "right")]
    agent_width = max([len("agent")] + [len(printable(str(r["agent"]))) for r in rows])
    for col, just in columns:
        table.add_column(
            col,
            justify=just,
            no_wrap=True,  # type: ignore[arg-type]
            min_width=agent_width if col == "agent" else None,
        )
    for row in rows:
        style = "bold" if row["category"] == "all" else None
        cells: list[str | Text] = [
            plain(row["agent"]),
            plain(category_label(row["category"])),
            str(row["trials"]),
            str(row["errors"]),
            _two_lines(row["mean_reward"], row.get("mean_reward_ci")),
            _two_lines(row["pass_rate"], row.get("pass_rate_ci"), pct=True),
            *([format_outcomes(row.get("outcomes"), sep="\n")] if shown_outcomes else []),
        ]
        cells += [_two_lines(row.get(f"pass@{k}"), row.get(f"pass@{k}_ci"), pct=True) for k in ks]
        cells += [_two_lines(row.get(f"pass^{k}"), row.get(f"pass^{k}_ci"), pct=True) for k in ks if k > 1]
        cells += [_fmt(row["min_reward"]), _fmt(row["max_reward"])]
        table.add_row(*cells, style=style)
    return table


def format_outcomes(rates: Mapping[str, float] | None, sep: str = ", ") -> str:
    """'agent_timeout 12%, model_error* 3%' ('-' for none): the share of each non-completed
    outcome, infrastructure outcomes starred."""
    if not rates:
        return "-"
    return sep.join(f"{name}{'*' if name in INFRASTRUCTURE else ''} {100 * rate:.0f}%" for name, rate in rates.items())


def print_summary(rows: list[dict[str, Any]], console: Console | None = None, title: str = "Results") -> None:
    (console or Console()).print(summary_table(rows, title))


def run_labels(run_dirs: Sequence[Path | str]) -> list[str]:
    """Short distinct labels for run folders: the folder name, with its parent when names repeat."""
    paths = [Path(d) for d in run_dirs]
    labels = [p.name or str(p) for p in paths]
    if len(set(labels)) < len(labels):
        labels = [f"{p.parent.name}/{p.name}" if p.parent.name else p.name for p in paths]
    if len(set(labels)) < len(labels):
        labels = [str(p) for p in paths]
    if len(set(labels)) < len(labels):
        labels = [f"{label} #{i + 1}" for i, label in enumerate(labels)]
    return labels


def compare_rows(runs: Sequence[tuple[str, list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    """One row per (agent, category) found in any run, with `runs`: {label: summary row or None}."""
    keys: list[tuple[str, str]] = []
    for _, rows in runs:
        for row in rows:
            if (row["agent"], row["category"]) not in keys:
                keys.append((row["agent"], row["category"]))
    keys.sort(key=lambda k: (k[0], k[1] == "all", k[1]))
    index = {label: {(r["agent"], r["category"]): r for r in rows} for label, rows in runs}
    return [
        {"agent": a, "category": c, "runs": {label: index[label].get((a, c)) for label, _ in runs}} for a, c in keys
    ]


def compare_table(runs: Sequence[tuple[str, list[dict[str, Any]]]], title: str = "Comparison") -> Table:
    """Runs side by side: for each run, trials, mean reward [CI], pass rate [CI] and pass@k for k > 1.

    With exactly two runs a last column gives the change in mean reward (second minus first).
    """
    merged = compare_rows(runs)
    table = Table(title=_title(title), caption="in brackets: bootstrap 95% CI over task instances")
    table.add_column("agent", no_wrap=True)
    table.add_column("category", no_wrap=True)
    run_ks = {label: [k for k in row_ks(rows) if k > 1] for label, rows in runs}
    for label, _ in runs:
        shown = printable(label)
        table.add_column(Text(f"{shown}\ntrials"), justify="right")
        table.add_column(Text(f"{shown}\nmean reward"), justify="right")
        table.add_column(Text(f"{shown}\npass rate"), justify="right")
        for k in run_ks[label]:
            table.add_column(Text(f"{shown}\npass@{k}"), justify="right")
    two = len(runs) == 2
    if two:
        table.add_column("Δ reward", justify="right", no_wrap=True)
    for row in merged:
        cells: list[str | Text] = [plain(row["agent"]), plain(row["category"])]  # the short name: the table is wide
        for label, _ in runs:
            r = row["runs"][label]
            if r is None:
                cells += ["-"] * (3 + len(run_ks[label]))
                continue
            cells += [
                str(r["trials"]),
                _two_lines(r["mean_reward"], r.get("mean_reward_ci")),
                _two_lines(r["pass_rate"], r.get("pass_rate_ci"), pct=True),
            ]
            cells += [_two_lines(r.get(f"pass@{k}"), r.get(f"pass@{k}_ci"), pct=True) for k in run_ks[label]]
        if two:
            a, b = (row["runs"][label] for label, _ in runs)
            if a and b and a["mean_reward"] is not None and b["mean_reward"] is not None:
                cells.append(f"{b['mean_reward'] - a['mean_reward']:+.3f}")
            else:
                cells.append("-")
        table.add_row(*cells, style="bold" if row["category"] == "all" else None)
    return table
