"""Summary deliverables: group aggregates (CSV or JSON), shares of a total, a count pivot, totals
and a Markdown report, each with the checks its expected figures imply."""

from __future__ import annotations

import random
from typing import Any

from .state import State, fmt, form_code, label, num
from .delivered import Deliver, Delivered, exists_check, field_key, output_stem


_MEASURES = {
    "sum": ("total", "total {col}"),
    "count": ("count", "number of {noun}"),
    "mean": ("average", "average {col}"),
    "max": ("highest", "highest {col}"),
    "min": ("lowest", "lowest {col}"),
    "distinct": ("distinct", "number of different {col} values"),
}
_AGG = {
    "sum": "sum(values)",
    "count": "len(values)",
    "mean": "sum(values) / len(values)",
    "max": "max(values)",
    "min": "min(values)",
    "distinct": "len(set(values))",
}


def _aggregate(values: list, how: str) -> float:
    return {
        "sum": sum,
        "count": len,
        "mean": lambda v: sum(v) / len(v),
        "max": max,
        "min": min,
        "distinct": lambda v: len(set(v)),
    }[how](values)


def _group_plan(s: State, rng: random.Random) -> dict[str, Any] | None:
    groups = s.categories(present=2, fresh=False)
    # a measure the rows all share (a filter kept only "extra guests below 1") gives a table of one value
    numbers = [c for c in s.numbers(fresh=False) if len({r[c] for r in s.rows}) > 1]
    if not groups or len(s.rows) < 3:
        return None
    group = rng.choice(groups)
    others = [c for c in s.columns if c != group and c != s.domain.key and s.types.get(c) in ("choice", "person")]
    hows = (["sum", "sum", "count", "mean", "max", "min"] if numbers else ["count"]) + (["distinct"] if others else [])
    how = rng.choice(hows)
    col = rng.choice(others) if how == "distinct" else rng.choice(numbers) if how != "count" else None
    name = _MEASURES[how][0] if how == "count" else f"{_MEASURES[how][0]}_{col}"
    return {"group": group, "how": how, "col": col, "name": name}


def _group_kind(s: State, p: dict[str, Any]) -> str:
    return "int" if p["how"] in ("count", "distinct") else "money" if p["how"] == "mean" else s.types[p["col"]]


def _table(s: State, p: dict[str, Any]) -> list[tuple[str, str]]:
    buckets: dict[str, list] = {}
    for r in s.rows:
        value = r[p["col"]] if p["how"] == "distinct" else num(r[p["col"]]) if p["col"] else 1.0
        buckets.setdefault(r[p["group"]], []).append(value)
    return [(g, fmt(_aggregate(v, p["how"]), _group_kind(s, p))) for g, v in sorted(buckets.items())]


def _group_code(s: State, p: dict[str, Any]) -> list[str]:
    value = (
        "1"
        if p["how"] == "count"
        else f"{s.it}[{p['col']!r}]"
        if p["how"] == "distinct"
        else f"float({s.it}[{p['col']!r}])"
    )
    g = p["group"]
    return s.style.grouping(f"by_{g}", s.it, s.var, f"{s.it}[{g!r}]", value)


def _measure_words(s: State, p: dict[str, Any]) -> str:
    return _MEASURES[p["how"]][1].format(col=label(p["col"] or ""), noun=s.domain.noun[1])


class GroupAggregate(Deliver):
    name = "group_aggregate"

    def plan(self, s, rng):
        p = _group_plan(s, rng)
        if p is None:
            return None
        stem = output_stem(s, rng, "{file}_by_" + p["group"], "summary_by_" + p["group"], p["group"] + "_totals")
        return {**p, "path": f"{s.out_dir}/{stem}.csv"}

    def deliver(self, s, p):
        rows = _table(s, p)
        g, name, path = p["group"], p["name"], p["path"]
        code = _group_code(s, p) + s.style.write_rows(
            path,
            repr([g, name]),
            [f"[group, {form_code(_group_kind(s, p), _AGG[p['how']])}]"],
            loop=f"group, values in sorted(by_{g}.items())",
        )
        checks = [
            exists_check(path),
            {
                "type": "csv_rows_equal",
                "name": f"{name} per {label(g)}",
                "path": path,
                "expected": [{g: k, name: v} for k, v in rows],
                "key": g,
                "weight": 3,
                "tolerance": 0.01,
            },
        ]
        return Delivered(
            path,
            checks,
            code,
            {"path": path, "group": label(g), "measure": _measure_words(s, p), "name": name, "gcol": g},
            ["csv"],
        )


class GroupJson(Deliver):
    name = "group_json"

    def plan(self, s, rng):
        p = _group_plan(s, rng)
        if p is None:
            return None
        stem = output_stem(s, rng, "{noun}_per_" + p["group"], p["group"] + "_summary", "breakdown")
        return {**p, "path": f"{s.out_dir}/{stem}.json"}

    def deliver(self, s, p):
        rows = _table(s, p)
        g, path = p["group"], p["path"]
        kind = _group_kind(s, p)
        conv = "int" if kind == "int" else "float"
        code = _group_code(s, p) + [
            f"result = {{group: {conv}({form_code(kind, _AGG[p['how']])}) for group, values in by_{g}.items()}}",
            *s.style.write_json(path, "result"),
        ]
        fields = {field_key(k): float(v) for k, v in rows}
        keys = [k for k, _ in rows]
        checks = [
            exists_check(path),
            {
                "type": "json_field_equals",
                "name": f"{p['name']} per {label(g)}",
                "path": path,
                "fields": fields,
                "tolerance": 0.01,
                "weight": 3,
            },
            {
                "type": "json_schema",
                "name": f"one entry per {label(g)}, nothing else",
                "path": path,
                "schema": {"type": "object", "required": keys, "propertyNames": {"enum": keys}},
                "weight": 1,
            },
        ]
        return Delivered(
            path, checks, code, {"path": path, "group": label(g), "measure": _measure_words(s, p)}, ["json-data"]
        )


class ShareOfTotal(Deliver):
    """Per group: the total of a number field and its share of the grand total, in percent."""

    name = "share_of_total"

    def plan(self, s, rng):
        groups = s.categories(present=2, fresh=False)
        numbers = [c for c in s.numbers(fresh=False) if s.types.get(c) in ("money", "hours", "int")]
        if not groups or not numbers or len(s.rows) < 3:
            return None
        col, g = rng.choice(numbers), rng.choice(groups)
        if sum(num(r[col]) for r in s.rows) <= 0:
            return None
        stem = output_stem(s, rng, "share_by_" + g, "{file}_shares", g + "_share")
        return {"group": g, "col": col, "path": f"{s.out_dir}/{stem}.csv", "pct": "share_pct"}

    def deliver(self, s, p):
        g, col, path = p["group"], p["col"], p["path"]
        kind = s.types[col]
        totals: dict[str, float] = {}
        for r in s.rows:
            totals[r[g]] = totals.get(r[g], 0.0) + num(r[col])
        grand = sum(totals.values())
        expected = [
            {g: k, f"total_{col}": fmt(v, kind), "share_pct": f"{100 * v / grand:.1f}"}
            for k, v in sorted(totals.items())
        ]
        code = [
            f"totals_by_{g} = {{}}",
            f"for {s.it} in {s.var}:",
            f"    totals_by_{g}[{s.it}[{g!r}]] = totals_by_{g}.get({s.it}[{g!r}], 0.0) + float({s.it}[{col!r}])",
            f"grand_total = sum(totals_by_{g}.values())",
            *s.style.write_rows(
                path,
                repr([g, f"total_{col}", "share_pct"]),
                [f"[group, {form_code(kind, 'total')}, format(100 * total / grand_total, '.1f')]"],
                loop=f"group, total in sorted(totals_by_{g}.items())",
            ),
        ]
        checks = [
            exists_check(path),
            {
                "type": "csv_rows_equal",
                "name": f"total and share per {label(g)}",
                "path": path,
                "expected": expected,
                "key": g,
                "weight": 3,
                "tolerance": 0.051,
            },
        ]
        return Delivered(
            path,
            checks,
            code,
            {"path": path, "group": label(g), "gcol": g, "col": col, "field": label(col)},
            ["budgeting"],
        )


class Pivot(Deliver):
    """A count table: one row per value of one field, one column per value of another."""

    name = "pivot"

    def plan(self, s, rng):
        groups = [c for c in s.categories(present=2, fresh=False) if len({r[c] for r in s.rows}) <= 7]
        if len(groups) < 2 or len(s.rows) < 4:
            return None
        rows_by, cols_by = rng.sample(groups, 2)
        stem = output_stem(s, rng, f"{rows_by}_by_{cols_by}", "crosstab", "{file}_pivot")
        return {"rows": rows_by, "cols": cols_by, "path": f"{s.out_dir}/{stem}.csv"}

    def deliver(self, s, p):
        a, b, path = p["rows"], p["cols"], p["path"]
        across = sorted({r[b] for r in s.rows})
        counts: dict[str, dict[str, int]] = {}
        for r in s.rows:
            counts.setdefault(r[a], {v: 0 for v in across})[r[b]] += 1
        expected = [{a: k, **{v: str(n) for v, n in row.items()}} for k, row in sorted(counts.items())]
        code = [
            f"across = sorted({{{s.it}[{b!r}] for {s.it} in {s.var}}})",
            "table = {}",
            f"for {s.it} in {s.var}:",
            f"    table.setdefault({s.it}[{a!r}], {{v: 0 for v in across}})[{s.it}[{b!r}]] += 1",
            *s.style.write_rows(
                path,
                f"[{a!r}] + across",
                ["[value] + [row[v] for v in across]"],
                loop="value, row in sorted(table.items())",
            ),
        ]
        checks = [
            exists_check(path),
            {
                "type": "csv_rows_equal",
                "name": f"{label(a)} by {label(b)} counts",
                "path": path,
                "expected": expected,
                "key": a,
                "weight": 3,
            },
        ]
        return Delivered(
            path,
            checks,
            code,
            {"path": path, "rows": label(a), "cols": label(b), "a": a, "values": ", ".join(across)},
            ["csv"],
        )


class TotalsJson(Deliver):
    name = "totals_json"

    def plan(self, s, rng):
        numbers = s.numbers(fresh=False)
        if not numbers or not s.rows:
            return None
        stem = output_stem(s, rng, "totals", "summary", "{file}_totals", "figures")
        return {
            "col": rng.choice(numbers),
            "path": f"{s.out_dir}/{stem}.json",
            "average": rng.random() < 0.6,
            "count_key": rng.choice(["count", s.domain.noun[1].replace(" ", "_"), "rows"]),
        }

    def deliver(self, s, p):
        path, col, ck = p["path"], p["col"], p["count_key"]
        vals = [num(r[col]) for r in s.rows]
        expected: dict[str, Any] = {ck: len(vals), f"total_{col}": round(sum(vals), 2)}
        code = [
            f"{col}_values = [float({s.it}[{col!r}]) for {s.it} in {s.var}]",
            f"figures = {{{ck!r}: len({col}_values), 'total_{col}': round(sum({col}_values), 2)}}",
        ]
        if p["average"]:
            expected[f"average_{col}"] = round(sum(vals) / len(vals), 2)
            code.append(f"figures['average_{col}'] = round(sum({col}_values) / len({col}_values), 2)")
        code += s.style.write_json(path, "figures", sort_keys=False)
        keys = ", ".join(f'"{k}"' for k in expected)
        checks = [
            exists_check(path),
            {
                "type": "json_field_equals",
                "name": "the figures",
                "path": path,
                "fields": expected,
                "tolerance": 0.01,
                "weight": 3,
            },
        ]
        return Delivered(
            path, checks, code, {"path": path, "keys": f"{keys} (numbers, rounded to cents)"}, ["json-data"]
        )


class ReportMd(Deliver):
    name = "report_md"

    def plan(self, s, rng):
        p = _group_plan(s, rng)
        if p is None or p["how"] in ("max", "min", "distinct"):
            return None
        stem = output_stem(s, rng, "report", "summary", "{file}_note", "{noun}_update")
        title = rng.choice(
            [f"{s.domain.noun[1].capitalize()} by {label(p['group'])}", f"{label(p['group']).capitalize()} breakdown"]
        )
        final = "Overall" if p["how"] == "mean" else "Total"
        return {**p, "path": f"{s.out_dir}/{stem}.md", "title": title, "final": final}

    def deliver(self, s, p):
        rows = _table(s, p)
        kind = _group_kind(s, p)
        total = (
            fmt(sum(num(v) for _, v in rows), kind)
            if p["how"] != "mean"
            else fmt(sum(num(r[p["col"]]) for r in s.rows) / len(s.rows), "money")
        )
        lines = [f"- {g}: {v}" for g, v in rows] + [f"{p['final']}: {total}"]
        g = p["group"]
        overall = (
            f"sum(float({s.it}[{p['col']!r}]) for {s.it} in {s.var}) / len({s.var})"
            if p["how"] == "mean"
            else "sum(float(x) for x in shown.values())"
        )
        code = _group_code(s, p) + [
            f"shown = {{group: {form_code(kind, _AGG[p['how']])} for group, values in sorted(by_{g}.items())}}",
            f"lines = [{('# ' + p['title'])!r}, ''] + [f'- {{group}}: {{x}}' for group, x in shown.items()]",
            f"lines += ['', {p['final'] + ': '!r} + {form_code(kind, overall)}]",
            *s.style.write_text(p["path"], "'\\n'.join(lines) + '\\n'"),
        ]
        checks = [
            exists_check(p["path"]),
            {
                "type": "text_contains",
                "name": "the heading and every line of the report",
                "path": p["path"],
                "contains": [f"# {p['title']}"] + lines,
                "weight": 3,
            },
        ]
        return Delivered(
            p["path"],
            checks,
            code,
            {
                "path": p["path"],
                "title": p["title"],
                "group": label(g),
                "measure": _measure_words(s, p),
                "final": p["final"],
            },
            ["report-writing"],
        )
