"""`clawgym bench leaderboard`: every leaderboard row as one markdown table and one HTML page.

Rows are sorted by mean reward. Numbers from different benchmark versions are not comparable, so
the table names the version most rows share and flags every row produced on another version or on
an unlocked benchmark instead of hiding or mixing them silently.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from ..errors import ClawgymError
from ..records.outcomes import INFRASTRUCTURE
from ..report.summary import fmt_ci, format_outcomes
from ..spec.task import CATEGORY_LABELS
from ..files.textsafe import html_safe, markdown_safe, printable
from .runbench import ROW_FORMAT

OTHER_VERSION = "other version"
_LEFT = ' class="l"'
UNLOCKED = "unlocked"
INFRA_MARK = "infrastructure outcomes"


def load_rows(folder: Path) -> list[dict[str, Any]]:
    """Every leaderboard row (*.json with the row format) in `folder`, sorted best first."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ClawgymError(f"no leaderboard folder at {folder}", hint="write rows with 'clawgym bench run' first")
    rows = []
    for path in sorted(folder.glob("*.json")):
        try:
            row = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise ClawgymError(
                f"unreadable leaderboard row: {e}",
                file=str(path),
                hint="fix or delete the file; rows are written by 'clawgym bench run'",
            ) from None
        if isinstance(row, dict) and row.get("format") == ROW_FORMAT:
            rows.append(row)
    if not rows:
        raise ClawgymError(f"no leaderboard rows in {folder}", hint="write rows with 'clawgym bench run'")
    return sorted(rows, key=_rank_key)


def _rank_key(row: dict[str, Any]) -> tuple:
    o = row.get("overall") or {}
    mean, rate = o.get("mean_reward"), o.get("pass_rate")
    return (mean is None, -(mean or 0.0), -(rate or 0.0), row.get("label", ""))


def reference_version(rows: list[dict[str, Any]]) -> str | None:
    """The version most rows share (ties: the one of the newest row)."""
    counts = Counter((r.get("benchmark") or {}).get("version") for r in rows)
    if not counts:
        return None
    best = max(counts.values())
    newest = sorted(rows, key=lambda r: r.get("date", ""), reverse=True)
    return next(v for v in ((r.get("benchmark") or {}).get("version") for r in newest) if counts[v] == best)


def flags(row: dict[str, Any], reference: str | None) -> list[str]:
    bench = row.get("benchmark") or {}
    out = []
    if bench.get("version") != reference:
        out.append(OTHER_VERSION)
    if not bench.get("locked"):
        out.append(UNLOCKED)
    if not row.get("complete", True):
        out.append(f"{row.get('errors')} errors")
    infra = row.get("infrastructure")
    if infra is None:  # a row written before the outcome contract
        infra = sum(v for o, v in (row.get("outcomes") or {}).items() if o in INFRASTRUCTURE)
    if infra:
        out.append(f"{INFRA_MARK} {100 * infra:.0f}%")
    if bench.get("only"):
        out.append(f"subset of {bench.get('run_instances')}")
    return out


def categories(rows: list[dict[str, Any]]) -> list[str]:
    found = {c for r in rows for c in (r.get("categories") or {})}
    return [c for c in CATEGORY_LABELS if c in found] + sorted(found - set(CATEGORY_LABELS))


def extra_ks(rows: list[dict[str, Any]]) -> list[int]:
    return sorted({int(k) for r in rows for k in r.get("ks", []) if int(k) > 1})


def _cell(stats: dict[str, Any] | None, key: str, pct: bool = False) -> str:
    stats = stats or {}
    return fmt_ci(stats.get(key), stats.get(f"{key}_ci"), pct)


def table(rows: list[dict[str, Any]]) -> tuple[list[str], list[list[str]], str | None]:
    """(header, cells, reference version): the one table both renderings show.

    Text from the row files (label, model, version, date) has its control characters made visible.
    """
    ref = reference_version(rows)
    cats, ks = categories(rows), extra_ks(rows)
    header = ["#", "label", "model / agent", "version", "mean reward", "pass rate", "other outcomes", "pass@1"]
    header += [h for k in ks for h in (f"pass@{k}", f"pass^{k}")]
    header += [printable(CATEGORY_LABELS.get(c, c)) for c in cats] + ["tokens", "turns", "trials (errors)", "date"]
    body = []
    for i, row in enumerate(rows, 1):
        o = row.get("overall") or {}
        agent = row.get("agent") or {}
        who = (
            f"{row['model']} ({agent.get('type')})" if row.get("model") else str(agent.get("name") or agent.get("type"))
        )
        marks = flags(row, ref)
        version = str((row.get("benchmark") or {}).get("version")) + (f" ⚠ {', '.join(marks)}" if marks else "")
        cells = [
            str(i),
            printable(str(row.get("label"))),
            printable(who),
            printable(version),
            _cell(o, "mean_reward"),
            _cell(o, "pass_rate", True),
            format_outcomes(row.get("outcomes")),
            _cell(o, "pass@1", True),
        ]
        cells += [_cell(o, f"{name}{k}", True) for k in ks for name in ("pass@", "pass^")]
        cells += [_cell((row.get("categories") or {}).get(c), "mean_reward") for c in cats]
        cells += [
            "-" if o.get("mean_tokens") is None else f"{o['mean_tokens']:.0f}",
            "-" if o.get("mean_turns") is None else f"{o['mean_turns']:.1f}",
            printable(f"{row.get('trials')} ({row.get('errors')})"),
            printable(str(row.get("date", ""))[:10]),
        ]
        body.append(cells)
    return header, body, ref


def _notes(rows: list[dict[str, Any]], ref: str | None) -> list[str]:
    shown = printable(str(ref))
    notes = [
        f"Benchmark version {shown}. Values are means over task instances with bootstrap 95% confidence "
        "intervals in brackets; pass@k and pass^k over instances with k attempts; tokens and turns per trial."
    ]
    if any(OTHER_VERSION in flags(r, ref) for r in rows):
        notes.append(
            f"⚠ {OTHER_VERSION}: the row was produced on another benchmark version than {shown}; "
            "its numbers are not comparable with the others."
        )
    if any(any(f.startswith(INFRA_MARK) for f in flags(r, ref)) for r in rows):
        notes.append(
            f"⚠ {INFRA_MARK}: some of the row's trials ended in an infrastructure outcome (a model endpoint, "
            "sandbox, grader or judge failure, starred in other outcomes); they are left out of its means, "
            "so its numbers rest on fewer trials (docs/outcomes.md)."
        )
    if any(UNLOCKED in flags(r, ref) for r in rows):
        notes.append(f"⚠ {UNLOCKED}: the benchmark had no lock file matching its instances when the row was made.")
    return notes


def markdown(rows: list[dict[str, Any]]) -> str:
    header, body, ref = table(rows)
    # Cells are plain text: no table breaks, no inline HTML, links or code spans in renderers that allow them.
    esc: Callable[[str], str] = markdown_safe
    lines = [
        "# ClawGym-Bench leaderboard",
        "",
        *[esc(n) + "\n" for n in _notes(rows, ref)],
        "| " + " | ".join(esc(h) for h in header) + " |",
        "|" + "|".join("---" if i < 4 or i == len(header) - 1 else "---:" for i in range(len(header))) + "|",
    ]
    lines += ["| " + " | ".join(esc(c) for c in cells) + " |" for cells in body]
    return "\n".join(lines) + "\n"


def _style() -> str:
    """The report page's stylesheet, so the leaderboard looks like `clawgym report --html`."""
    from ..report.html import TEMPLATE

    found = re.search(r"<style>(.*?)</style>", TEMPLATE.read_text(encoding="utf-8"), re.DOTALL)
    return found.group(1) if found else ""


def _html_cell(text: str, numeric: bool) -> str:
    if numeric and " [" in text:
        value, ci = text.split(" [", 1)
        return f'<td>{html_safe(value)} <span class="ci">[{html_safe(ci)}</span></td>'
    if "⚠" in text:
        value, warn = text.split("⚠", 1)
        return f'<td class="l">{html_safe(value)}<span class="warn">⚠{html_safe(warn)}</span></td>'
    return f"<td{'' if numeric else _LEFT}>{html_safe(text)}</td>"


def html_page(rows: list[dict[str, Any]]) -> str:
    header, body, ref = table(rows)
    text_cols = {0, 1, 2, 3, len(header) - 1}
    head = "".join(f"<th{_LEFT if i in text_cols else ''}>{html_safe(h)}</th>" for i, h in enumerate(header))
    trs = "\n".join(
        "<tr>" + "".join(_html_cell(c, i not in text_cols) for i, c in enumerate(cells)) + "</tr>" for cells in body
    )
    notes = "".join(f'<p class="muted">{html_safe(n)}</p>' for n in _notes(rows, ref))
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>ClawGym-Bench leaderboard</title>\n<style>{_style()}\n.warn {{ color: var(--err); }}</style>"
        f'</head>\n<body><header><h1>ClawGym-Bench leaderboard</h1><span class="meta">version '
        f"{html_safe(str(ref))}, {len(rows)} rows</span></header>\n<main>{notes}\n"
        f'<table class="stats"><thead><tr>{head}</tr></thead>\n<tbody>\n{trs}\n</tbody></table>\n</main>'
        f"</body></html>\n"
    )
