"""The rows of an output file, for the check-name gate to reorder, shorten or lengthen: CSV rows,
Markdown table rows, sections and list items, JSON list items or object entries, and iCalendar
events; each group can be rendered back with other items, and a surplus row made from an input
record. Also the Markdown and JSON helpers the format variants share."""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from typing import Any, Callable


def _no_surplus(records: list[dict[str, Any]]) -> Any | None:
    return None


@dataclass
class Rows:
    """The rows of one file: what they are (`kind`: "CSV rows", "table rows", "list items",
    "sections", "events", "JSON items" or "JSON entries"), the items, the file's text with other items, and
    a surplus item made from a record of the input (None where no record fits)."""

    kind: str
    items: list[Any]
    render: Callable[[list[Any]], str]
    from_input: Callable[[list[dict[str, Any]]], Any | None] = _no_surplus


def newline_of(text: str) -> str:
    """The line ending a text uses (CRLF if any, else LF)."""
    return "\r\n" if "\r\n" in text else "\n"


def _projection(record: dict[str, Any], columns: list[str]) -> list[str]:
    folded = {str(k).strip().casefold(): v for k, v in record.items()}
    return ["" if (v := folded.get(c.casefold())) is None else str(v).strip() for c in columns]


def _best(records: list[dict[str, Any]], columns: list[str], existing: list[list[str]]) -> list[str] | None:
    """The cells under `columns` of the input record that fits best and is no row already: one whose
    first cell is new first, then the one filling most columns."""
    firsts = {row[0] for row in existing if row}
    best, rank = None, (False, 0)
    for record in records:
        cells = _projection(record, columns)
        filled = sum(1 for c in cells if c)
        if filled and cells not in existing and (cells[0] not in firsts, filled) > rank:
            best, rank = cells, (cells[0] not in firsts, filled)
    return best


def _csv_rows(text: str) -> Rows | None:
    nl = newline_of(text)
    lines = text.split(nl)
    tail = lines[-1] == ""
    if tail:
        lines.pop()
    if not lines or any(not line.strip() for line in lines):
        return None
    parsed = list(csv.reader(io.StringIO(nl.join(lines), newline="")))
    if len(parsed) != len(lines):
        return None  # fields over several lines: no line-level rows
    header = [h.strip() for h in parsed[0]]
    existing = [[c.strip() for c in row] for row in parsed[1:]]

    def from_input(records: list[dict[str, Any]]) -> Any | None:
        cells = _best(records, header, existing)
        if cells is None:
            return None
        buf = io.StringIO()
        csv.writer(buf, lineterminator="").writerow(cells)
        return buf.getvalue()

    return Rows("CSV rows", lines[1:], lambda items: nl.join(lines[:1] + items) + (nl if tail else ""), from_input)


_SEPARATOR = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
ATX = re.compile(r"^(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+\S")


def table_cells(line: str) -> list[str]:
    """The cells of a Markdown table row, stripped."""
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") else inner
    return [c.strip() for c in inner.split("|")]


def md_tables(lines: list[str]) -> list[tuple[int, int]]:
    """(header line, end) of each Markdown table: its header, separator and rows up to `end`."""
    out, i = [], 0
    while i + 1 < len(lines):
        if "|" in lines[i] and "-" in lines[i + 1] and "|" in lines[i + 1] and _SEPARATOR.match(lines[i + 1]):
            end = i + 2
            while end < len(lines) and "|" in lines[end] and lines[end].strip():
                end += 1
            out.append((i, end))
            i = end
        else:
            i += 1
    return out


def _md_row_sets(text: str) -> list[Rows]:
    """Each table's rows, the sections, each run of list items."""
    lines = text.split("\n")
    out = []
    for start, end in (t for t in md_tables(lines) if t[1] > t[0] + 2):
        header, rows = table_cells(lines[start]), lines[start + 2 : end]
        piped = rows[0].strip().startswith("|")

        def from_input(records: list[dict[str, Any]], header=header, rows=rows, piped=piped) -> Any | None:
            cells = _best(records, header, [table_cells(r) for r in rows])
            return None if cells is None else f"| {' | '.join(cells)} |" if piped else " | ".join(cells)

        out.append(Rows("table rows", rows, _spliced(lines, start + 2, end), from_input))
    sections = _md_sections(lines)
    out += [sections] if sections else []
    runs: list[tuple[int, int]] = []
    for i, line in enumerate(lines):
        if _ITEM.match(line):
            runs.append((runs.pop()[0], i + 1) if runs and runs[-1][1] == i else (i, i + 1))
    return out + [Rows("list items", lines[a:b], _spliced(lines, a, b)) for a, b in runs]


def _spliced(lines: list[str], a: int, b: int) -> Callable[[list[Any]], str]:
    """The text of `lines` with lines a..b (excluded) replaced by other items."""
    return lambda items: "\n".join(lines[:a] + items + lines[b:])


def _md_sections(lines: list[str]) -> Rows | None:
    """The sections under the top heading level (the one below a single title), in one run."""
    heads = [(i, len(m.group(1))) for i, line in enumerate(lines) if (m := ATX.match(line))]
    levels = sorted({lv for _, lv in heads})
    if len(heads) < 2:
        return None
    level = levels[1] if [lv for _, lv in heads].count(levels[0]) == 1 and len(levels) > 1 else levels[0]
    starts = [i for i, lv in heads if lv == level]
    bounds: list[tuple[int, int]] = []
    for n, i in enumerate(starts):
        end = next((j for j, lv in heads if j > i and lv <= level), len(lines))
        bounds.append((i, end))
        if n + 1 < len(starts) and end != starts[n + 1]:
            break  # a higher heading comes between: one run of sections only
    a, b = bounds[0][0], bounds[-1][1]
    items = ["\n".join(lines[i:end]) for i, end in bounds]
    return Rows("sections", items, lambda new: "\n".join(lines[:a] + new + lines[b:]))


def _ics_rows(text: str) -> Rows | None:
    """The events of an iCalendar file (its VEVENT blocks, one run)."""
    nl = newline_of(text)
    lines = text.split(nl)
    begins = [i for i, line in enumerate(lines) if line.strip() == "BEGIN:VEVENT"]
    ends = [i + 1 for i, line in enumerate(lines) if line.strip() == "END:VEVENT"]
    if not begins or len(begins) != len(ends) or any(e != b for e, b in zip(ends, begins[1:])):
        return None
    items = [nl.join(lines[b:e]) for b, e in zip(begins, ends)]
    return Rows("events", items, lambda new: nl.join(lines[: begins[0]] + new + lines[ends[-1] :]))


def _typed(value: str, like: Any) -> Any:
    """A cell of the input as the type of `like`, a value already in the output."""
    if isinstance(like, (int, float)) and not isinstance(like, bool):
        try:
            number = float(value.replace(",", ""))
        except ValueError:
            return value
        return int(number) if isinstance(like, int) and number.is_integer() else number
    return value


def json_dump(data: Any, text: str) -> str:
    """`data` as JSON in the layout of `text` (indented or on one line; final newline or not)."""
    body = text.strip()
    if "\n" in body:
        second = body.split("\n")[1]
        out = json.dumps(data, indent=len(second) - len(second.lstrip(" ")) or 2, ensure_ascii=False)
    else:
        out = json.dumps(data, ensure_ascii=False)
    return out + ("\n" if text.endswith("\n") else "")


def _json_rows(text: str) -> Rows | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if isinstance(data, dict) and data:
        lists = [k for k, v in data.items() if isinstance(v, list) and v]
        if not lists:
            return _json_entries(data, text)
        key = max(lists, key=lambda k: (all(isinstance(x, dict) for x in data[k]), len(data[k])))
        return _json_items(data[key], lambda items: json_dump({**data, key: items}, text))
    if isinstance(data, list) and data:
        return _json_items(data, lambda items: json_dump(items, text))
    return None


def _json_items(items: list[Any], render: Callable[[list[Any]], str]) -> Rows:
    first = items[0]
    columns = [str(c) for c in first] if isinstance(first, dict) else []

    def from_input(records: list[dict[str, Any]]) -> Any | None:
        existing = [_projection(x, columns) for x in items if isinstance(x, dict)]
        cells = _best(records, columns, existing) if columns else None
        return None if cells is None else {c: _typed(v, first[c]) for c, v in zip(columns, cells)}

    return Rows("JSON items", list(items), render, from_input)


def _json_entries(data: dict, text: str) -> Rows:
    """An object of entries: a surplus one is keyed by an unused value of the input field whose
    values are the keys already there."""
    keys = {str(k) for k in data}
    last = data[list(data)[-1]]

    def from_input(records: list[dict[str, Any]]) -> Any | None:
        hits: dict[str, int] = {}
        for record in records:
            for f, v in record.items():
                hits[str(f)] = hits.get(str(f), 0) + (str(v).strip() in keys)
        field = max(hits, key=lambda f: hits[f], default="")
        if not hits.get(field):
            return None
        fresh = [r for r in records if str(r.get(field, "")).strip() not in keys | {""}]
        if not fresh:
            return None
        if not isinstance(last, dict):
            return str(fresh[0][field]).strip(), last
        return str(fresh[0][field]).strip(), {
            c: _typed(v, last[c]) for c, v in zip(last, _projection(fresh[0], [str(k) for k in last]))
        }

    return Rows("JSON entries", list(data.items()), lambda items: json_dump(dict(items), text), from_input)


def row_sets(rel: str, text: str) -> list[Rows]:
    """The groups of rows of a file a mutation may reorder, shorten or lengthen."""
    suffix = rel.rsplit(".", 1)[-1].lower()
    if suffix in ("md", "markdown"):
        return _md_row_sets(text)
    read = {"csv": _csv_rows, "json": _json_rows, "ics": _ics_rows}.get(suffix)
    found = read(text) if read else None
    return [found] if found is not None and found.items else []


def repeated(rows: Rows) -> Any:
    """The last item again (a JSON entry under a new key)."""
    last = rows.items[-1]
    return (f"{last[0]}-extra", last[1]) if rows.kind == "JSON entries" else last
