"""Filter operations: keep the rows whose field equals a value (or does not), lies in a set of
values, passes a threshold, falls in a date range or mentions a word."""

from __future__ import annotations

import operator

from .data import Row
from .lexicon import Cmp, Ref, Which
from .state import Op, num


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

    def slots(self, s, p):  # "which": the clause the catalog gives the value ("that have been claimed")
        return {"field": Ref(p["field"]), "value": p["value"], "which": Which(p["field"], (p["value"],))}


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
        return [f"wanted_{p['field']} = {wanted}"] + s.style.kept(
            s.var, s.it, f"{s.it}[{p['field']!r}] in wanted_{p['field']}"
        )

    def slots(self, s, p):
        vals = p["values"]
        return {
            "field": Ref(p["field"]),
            "values": ", ".join(vals[:-1]) + " and " + vals[-1],
            "which": Which(p["field"], tuple(vals)),
        }


_CMP = {">": "above", ">=": "at least", "<": "below", "<=": "at most"}
_OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}


class FilterThreshold(Op):
    name, kind = "filter_threshold", "filter"

    def plan(self, s, rng):
        cols = s.numbers(does="threshold")  # not a number that names something (a table, a revision)
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
        return {
            "field": Ref(p["field"]),
            "cmp": _CMP[p["op"]],
            "threshold": str(p["threshold"]),
            "which": Cmp(p["field"], p["op"], str(p["threshold"])),
        }


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
        return {"field": Ref(p["field"]), "start": p["start"], "end": p["end"]}


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
        return {"field": Ref(p["field"]), "word": p["word"]}
