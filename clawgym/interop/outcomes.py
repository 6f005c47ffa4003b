"""Reporting what an import or export did with each source: printed reasons, a JSONL report, a summary."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any, Sequence

from ..jsonl import write_lines

STATUSES = ("imported", "warned", "rejected")


def print_reasons(console: Any, outcome: Any, quiet: bool = False) -> None:
    """One line per warning or rejection reason of `outcome` (nothing for a clean import)."""
    if console is None or quiet or outcome.status == "imported":
        return
    label = "rejected" if outcome.status == "rejected" else "warning "
    for reason in outcome.reasons:
        console.print(f"{label} {outcome.source}: {reason}", highlight=False, markup=False)


def finish_import(outcomes: Sequence[Any], out: Path, report_name: str, what: str, console: Any) -> None:
    """Write `out/report_name` (one outcome a line) and print the counts of imported, warned and rejected."""
    report = out / report_name
    write_lines(report, (asdict(o) for o in outcomes))
    counts = {s: sum(o.status == s for o in outcomes) for s in STATUSES}
    if console is not None:
        console.print(f"{len(outcomes)} {what}(s): {counts['imported']} imported, {counts['warned']} imported "
                      f"with warnings, {counts['rejected']} rejected; specs in {out}, report in {report}",
                      highlight=False, markup=False)
