"""Selecting operations: the top rows by a number field, or the best row of each group."""

from __future__ import annotations

from .data import Row
from .delivered import most
from .lexicon import Ref
from .state import Op, num


class RankTop(Op):
    name, kind = "rank_top", "select"

    def plan(self, s, rng):
        cols = [c for c in s.numbers(fresh=False, does="rank") if len({r[c] for r in s.rows}) > 1]
        if not cols or len(s.rows) < 5:
            return None
        return {
            "field": rng.choice(cols),
            "k": rng.randint(3, min(8, len(s.rows) - 1)),
            "key": s.domain.key,
            "desc": rng.random() < 0.7,
        }

    def apply(self, s, p):
        sign = -1 if p["desc"] else 1
        s.rows = sorted(s.rows, key=lambda r: (sign * num(r[p["field"]]), r[p["key"]]))[: p["k"]]
        s.order = (p["field"], p["desc"])

    def code(self, s, p):
        sign = "-" if p["desc"] else ""
        return [
            f"{s.var} = sorted({s.var}, key=lambda {s.it}: ({sign}float({s.it}[{p['field']!r}]), "
            f"{s.it}[{p['key']!r}]))[:{p['k']}]"
        ]

    def slots(self, s, p):
        return {
            "field": Ref(p["field"]),
            "k": str(p["k"]),
            "key": Ref(p["key"]),
            "most": most(s, p["field"], p["desc"]),
        }


class TopPerGroup(Op):
    """For each group, the row with the highest (or lowest) number."""

    name, kind = "top_per_group", "select"

    def plan(self, s, rng):
        groups = s.categories()
        numbers = [c for c in s.numbers(fresh=False, does="rank") if len({r[c] for r in s.rows}) > 1]
        if not groups or not numbers:
            return None
        return {
            "group": rng.choice(groups),
            "field": rng.choice(numbers),
            "desc": rng.random() < 0.7,
            "key": s.domain.key,
        }

    def apply(self, s, p):
        sign = -1 if p["desc"] else 1
        best: dict[str, Row] = {}
        for r in sorted(s.rows, key=lambda r: (sign * num(r[p["field"]]), r[p["key"]])):
            best.setdefault(r[p["group"]], r)
        s.rows = [best[g] for g in sorted(best)]
        s.used.add(p["group"])
        s.must_show |= {p["group"], p["field"]}  # which group each pick is for, and what it was picked by

    def code(self, s, p):
        sign = "-" if p["desc"] else ""
        g = p["group"]
        return [
            f"best_by_{g} = {{}}",
            f"for {s.it} in sorted({s.var}, key=lambda {s.it}: ({sign}float({s.it}[{p['field']!r}]), "
            f"{s.it}[{p['key']!r}])):",
            f"    best_by_{g}.setdefault({s.it}[{g!r}], {s.it})",
            f"{s.var} = [best_by_{g}[k] for k in sorted(best_by_{g})]",
        ]

    def slots(self, s, p):
        return {
            "group": Ref(p["group"]),
            "field": Ref(p["field"]),
            "key": Ref(p["key"]),
            "most": most(s, p["field"], p["desc"]),
        }
