"""CSV check: rows of a CSV file equal an expected list of rows, with partial credit."""

from __future__ import annotations

import bisect
import csv
import io
import re
from collections.abc import Sequence
from typing import Any

from ..errors import did_you_mean
from ..registry import register
from .base import Check, CheckContext, CheckFailure, as_list, parse_number, short, strings, tolerance_of
from .structured import TOLERANCE, values_equal

MAX_FIELD = 1_000_000


_DELIMITERS = (",", ";", "\t", "|")


def sniff_delimiter(text: str, columns: Sequence[str] = ()) -> str:
    """The delimiter a CSV file is written with: the one whose header row holds the most of the
    wanted `columns` (a spreadsheet set to semicolons and decimal commas writes `site;hours` over
    `Kitchen;4,25`, where commas appear on every line too), else what csv.Sniffer finds, else `,`."""
    first = text.lstrip("\ufeff").split("\n", 1)[0]
    wanted = {c.strip().casefold() for c in columns}
    if wanted:
        found = {d: len(wanted & {h.strip().strip('"').casefold() for h in first.split(d)}) for d in _DELIMITERS}
        best = max(found.values())
        if best and list(found.values()).count(best) == 1:
            return max(found, key=lambda d: found[d])
    try:
        return csv.Sniffer().sniff(text[:10000], delimiters="".join(_DELIMITERS)).delimiter
    except csv.Error:
        return ","


def read_csv(
    ctx: CheckContext, rel: str, delimiter: str, columns: Sequence[str] = ()
) -> tuple[list[str], list[dict[str, str]]]:
    """(header, rows) of a CSV file; fully blank rows are skipped. CheckFailure on bad content.
    `delimiter` "auto" sniffs it, preferring the one that splits out the wanted `columns`."""
    text = ctx.read_text(rel)
    old = csv.field_size_limit()
    csv.field_size_limit(MAX_FIELD)
    try:
        if delimiter == "auto":
            delimiter = sniff_delimiter(text, columns)
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=False)
        raw = [r for r in reader if any(c.strip() for c in r)]
    except csv.Error as e:
        raise CheckFailure(f"malformed CSV in {rel}: {e}") from None
    finally:
        csv.field_size_limit(old)
    if not raw:
        raise CheckFailure(f"{rel} is empty (no header row)")
    header = [h.strip() for h in raw[0]]
    rows = [{h: (r[i] if i < len(r) else "") for i, h in enumerate(header)} for r in raw[1:]]
    return header, rows


def _as_name(value: Any) -> str:
    """A field's name as compared: case, spaces, underscores and hyphens aside."""
    return re.sub(r"[\s_-]+", "", str(value)).casefold()


def _resolve_columns(header: list[str], wanted: list[str], rel: str) -> dict[str, str]:
    """Map wanted column → header column: exact match first, then a unique case-insensitive one."""
    out = {}
    for col in wanted:
        if col in header:
            out[col] = col
            continue
        alt = [h for h in header if h.casefold() == col.strip().casefold()]
        if len(alt) != 1:
            have = ", ".join(header[:20])
            raise CheckFailure(f"column {col!r} missing from the header of {rel} (have: {have})")
        out[col] = alt[0]
    return out


@register("check", "csv_rows_equal")
class CsvRowsEqual(Check):
    """A CSV file holds the expected rows (compared on the expected columns, or `columns`).

    Score = matched / (expected + unexpected rows), so missing, wrong and (unless `extra_rows`)
    surplus rows all cost credit. Rows pair up by `key` column(s) if given, else by content
    (`ignore_order`) or position. With `ignore_order: false` the order counts: without a key each
    row must sit at its position; with a key, only the largest set of rows that come in the
    expected order count as matched. Numbers compare numerically with `tolerance` whatever their
    form ("116" and "116.0"; "1,253.50", "1253,50" and 1253.5; "23.1%" and 23.1).
    """

    type = "csv_rows_equal"
    reads_only = True
    reads_trajectory = False
    schema = {
        "type": "object",
        "required": ["path", "expected"],
        "properties": {
            "path": {
                "type": "string",
                "minLength": 1,
                "x-template": "text",
                "description": "CSV file to read, relative to the workspace (header row required).",
            },
            "expected": {
                "type": "array",
                "x-template": "value",
                "items": {"type": "object", "additionalProperties": {"x-template": "value"}},
                "description": "Expected rows as a list of {column: value} mappings.",
            },
            "key": {**strings("Column(s) identifying a row, used to pair rows."), "minItems": 1},
            "columns": {
                "type": "array",
                "items": {"type": "string", "x-template": "text"},
                "description": "Columns to compare (default: every column named in `expected`).",
            },
            "ignore_order": {
                "type": "boolean",
                "default": True,
                "description": "Row order does not matter. `false`: without `key` every row must be at its "
                "position; with `key` rows pair by key and only the largest set of them in the expected "
                "order counts as matched (a row out of place costs what a wrong row does).",
            },
            "ignore_case": {
                "type": "boolean",
                "default": False,
                "description": "Compare text cells case-insensitively.",
            },
            "name_columns": {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "Columns whose cells name a field: compared as names, so case, spaces, "
                "underscores and hyphens aside (`Reported By` = `reported_by`).",
            },
            "strip": {
                "type": "boolean",
                "default": True,
                "description": "Strip surrounding whitespace from cells before comparing.",
            },
            "tolerance": TOLERANCE,
            "extra_rows": {
                "type": "boolean",
                "default": False,
                "description": "Allow rows beyond the expected ones without penalty.",
            },
            "delimiter": {
                "type": "string",
                "minLength": 1,
                "maxLength": 4,
                "default": "auto",
                "description": "Field delimiter, or `auto` (the default) for the one of `,` `;` tab `|` "
                "whose header holds the expected columns: a file written for a spreadsheet set to "
                "semicolons is as right as one with commas.",
            },
        },
    }

    @classmethod
    def static_problems(cls, config: dict) -> list[tuple[tuple, str, str]]:
        """`key` and `columns` must name columns the expected rows have."""
        expected = config.get("expected")
        if not isinstance(expected, list) or not expected or not all(isinstance(r, dict) for r in expected):
            return []
        have = list(dict.fromkeys(str(c) for r in expected for c in r))
        out = []
        for option in ("key", "columns"):
            for i, col in enumerate(as_list(config.get(option))):
                if str(col) not in have:
                    where = (option, i) if isinstance(config.get(option), list) else (option,)
                    near = did_you_mean(str(col), have)
                    out.append(
                        (
                            where,
                            f"column {str(col)!r} is not in the expected rows",
                            f"{near + ' ' if near else ''}the expected rows have: {', '.join(have)}",
                        )
                    )
        return out

    def run(self, ctx: CheckContext) -> tuple:
        rel = self.get("path")
        expected = self.config["expected"]
        if not isinstance(expected, list) or not all(isinstance(r, dict) for r in expected):
            raise CheckFailure("expected must be a list of row mappings")
        keys = [str(k) for k in as_list(self.get("key"))]
        cols = [str(c) for c in as_list(self.get("columns"))] or list(
            dict.fromkeys(str(c) for r in expected for c in r)
        )
        cols = list(dict.fromkeys(keys + cols))
        header, rows = read_csv(ctx, rel, self.get("delimiter"), cols)
        colmap = _resolve_columns(header, cols, rel)
        tol = tolerance_of(self.get("tolerance"))
        opts = {"coerce": True, "ignore_case": self.get("ignore_case"), "strip": self.get("strip")}

        names = {str(c) for c in as_list(self.get("name_columns"))}

        def same(c: str, actual: Any, exp: Any) -> bool:
            if c in names:
                return _as_name(actual) == _as_name(exp)
            return values_equal(actual, exp, tol, **opts)

        def diff(actual: dict, exp: dict) -> list[str]:
            return [
                f"{c} expected {short(exp[c], 40)}, got {short(actual[colmap[c]], 40)}"
                for c in cols
                if c in exp and not same(c, actual[colmap[c]], exp[c])
            ]

        def label(exp: dict) -> str:
            ks = keys or [c for c in cols if c in exp][:2]
            return "row " + ", ".join(f"{k}={short(exp.get(k), 30)}" for k in ks)

        problems: list[str] = []
        matched = 0
        if keys:
            index: dict[tuple, list[int]] = {}

            def norm(v: str) -> str:
                num = parse_number(v)
                v = repr(num) if num is not None else str(v).strip()
                return v.casefold() if opts["ignore_case"] else v

            for i, r in enumerate(rows):
                index.setdefault(tuple(norm(r[colmap[k]]) for k in keys), []).append(i)
            used: set[int] = set()
            placed: list[tuple[int, dict]] = []  # (row index, expected row) of each row that matched
            for exp in expected:
                if any(k not in exp for k in keys):
                    raise CheckFailure(f"expected row {short(exp)} lacks key column(s) {keys}")
                hits = index.get(tuple(norm(_cell(exp[k])) for k in keys), [])
                if not hits:
                    problems.append(f"missing {label(exp)}")
                    continue
                used.add(hits[0])
                d = diff(rows[hits[0]], exp)
                if d:
                    problems.append(f"{label(exp)}: " + "; ".join(d[:3]))
                else:
                    placed.append((hits[0], exp))
            if not self.get("ignore_order"):
                in_order = set(increasing_run([i for i, _ in placed]))
                problems += [f"{label(exp)} out of order" for i, exp in placed if i not in in_order]
                placed = [(i, exp) for i, exp in placed if i in in_order]
            matched = len(placed)
            unexpected = len(rows) - len(used)
        elif self.get("ignore_order"):
            free = list(range(len(rows)))
            for exp in expected:
                hit = next((i for i in free if not diff(rows[i], exp)), None)
                if hit is None:
                    near = min(free, key=lambda i: len(diff(rows[i], exp)), default=None)
                    hint = f" (closest: {'; '.join(diff(rows[near], exp)[:2])})" if near is not None else ""
                    problems.append(f"no row matches {short({c: exp.get(c) for c in cols if c in exp}, 70)}{hint}")
                else:
                    free.remove(hit)
                    matched += 1
            unexpected = max(0, len(rows) - len(expected))
        else:
            for i, exp in enumerate(expected):
                if i >= len(rows):
                    problems.append(f"row {i + 1} missing")
                    continue
                d = diff(rows[i], exp)
                if d:
                    problems.append(f"row {i + 1}: " + "; ".join(d[:3]))
                else:
                    matched += 1
            unexpected = max(0, len(rows) - len(expected))
        if self.get("extra_rows"):
            unexpected = 0
        if unexpected:
            problems.append(f"{unexpected} unexpected row(s)")
        denom = len(expected) + unexpected
        score = matched / denom if denom else 1.0
        details = {
            "matched": matched,
            "expected": len(expected),
            "actual": len(rows),
            "unexpected": unexpected,
            "problems": problems[:20],
        }
        head = f"{matched}/{len(expected)} expected rows matched"
        if not problems:
            return score, head, details
        more = f"; +{len(problems) - 3} more" if len(problems) > 3 else ""
        return score, f"{head}; " + "; ".join(problems[:3]) + more, details


def _cell(value: Any) -> str:
    """How an expected key value is written in a CSV cell (1.0 → "1.0", True → "true")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def increasing_run(positions: list[int]) -> list[int]:
    """The longest strictly increasing subsequence of `positions` (the rows already in order)."""
    tails: list[int] = []  # tails[n]: index into positions of the smallest tail of a run of n + 1
    values: list[int] = []  # positions[tails[n]]
    before: list[int] = [-1] * len(positions)
    for k, pos in enumerate(positions):
        n = bisect.bisect_left(values, pos)
        before[k] = tails[n - 1] if n else -1
        if n == len(tails):
            tails.append(k)
            values.append(pos)
        else:
            tails[n], values[n] = k, pos
    out, k = [], tails[-1] if tails else -1
    while k >= 0:
        out.append(positions[k])
        k = before[k]
    return out[::-1]
