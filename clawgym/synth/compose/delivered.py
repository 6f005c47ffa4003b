"""What every deliverable shares: the `Deliver` interface, the `Delivered` result (checks, solution
lines, phrasing words) and small helpers for paths, order and columns."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from .model import NUMBER_TYPES
from .data import Row
from .state import State, label, most


@dataclass(frozen=True)
class Figure:
    """What one graded output holds, row key -> its graded cells as the reference writes them
    (under the output's column names): what guessable.py tries lazy answers against."""

    what: str  # in words, for the reason a candidate is turned away
    rows: dict[str, tuple[str, ...]]
    columns: tuple[str, ...] = ()
    # "table": a CSV, JSON or Markdown table; "lines": report lines ('- group: value');
    # "text": numbers in prose (a count beside what it counts, a total anywhere)
    kind: str = "table"
    gated: bool = False  # a gate requires exactly these row keys (the unfiltered rows score nothing)
    poured: bool = False  # a table under the input's column names: the input copied out can fill it
    records: bool = False  # rows are the input's records (not figures computed from them)


@dataclass
class Delivered:
    path: str
    checks: list[dict[str, Any]]
    code: list[str]
    slots: dict[str, str]
    skills: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)  # further inputs this deliverable needs
    moves_input: bool = False  # the input itself is reorganised
    figures: list[Figure] = field(default_factory=list)


def tolerance_for(kinds: list[str]) -> dict[str, Any]:
    return {"tolerance": 0.01} if any(k in NUMBER_TYPES for k in kinds) else {}


def exists_check(path: str) -> dict[str, Any]:
    """The file is there: a gate worth nothing by itself (a skeleton file earns no credit)."""
    return {"type": "file_exists", "path": path, "gate": True, "weight": 0}


def output_stem(s: State, rng: random.Random, *options: str) -> str:
    noun = s.domain.noun[1].replace(" ", "_")
    return rng.choice(options).format(noun=noun, file=s.domain.files[0])


def numbered(s: State) -> bool:
    """Whether the key is one prefix and a number of varying width (L1 ... L10): a person orders
    such keys by their number (L7 before L10), which text order does not."""
    keys = [str(r[s.domain.key]) for r in s.rows]
    parts = [re.fullmatch(r"(\D*)(\d+)", k) for k in keys]
    return all(parts) and len({m.group(1) for m in parts if m}) == 1 and len({len(m.group(2)) for m in parts if m}) > 1


def ordered_by(s: State) -> list[Row]:
    """The rows in the order a request that names no other order asks for: by the key, numbered
    keys by their number."""
    if s.order:
        return s.rows
    if numbered(s):
        return sorted(s.rows, key=lambda r: int(re.sub(r"\D", "", str(r[s.domain.key]))))
    return sorted(s.rows, key=lambda r: r[s.domain.key])


def sort_code(s: State) -> list[str]:
    """The reference solution's line putting the rows in `ordered_by`'s order."""
    if s.order:
        return []
    if numbered(s):
        digits = f"''.join(c for c in {s.it}[{s.domain.key!r}] if c.isdigit())"
        return [f"{s.var}.sort(key=lambda {s.it}: int({digits}))"]
    return [f"{s.var}.sort(key=lambda {s.it}: {s.it}[{s.domain.key!r}])"]


def order_words(s: State) -> str:
    if s.order_words:
        return s.order_words
    if s.order:
        return f"{label(s.order[0])}, {most(s, s.order[0], s.order[1])} first"
    return label(s.domain.key)


def pick_columns(s: State, rng: random.Random) -> list[str]:
    key = s.domain.key
    derived = [c for c in s.columns if c != key and s.domain.type_of(c) == ""]
    rest = [c for c in s.columns if c != key and c not in derived]
    chosen = derived + rng.sample(rest, min(len(rest), rng.randint(1, 3))) + sorted(s.must_show)
    return [key] + [c for c in s.columns if c in chosen]


class Deliver:
    name = ""
    needs_rows = True

    def plan(self, s: State, rng: random.Random) -> dict[str, Any] | None:
        raise NotImplementedError

    def deliver(self, s: State, p: dict[str, Any]) -> Delivered:
        raise NotImplementedError


def key_set_gate(path: str, key: str, keys: list[str], what: str) -> dict[str, Any]:
    """A gate that the CSV holds exactly these rows (by key), none missing and none more: the
    unfiltered input copied out, or the first rows of it, earn nothing however right their cells."""
    return {
        "type": "csv_rows_equal",
        "name": f"exactly the {what} asked for",
        "path": path,
        "expected": [{key: k} for k in keys],
        "key": key,
        "gate": True,
        "weight": 0,
    }


def lookup_checks(data: dict[str, Any], path: str, one: str) -> list[dict[str, Any]]:
    """The check of a JSON object keyed by record or group: the whole object exactly, every entry
    asked for right and no other. No credit per entry: the unfiltered input copied out holds every
    entry asked for (and more), and a lookup that pays per entry pays it."""
    return [
        {
            "type": "json_field_equals",
            "name": f"the entry for every {one} right, and no other",
            "path": path,
            "field": "",
            "expected": data,
            "tolerance": 0.01,
            "weight": 3,
        }
    ]


_GROUP_DOT = "[,\u00a0\u202f ']?"  # thousands separators beside a decimal point
_GROUP_COMMA = "[.\u00a0\u202f ]?"  # and beside a decimal comma


def _grouped(whole: str, sep: str) -> str:
    """`1253` as 1253, 1,253 or 1 253 (a separator between each group of three digits)."""
    head = len(whole) % 3 or 3
    parts = [whole[:head]] + [whole[i : i + 3] for i in range(head, len(whole), 3)]
    return sep.join(parts)


def number_rx(value: str) -> str:
    """A regex matching the number `value` (as the expected outputs write it: 116, 12.5, 1253.50)
    however a person writes it: with more or fewer trailing zeros (116 = 116.0; 1253.5 = 1253.50),
    grouped thousands (1,253.50), a decimal comma (1253,50 or 1.253,50), more decimals that round to
    it (43.857 for 43.86) or a currency sign ($1,253.50); never as part of a longer number, a date or
    a range (7 is not found in 2017, 7.5, 2026-03-07 or 7-9)."""
    text = value.strip()
    if re.fullmatch(r"[$€£]? ?[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|[$€£] ?[+-]?\d+(?:\.\d+)?", text):
        text = re.sub(r"[$€£, ]", "", text)  # an amount as exported ("$1,234.50") is the number it shows
    if not re.fullmatch(r"[+-]?\d+(?:\.\d+)?", text):
        return re.escape(text)
    negative = text.startswith("-")
    whole, _, frac = text.lstrip("+-").partition(".")
    forms = []
    for point, sep in (("\\.", _GROUP_DOT), (",", _GROUP_COMMA)):
        exact = frac.rstrip("0")
        forms.append(_grouped(whole, sep) + (point + exact + "0*" if exact else f"(?:{point}0*)?"))
        if frac:  # more decimals, rounding to the value: 43.855 up to 43.8649...
            forms.append(_grouped(whole, sep) + point + frac + "[0-4]\\d*")
            lower = int(whole + frac) - 1
            if lower >= 0:
                digits = str(lower).rjust(len(frac) + 1, "0")
                forms.append(_grouped(digits[: -len(frac)], sep) + point + digits[-len(frac) :] + "[5-9]\\d*")
    sign = "[-\u2212]" if negative else "(?<![-\u2212])\\+?"  # 5 is not found in -5
    # not a part of a longer number, a date, a time or a range (2017, 7.5, 2026-03-14, 12:07, 7-9)
    return f"(?<![\\d.,])(?<!\\d[-/:]){sign}(?:[$€£] ?)?(?:{'|'.join(forms)})(?![\\d]|[.,]\\d|[-/:]\\d)"


_MARKUP = r"(?:\*\*|__|\*|_|`)?"  # bold, italic or inline code around a cell's text
_CODE = r"(?:EUR|USD|GBP|CAD|AUD|NZD|CHF|SEK|NOK|DKK|JPY|INR)"  # currency codes written beside amounts


def cell_rx(value: str) -> str:
    """A Markdown table cell holding `value` however it is marked up: a number in any form
    `number_rx` accepts, text in any case, as inline code or bold (`0 2 * * *`, **Kitchen**) or
    with Markdown's characters escaped (0 2 \\* \\* \\*, a\\_b); an amount also with a currency code."""
    text = value.strip()
    core = number_rx(text)
    if core == re.escape(text):  # not a number: in any case, each Markdown character may carry a backslash
        # written in lower case: a cell is found in any case, so the same cell in another case is the
        # same check (a step that only changes case is seen to change nothing graded)
        core = "".join(rf"\\?{re.escape(ch)}" if ch in "\\`*_{}[]<>()#+-.!|~" else re.escape(ch) for ch in text.lower())
        core = f"(?i:{core})"
    else:  # an amount with its currency code before or after it (29.62 EUR, EUR 29.62), as a persona may ask
        core = f"(?:{_CODE}[ \u00a0]?)?{core}(?:[ \u00a0]?(?:{_CODE}|[$€£]))?"
    return f"{_MARKUP}{core}{_MARKUP}"
