"""The format gate: each graded output file written in another reasonable form must still score
1.0 unless the instruction fixes that format (see `VARIANTS` for the words that do). Naming the
columns ("with the columns a, b, c") fixes their names, not their order: the order counts as fixed
only where the instruction says so ("in this order", "column order")."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal

from ...files import safefs
from ...files.tempdirs import make_temp
from ...spec.task import Task
from .records import EPS, OK, PROBLEM, SKIPPED, Grading, Mutation, failing, unpassed
from .rows import json_dump, md_tables, newline_of, table_cells
from .workspace import apply_edits, check_files, workspace_files

# a column or key whose numbers are identifiers, never rewritten as 116.0
_ID_NAME = re.compile(
    r"(?:^|[\s_-])(?:id|key|code|ref|no|number|num|zip|postcode|phone|isbn|doi|sku|account"
    r"|year|month|week|day|rank|position|index|line|page|version|port|level|priority)$",
    re.I,
)
_INT = re.compile(r"-?(?:0|[1-9]\d*)")
_WHOLE_FLOAT = re.compile(r"-?\d+\.0+")
_GROUPED = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?")


def _as_float(cell: str) -> str:
    return cell + ".0" if _INT.fullmatch(cell) else cell


def _as_int(cell: str) -> str:
    return cell.split(".")[0] if _WHOLE_FLOAT.fullmatch(cell) else cell


def _ungrouped(cell: str) -> str:
    return cell.replace(",", "") if _GROUPED.fullmatch(cell) else cell


_CELL_CHANGES: dict[str, Callable[[str], str]] = {"float": _as_float, "int": _as_int, "grouping": _ungrouped}


def _number_columns(header: list[str], rows: list[list[str]], keys: frozenset[str]) -> set[int]:
    """Columns whose numbers are quantities: not named like an identifier or a check's key, and
    not a first column of all-different values."""
    out = set()
    for j, name in enumerate(header):
        if name in keys or _ID_NAME.search(name.strip()):
            continue
        column = [r[j] for r in rows if j < len(r)]
        if j == 0 and len(set(column)) == len(column):
            continue
        out.add(j)
    return out


def _csv_variant(text: str, change: str, keys: frozenset[str]) -> str | None:
    nl = newline_of(text)
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error:
        return None
    if len(rows) < 2:
        return None
    quoting: Literal[0, 1] = csv.QUOTE_MINIMAL
    if change == "columns":
        if len(rows[0]) < 2:
            return None
        rows = [r[::-1] for r in rows]
    elif change == "quoted":
        quoting = csv.QUOTE_ALL
    elif change == "eol":
        nl = "\n" if nl == "\r\n" else "\r\n"
    else:
        cell_fn = _CELL_CHANGES[change]
        numbers = _number_columns([h.strip() for h in rows[0]], rows[1:], keys)
        rows = rows[:1] + [[cell_fn(c) if j in numbers else c for j, c in enumerate(r)] for r in rows[1:]]
    buf = io.StringIO()
    csv.writer(buf, lineterminator=nl, quoting=quoting).writerows(rows)
    out = buf.getvalue()
    return out if text.endswith(("\n", "\r")) else out[: -len(nl)]


def _map_cells(line: str, fn: Callable[[str], str], columns: set[int]) -> str:
    """A table row with `fn` applied to the cells of `columns`, spacing kept."""
    parts = line.split("|")
    first = 1 if line.strip().startswith("|") else 0
    last = len(parts) - 1 if line.strip().endswith("|") else len(parts)
    for j in range(first, last):
        cell = parts[j].strip()
        if cell and j - first in columns:
            parts[j] = parts[j].replace(cell, fn(cell), 1)
    return "|".join(parts)


_LIST_NUMBER = re.compile(r"^(\s*(?:[-*+]|\d{1,9}[.)])\s+[^:\n]*:\s*)(-?\d[\d,]*(?:\.\d+)?)(\s*)$")


def _md_variant(text: str, change: str, keys: frozenset[str]) -> str | None:
    lines = text.split("\n")
    tables = md_tables(lines)
    if change in _CELL_CHANGES:
        fn = _CELL_CHANGES[change]
        for start, end in tables:
            rows = [table_cells(line) for line in lines[start + 2 : end]]
            numbers = _number_columns(table_cells(lines[start]), rows, keys)
            for i in range(start + 2, end):
                lines[i] = _map_cells(lines[i], fn, numbers)
        lines = [
            m.group(1) + fn(m.group(2)) + m.group(3) if (m := _LIST_NUMBER.match(line)) else line for line in lines
        ]
        return "\n".join(lines)
    if not tables:
        return None
    for start, end in tables:
        rows = [table_cells(line) for line in lines[start:end]]
        piped = lines[start].strip().startswith("|")
        if change == "pipes":
            lines[start:end] = [" | ".join(r) if piped else f"| {' | '.join(r)} |" for r in rows]
        else:  # padded to aligned columns
            widths = [max(len(r[j]) if j < len(r) else 0 for r in rows[:1] + rows[2:]) for j in range(len(rows[0]))]
            widths = [max(3, w) for w in widths]
            body = [[(r[j] if j < len(r) else "").ljust(w) for j, w in enumerate(widths)] for r in rows]
            body[1] = ["-" * w for w in widths]
            lines[start:end] = [f"| {' | '.join(r)} |" for r in body]
    return "\n".join(lines)


def _json_numbers(data: Any, fn: Callable[[Any], Any], key: str = "") -> Any:
    if isinstance(data, dict):
        return {k: _json_numbers(v, fn, str(k)) for k, v in data.items()}
    if isinstance(data, list):
        return [_json_numbers(v, fn, key) for v in data]
    if isinstance(data, (int, float)) and not isinstance(data, bool) and not _ID_NAME.search(key):
        return fn(data)
    return data


def _reversed_keys(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _reversed_keys(data[k]) for k in reversed(list(data))}
    if isinstance(data, list):
        return [_reversed_keys(v) for v in data]
    return data


def _json_variant(text: str, change: str, keys: frozenset[str]) -> str | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    end = "\n" if text.endswith("\n") else ""
    if change == "layout":
        pretty = "\n" in text.strip()
        return (
            json.dumps(data, ensure_ascii=False) if pretty else json.dumps(data, indent=2, ensure_ascii=False)
        ) + end
    if change == "keys":
        return json_dump(_reversed_keys(data), text)
    if change == "float":
        return json_dump(_json_numbers(data, lambda n: float(n) if isinstance(n, int) else n), text)
    return json_dump(_json_numbers(data, lambda n: int(n) if isinstance(n, float) and n.is_integer() else n), text)


_REWRITE: dict[str, Callable[[str, str, frozenset[str]], str | None]] = {
    "csv": _csv_variant,
    "json": _json_variant,
    "md": _md_variant,
    "markdown": _md_variant,
}


@dataclass(frozen=True)
class Variant:
    """Another reasonable way to write a file: its name, the file types it applies to, the words of
    an instruction that fix that format (then the variant is not required) and the change made
    (`newline`: the final newline dropped; the others are done by the file type's rewrite)."""

    name: str
    suffixes: tuple[str, ...]
    fixed_by: re.Pattern
    change: str

    def text(self, rel: str, text: str, keys: frozenset[str]) -> str | None:
        """The variant of a file's text (`keys`: columns never rewritten as numbers), or None where
        it does not apply or changes nothing."""
        suffix = rel.rsplit(".", 1)[-1].lower()
        if suffix not in self.suffixes:
            return None
        if self.change == "newline":
            new: str | None = text.rstrip("\r\n")
        else:
            new = _REWRITE[suffix](text, self.change, keys)
        return None if new is None or new == text else new


def _words(pattern: str) -> re.Pattern:
    return re.compile(pattern, re.I)


_NUMBER_WORDS = _words(r"decimal places?|\bdecimals\b|\bdp\b|whole numbers?|as integers?|trailing zeros?")
_MD = ("md", "markdown")
VARIANTS: tuple[Variant, ...] = (
    Variant(
        "with the columns in another order",
        ("csv",),
        _words(
            r"column order|order of the columns|columns?\b[^.;]{0,100}?\bin (?:this|that|exactly this|the following) order"
        ),
        "columns",
    ),
    Variant("with every field quoted", ("csv",), _words(r"\bquot"), "quoted"),
    Variant(
        "with the other line endings (CRLF or LF)", ("csv",), _words(r"\bCRLF\b|line endings?|windows[- ]style"), "eol"
    ),
    Variant("without a final newline", ("csv", "json") + _MD, _words(r"newline|line break at the end"), "newline"),
    Variant("with whole numbers written as 116.0", ("csv",) + _MD, _NUMBER_WORDS, "float"),
    Variant("with 116.0 written as 116", ("csv",) + _MD, _NUMBER_WORDS, "int"),
    Variant("without thousands separators", ("csv",) + _MD, _words(r"thousands"), "grouping"),
    Variant(
        "pretty-printed or compact (the other)",
        ("json",),
        _words(r"pretty[- ]print|\bindent|\bcompact\b|minif|JSON[^.\n]{0,60}\b(?:on|in) (?:one|a single) line"),
        "layout",
    ),
    Variant(
        "with the keys in another order",
        ("json",),
        _words(
            r"key order|keys in (?:this |that |the same |alphabetical )?order|sort(?:ed)? (?:the )?keys|keys sorted"
        ),
        "keys",
    ),
    Variant("with whole numbers written as 6.0", ("json",), _NUMBER_WORDS, "float"),
    Variant("with 6.0 written as 6", ("json",), _NUMBER_WORDS, "int"),
    Variant(
        "with tables with or without outer pipes (the other)", _MD, _words(r"outer pipes?|leading pipes?"), "pipes"
    ),
    Variant("with tables padded to aligned columns", _MD, _words(r"\balign|padd"), "padded"),
)


def _outputs(checks: list[dict], pristine: Path, final: Path) -> list[str]:
    """The files the checks read that the reference made or changed."""
    files = workspace_files(final)
    out = []
    for check in checks:
        for rel in check_files(check, files):
            before = pristine / rel
            if rel not in out and (not before.is_file() or before.read_bytes() != (final / rel).read_bytes()):
                out.append(rel)
    return out


def format_variants(
    task: Task, pristine: Path, final: Path, *, trajectory: dict | None = None, sandbox: dict | None = None
) -> list[Mutation]:
    """Write each graded output file of the reference (`final`, graded with the reference's
    `trajectory`) in each other reasonable format and require the reward to stay 1.0, unless the
    instruction fixes that format."""
    grading = Grading(task, Path(pristine), trajectory, sandbox)
    base = grading.verdict(Path(final))
    outputs = _outputs(grading.checks, Path(pristine), Path(final))
    if base.reward < 1 - EPS:
        return [unpassed("format", base, ", ".join(outputs))]
    keys = frozenset(
        str(k) for c in grading.checks for k in ([c["key"]] if isinstance(c.get("key"), str) else c.get("key") or [])
    )
    root = make_temp("mutations")
    try:
        shutil.copytree(final, root / "variant", symlinks=True)
        return [m for rel in outputs for m in _file_variants(grading, root / "variant", rel, keys)]
    finally:
        safefs.remove_tree(root)


def _file_variants(grading: Grading, workspace: Path, rel: str, keys: frozenset[str]) -> list[Mutation]:
    """The records of every variant of one output file (none where it is not UTF-8 text)."""
    try:
        text = (workspace / rel).read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return []
    out = []
    for variant in VARIANTS:
        new = variant.text(rel, text, keys)
        if new is None:
            continue
        label = f"{rel} {variant.name}"
        fixed = variant.fixed_by.search(grading.task.instruction)
        if fixed:
            why = f"{label}: not required, the instruction fixes that format ('{fixed.group(0)}')"
            out.append(Mutation("format", variant.name, rel, None, SKIPPED, why))
            continue
        undo = apply_edits(workspace, {rel: new.encode("utf-8")})
        try:
            verdict = grading.verdict(workspace)
        finally:
            undo()
        if verdict.reward >= 1 - EPS:
            out.append(Mutation("format", variant.name, rel, verdict.reward, OK, f"{label} still scores 1.0"))
            continue
        why = (
            f"format: {label} fails {failing(verdict)}, though the instruction does not fix that format "
            "(accept the equivalent form in the check, or state the format in the instruction)"
        )
        out.append(Mutation("format", variant.name, rel, verdict.reward, PROBLEM, why))
    return out
