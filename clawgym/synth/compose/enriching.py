"""Enriching operations: new columns on every row, from a related domain's file (a join), a product
or a formula of number fields, a date (days since, a date plus days, the month, the weekday), bands
of a number, a comparison of two fields, or a running total in date order."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from .lexicon import Ref, Refs
from .model import CUMULATIVE, NUMBER_TYPES
from .state import Op, fmt, form_code, label, num


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
            role = p.get("other_roles", {}).get(c, "")
            # a figure of the looked-up record repeats on each of its rows: summing it counts it again per row
            s.roles[c] = "measure" if role == "quantity" else role
            s.units[c] = p.get("other_units", {}).get(c, "")

    def code(self, s, p):
        other = p["other_var"]
        lines = s.style.reading(
            p["path"], [f"{other} = {{row[{p['other_key']!r}]: row for row in csv.DictReader(fh)}}"], newline=True
        ) + [f"for {s.it} in {s.var}:"]
        lines += [f"    {s.it}[{c!r}] = {other}[{s.it}[{p['field']!r}]][{c!r}]" for c in p["columns"]]
        return lines

    def slots(self, s, p):
        return {"columns": Refs(tuple(p["columns"])), "path": p["path"], "field": Ref(p["field"])}


class DeriveProduct(Op):
    name, kind = "derive_product", "enrich"
    NAMES = {
        ("int", "money"): ["line_total", "total_value", "amount"],
        ("hours", "money"): ["amount_due", "charge"],
        ("money", "int"): ["total", "extended"],
    }
    # only a count of things times a price of one makes sense ("delivery days x price" does not)
    COUNTS = re.compile(
        r"qty|quantity|units|count|sessions|seats|nights|copies|pieces|stock|attendees|guests|"
        r"tickets|items|boxes|packs|licen[cs]es|^days$|days_worked|hours"
    )
    PRICES = re.compile(r"price|rate|cost|fee|each|per_")

    def plan(self, s, rng):
        def fits(a: str, b: str) -> bool:
            count, price = (a, b) if s.types.get(a) in ("int", "hours") else (b, a)
            return (
                bool(self.COUNTS.search(count) and self.PRICES.search(price))
                and s.role(count) == "quantity"  # units (not a rating or a lead time) times a price
                and s.role(price) in ("measure", "quantity")
            )

        pairs = [
            (a, b)
            for a in s.columns
            for b in s.columns
            if a != b
            and s.domain.type_of(a)
            and s.domain.type_of(b)
            and (s.types.get(a), s.types.get(b)) in self.NAMES
            and fits(a, b)
        ]
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
        s.roles[p["new"]] = "quantity"  # a value: it adds up across rows

    def code(self, s, p):
        return [
            f"for {s.it} in {s.var}:",
            f'    {s.it}[{p["new"]!r}] = f"{{round(float({s.it}[{p["a"]!r}]) * float({s.it}[{p["b"]!r}]), 2):.2f}}"',
        ]

    def slots(self, s, p):
        return {"new": p["new"], "a": Ref(p["a"]), "b": Ref(p["b"])}


class Formula(Op):
    """One of the domain's own computed columns (domains.yaml `derived:`), evaluated per row."""

    name, kind = "formula", "enrich"

    def plan(self, s, rng):
        options = [
            d
            for d in s.domain.derived
            if d.name not in s.columns and all(c in s.columns and s.types.get(c) in NUMBER_TYPES for c in d.inputs())
        ]
        if not options:
            return None
        d = rng.choice(options)
        return {"new": d.name, "expr": d.expr, "type": d.type, "ask": rng.choice(d.ask), "role": d.role, "unit": d.unit}

    def apply(self, s, p):
        import ast

        tree = ast.parse(p["expr"], mode="eval")
        for r in s.rows:
            value = _evaluate(tree.body, {c: num(r[c]) for c in s.columns if s.types.get(c) in NUMBER_TYPES})
            r[p["new"]] = fmt(value, p["type"])
        s.columns.append(p["new"])
        s.types[p["new"]] = p["type"]
        s.roles[p["new"]] = p.get("role", "quantity")
        s.units[p["new"]] = p.get("unit", "")

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
        # a name any dated record can carry ("days_open" only fits what is open: a ticket, not a trip)
        new = rng.choice([n for n in ("days_ago", "age_days", "days_since", "days_elapsed") if n not in s.columns])
        return {"field": col, "ref": ref, "new": new}

    def apply(self, s, p):
        ref = dt.date.fromisoformat(p["ref"])
        for r in s.rows:
            r[p["new"]] = str((ref - dt.date.fromisoformat(r[p["field"]])).days)
        s.columns.append(p["new"])
        s.types[p["new"]] = "int"
        s.roles[p["new"]], s.units[p["new"]] = "duration", "days"  # an age: compared, never summed

    def code(self, s, p):
        return [
            f"as_of = date.fromisoformat({p['ref']!r})",
            f"for {s.it} in {s.var}:",
            f"    {s.it}[{p['new']!r}] = str((as_of - date.fromisoformat({s.it}[{p['field']!r}])).days)",
        ]

    def slots(self, s, p):
        return {"new": p["new"], "field": Ref(p["field"]), "ref": p["ref"]}


class DeriveDate(Op):
    """A date plus a number of days the row holds (due dates, check-outs, end dates)."""

    name, kind = "derive_date", "enrich"

    def plan(self, s, rng):
        pairs = [
            (f.name, f.options["adds_to"], f.options.get("gives", f"{f.options['adds_to']}_end"))
            for f in s.domain.fields
            if f.options.get("adds_to") and f.name in s.columns and f.options["adds_to"] in s.columns
        ]
        if not pairs:
            return None
        days, start, new = rng.choice(pairs)
        return None if new in s.columns else {"days": days, "start": start, "new": new}

    def apply(self, s, p):
        for r in s.rows:
            r[p["new"]] = (dt.date.fromisoformat(r[p["start"]]) + dt.timedelta(days=int(r[p["days"]]))).isoformat()
        s.columns.append(p["new"])
        s.types[p["new"]] = "date"
        s.roles[p["new"]] = "date"

    def code(self, s, p):
        return [
            f"for {s.it} in {s.var}:",
            f"    {s.it}[{p['new']!r}] = (date.fromisoformat({s.it}[{p['start']!r}]) + "
            f"timedelta(days=int({s.it}[{p['days']!r}]))).isoformat()",
        ]

    def slots(self, s, p):
        return {"new": p["new"], "start": Ref(p["start"]), "days": Ref(p["days"])}


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
        return {"new": p["new"], "field": Ref(p["field"])}


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
        return [
            f"for {s.it} in {s.var}:",
            f"    {s.it}[{p['new']!r}] = date.fromisoformat({s.it}[{p['field']!r}]).strftime('%A')",
        ]

    def slots(self, s, p):
        return {"new": p["new"], "field": Ref(p["field"])}


class Bucket(Op):
    """A band column from a number field: below the first cut, below the second, the rest."""

    name, kind = "bucket", "enrich"
    LABELS = (
        ("low", "medium", "high"),
        ("small", "medium", "large"),
        ("light", "moderate", "heavy"),
        ("short", "medium", "long"),
    )

    def plan(self, s, rng):
        cols = [c for c in s.numbers(fresh=False, does="band") if s.domain.type_of(c)]
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
        return [
            f"def {p['new']}_of(value):",
            "    value = float(value)",
            f"    if value < {lo}:",
            f"        return {a!r}",
            f"    if value < {hi}:",
            f"        return {b!r}",
            f"    return {c!r}",
            f"for {s.it} in {s.var}:",
            f"    {s.it}[{p['new']!r}] = {p['new']}_of({s.it}[{f!r}])",
        ]

    def slots(self, s, p):
        (lo, hi), (a, b, c) = p["cuts"], p["labels"]
        return {"new": p["new"], "field": Ref(p["field"]), "lo": str(lo), "hi": str(hi), "a": a, "b": b, "c": c}


class CompareFields(Op):
    """A yes/no column: one number field above (or below) another of the same kind."""

    name, kind = "compare_fields", "enrich"

    def plan(self, s, rng):
        def comparable(a: str, b: str) -> bool:  # two amounts, two durations, or two counts of one thing
            return s.types[a] in ("money", "hours") or bool(set(a.split("_")) & set(b.split("_")))

        pairs = [
            (a, b)
            for a in s.columns
            for b in s.columns
            if a < b
            and s.types.get(a) in NUMBER_TYPES
            and s.types.get(a) == s.types.get(b)
            and s.domain.type_of(a)
            and s.domain.type_of(b)
            and s.can(a, "compare")
            and (s.role(a), s.units.get(a, "")) == (s.role(b), s.units.get(b, ""))  # like with like
            and comparable(a, b)
        ]
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
        return [
            f"for {s.it} in {s.var}:",
            f"    {s.it}[{p['new']!r}] = 'yes' if float({s.it}[{p['a']!r}]) > float({s.it}[{p['b']!r}]) else 'no'",
        ]

    def slots(self, s, p):
        return {"new": p["new"], "a": Ref(p["a"]), "b": Ref(p["b"])}


class RunningTotal(Op):
    """Rows in date order (ties by key) with a cumulative sum of a number field."""

    name, kind = "running_total", "enrich"

    def plan(self, s, rng):
        # a running total adds up: quantities only (not a rating, a lead time or a year), in date order
        dates, numbers = s.dates(), s.numbers(fresh=False, does="running")
        if not dates or not numbers or s.order is not None:
            return None
        col = rng.choice(numbers)
        new = rng.choice([f"cumulative_{col}", f"running_{col}", "running_total"])
        return (
            None
            if new in s.columns
            else {"date": rng.choice(dates), "field": col, "new": new, "key": s.domain.key, "kind": s.types[col]}
        )

    def apply(self, s, p):
        s.rows = sorted(s.rows, key=lambda r: (r[p["date"]], r[p["key"]]))
        total = 0.0
        for r in s.rows:
            total += num(r[p["field"]])
            r[p["new"]] = fmt(total, p["kind"])
        s.columns.append(p["new"])
        s.types[p["new"]] = p["kind"]
        s.roles[p["new"]] = CUMULATIVE  # shown, never summed or averaged again
        s.order = (p["date"], False)
        s.order_words = f"{label(p['date'])}, earliest first (ties by {label(p['key'])})"

    def code(self, s, p):
        return [
            f"{s.var}.sort(key=lambda {s.it}: ({s.it}[{p['date']!r}], {s.it}[{p['key']!r}]))",
            "running = 0.0",
            f"for {s.it} in {s.var}:",
            f"    running += float({s.it}[{p['field']!r}])",
            f"    {s.it}[{p['new']!r}] = {form_code(p['kind'], 'running')}",
        ]

    def slots(self, s, p):
        return {"new": p["new"], "field": Ref(p["field"]), "date": Ref(p["date"]), "key": Ref(p["key"])}
