"""Cleaning operations: planned on the clean rows, `prepare` breaks what they repair in the rows
that are written (duplicates, odd case, dates and amounts, blank or malformed fields), `apply`
repairs what reads back."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from .model import CATEGORY_TYPES
from .state import Op, label


# ---------------------------------------------------------------------------------------------
# Cleaning: planned on the clean rows, prepared into what is written, applied to what reads back


class Normalise(Op):
    name, kind = "normalise", "clean"

    def plan(self, s, rng):
        cols = [
            c
            for c in s.categories()
            if s.domain.type_of(c) in CATEGORY_TYPES and any(ch.isalpha() for r in s.rows for ch in r[c])
        ]  # words: "30" has no case to fix
        # in a log, a stray space would move the line's fields: only the case varies there
        return {"field": rng.choice(cols), "spaces": s.fmt != "lines"} if cols else None

    def prepare(self, rows, p, rng):
        f = p["field"]
        for r in rows:
            if rng.random() < 0.35:
                variants = [r[f].upper(), r[f].title()] + ([f"{r[f]} ", f" {r[f].capitalize()}"] if p["spaces"] else [])
                r[f] = rng.choice(variants)
        return rows

    def apply(self, s, p):
        for r in s.rows:
            r[p["field"]] = r[p["field"]].strip().lower()

    def code(self, s, p):
        return [f"for {s.it} in {s.var}:", f"    {s.it}[{p['field']!r}] = {s.it}[{p['field']!r}].strip().lower()"]

    def slots(self, s, p):
        return {"field": p["field"]}


class Dedupe(Op):
    name, kind = "dedupe", "clean"
    formats = ("csv", "semicolon", "json", "jsonl", "md_table", "lines")

    def plan(self, s, rng):
        return {"field": s.domain.key, "copies": rng.randint(2, 4)}

    def prepare(self, rows, p, rng):
        out = list(rows)
        for _ in range(p["copies"]):
            src = rng.choice(rows)
            out.insert(rng.randint(out.index(src) + 1, len(out)), dict(src))
        return out

    def apply(self, s, p):
        seen, out = set(), []
        for r in s.rows:
            if r[p["field"]] not in seen:
                seen.add(r[p["field"]])
                out.append(r)
        s.rows = out

    def code(self, s, p):
        f = p["field"]
        return [
            f"seen_{f} = set()",
            f"unique_{s.var} = []",
            f"for {s.it} in {s.var}:",
            f"    if {s.it}[{f!r}] not in seen_{f}:",
            f"        seen_{f}.add({s.it}[{f!r}])",
            f"        unique_{s.var}.append({s.it})",
            f"{s.var} = unique_{s.var}",
        ]

    def slots(self, s, p):
        return {"field": p["field"]}


_DATE_STYLES = (("%d/%m/%Y", "03/04/2026 (day first)"), ("%d %b %Y", "3 Apr 2026"), ("%b %d, %Y", "Apr 3, 2026"))


class RepairDates(Op):
    name, kind = "repair_dates", "clean"
    formats = ("csv", "json", "jsonl", "md_table", "records")

    def plan(self, s, rng):
        cols = [c for c in s.dates() if s.domain.type_of(c) == "date"]
        if not cols:
            return None
        styles = rng.sample(_DATE_STYLES, rng.randint(1, 2))
        return {
            "field": rng.choice(cols),
            "styles": [st[0] for st in styles],
            "shown": [st[1] for st in styles],
            "how": rng.choice(["loop", "inline", "shape"]),
        }

    def prepare(self, rows, p, rng):
        for r in rows:
            if rng.random() < 0.4:
                day = dt.date.fromisoformat(r[p["field"]])
                r[p["field"]] = day.strftime(rng.choice(p["styles"]))
        return rows

    def apply(self, s, p):
        for r in s.rows:
            r[p["field"]] = _iso(r[p["field"]], p["styles"])

    def code(self, s, p):
        f, patterns = p["field"], ["%Y-%m-%d", *p["styles"]]
        how = p.get("how", "loop")
        if how == "inline":  # each row tries the patterns in place
            return [
                f"for {s.it} in {s.var}:",
                f"    raw = {s.it}[{f!r}].strip()",
                f"    for pattern in {patterns!r}:",
                "        try:",
                f"            {s.it}[{f!r}] = datetime.strptime(raw, pattern).date().isoformat()",
                "            break",
                "        except ValueError:",
                "            continue",
            ]
        if how == "shape":  # the separator tells the pattern (ISO dates are left alone)
            marks = {"%d/%m/%Y": "/", "%b %d, %Y": ",", "%d %b %Y": " "}
            shapes = {
                marks[st]: st for st in sorted(p["styles"], key=lambda st: "%d/%m/%Y %b %d, %Y %d %b %Y".index(st))
            }
            return [
                f"SHAPES = {shapes!r}",
                f"def iso_{f}(text):",
                "    cleaned = text.strip()",
                "    for mark, pattern in SHAPES.items():",
                "        if mark in cleaned:",
                "            try:",
                "                return datetime.strptime(cleaned, pattern).date().isoformat()",
                "            except ValueError:",
                "                return text",
                "    return text",
                f"for {s.it} in {s.var}:",
                f"    {s.it}[{f!r}] = iso_{f}({s.it}[{f!r}])",
            ]
        return [
            f"def iso_{f}(text):",
            f"    for pattern in {patterns!r}:",
            "        try:",
            "            return datetime.strptime(text.strip(), pattern).date().isoformat()",
            "        except ValueError:",
            "            pass",
            "    return text",
            f"for {s.it} in {s.var}:",
            f"    {s.it}[{f!r}] = iso_{f}({s.it}[{f!r}])",
        ]

    def slots(self, s, p):
        return {"field": label(p["field"]), "styles": " or ".join(p["shown"])}


def _iso(text: str, styles: list[str]) -> str:
    for pattern in ["%Y-%m-%d", *styles]:
        try:
            return dt.datetime.strptime(text.strip(), pattern).date().isoformat()
        except ValueError:
            pass
    return text


class RepairAmounts(Op):
    name, kind = "repair_amounts", "clean"
    formats = ("csv", "json", "jsonl", "md_table", "records")

    def plan(self, s, rng):
        cols = [c for c in s.columns if s.domain.type_of(c) == "money"]
        if not cols:
            return None
        return {"field": rng.choice(cols), "symbol": s.currency}  # the sign of the persona's own money

    def prepare(self, rows, p, rng):
        for r in rows:
            if rng.random() < 0.4:
                value = float(r[p["field"]])
                r[p["field"]] = rng.choice(
                    [f"{p['symbol']}{value:,.2f}", f"{p['symbol']} {value:.2f}", f"{value:,.2f}"]
                )
        return rows

    def apply(self, s, p):
        sym = p["symbol"]
        for r in s.rows:
            r[p["field"]] = f"{float(r[p['field']].replace(sym, '').replace(',', '').strip()):.2f}"

    def code(self, s, p):
        f, sym = p["field"], p["symbol"]
        return [
            f"for {s.it} in {s.var}:",
            f"    {s.it}[{f!r}] = f\"{{float({s.it}[{f!r}].replace({sym!r}, '').replace(',', '').strip()):.2f}}\"",
        ]

    def slots(self, s, p):
        return {"field": label(p["field"]), "symbol": p["symbol"].strip()}


class MergeInputs(Op):
    """The rows come in two files of the same kind (two exports, a rotated log) read one after the
    other; the builder renders and reads them, so there is nothing left to apply."""

    name, kind = "merge_inputs", "clean"

    def apply(self, s, p):
        pass

    def code(self, s, p):
        return []

    def slots(self, s, p):
        return {"first": p["paths"][0], "second": p["paths"][1]}


_BROKEN = {
    "email": ("not-an-email", "{local} at {host}", "{local}@"),
    "date": ("2026-13-{d}", "soon", "TBD"),
    "money": ("n/a", "", "??"),
    "int": ("n/a", "", "many"),
    "hours": ("n/a", "", "-"),
    "choice": ("",),
    "status": ("",),
    "person": ("",),
    "text": ("",),
}


def _named(noun: str, column: str) -> str:
    """`noun` with the column's own name after it when the two differ ("author (writer)")."""
    plain = column.replace("_", " ").lower()
    return noun if plain == noun.lower() or plain in noun.lower() else f"{noun} ({column})"


def _every_rule_fires(ways: list, cols: list[str], n: int, rng: random.Random) -> list:
    """`n` kinds of damage, at least one on each field a rule is stated for (a rule no row breaks
    is asked for and never graded), in random order."""
    first = [rng.choice([w for w in ways if w[0] == c]) for c in cols]
    rest = rng.sample([w for w in ways if w not in first], n - len(first))
    return rng.sample(first + rest, n)


class DropInvalid(Op):
    """Some rows arrive broken (a blank required field, a malformed email, date or number): they are
    listed in a rejects file with the field at fault, and only the valid rows go on."""

    name, kind = "drop_invalid", "clean"
    formats = ("csv", "json", "jsonl", "md_table", "records")

    def plan(self, s, rng):
        cols = [c for c in s.columns if s.domain.type_of(c) in _BROKEN and c != s.domain.key and c not in s.used]
        if len(cols) < 2 or len(s.rows) < 8:
            return None
        cols = rng.sample(cols, 2)
        kinds = {c: s.domain.type_of(c) for c in cols}
        # each broken row at fault in its own way (a field and a kind of damage no other row shares),
        # and none among the first rows: a reader of the first lines has not found them
        ways = [(c, template) for c in cols for template in _BROKEN[kinds[c]]]
        bad = rng.sample([r[s.domain.key] for r in s.rows[2:]], rng.randint(2, min(4, len(ways))))
        stem = rng.choice(["rejected", "invalid_rows", "needs_fixing", "errors"])
        return {
            "fields": cols,
            "bad": bad,
            "key": s.domain.key,
            "path": f"{s.out_dir}/{stem}.csv",
            "kinds": kinds,
            "how": rng.choice(["inline", "table", "generic"]),
            "ways": _every_rule_fires(ways, cols, len(bad), rng),
        }

    def prepare(self, rows, p, rng):
        ways = dict(zip(p["bad"], map(tuple, p["ways"])))
        for r in rows:
            if r[p["key"]] in p["bad"]:
                col, template = ways[r[p["key"]]]
                local, _, host = r[col].partition("@")
                r[col] = template.format(local=local or "someone", host=host or "example.org", d=rng.randint(31, 45))
        return rows

    def apply(self, s, p):
        kept, rejected = [], []
        for r in s.rows:
            problem = next((c for c in p["fields"] if not _valid(r[c], p["kinds"][c])), None)
            (rejected if problem else kept).append((r, problem))
        s.rows = [r for r, _ in kept]
        p["rejected"] = [{p["key"]: r[p["key"]], "field": problem, "value": r[problem]} for r, problem in rejected]

    def code(self, s, p):
        kinds = {c: _VALID_CODE[p["kinds"][c]] for c in p["fields"]}
        how = p.get("how", "generic")
        if how == "inline":  # one function that names the first field at fault
            lines = [f"def first_problem({s.it}):"]
            for c, kind in kinds.items():
                lines += ["    " + line for line in _bad_block(f"{s.it}[{c!r}]", kind, f"return {c!r}")]
            lines += [
                "    return None",
                "rejects, valid_rows = [], []",
                f"for {s.it} in {s.var}:",
                f"    field = first_problem({s.it})",
                "    if field:",
                f"        rejects.append([{s.it}[{p['key']!r}], field, {s.it}[field]])",
                "    else:",
                f"        valid_rows.append({s.it})",
            ]
        elif how == "table":  # a checker per field, only the checkers the rules need
            lines = []
            for kind in dict.fromkeys(kinds.values()):
                lines += _checker(kind)
            table = ", ".join(f"{c!r}: is_{kind}" for c, kind in kinds.items())
            lines += [
                f"checks = {{{table}}}",
                "rejects, valid_rows = [], []",
                f"for {s.it} in {s.var}:",
                f"    failing = [col for col, ok in checks.items() if not ok({s.it}[col])]",
                "    if failing:",
                f"        rejects.append([{s.it}[{p['key']!r}], failing[0], {s.it}[failing[0]]])",
                "    else:",
                f"        valid_rows.append({s.it})",
            ]
        else:  # one generic check over the kinds in use
            lines = [
                "def valid(value, kind):",
                "    value = value.strip()",
                "    if not value:",
                "        return False",
            ]
            for kind in dict.fromkeys(k for k in kinds.values() if k != "filled"):
                lines += [f"    if kind == {kind!r}:"] + [
                    "        " + line for line in _bad_block("value", kind, "return False")
                ]
            lines += [
                "    return True",
                f"rules = {kinds!r}",
                "rejects, valid_rows = [], []",
                f"for {s.it} in {s.var}:",
                f"    bad = [col for col, kind in rules.items() if not valid({s.it}[col], kind)]",
                "    if bad:",
                f"        rejects.append([{s.it}[{p['key']!r}], bad[0], {s.it}[bad[0]]])",
                "    else:",
                f"        valid_rows.append({s.it})",
            ]
        return (
            lines
            + [f"{s.var} = valid_rows", s.style.mkdir(s.out_dir)]
            + s.style.write_rows(p["path"], repr([p["key"], "field", "value"]), ["rejects"])
        )

    def checks(self, s, p) -> list[dict[str, Any]]:
        return [
            {"type": "file_exists", "path": p["path"], "gate": True, "weight": 0},
            {
                "type": "csv_rows_equal",
                "name": "every broken row, with the field at fault",
                "path": p["path"],
                "expected": p["rejected"],
                "key": p["key"],
                "name_columns": ["field"],  # Reported By, reported_by: the field named as the file or the code does
                "weight": 2,
            },
        ]

    def slots(self, s, p):
        rules = {
            "email": "a valid email address",
            "date": "a real YYYY-MM-DD date",
            "money": "a number",
            "int": "a number",
            "hours": "a number",
        }
        # the field as the file names it beside the request's word for it ("the author (writer)"):
        # the rejects file names it, and "author" is not what the file calls it
        said = [f"the {_named(s.noun(c), c)} must be {rules.get(p['kinds'][c], 'filled in')}" for c in p["fields"]]
        table = s.fmt in ("csv", "semicolon", "md_table")  # JSON and text records have keys and labels, not headers
        return {
            "path": p["path"],
            "rules": " and ".join(said),
            "key": p["key"],
            "column": "column" if table else "field",
            "header": "header" if table else "name" if s.fmt in ("json", "jsonl") else "label",
        }


_VALID_CODE = {
    "email": "email",
    "date": "date",
    "money": "number",
    "int": "number",
    "hours": "number",
    "choice": "filled",
    "status": "filled",
    "person": "filled",
    "text": "filled",
}


_EMAIL_RE = "r'[^@\\s]+@[^@\\s]+\\.[a-z]+'"


def _bad_block(expr: str, kind: str, then: str) -> list[str]:
    """Solution lines that run `then` when the text `expr` fails the `kind` check."""
    if kind == "filled":
        return [f"if not {expr}.strip():", f"    {then}"]
    if kind == "email":
        return [f"if not re.fullmatch({_EMAIL_RE}, {expr}.strip()):", f"    {then}"]
    parse = "date.fromisoformat" if kind == "date" else "float"
    return ["try:", f"    {parse}({expr}.strip())", "except ValueError:", f"    {then}"]


def _checker(kind: str) -> list[str]:
    """A solution helper `is_<kind>(text)`."""
    if kind == "filled":
        return ["def is_filled(text):", "    return bool(text.strip())"]
    if kind == "email":
        return ["def is_email(text):", f"    return re.fullmatch({_EMAIL_RE}, text.strip()) is not None"]
    parse = "date.fromisoformat" if kind == "date" else "float"
    return [
        f"def is_{kind}(text):",
        "    try:",
        f"        {parse}(text.strip())",
        "    except ValueError:",
        "        return False",
        "    return True",
    ]


def _valid(value: str, kind: str) -> bool:
    import re

    value = value.strip()
    if not value:
        return False
    check = _VALID_CODE[kind]
    if check == "email":
        return re.fullmatch(r"[^@\s]+@[^@\s]+\.[a-z]+", value) is not None
    if check == "date":
        try:
            dt.date.fromisoformat(value)
        except ValueError:
            return False
    if check == "number":
        try:
            float(value)
        except ValueError:
            return False
    return True
