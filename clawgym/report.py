"""Summaries of trial records: tables by agent and category."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable

from rich.console import Console
from rich.table import Table

from .task import CATEGORY_LABELS


def summarize(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of (agent, category) with trial counts, mean reward and pass rate; `all` rows per agent."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for rec in records:
        agent = rec["agent"].get("name") or rec["agent"]["type"]
        groups[(agent, rec["task"]["category"])].append(rec)
        groups[(agent, "all")].append(rec)
    rows = []
    for (agent, category), recs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] == "all", kv[0][1])):
        graded = [r for r in recs if r["status"] != "error"]
        rewards = [float(r["reward"]) for r in graded]
        rows.append({
            "agent": agent, "category": category, "trials": len(recs), "errors": len(recs) - len(graded),
            "mean_reward": sum(rewards) / len(rewards) if rewards else None,
            "pass_rate": sum(r["status"] == "passed" for r in graded) / len(graded) if graded else None,
            "min_reward": min(rewards) if rewards else None, "max_reward": max(rewards) if rewards else None,
        })
    return rows


def _fmt(value: float | None, pct: bool = False) -> str:
    if value is None:
        return "-"
    return f"{100 * value:.1f}%" if pct else f"{value:.3f}"


def summary_table(rows: list[dict[str, Any]], title: str = "Results") -> Table:
    table = Table(title=title)
    for col, just in (("agent", "left"), ("category", "left"), ("trials", "right"), ("errors", "right"),
                      ("mean reward", "right"), ("pass rate", "right"), ("min", "right"), ("max", "right")):
        table.add_column(col, justify=just, no_wrap=True)  # type: ignore[arg-type]
    for row in rows:
        label = "all" if row["category"] == "all" else CATEGORY_LABELS.get(row["category"], row["category"])
        style = "bold" if row["category"] == "all" else None
        table.add_row(row["agent"], label, str(row["trials"]), str(row["errors"]), _fmt(row["mean_reward"]),
                      _fmt(row["pass_rate"], pct=True), _fmt(row["min_reward"]), _fmt(row["max_reward"]),
                      style=style)
    return table


def print_summary(rows: list[dict[str, Any]], console: Console | None = None, title: str = "Results") -> None:
    (console or Console()).print(summary_table(rows, title))
