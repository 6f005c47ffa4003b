"""Reading and rewriting output files by format, for the lazy agents (`lazy.py`).

An output is read once (`read_output`) into its format: a CSV table, parsed JSON or YAML, Markdown
lines (with their tables), plain text, code or binary. The helpers here rewrite one output without
any analysis: its skeleton (names and structure only), its numbers replaced, its rows rotated so
values meet the wrong rows, or an input table poured into its columns.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import yaml

CODE = (".py", ".sh", ".bash", ".js", ".ts", ".rb", ".go", ".rs", ".java", ".c", ".h", ".cpp", ".pl", ".php")
NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?![\w])")
_PLAIN_NUMBER = re.compile(r"[-+]?\$?\d[\d,]*(?:\.\d+)?%?")
_HEADER_LINE = re.compile(r"^[A-Z][A-Za-z-]*:(\s|$)")
_TABLE_SEPARATOR = re.compile(r"^\|?\s*:?-{3,}")
MAX_ROWS = 5000
MAX_SHIFTS = 100  # rotations `rotation` tries on a long list


@dataclass
class Table:
    """A CSV (or Markdown) table: header and rows of cells."""

    header: list[str]
    rows: list[list[str]]
    delimiter: str = ","

    def column(self, name: str) -> int | None:
        wanted = _norm(name)
        return next((i for i, h in enumerate(self.header) if _norm(h) == wanted), None)


@dataclass
class Output:
    """One output file of the reference, read in its format (`kind`)."""

    path: str
    kind: str  # csv, json, yaml, markdown, text, code, binary
    text: str = ""
    table: Table | None = None
    data: Any = None
    keys: list[str] = field(default_factory=list)  # the key column(s) of a table

    @property
    def tables(self) -> list[Table]:
        """Markdown tables (or the CSV table) the output holds."""
        if self.table is not None:
            return [self.table]
        return [t for _, _, t in markdown_tables(self.text)] if self.kind == "markdown" else []


def _norm(name: str) -> str:
    return re.sub(r"[\s_-]+", "_", str(name).strip().casefold())


def is_number(cell: Any) -> bool:
    if isinstance(cell, bool):
        return False
    return isinstance(cell, (int, float)) or bool(isinstance(cell, str) and _PLAIN_NUMBER.fullmatch(cell.strip()))


def numbers_in(text: str) -> list[str]:
    """The distinct numbers written in `text`, in order (thousands separators dropped)."""
    return list(dict.fromkeys(m.group(0).replace(",", "") for m in NUMBER.finditer(text)))


def read_table(text: str, delimiter: str | None = None) -> Table | None:
    if delimiter is None:
        try:
            delimiter = csv.Sniffer().sniff(text[:10000], delimiters=",;\t|").delimiter
        except csv.Error:
            delimiter = ","
    try:
        raw = [r for r in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter) if any(c.strip() for c in r)]
    except csv.Error:
        return None
    if not raw:
        return None
    return Table(
        [h.strip() for h in raw[0]], [r + [""] * (len(raw[0]) - len(r)) for r in raw[1 : MAX_ROWS + 1]], delimiter
    )


def write_table(table: Table) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter=table.delimiter, lineterminator="\n")
    writer.writerow(table.header)
    writer.writerows(table.rows)
    return buf.getvalue()


def read_output(path: str, raw: bytes, keys: Iterable[str] = ()) -> Output:
    """`raw` read in the format its name says; content that does not parse is text."""
    lower = path.lower()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return Output(path, "binary")
    if lower.endswith(CODE):
        return Output(path, "code", text)
    if lower.endswith((".csv", ".tsv")):
        table = read_table(text, "\t" if lower.endswith(".tsv") else None)
        if table is not None:
            wanted = [k for k in (table.column(k) for k in keys) if k is not None]
            return Output(path, "csv", text, table=table, keys=[table.header[i] for i in wanted] or _key_of(table))
    if lower.endswith((".json", ".yaml", ".yml")):
        kind = "json" if lower.endswith(".json") else "yaml"
        try:
            return Output(path, kind, text, data=json.loads(text) if kind == "json" else yaml.safe_load(text))
        except (ValueError, yaml.YAMLError, RecursionError):
            pass
    if lower.endswith((".md", ".markdown")):
        return Output(path, "markdown", text)
    return Output(path, "text", text)


def _key_of(table: Table) -> list[str]:
    """The first column whose cells are distinct words (not numbers): what names a row."""
    for i, name in enumerate(table.header):
        cells = [r[i] for r in table.rows]
        if cells and not any(is_number(c) for c in cells) and len(set(cells)) == len(cells):
            return [name]
    return []


def dump(kind: str, data: Any) -> str:
    if kind == "yaml":
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def markdown_tables(text: str) -> list[tuple[int, int, Table]]:
    """(first line, end line, table) of each pipe table in Markdown `text`."""
    lines, out, i = text.splitlines(), [], 0
    while i + 1 < len(lines):
        if lines[i].strip().startswith("|") and _TABLE_SEPARATOR.match(lines[i + 1].strip()):
            end = i + 2
            while end < len(lines) and lines[end].strip().startswith("|"):
                end += 1
            cells = [_cells(line) for line in lines[i:end]]
            out.append((i, end, Table(cells[0], [c + [""] * (len(cells[0]) - len(c)) for c in cells[2:]])))
            i = end
        else:
            i += 1
    return out


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def markdown_row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


@dataclass(frozen=True)
class Known:
    """What a lazy agent knows without reading the data: the numbers and words of the instruction."""

    numbers: tuple[str, ...] = ()
    words: frozenset[str] = frozenset()

    @classmethod
    def of(cls, instruction: str) -> "Known":
        return cls(tuple(numbers_in(instruction)), frozenset(_words(instruction)))

    def scrub(self, text: str) -> str:
        """`text` without the numbers the instruction does not state."""
        return NUMBER.sub(lambda m: m.group(0) if m.group(0).replace(",", "") in self.numbers else "", text)

    def states(self, text: str) -> bool:
        """Whether every word of `text` is a word of the instruction (so a lazy agent could write it)."""
        words = _words(text)
        return bool(words) and words <= self.words

    def names(self, key: str) -> bool:
        """Whether the instruction names a key: its words, or the number it is."""
        return key.strip().replace(",", "") in self.numbers or self.states(key)

    def heading(self, line: str) -> str | None:
        """A Markdown heading as far as the instruction states it (None: a heading only the data names)."""
        return self.scrub(line) if self.states(line.lstrip().lstrip("#")) else None

    def header(self, line: str) -> str:
        """A mail header line (`Subject: ...`), its value blanked unless the instruction states it."""
        name, _, value = line.partition(":")
        return self.scrub(line) if self.states(value) else name + ":"


def _words(text: str) -> set[str]:
    return {w.casefold() for w in re.findall(r"[^\W\d_]+", text)}


def skeleton_lines(out: Output, known: Known) -> list[str]:
    """Markdown: the headings the instruction states and each table's header; text: the header
    lines (To:, Subject:) it opens with, values the instruction does not state left blank."""
    lines = out.text.splitlines()
    keep: list[str] = []
    if out.kind == "markdown":
        heads = {i for start, _, _ in markdown_tables(out.text) for i in (start, start + 1)}
        for i, line in enumerate(lines):
            if i in heads:
                keep.append(line)
            elif line.lstrip().startswith("#") and (heading := known.heading(line)) is not None:
                keep.append(heading)
    elif out.kind == "text":
        for line in lines:
            if not _HEADER_LINE.match(line):
                break
            keep.append(known.header(line))
    return keep


def skeleton(out: Output, known: Known) -> str:
    """The file with the right name and format and no content."""
    if out.kind == "csv" and out.table is not None:
        return write_table(Table(out.table.header, [], out.table.delimiter))
    if out.kind in ("json", "yaml"):
        empty: Any = {} if isinstance(out.data, dict) else [] if isinstance(out.data, list) else None
        return dump(out.kind, empty) if empty is not None else ""
    lines = skeleton_lines(out, known)
    return "\n".join(lines) + ("\n" if lines else "")


def reshape(
    data: Any, number: Callable[[str], Any], keep_key: bool, name: str = "", known: "Known | None" = None
) -> Any:
    """`data` with every number replaced by `number(key it sits under)`, strings emptied (except the
    key field of the records of a list, with `keep_key`), booleans false; lengths kept, and keys
    kept too unless `known` is given: then only the keys the instruction names."""
    if isinstance(data, dict):
        return {
            k: reshape(v, number, keep_key, str(k), known)
            for k, v in data.items()
            if known is None or known.names(str(k))
        }
    if isinstance(data, list):
        key = record_key(data) if keep_key else None
        return [
            {k: (v if k == key else reshape(v, number, keep_key, str(k), known)) for k, v in item.items()}
            if key is not None
            else reshape(item, number, keep_key, name, known)
            for item in data
        ]
    if isinstance(data, bool):
        return False
    if isinstance(data, (int, float)):
        return number(name)
    if isinstance(data, str):
        return number(name) if is_number(data) else ""
    return data


def record_key(records: list[Any]) -> str | None:
    """The field naming each record of a list of objects: the first whose values are text."""
    if not records or not all(isinstance(r, dict) for r in records):
        return None
    for key, value in records[0].items():
        if isinstance(value, str) and not is_number(value) and all(isinstance(r.get(key), str) for r in records):
            return key
    return None


def rotation(items: list[Any], keys: list[Any] | None = None) -> list[Any] | None:
    """`items` rotated so that as few rows as possible come out right; None if every rotation
    leaves every row right. Row i is `keys[i]` (what stays: its key cells) with the item moved in;
    it is still right when it equals a row of the original, as when the rows sharing a key value
    trade their items (without `keys` each item keeps its own place)."""
    n = len(items)
    stays = [_frozen(k) for k in keys] if keys is not None else list(range(n))
    original = Counter(zip(stays, map(_frozen, items)))
    best, kept = None, n
    for k in _shifts(n):
        moved = items[k:] + items[:k]
        left, same = original.copy(), 0
        for row in zip(stays, map(_frozen, moved)):
            if left[row] > 0:
                left[row] -= 1
                same += 1
        if same < kept:
            best, kept = moved, same
    return best if kept < n else None


def _shifts(n: int) -> list[int]:
    """The rotations tried: every one of a short list, about MAX_SHIFTS spread over a long one."""
    if n <= MAX_SHIFTS + 1:
        return list(range(1, n))
    return sorted({1 + (n - 2) * i // (MAX_SHIFTS - 1) for i in range(MAX_SHIFTS)})


def _frozen(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def rotate_table(table: Table, keys: list[str]) -> Table | None:
    """The table with every row's non-key cells taken from another row (None if no row changes)."""
    key_idx = [i for i in (table.column(k) for k in keys) if i is not None] or [0]
    rest = [i for i in range(len(table.header)) if i not in key_idx]
    stays = [[r[i] for i in key_idx] for r in table.rows]
    moved = rotation([tuple(r[i] for i in rest) for r in table.rows], stays) if rest else None
    if moved is None:
        return None
    rows = [list(r) for r in table.rows]
    for row, values in zip(rows, moved):
        for i, v in zip(rest, values):
            row[i] = v
    return Table(table.header, rows, table.delimiter)


def rotate_data(data: Any) -> tuple[Any, bool]:
    """JSON/YAML data with values moved between the keys of each object and between the records of
    each list, keys and record keys kept; a value that cannot move is emptied. (data, anything moved)."""
    if isinstance(data, list) and len(data) > 1 and all(isinstance(r, dict) for r in data):
        key = record_key(data)
        fields = [f for f in data[0] if f != key]
        stays = [r.get(key) for r in data] if key is not None else None
        moved = rotation([tuple(r.get(f) for f in fields) for r in data], stays) if fields else None
        if moved is not None:
            return [{**r, **dict(zip(fields, values))} for r, values in zip(data, moved)], True
    if isinstance(data, dict):
        scalars = [k for k, v in data.items() if not isinstance(v, (dict, list))]
        moved = rotation([data[k] for k in scalars]) if len(scalars) > 1 else None
        out, any_moved = {}, moved is not None
        for k, v in data.items():
            if isinstance(v, (dict, list)):
                out[k], inner = rotate_data(v)
                any_moved = any_moved or inner
            else:
                out[k] = moved[scalars.index(k)] if moved is not None else reshape(v, lambda _: 0, False)
        return out, any_moved
    return reshape(data, lambda _: 0, False), False


def number_rotation(text: str) -> Callable[[str], str] | None:
    """A rewrite putting, wherever `text` has a number, the next distinct number of `text` instead
    (None with fewer than two distinct numbers)."""
    found = numbers_in(text)
    if len(found) < 2:
        return None
    after = dict(zip(found, found[1:] + found[:1]))
    return lambda line: NUMBER.sub(lambda m: after.get(m.group(0).replace(",", ""), m.group(0)), line)


def input_table(path: str, raw: bytes) -> Table | None:
    """An input file as a table: a CSV/TSV, a JSON list of objects or JSON Lines."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    lower = path.lower()
    if lower.endswith((".csv", ".tsv")):
        return read_table(text, "\t" if lower.endswith(".tsv") else None)
    records: Any = None
    try:
        if lower.endswith(".json"):
            records = json.loads(text)
        elif lower.endswith(".jsonl"):
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
    except ValueError:
        return None
    if isinstance(records, list) and records and all(isinstance(r, dict) for r in records):
        header = list(dict.fromkeys(str(k) for r in records for k in r))
        return Table(header, [[_cell(r.get(h)) for h in header] for r in records[:MAX_ROWS]])
    return None


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else json.dumps(value)


def pour(table: Table, header: list[str]) -> list[list[str]] | None:
    """`table`'s rows under `header`, columns matched by name (None if no column matches)."""
    idx = [table.column(h) for h in header]
    if all(i is None for i in idx):
        return None
    return [[row[i] if i is not None else "" for i in idx] for row in table.rows]


def as_value(cell: str) -> Any:
    """A table cell as a JSON value (numbers as numbers)."""
    if is_number(cell):
        try:
            number = float(cell.replace(",", "").replace("$", "").rstrip("%"))
        except ValueError:
            return cell
        return int(number) if number.is_integer() and "." not in cell else number
    return cell


def rewrite_markdown(
    out: Output, known: Known, row: Callable[[int, Table, int], list[str]], prose: Callable[[str], str | None]
) -> str:
    """Markdown rebuilt line by line: headings (scrubbed) and table headers kept, row k of table n
    through `row(n, table, k)`, every other line through `prose` (None drops it)."""
    lines = out.text.splitlines()
    tables = {start: (n, end, table) for n, (start, end, table) in enumerate(markdown_tables(out.text))}
    keep: list[str] = []
    i = 0
    while i < len(lines):
        if i in tables:
            n, end, table = tables[i]
            keep += [lines[i], lines[i + 1]] + [markdown_row(row(n, table, k)) for k in range(len(table.rows))]
            i = end
            continue
        line = lines[i]
        if line.lstrip().startswith("#"):
            if (heading := known.heading(line)) is not None:
                keep.append(heading)
        elif (changed := prose(line)) is not None:
            keep.append(changed)
        i += 1
    return "\n".join(keep) + ("\n" if keep else "")
