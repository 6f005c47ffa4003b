"""Graded values that need no analysis: a composed candidate whose deliverable a lazy answer could
score is turned away (build.py redraws), with the reason.

The lazy answers are computed, not run: the same deliverable over the rows without the filters,
over the first two rows of each input table, and over the input as it stands (`answers`), and what
anyone knows without the work (`known_of`: every input table's row count and numbers, the tables
the workspace already holds, the numbers the request states).

Each deliverable describes what it grades (`Figure`: row key -> the cells as written). A figure is
guessable when more than a tenth of its rows (the share a lazy answer may earn) would be right
- under values moved between rows (every group alike, or neighbours that share a value);
- as a constant known without reading the data (0, 1, an input's row count, a number the request
  states, the input column's highest or lowest value);
- as what the unfiltered rows give (a maximum the filter never touches), what the first two rows
  of each input give (a reader of the first screenful), or, for a table under the input's column
  names, the input copied out;
- and a text figure (numbers in a message) when the request or the input already holds it.
A gated figure (a gate requires exactly its keys) loses everything to an answer with other keys; a
figure of records is not compared with the unfiltered rows (a record the filters keep is its
unfiltered self: there the surplus is graded, by the gates and the whole-object checks).
"""

from __future__ import annotations

import copy
import csv
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from .deliver import DELIVERABLES, MESSAGE
from .delivered import Delivered, Figure
from .message import MAX_NUMBERS, count_rx
from .ops import FILTERS, OPERATIONS
from .state import State

LAZY = 0.1  # the most of a deliverable's rows a lazy answer may get right


@dataclass(frozen=True)
class Known:
    """What a lazy answer knows without analysis."""

    counts: frozenset[float] = frozenset()  # the inputs' row counts
    stated: frozenset[float] = frozenset()  # every number the request writes
    extremes: dict[str, tuple[float, float]] = field(default_factory=dict)  # input column -> (max, min)
    cells: frozenset[float] = frozenset()  # every number in the inputs

    @property
    def constants(self) -> frozenset[float]:
        return frozenset({0.0, 1.0}) | self.counts | self.stated

    @classmethod
    def of(cls, tables: list[tuple[list[str], list[dict[str, str]]]], request: str = "") -> "Known":
        """From the input tables ((columns, rows) each) and the request's text."""
        counts = {float(len(rows)) for _, rows in tables}
        stated = {v for v in map(_value, _NUMBER.findall(request)) if v is not None}
        extremes: dict[str, tuple[float, float]] = {}
        cells: set[float] = set()
        for columns, rows in tables:
            for c in columns:
                values = [v for v in (_value(r.get(c, "")) for r in rows) if v is not None]
                cells.update(values)
                if values and c not in extremes:
                    extremes[c] = (max(values), min(values))
        return cls(frozenset(counts), frozenset(stated), extremes, frozenset(cells))


_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?![\w])")


def _value(text: object) -> float | None:
    try:
        return float(str(text).replace(",", ""))
    except ValueError:
        return None


def _same(a: str, b: str) -> bool:
    x, y = _value(a), _value(b)
    return abs(x - y) < 0.005 if x is not None and y is not None else a.strip() == b.strip()


def rotation_kept(cells: list[tuple[str, ...]]) -> int:
    """How many rows keep their values when the values move to other rows as well as they can (the
    best shift of the list): every one when all rows are alike."""
    n = len(cells)
    if n < 2:
        return 0
    return min(sum(all(map(_same, cells[(i + k) % n], cells[i])) for i in range(n)) for k in range(1, n))


def _few_small(cells: frozenset[float]) -> bool:
    """Whether the inputs state at most MAX_NUMBERS different whole numbers from 0 to 100."""
    return len({c for c in cells if float(c).is_integer() and 0 <= c <= 100}) <= MAX_NUMBERS


def _constant_rows(f: Figure, known: Known) -> tuple[int, str]:
    """The most rows one constant guess gets right, and the guess."""
    best, what = 0, ""
    n = len(f.rows)
    # a constant known without analysis, or a row count shared out evenly over the groups (24 dishes, 6 allergens: 4 each)
    shares = {float(round(c / n)) for c in known.constants if n > 1 and c >= n and float(c).is_integer()}
    for c in sorted(set(known.constants) | shares):
        hit = sum(bool(cells) and all(_value(v) == c for v in cells) for cells in f.rows.values())
        if hit > best:
            best, what = (
                hit,
                f"{c:g}" + (" (a row count shared out evenly)" if c in shares and c not in known.constants else ""),
            )
    for i, pick in ((0, "the input column's highest value"), (1, "the input column's lowest value")):
        guess = [known.extremes.get(c, (0.0, 0.0))[i] for c in f.columns]
        hit = sum(
            bool(cells) and len(cells) == len(guess) and all(_value(v) == g for v, g in zip(cells, guess))
            for cells in f.rows.values()
        )
        if hit > best:
            best, what = hit, pick
    return best, what


def _agreeing(f: Figure, other: Figure) -> float:
    """The share of `f` another computation gets right, rows it adds counting against it."""
    if f.gated and set(other.rows) != set(f.rows):
        return 0.0
    same = sum(
        k in other.rows and len(other.rows[k]) == len(v) and all(map(_same, other.rows[k], v))
        for k, v in f.rows.items()
    )
    return same / (len(f.rows) + len(set(other.rows) - set(f.rows)))


def why_guessable(
    f: Figure, known: Known, unfiltered: Figure | None = None, first: Figure | None = None, raw: Figure | None = None
) -> str | None:
    """Why `f` can be scored without the work (None when it cannot): `unfiltered`, `first` and
    `raw` are the same output computed without the filters, on the first rows of each input, and
    from the input as it stands (no step at all)."""
    n = len(f.rows)
    if n == 0:
        return f"{f.what}: nothing to grade"
    if f.kind == "text":  # numbers in prose, each found on its own whatever words surround it
        for key, cells in f.rows.items():
            for x, v in ((_value(v), v) for v in cells):
                if x is None:
                    continue
                if x in known.constants or (key == "count" and x in known.counts):  # a stated count: `stated`
                    return f"{f.what}: {v} is known without the work"
                if x in known.cells and (key != "count" or _few_small(known.cells)):
                    # a count found anywhere in prose: the input poured into the message holds it,
                    # and states too few small numbers for the cap on guesses to stop it
                    return f"{f.what}: {v} is in the input as it stands"
    elif f.kind == "table":
        kept = rotation_kept(list(f.rows.values()))
        if kept / n > LAZY:
            return f"{f.what}: {kept} of {n} rows keep their values when the values change rows"
        hit, guess = _constant_rows(f, known)
        if hit / n > LAZY:
            return f"{f.what}: {hit} of {n} rows are {guess}, known without the work"
    # a record kept by the filters is its unfiltered self: for records the surplus is what counts (gates)
    others = [(None if f.records else unfiltered, "the unfiltered rows"), (first, "the first two rows of each input")]
    if f.poured:
        others.append((raw, "the input copied out"))
    for other, what in others:
        if other is not None and _agreeing(f, other) > LAZY:
            return f"{f.what}: what {what} give is right for more than a tenth of it"
    return None


# ---------------------------------------------------------------------------------------------
# The lazy answers of one candidate, and whether its deliverables pay them


NARROWING = (*FILTERS, "rank_top", "top_per_group")  # the steps that choose which rows count
FIRST_ROWS = 2  # data rows a reader of the first screenful sees of each input table


def unfiltered(fresh: Any, steps: list) -> State | None:
    """The rows an answer that skips every filter and selection works on (None when the chain has
    none, or breaks without them): what copying the unfiltered input out would grade against."""
    if not any(n in NARROWING for n, _ in steps):
        return None
    st = fresh()
    try:
        for n, p in steps:
            if n not in NARROWING:
                OPERATIONS[n].apply(st, copy.deepcopy(p))
    except Exception:  # noqa: BLE001 - a later step needs the narrowed rows: no lazy answer to compare
        return None
    return st


@lru_cache(maxsize=16)
def workspace_tables(root: Path, name: str) -> list[tuple[list[str], list[dict[str, str]]]]:
    """The tables a workspace's own files hold (a sample CSV, the staff directory its
    workspace.yaml writes): their row counts and numbers are known to anyone who lists the folder."""
    texts = {}
    for path in sorted((root / "workspaces" / name / "files").rglob("*")):
        if path.suffix in (".csv", ".json", ".jsonl") and path.is_file():
            texts[path.name + str(len(texts))] = (path.suffix, path.read_text(encoding="utf-8", errors="replace"))
    try:
        spec = yaml.safe_load((root / "workspaces" / name / "workspace.yaml").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        spec = {}
    for entry in spec.get("files") or []:
        text = entry.get("template") or entry.get("content") if isinstance(entry, dict) else None
        suffix = Path(str(entry.get("path", ""))).suffix if isinstance(entry, dict) else ""
        if isinstance(text, str) and suffix in (".csv", ".json", ".jsonl"):  # Jinja statements write no row
            texts[str(entry["path"])] = (
                suffix,
                "\n".join(x for x in text.splitlines() if not x.strip().startswith("{%")),
            )
    return [table for suffix, text in texts.values() if (table := table_of(suffix, text)) is not None]


def table_of(suffix: str, text: str) -> tuple[list[str], list[dict[str, str]]] | None:
    """A CSV, JSON list or JSON Lines text as (columns, rows), None when it holds no table."""
    if suffix == ".csv":
        reader = csv.DictReader(text.strip().splitlines())
        rows = [dict(r) for r in reader]
        return (list(reader.fieldnames or []), rows) if reader.fieldnames else None
    try:
        records = json.loads(text) if suffix == ".json" else [json.loads(x) for x in text.splitlines() if x.strip()]
    except ValueError:
        return None
    if not (isinstance(records, list) and records and all(isinstance(r, dict) for r in records)):
        return None
    return sorted({str(k) for r in records for k in r}), [{str(k): str(v) for k, v in r.items()} for r in records]


def cuttable(fmt: str, text: str) -> bool:
    """Whether a reader of the first screenful sees the input as a table it can cut to its first rows
    (a CSV, JSON Lines, a JSON list; not a note, a log or a folder of records)."""
    if fmt in ("csv", "semicolon", "jsonl"):
        return True
    if fmt == "json":
        try:
            return isinstance(json.loads(text), list)
        except ValueError:
            return False
    return False


def first_rows(fresh: Any, steps: list, parts: list[tuple[int, bool]]) -> State | None:
    """The chain run on the first two rows of each input table (None when it breaks there: a lookup
    table cut short, say): what answering from the first screenful would grade against. An input
    that is no table (a note, a log, a folder of records, a JSON object) is read whole."""
    st = fresh()
    rows, at = [], 0
    for n, table in parts:
        rows += st.rows[at : at + (min(n, FIRST_ROWS) if table else n)]
        at += n
    st.rows = rows
    try:
        for n, p in steps:
            p = copy.deepcopy(p)
            if n == "join":
                p["other_rows"] = p["other_rows"][:FIRST_ROWS]
            OPERATIONS[n].apply(st, p)
    except Exception:  # noqa: BLE001 - the cut rows break the chain: no answer from them
        return None
    return st


def answers(fresh: Any, steps: list, parts: list[tuple[int, bool]]) -> tuple[State | None, ...]:
    """The rows lazy answers work on: without the filters, the first rows of each input, the input
    as it stands."""
    return unfiltered(fresh, steps), first_rows(fresh, steps, parts), fresh()


def known_of(fresh: Any, parts: list, steps: list, planned: list, workspace: list, request: str = "") -> Known:
    """What a lazy answer knows: every input table (each part of a split input, a lookup table, the
    other party's copy, the tables the workspace already holds), and the numbers the request states."""
    st = fresh()
    tables, at = list(workspace), 0
    for n, _ in parts:
        tables.append((list(st.columns), st.rows[at : at + n]))
        at += n
    if len(parts) > 1:  # the parts read together: their combined row count is known too
        tables.append((list(st.columns), st.rows[:at]))
    tables += [(list(p["other_types"]), p["other_rows"]) for n, p in steps if n == "join"]
    tables += [(sorted({k for r in p["theirs"] for k in r}), p["theirs"]) for n, _, p in planned if n == "reconcile"]
    return Known.of(tables, request)


def answer(name: str, st: State | None, p: dict[str, Any], first: bool) -> Delivered | None:
    """The deliverable computed on other rows (None when its plan does not fit them)."""
    if st is None:
        return None
    p = copy.deepcopy(p)
    if first and "theirs" in p:
        p["theirs"] = p["theirs"][:FIRST_ROWS]
    try:
        return (MESSAGE if name == MESSAGE.name else DELIVERABLES[name]).deliver(st, p)
    except Exception:  # noqa: BLE001 - the plan needs what only the chain's rows hold
        return None


def guessed(name: str, d: Delivered, p: dict[str, Any], lazy: tuple, known: Known) -> str | None:
    """Why a deliverable's graded values need no analysis (None when they do): nothing to grade,
    or a figure a lazy answer gets right (`why_guessable`); `lazy` is what `answers` gives."""
    if any(c.get("type") == "csv_rows_equal" and c.get("expected") == [] for c in d.checks):
        return f"{name}: an empty result"
    computed = [answer(name, st, p, i == 1) for i, st in enumerate(lazy)]
    for i, f in enumerate(d.figures):
        others = [a.figures[i] if a is not None and i < len(a.figures) else None for a in computed]
        why = why_guessable(f, known, *others)
        if why is not None:
            return f"{name}: {why}"
    return None


def refusal(planned: list[tuple[str, Delivered, dict]], lazy: tuple, known: Known) -> str | None:
    """The first deliverable of the final chain whose figures need no work (see `guessed`)."""
    for name, d, p in planned:
        why = guessed(name, d, p, lazy, known)
        if why is not None:
            return why
    return None


def stated(delivered: list, instruction: str, noun: tuple[str, str]) -> str | None:
    """A message count the request itself gives away ("keep the 5 builds with the highest ..." and
    then "tell Sam how many builds"): it could be copied, not worked out."""
    for name, d in delivered:
        for f in d.figures if name == MESSAGE.name else ():
            count = f.rows.get("count", ("",))[0]
            if count and re.search(count_rx(count), instruction):
                return f"{name}: the request states the number of {noun[1]} ({count})"
    return None
