"""Reporting what an import or export did with each source: printed reasons, a JSONL report, a summary."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any, Sequence

from ..files.atomic import write_lines
from ..files.textsafe import printable

STATUSES = ("imported", "warned", "rejected")


def print_reasons(console: Any, outcome: Any, quiet: bool = False) -> None:
    """One line per warning or rejection reason of `outcome` (nothing for a clean import), its
    controls made visible: reasons quote the source's names and its grader's output."""
    if console is None or quiet or outcome.status == "imported":
        return
    label = "rejected" if outcome.status == "rejected" else "warning "
    for reason in outcome.reasons:
        console.print(printable(f"{label} {outcome.source}: {reason}"), highlight=False, markup=False)


def finish_import(outcomes: Sequence[Any], out: Path, report_name: str, what: str, console: Any) -> None:
    """Write `out/report_name` (one outcome a line) and print the counts of imported, warned and rejected."""
    report = out / report_name
    write_lines(report, (asdict(o) for o in outcomes))
    counts = {s: sum(o.status == s for o in outcomes) for s in STATUSES}
    if console is None:
        return
    for status, label in (("rejected", "rejected"), ("warned", "warnings")):
        groups = reason_groups(outcomes, status)
        if groups:
            console.print(f"{label} by reason:", highlight=False, markup=False)
            for kind, n in groups.most_common(12):
                console.print(printable(f"  {n:>6}  {kind}"), highlight=False, markup=False)
    console.print(
        f"{len(outcomes)} {what}(s): {counts['imported']} imported, {counts['warned']} imported "
        f"with warnings, {counts['rejected']} rejected; specs in {out}, report in {report}",
        highlight=False,
        markup=False,
    )


_SPECIFIC = re.compile(r"""(?:'[^']*'|"[^"]*"|`[^`]*`|\([^()]*\)|[\w.-]*/[\w./-]*|\b\d[\d.,]*\b)""")


def reason_kind(reason: str) -> str:
    """A reason without its specifics (paths, quotes, numbers, parentheses), to group alike reasons."""
    text = re.sub(r"(stderr|last line|it starts|e\.g\.)\b.*", r"\1 …", reason)
    kind = " ".join(_SPECIFIC.sub("…", text).split())
    return kind if len(kind) <= 100 else kind[:99] + "…"


def reason_groups(outcomes: Sequence[Any], status: str) -> Counter:
    """How many outcomes of `status` gave each kind of reason."""
    return Counter(reason_kind(r) for o in outcomes if o.status == status for r in o.reasons)
