"""The atomic row operations of compositional synthesis: what each computes, the fragment of the
reference solution it adds, and the words its phrasings (operations.yaml) are filled with.

Every operation works on a `State`: rows as the input reads back (strings), the columns and their
types. `plan` draws the parameters from the seed (None where the operation does not apply),
`prepare` may alter the clean rows before they are written (the duplicates a de-duplication needs,
the odd dates a repair needs), `apply` computes, and `code` gives the reference solution's lines
over the rows variable (`s.var`, one row is `s.it`). The expected outputs therefore come from
running the same pipeline the reference solution spells out.
"""

from __future__ import annotations

import datetime as dt
import operator
import random
import re
from dataclasses import dataclass, field
from typing import Any

from .catalog import CATEGORY_TYPES, NUMBER_TYPES, Domain
from .data import Row
from .style import Style


@dataclass
class State:
    """The pipeline so far."""

    domain: Domain
    rows: list[Row]
    columns: list[str]
    types: dict[str, str]
    var: str                           # the rows variable of the reference solution
    it: str                            # one row, in its loops
    input_path: str
    out_dir: str
    fmt: str = "csv"
    order: tuple[str, bool] | None = None   # (column, descending) once rows are ranked
    order_words: str = ""              # how the request says that order, when an operation set it
    used: set[str] = field(default_factory=set)   # columns an operation already keyed on
    unique: bool = False               # the input cannot repeat a key
    style: Style = field(default_factory=Style)   # the idioms of the reference solution
    record_files: list[tuple[str, Row]] = field(default_factory=list)   # (file, row) of a records input
    record_text: dict[str, str] = field(default_factory=dict)

    def numbers(self, fresh: bool = True) -> list[str]:
        return [c for c in self.columns if self.types.get(c) in NUMBER_TYPES and not (fresh and c in self.used)]

    def categories(self, present: int = 2, fresh: bool = True) -> list[str]:
        return [c for c in self.columns if self.types.get(c) in CATEGORY_TYPES
                and present <= len({r[c] for r in self.rows}) <= max(present, 12)
                and not (fresh and c in self.used) and c != self.domain.key]

    def dates(self) -> list[str]:
        return [c for c in self.columns if self.types.get(c) == "date"]


def num(text: str) -> float:
    return float(text)


def fmt(value: float, kind: str) -> str:
    if kind == "int":
        return str(int(round(value)))
    if kind == "hours":
        return f"{value:.1f}"
    return f"{value:.2f}"


def form_code(kind: str, expr: str) -> str:
    """The solution's expression formatting `expr` as `fmt(…, kind)` does."""
    return {"int": f"str(int(round({expr})))", "hours": f"format({expr}, '.1f')"}.get(kind, f"format({expr}, '.2f')")


def label(column: str) -> str:
    return column.replace("_", " ")


class Op:
    name = ""
    kind = ""
    formats: tuple[str, ...] | None = None   # the input formats it works on (None: all)

    def plan(self, s: State, rng: random.Random) -> dict[str, Any] | None:
        return None

    def prepare(self, rows: list[Row], p: dict[str, Any], rng: random.Random) -> list[Row]:
        return rows

    def apply(self, s: State, p: dict[str, Any]) -> None:
        raise NotImplementedError

    def code(self, s: State, p: dict[str, Any]) -> list[str]:
        raise NotImplementedError

    def slots(self, s: State, p: dict[str, Any]) -> dict[str, str]:
        return {}


# ---------------------------------------------------------------------------------------------
# Cleaning: planned on the clean rows, prepared into what is written, applied to what reads back


class Normalise(Op):
    name, kind = "normalise", "clean"

    def plan(self, s, rng):
        cols = [c for c in s.categories() if s.domain.type_of(c) in CATEGORY_TYPES
                and any(ch.isalpha() for r in s.rows for ch in r[c])]   # words: "30" has no case to fix
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
        return [f"seen_{f} = set()", f"unique_{s.var} = []", f"for {s.it} in {s.var}:",
                f"    if {s.it}[{f!r}] not in seen_{f}:", f"        seen_{f}.add({s.it}[{f!r}])",
                f"        unique_{s.var}.append({s.it})", f"{s.var} = unique_{s.var}"]

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
        return {"field": rng.choice(cols), "styles": [st[0] for st in styles], "shown": [st[1] for st in styles],
                "how": rng.choice(["loop", "inline", "shape"])}

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
        if how == "inline":      # each row tries the patterns in place
            return [f"for {s.it} in {s.var}:", f"    raw = {s.it}[{f!r}].strip()", f"    for pattern in {patterns!r}:",
                    "        try:", f"            {s.it}[{f!r}] = datetime.strptime(raw, pattern).date().isoformat()",
                    "            break", "        except ValueError:", "            continue"]
        if how == "shape":       # the separator tells the pattern (ISO dates are left alone)
            marks = {"%d/%m/%Y": "/", "%b %d, %Y": ",", "%d %b %Y": " "}
            shapes = {marks[st]: st for st in sorted(p["styles"], key=lambda st: "%d/%m/%Y %b %d, %Y %d %b %Y".index(st))}
            return [f"SHAPES = {shapes!r}", f"def iso_{f}(text):", "    cleaned = text.strip()",
                    "    for mark, pattern in SHAPES.items():", "        if mark in cleaned:", "            try:",
                    "                return datetime.strptime(cleaned, pattern).date().isoformat()",
                    "            except ValueError:", "                return text", "    return text",
                    f"for {s.it} in {s.var}:", f"    {s.it}[{f!r}] = iso_{f}({s.it}[{f!r}])"]
        return [f"def iso_{f}(text):", f"    for pattern in {patterns!r}:", "        try:",
                "            return datetime.strptime(text.strip(), pattern).date().isoformat()",
                "        except ValueError:", "            pass", "    return text",
                f"for {s.it} in {s.var}:", f"    {s.it}[{f!r}] = iso_{f}({s.it}[{f!r}])"]

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
        return {"field": rng.choice(cols), "symbol": rng.choice(["$", "€", "£"])}

    def prepare(self, rows, p, rng):
        for r in rows:
            if rng.random() < 0.4:
                value = float(r[p["field"]])
                r[p["field"]] = rng.choice([f"{p['symbol']}{value:,.2f}", f"{p['symbol']} {value:.2f}",
                                            f"{value:,.2f}"])
        return rows

    def apply(self, s, p):
        sym = p["symbol"]
        for r in s.rows:
            r[p["field"]] = f"{float(r[p['field']].replace(sym, '').replace(',', '').strip()):.2f}"

    def code(self, s, p):
        f, sym = p["field"], p["symbol"]
        return [f"for {s.it} in {s.var}:",
                f"    {s.it}[{f!r}] = f\"{{float({s.it}[{f!r}].replace({sym!r}, '').replace(',', '').strip()):.2f}}\""]

    def slots(self, s, p):
        return {"field": label(p["field"]), "symbol": p["symbol"]}


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


# ---------------------------------------------------------------------------------------------
# Filters


def _counts(rows: list[Row], col: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in rows:
        counts[r[col]] = counts.get(r[col], 0) + 1
    return counts


class FilterEquals(Op):
    name, kind = "filter_equals", "filter"

    def plan(self, s, rng):
        cols = s.categories()
        if not cols:
            return None
        col = rng.choice(cols)
        values = [v for v, n in _counts(s.rows, col).items() if 2 <= n < len(s.rows)]
        return {"field": col, "value": rng.choice(sorted(values))} if values else None

    def apply(self, s, p):
        s.rows = [r for r in s.rows if r[p["field"]] == p["value"]]
        s.used.add(p["field"])

    def code(self, s, p):
        return s.style.kept(s.var, s.it, f"{s.it}[{p['field']!r}] == {p['value']!r}")

    def slots(self, s, p):
        said = {"field": label(p["field"]), "value": p["value"]}
        if p["value"].lower() in ("yes", "no", "true", "false"):   # "only care about back no" reads wrong
            said["_only"] = "is {value}"
        return said


class ExcludeValue(FilterEquals):
    name = "exclude_value"

    def apply(self, s, p):
        s.rows = [r for r in s.rows if r[p["field"]] != p["value"]]
        s.used.add(p["field"])

    def code(self, s, p):
        return s.style.kept(s.var, s.it, f"{s.it}[{p['field']!r}] != {p['value']!r}")


class FilterIn(Op):
    name, kind = "filter_in", "filter"

    def plan(self, s, rng):
        cols = [c for c in s.categories(present=3)]
        if not cols:
            return None
        col = rng.choice(cols)
        values = sorted(_counts(s.rows, col))
        chosen = sorted(rng.sample(values, rng.randint(2, max(2, len(values) - 1))))
        kept = [r for r in s.rows if r[col] in chosen]
        if not 2 <= len(kept) < len(s.rows):
            return None
        return {"field": col, "values": chosen}

    def apply(self, s, p):
        s.rows = [r for r in s.rows if r[p["field"]] in p["values"]]
        s.used.add(p["field"])

    def code(self, s, p):
        wanted = "{" + ", ".join(repr(v) for v in p["values"]) + "}"
        return [f"wanted_{p['field']} = {wanted}"] + s.style.kept(s.var, s.it, f"{s.it}[{p['field']!r}] in wanted_{p['field']}")

    def slots(self, s, p):
        vals = p["values"]
        return {"field": label(p["field"]), "values": ", ".join(vals[:-1]) + " and " + vals[-1]}


_CMP = {">": "above", ">=": "at least", "<": "below", "<=": "at most"}
_OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}


class FilterThreshold(Op):
    name, kind = "filter_threshold", "filter"

    def plan(self, s, rng):
        cols = s.numbers()
        if not cols or len(s.rows) < 4:
            return None
        col = rng.choice(cols)
        values = sorted(num(r[col]) for r in s.rows)
        pivot = values[rng.randint(len(values) // 4, 3 * len(values) // 4)]
        step = 100 if pivot >= 1000 else 10 if pivot >= 50 else 5 if pivot >= 10 else 1
        threshold = max(step, round(pivot / step) * step)
        op = rng.choice(list(_CMP))
        kept = [v for v in values if _OPS[op](v, threshold)]
        if not 2 <= len(kept) < len(values):
            return None
        return {"field": col, "op": op, "threshold": threshold}

    def apply(self, s, p):
        test = _OPS[p["op"]]
        s.rows = [r for r in s.rows if test(num(r[p["field"]]), p["threshold"])]
        s.used.add(p["field"])

    def code(self, s, p):
        return s.style.kept(s.var, s.it, f"float({s.it}[{p['field']!r}]) {p['op']} {p['threshold']}")

    def slots(self, s, p):
        return {"field": label(p["field"]), "cmp": _CMP[p["op"]], "threshold": str(p["threshold"])}


class FilterDates(Op):
    name, kind = "filter_dates", "filter"

    def plan(self, s, rng):
        cols = [c for c in s.dates() if c not in s.used]
        if not cols or len(s.rows) < 4:
            return None
        col = rng.choice(cols)
        days = sorted({r[col] for r in s.rows})
        if len(days) < 4:
            return None
        i = rng.randint(0, len(days) // 2)
        j = rng.randint(i + len(days) // 4, len(days) - 1)
        start, end = days[i], days[j]
        kept = [r for r in s.rows if start <= r[col] <= end]
        if not 2 <= len(kept) < len(s.rows):
            return None
        return {"field": col, "start": start, "end": end}

    def apply(self, s, p):
        s.rows = [r for r in s.rows if p["start"] <= r[p["field"]] <= p["end"]]
        s.used.add(p["field"])

    def code(self, s, p):
        return s.style.kept(s.var, s.it, f"{p['start']!r} <= {s.it}[{p['field']!r}] <= {p['end']!r}")

    def slots(self, s, p):
        return {"field": label(p["field"]), "start": p["start"], "end": p["end"]}


class FilterText(Op):
    """Rows whose free-text field mentions a word (any case)."""

    name, kind = "filter_text", "filter"

    def plan(self, s, rng):
        cols = [c for c in s.columns if s.domain.type_of(c) == "text" and c not in s.used]
        if not cols:
            return None
        col = rng.choice(cols)
        words = sorted({w.strip(".,()").lower() for r in s.rows for w in r[col].split() if len(w) > 3})
        rng.shuffle(words)
        for word in words:
            kept = [r for r in s.rows if word in r[col].lower()]
            if 2 <= len(kept) < len(s.rows):
                return {"field": col, "word": word}
        return None

    def apply(self, s, p):
        s.rows = [r for r in s.rows if p["word"] in r[p["field"]].lower()]
        s.used.add(p["field"])

    def code(self, s, p):
        return s.style.kept(s.var, s.it, f"{p['word']!r} in {s.it}[{p['field']!r}].lower()")

    def slots(self, s, p):
        return {"field": label(p["field"]), "word": p["word"]}


# ---------------------------------------------------------------------------------------------
# Enriching


class Join(Op):
    name, kind = "join", "enrich"

    def plan(self, s, rng):
        return None  # planned by the builder, which owns the related domain's rows

    def apply(self, s, p):
        lookup = {o[p["other_key"]]: o for o in p["other_rows"]}
        for r in s.rows:
            for c in p["columns"]:
                r[c] = lookup[r[p["field"]]][c]
        for c in p["columns"]:
            s.columns.append(c)
            s.types[c] = p["other_types"][c]

    def code(self, s, p):
        other = p["other_var"]
        lines = s.style.reading(p["path"], [f"{other} = {{row[{p['other_key']!r}]: row for row in csv.DictReader(fh)}}"],
                                newline=True) + [f"for {s.it} in {s.var}:"]
        lines += [f"    {s.it}[{c!r}] = {other}[{s.it}[{p['field']!r}]][{c!r}]" for c in p["columns"]]
        return lines

    def slots(self, s, p):
        return {"columns": " and ".join(label(c) for c in p["columns"]), "path": p["path"],
                "field": label(p["field"]), "one": s.domain.noun[0]}


class DeriveProduct(Op):
    name, kind = "derive_product", "enrich"
    NAMES = {("int", "money"): ["line_total", "total_value", "amount"],
             ("hours", "money"): ["amount_due", "charge"], ("money", "int"): ["total", "extended"]}
    # only a count of things times a price of one makes sense ("delivery days x price" does not)
    COUNTS = re.compile(r"qty|quantity|units|count|sessions|seats|nights|copies|pieces|stock|attendees|guests|"
                        r"tickets|items|boxes|packs|licen[cs]es|^days$|days_worked|hours")
    PRICES = re.compile(r"price|rate|cost|fee|each|per_")

    def plan(self, s, rng):
        def fits(a: str, b: str) -> bool:
            count, price = (a, b) if s.types.get(a) in ("int", "hours") else (b, a)
            return bool(self.COUNTS.search(count) and self.PRICES.search(price))

        pairs = [(a, b) for a in s.columns for b in s.columns if a != b and s.domain.type_of(a)
                 and s.domain.type_of(b) and (s.types.get(a), s.types.get(b)) in self.NAMES and fits(a, b)]
        if not pairs:
            return None
        a, b = rng.choice(pairs)
        new = rng.choice([n for n in self.NAMES[(s.types[a], s.types[b])] if n not in s.columns] or ["product"])
        return {"a": a, "b": b, "new": new}

    def apply(self, s, p):
        for r in s.rows:
            r[p["new"]] = f"{round(num(r[p['a']]) * num(r[p['b']]), 2):.2f}"
        s.columns.append(p["new"])
        s.types[p["new"]] = "money"

    def code(self, s, p):
        return [f"for {s.it} in {s.var}:",
                f"    {s.it}[{p['new']!r}] = f\"{{round(float({s.it}[{p['a']!r}]) * float({s.it}[{p['b']!r}]), 2):.2f}}\""]

    def slots(self, s, p):
        return {"new": p["new"], "a": label(p["a"]), "b": label(p["b"])}


class Formula(Op):
    """One of the domain's own computed columns (domains.yaml `derived:`), evaluated per row."""

    name, kind = "formula", "enrich"

    def plan(self, s, rng):
        options = [d for d in s.domain.derived if d.name not in s.columns
                   and all(c in s.columns and s.types.get(c) in NUMBER_TYPES for c in d.inputs())]
        if not options:
            return None
        d = rng.choice(options)
        return {"new": d.name, "expr": d.expr, "type": d.type, "ask": rng.choice(d.ask)}

    def apply(self, s, p):
        import ast

        tree = ast.parse(p["expr"], mode="eval")
        for r in s.rows:
            value = _evaluate(tree.body, {c: num(r[c]) for c in s.columns if s.types.get(c) in NUMBER_TYPES})
            r[p["new"]] = fmt(value, p["type"])
        s.columns.append(p["new"])
        s.types[p["new"]] = p["type"]

    def code(self, s, p):
        import re

        expr = re.sub(r"\b([A-Za-z_]\w*)\b(?!\s*\()", lambda m: f"float({s.it}[{m.group(1)!r}])", p["expr"])
        return [f"for {s.it} in {s.var}:", f"    {s.it}[{p['new']!r}] = {form_code(p['type'], expr)}"]

    def slots(self, s, p):
        return {"new": p["new"], "what": p["ask"]}


def _evaluate(node: Any, values: dict[str, float]) -> float:
    import ast

    if isinstance(node, ast.Constant):
        return float(node.value)
    if isinstance(node, ast.Name):
        return values[node.id]
    if isinstance(node, ast.UnaryOp):
        return -_evaluate(node.operand, values)
    if isinstance(node, ast.BinOp):
        a, b = _evaluate(node.left, values), _evaluate(node.right, values)
        if isinstance(node.op, ast.Div) and b == 0:
            raise ValueError("a formula divides by zero on this row")
        return {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}.get(type(node.op), a / b if b else 0.0)
    args = [_evaluate(a, values) for a in node.args]
    if node.func.id == "round":
        return round(args[0], int(args[1])) if len(args) > 1 else float(round(args[0]))
    return {"max": max, "min": min, "abs": abs}[node.func.id](*args)


class DeriveDays(Op):
    name, kind = "derive_days", "enrich"

    def plan(self, s, rng):
        cols = s.dates()
        if not cols:
            return None
        col = rng.choice(cols)
        latest = max(dt.date.fromisoformat(r[col]) for r in s.rows)
        ref = (latest + dt.timedelta(days=rng.randint(1, 20))).isoformat()
        new = rng.choice([n for n in ("days_ago", "age_days", "days_since", "days_open") if n not in s.columns])
        return {"field": col, "ref": ref, "new": new}

    def apply(self, s, p):
        ref = dt.date.fromisoformat(p["ref"])
        for r in s.rows:
            r[p["new"]] = str((ref - dt.date.fromisoformat(r[p["field"]])).days)
        s.columns.append(p["new"])
        s.types[p["new"]] = "int"

    def code(self, s, p):
        return [f"as_of = date.fromisoformat({p['ref']!r})", f"for {s.it} in {s.var}:",
                f"    {s.it}[{p['new']!r}] = str((as_of - date.fromisoformat({s.it}[{p['field']!r}])).days)"]

    def slots(self, s, p):
        return {"new": p["new"], "field": label(p["field"]), "ref": p["ref"]}


class DeriveDate(Op):
    """A date plus a number of days the row holds (due dates, check-outs, end dates)."""

    name, kind = "derive_date", "enrich"

    def plan(self, s, rng):
        pairs = [(f.name, f.options["adds_to"], f.options.get("gives", f"{f.options['adds_to']}_end"))
                 for f in s.domain.fields if f.options.get("adds_to") and f.name in s.columns
                 and f.options["adds_to"] in s.columns]
        if not pairs:
            return None
        days, start, new = rng.choice(pairs)
        return None if new in s.columns else {"days": days, "start": start, "new": new}

    def apply(self, s, p):
        for r in s.rows:
            r[p["new"]] = (dt.date.fromisoformat(r[p["start"]]) + dt.timedelta(days=int(r[p["days"]]))).isoformat()
        s.columns.append(p["new"])
        s.types[p["new"]] = "date"

    def code(self, s, p):
        return [f"for {s.it} in {s.var}:",
                f"    {s.it}[{p['new']!r}] = (date.fromisoformat({s.it}[{p['start']!r}]) + "
                f"timedelta(days=int({s.it}[{p['days']!r}]))).isoformat()"]

    def slots(self, s, p):
        return {"new": p["new"], "start": label(p["start"]), "days": label(p["days"])}


class Month(Op):
    name, kind = "month", "enrich"

    def plan(self, s, rng):
        cols = [c for c in s.dates() if len({r[c][:7] for r in s.rows}) >= 2]
        if not cols or "month" in s.columns:
            return None
        return {"field": rng.choice(cols), "new": "month"}

    def apply(self, s, p):
        for r in s.rows:
            r[p["new"]] = r[p["field"]][:7]
        s.columns.append(p["new"])
        s.types[p["new"]] = "choice"

    def code(self, s, p):
        return [f"for {s.it} in {s.var}:", f"    {s.it}[{p['new']!r}] = {s.it}[{p['field']!r}][:7]  # YYYY-MM"]

    def slots(self, s, p):
        return {"new": p["new"], "field": label(p["field"])}


class Weekday(Op):
    name, kind = "weekday", "enrich"

    def plan(self, s, rng):
        cols = s.dates()
        if not cols or "weekday" in s.columns:
            return None
        return {"field": rng.choice(cols), "new": "weekday"}

    def apply(self, s, p):
        for r in s.rows:
            r[p["new"]] = dt.date.fromisoformat(r[p["field"]]).strftime("%A")
        s.columns.append(p["new"])
        s.types[p["new"]] = "choice"

    def code(self, s, p):
        return [f"for {s.it} in {s.var}:",
                f"    {s.it}[{p['new']!r}] = date.fromisoformat({s.it}[{p['field']!r}]).strftime('%A')"]

    def slots(self, s, p):
        return {"new": p["new"], "field": label(p["field"])}


class Bucket(Op):
    """A band column from a number field: below the first cut, below the second, the rest."""

    name, kind = "bucket", "enrich"
    LABELS = (("low", "medium", "high"), ("small", "medium", "large"), ("light", "moderate", "heavy"),
              ("short", "medium", "long"))

    def plan(self, s, rng):
        cols = [c for c in s.numbers(fresh=False) if s.domain.type_of(c)]
        if not cols or len(s.rows) < 6:
            return None
        col = rng.choice(cols)
        values = sorted(num(r[col]) for r in s.rows)
        lo, hi = values[len(values) // 3], values[2 * len(values) // 3]
        step = 100 if hi >= 1000 else 10 if hi >= 50 else 5 if hi >= 10 else 1
        lo, hi = round(lo / step) * step, round(hi / step) * step
        bands = [sum(v < lo for v in values), sum(lo <= v < hi for v in values), sum(v >= hi for v in values)]
        if not 0 < lo < hi or min(bands) == 0:
            return None
        spec = s.domain.field(col).options.get("bands") if s.domain.type_of(col) else None
        labels = tuple(spec) if spec else rng.choice(self.LABELS)
        new = rng.choice([f"{col}_band", f"{col}_level", "band", "size_class"])
        return None if new in s.columns else {"field": col, "cuts": [lo, hi], "labels": list(labels), "new": new}

    def apply(self, s, p):
        lo, hi = p["cuts"]
        for r in s.rows:
            v = num(r[p["field"]])
            r[p["new"]] = p["labels"][0] if v < lo else p["labels"][1] if v < hi else p["labels"][2]
        s.columns.append(p["new"])
        s.types[p["new"]] = "choice"

    def code(self, s, p):
        (lo, hi), (a, b, c), f = p["cuts"], p["labels"], p["field"]
        return [f"def {p['new']}_of(value):", "    value = float(value)", f"    if value < {lo}:",
                f"        return {a!r}", f"    if value < {hi}:", f"        return {b!r}", f"    return {c!r}",
                f"for {s.it} in {s.var}:", f"    {s.it}[{p['new']!r}] = {p['new']}_of({s.it}[{f!r}])"]

    def slots(self, s, p):
        (lo, hi), (a, b, c) = p["cuts"], p["labels"]
        return {"new": p["new"], "field": label(p["field"]), "lo": str(lo), "hi": str(hi), "a": a, "b": b, "c": c}


class CompareFields(Op):
    """A yes/no column: one number field above (or below) another of the same kind."""

    name, kind = "compare_fields", "enrich"

    def plan(self, s, rng):
        def comparable(a: str, b: str) -> bool:   # two amounts, two durations, or two counts of one thing
            return s.types[a] in ("money", "hours") or bool(set(a.split("_")) & set(b.split("_")))

        pairs = [(a, b) for a in s.columns for b in s.columns if a < b and s.types.get(a) in NUMBER_TYPES
                 and s.types.get(a) == s.types.get(b) and s.domain.type_of(a) and s.domain.type_of(b)
                 and comparable(a, b)]
        if not pairs:
            return None
        a, b = rng.sample(rng.choice(pairs), 2)
        new = rng.choice([f"{a}_over_{b}", "flag", f"above_{b}", "exceeds"])
        yes = sum(num(r[a]) > num(r[b]) for r in s.rows)
        if new in s.columns or not 0 < yes < len(s.rows):
            return None
        return {"a": a, "b": b, "new": new}

    def apply(self, s, p):
        for r in s.rows:
            r[p["new"]] = "yes" if num(r[p["a"]]) > num(r[p["b"]]) else "no"
        s.columns.append(p["new"])
        s.types[p["new"]] = "choice"

    def code(self, s, p):
        return [f"for {s.it} in {s.var}:",
                f"    {s.it}[{p['new']!r}] = 'yes' if float({s.it}[{p['a']!r}]) > float({s.it}[{p['b']!r}]) else 'no'"]

    def slots(self, s, p):
        return {"new": p["new"], "a": label(p["a"]), "b": label(p["b"])}


class RunningTotal(Op):
    """Rows in date order (ties by key) with a cumulative sum of a number field."""

    name, kind = "running_total", "enrich"

    def plan(self, s, rng):
        dates, numbers = s.dates(), [c for c in s.numbers(fresh=False) if s.types.get(c) in ("money", "hours", "int")]
        if not dates or not numbers or s.order is not None:
            return None
        col = rng.choice(numbers)
        new = rng.choice([f"cumulative_{col}", f"running_{col}", "running_total"])
        return None if new in s.columns else {"date": rng.choice(dates), "field": col, "new": new,
                                              "key": s.domain.key, "kind": s.types[col]}

    def apply(self, s, p):
        s.rows = sorted(s.rows, key=lambda r: (r[p["date"]], r[p["key"]]))
        total = 0.0
        for r in s.rows:
            total += num(r[p["field"]])
            r[p["new"]] = fmt(total, p["kind"])
        s.columns.append(p["new"])
        s.types[p["new"]] = p["kind"]
        s.order = (p["date"], False)
        s.order_words = f"{label(p['date'])}, earliest first (ties by {label(p['key'])})"

    def code(self, s, p):
        return [f"{s.var}.sort(key=lambda {s.it}: ({s.it}[{p['date']!r}], {s.it}[{p['key']!r}]))", "running = 0.0",
                f"for {s.it} in {s.var}:", f"    running += float({s.it}[{p['field']!r}])",
                f"    {s.it}[{p['new']!r}] = {form_code(p['kind'], 'running')}"]

    def slots(self, s, p):
        return {"new": p["new"], "field": label(p["field"]), "date": label(p["date"]), "key": label(p["key"])}


_BROKEN = {"email": ("not-an-email", "{local} at {host}", "{local}@"), "date": ("2026-13-{d}", "soon", "TBD"),
           "money": ("n/a", "", "??"), "int": ("n/a", "", "many"), "hours": ("n/a", "", "-"),
           "choice": ("",), "status": ("",), "person": ("",), "text": ("",)}


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
        bad = rng.sample([r[s.domain.key] for r in s.rows], rng.randint(2, 4))
        stem = rng.choice(["rejected", "invalid_rows", "needs_fixing", "errors"])
        return {"fields": cols, "bad": bad, "key": s.domain.key, "path": f"{s.out_dir}/{stem}.csv",
                "kinds": {c: s.domain.type_of(c) for c in cols}, "how": rng.choice(["inline", "table", "generic"])}

    def prepare(self, rows, p, rng):
        for r in rows:
            if r[p["key"]] in p["bad"]:
                col = rng.choice(p["fields"])
                template = rng.choice(_BROKEN[p["kinds"][col]])
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
        if how == "inline":      # one function that names the first field at fault
            lines = [f"def first_problem({s.it}):"]
            for c, kind in kinds.items():
                lines += ["    " + line for line in _bad_block(f"{s.it}[{c!r}]", kind, f"return {c!r}")]
            lines += ["    return None", "rejects, valid_rows = [], []", f"for {s.it} in {s.var}:",
                      f"    field = first_problem({s.it})", "    if field:",
                      f"        rejects.append([{s.it}[{p['key']!r}], field, {s.it}[field]])",
                      "    else:", f"        valid_rows.append({s.it})"]
        elif how == "table":     # a checker per field, only the checkers the rules need
            lines = []
            for kind in dict.fromkeys(kinds.values()):
                lines += _checker(kind)
            table = ", ".join(f"{c!r}: is_{kind}" for c, kind in kinds.items())
            lines += [f"checks = {{{table}}}", "rejects, valid_rows = [], []", f"for {s.it} in {s.var}:",
                      f"    failing = [col for col, ok in checks.items() if not ok({s.it}[col])]",
                      "    if failing:", f"        rejects.append([{s.it}[{p['key']!r}], failing[0], {s.it}[failing[0]]])",
                      "    else:", f"        valid_rows.append({s.it})"]
        else:                    # one generic check over the kinds in use
            lines = ["def valid(value, kind):", "    value = value.strip()", "    if not value:", "        return False"]
            for kind in dict.fromkeys(k for k in kinds.values() if k != "filled"):
                lines += [f"    if kind == {kind!r}:"] + ["        " + line for line in _bad_block("value", kind,
                                                                                               "return False")]
            lines += ["    return True", f"rules = {kinds!r}", "rejects, valid_rows = [], []", f"for {s.it} in {s.var}:",
                      f"    bad = [col for col, kind in rules.items() if not valid({s.it}[col], kind)]",
                      "    if bad:", f"        rejects.append([{s.it}[{p['key']!r}], bad[0], {s.it}[bad[0]]])",
                      "    else:", f"        valid_rows.append({s.it})"]
        return lines + [f"{s.var} = valid_rows", s.style.mkdir(s.out_dir)] + \
            s.style.write_rows(p["path"], repr([p["key"], "field", "value"]), ["rejects"])

    def checks(self, s, p) -> list[dict[str, Any]]:
        return [{"type": "file_exists", "path": p["path"], "gate": True},
                {"type": "csv_rows_equal", "name": "every broken row, with the field at fault", "path": p["path"],
                 "expected": p["rejected"], "key": p["key"], "weight": 2}]

    def slots(self, s, p):
        rules = {"email": "a valid email address", "date": "a real YYYY-MM-DD date", "money": "a number",
                 "int": "a number", "hours": "a number"}
        said = [f"{label(c)} must be {rules.get(p['kinds'][c], 'filled in')}" for c in p["fields"]]
        return {"path": p["path"], "rules": " and ".join(said), "key": p["key"]}


_VALID_CODE = {"email": "email", "date": "date", "money": "number", "int": "number", "hours": "number",
               "choice": "filled", "status": "filled", "person": "filled", "text": "filled"}


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
    return [f"def is_{kind}(text):", "    try:", f"        {parse}(text.strip())", "    except ValueError:",
            "        return False", "    return True"]


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


# ---------------------------------------------------------------------------------------------
# Selecting


class RankTop(Op):
    name, kind = "rank_top", "select"

    def plan(self, s, rng):
        cols = s.numbers(fresh=False)
        if not cols or len(s.rows) < 5:
            return None
        return {"field": rng.choice(cols), "k": rng.randint(3, min(8, len(s.rows) - 1)), "key": s.domain.key,
                "desc": rng.random() < 0.7}

    def apply(self, s, p):
        sign = -1 if p["desc"] else 1
        s.rows = sorted(s.rows, key=lambda r: (sign * num(r[p["field"]]), r[p["key"]]))[:p["k"]]
        s.order = (p["field"], p["desc"])

    def code(self, s, p):
        sign = "-" if p["desc"] else ""
        return [f"{s.var} = sorted({s.var}, key=lambda {s.it}: ({sign}float({s.it}[{p['field']!r}]), "
                f"{s.it}[{p['key']!r}]))[:{p['k']}]"]

    def slots(self, s, p):
        return {"field": label(p["field"]), "k": str(p["k"]), "key": label(p["key"]),
                "most": "highest" if p["desc"] else "lowest"}


class TopPerGroup(Op):
    """For each group, the row with the highest (or lowest) number."""

    name, kind = "top_per_group", "select"

    def plan(self, s, rng):
        groups, numbers = s.categories(), s.numbers(fresh=False)
        if not groups or not numbers:
            return None
        return {"group": rng.choice(groups), "field": rng.choice(numbers), "desc": rng.random() < 0.7,
                "key": s.domain.key}

    def apply(self, s, p):
        sign = -1 if p["desc"] else 1
        best: dict[str, Row] = {}
        for r in sorted(s.rows, key=lambda r: (sign * num(r[p["field"]]), r[p["key"]])):
            best.setdefault(r[p["group"]], r)
        s.rows = [best[g] for g in sorted(best)]
        s.used.add(p["group"])

    def code(self, s, p):
        sign = "-" if p["desc"] else ""
        g = p["group"]
        return [f"best_by_{g} = {{}}",
                f"for {s.it} in sorted({s.var}, key=lambda {s.it}: ({sign}float({s.it}[{p['field']!r}]), "
                f"{s.it}[{p['key']!r}])):", f"    best_by_{g}.setdefault({s.it}[{g!r}], {s.it})",
                f"{s.var} = [best_by_{g}[k] for k in sorted(best_by_{g})]"]

    def slots(self, s, p):
        return {"group": label(p["group"]), "field": label(p["field"]), "key": label(p["key"]),
                "most": "highest" if p["desc"] else "lowest"}


OPERATIONS: dict[str, Op] = {op.name: op for op in (
    MergeInputs(), Normalise(), Dedupe(), RepairDates(), RepairAmounts(), DropInvalid(), FilterEquals(), ExcludeValue(), FilterIn(),
    FilterThreshold(), FilterDates(), FilterText(), Join(), DeriveProduct(), Formula(), DeriveDays(), DeriveDate(), Month(),
    Weekday(), Bucket(), CompareFields(), RunningTotal(), RankTop(), TopPerGroup())}
CLEANING = ("dedupe", "drop_invalid", "normalise", "repair_dates", "repair_amounts")   # the order they apply in
FILTERS = ("filter_equals", "exclude_value", "filter_in", "filter_threshold", "filter_dates", "filter_text")
ENRICHING = ("formula", "formula", "derive_product", "derive_days", "derive_date", "month", "weekday", "bucket", "compare_fields")
SELECTING = ("rank_top", "top_per_group", "running_total")
