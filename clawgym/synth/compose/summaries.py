"""Summary deliverables: group aggregates (CSV or JSON), shares of a total, a count pivot, totals
and a Markdown report, each with the checks its expected figures imply.

What is computed follows what the numbers are (their roles, model.ROLES): only quantities are
summed, shared out or totalled; measures and periods are averaged and compared; a year is only
compared ("most recent"). Groups are fields no filter narrowed (a group's figure must depend on the
work), and a distinct count counts names or labels whose number differs from group to group."""

from __future__ import annotations

import random
from typing import Any

from .model import CATEGORY_TYPES
from .state import State, fmt, form_code, is_flag, label, num, unit_words
from .delivered import Deliver, Delivered, Figure, cell_rx, exists_check, lookup_checks, output_stem


_MEASURES = {
    "sum": ("total", "total {col}"),
    "count": ("count", "number of {noun}"),
    "mean": ("average", "average {col}"),
    "max": ("highest", "highest {col}"),
    "min": ("lowest", "lowest {col}"),
    "distinct": ("distinct", "number of different {col} values"),
}
PRECISION = " to two decimals"  # how an average is written: the checks compare to the cent
_YEAR_WORDS = {"max": ("latest", "most recent {col}"), "min": ("earliest", "earliest {col}")}
_AGG = {
    "sum": "sum(values)",
    "count": "len(values)",
    "mean": "sum(values) / len(values)",
    "max": "max(values)",
    "min": "min(values)",
    "distinct": "len(set(values))",
}
# how often each computation is drawn for a group, where the column allows it (model.COMPUTATIONS)
_DRAWS = (("sum", "sum", 2), ("count", "", 1), ("mean", "mean", 1), ("max", "extreme", 1), ("min", "extreme", 1))


def _aggregate(values: list, how: str) -> float:
    return {
        "sum": sum,
        "count": len,
        "mean": lambda v: sum(v) / len(v),
        "max": max,
        "min": min,
        "distinct": lambda v: len(set(v)),
    }[how](values)


def _buckets(s: State, group: str, how: str, col: str | None) -> dict[str, list]:
    out: dict[str, list] = {}
    for r in s.rows:
        value = r[col] if how == "distinct" else num(r[col]) if col else 1.0
        out.setdefault(r[group], []).append(value)
    return out


def _distinct_targets(s: State, group: str) -> list[str]:
    """Fields whose number of different values per group means something: names or labels (never a
    yes/no flag or a choice of numbers), grouped by labels, differing from group to group and not
    just the group's row count."""
    if is_flag({r[group] for r in s.rows}) or not s.labels(group):
        return []
    out = []
    for c in s.columns:
        kind = s.types.get(c)
        if c in (group, s.domain.key) or not (kind == "person" or kind in CATEGORY_TYPES):
            continue
        if kind != "person" and (is_flag({r[c] for r in s.rows}) or not s.labels(c)):
            continue
        buckets = _buckets(s, group, "distinct", c)
        distinct = [len(set(v)) for v in buckets.values()]
        if len(set(distinct)) > 1 and any(d != len(v) for d, v in zip(distinct, buckets.values())):
            out.append(c)
    return out


def _group_plan(s: State, rng: random.Random, hows: tuple[str, ...] = tuple(_AGG)) -> dict[str, Any] | None:
    """A group field and a computation over it that means something and differs between groups."""
    if len(s.rows) < 3:
        return None
    groups = s.categories(present=2)
    for group in rng.sample(groups, len(groups)):
        numbers = [c for c in s.numbers(fresh=False) if len({r[c] for r in s.rows}) > 1]
        options: list[tuple[str, str | None]] = []
        for how, computation, draws in _DRAWS:
            if how not in hows:
                continue
            cols = [c for c in numbers if s.can(c, computation)] if computation else [None]
            if cols:
                options += [(how, rng.choice(cols))] * draws
        if "distinct" in hows:
            options += [("distinct", c) for c in _distinct_targets(s, group)[:1]]
        rng.shuffle(options)
        for how, col in options:
            sums = [_aggregate(v, how) for v in _buckets(s, group, how, col).values()]
            if len({round(x, 6) for x in sums}) > 1:  # one value in every group is no finding
                name = _MEASURES[how][0] if how == "count" else f"{_words(s, how, col)[0]}_{col}"
                return {"group": group, "how": how, "col": col, "name": name}
    return None


def _words(s: State, how: str, col: str | None) -> tuple[str, str]:
    if col and s.role(col) == "year" and how in _YEAR_WORDS:
        return _YEAR_WORDS[how]
    return _MEASURES[how]


def _group_kind(s: State, p: dict[str, Any]) -> str:
    return "int" if p["how"] in ("count", "distinct") else "money" if p["how"] == "mean" else s.types[p["col"]]


def _table(s: State, p: dict[str, Any]) -> list[tuple[str, str]]:
    buckets = _buckets(s, p["group"], p["how"], p["col"])
    return [(g, fmt(_aggregate(v, p["how"]), _group_kind(s, p))) for g, v in sorted(buckets.items())]


def _figure(s: State, p: dict[str, Any], rows: list[tuple[str, str]], kind: str = "table") -> Figure:
    return Figure(f"the {_measure_said(s, p)} per {s.noun(p['group'])}", {g: (v,) for g, v in rows}, (p["name"],), kind)


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
    """The measure with its column's name in words (the request's slot: request.py names it)."""
    said = _words(s, p["how"], p["col"])[1].format(col=label(p["col"] or ""), noun=s.domain.noun[1])
    # an average's precision is said, not guessed, and that it is the plain one (not weighted)
    return said + plain_mean(s) + PRECISION if p["how"] == "mean" else said


def plain_mean(s: State) -> str:
    """How an average is meant: each record once ("the average unit price" could be revenue / units)."""
    return f", each {s.domain.noun[0]} counting once,"


def _measure_said(s: State, p: dict[str, Any]) -> str:
    """The measure as a person names it ("total distance in miles", "number of different sponsors"),
    for the text of outputs and checks."""
    col = p["col"] or ""
    if p["how"] == "distinct":
        many = s.words.said(col).plural if s.words is not None else f"{label(col)} values"
        return f"number of different {many}"
    return _words(s, p["how"], col)[1].format(col=s.noun(col), noun=s.domain.noun[1])


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
                "name": f"the {_measure_said(s, p)} per {s.noun(g)}",
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
            figures=[_figure(s, p, rows)],
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
        checks = [exists_check(path), *lookup_checks({k: float(v) for k, v in rows}, path, s.noun(g))]
        return Delivered(
            path,
            checks,
            code,
            {"path": path, "group": label(g), "measure": _measure_words(s, p)},
            ["json-data"],
            figures=[_figure(s, p, rows)],
        )


class ShareOfTotal(Deliver):
    """Per group: the total of a number field and its share of the grand total, in percent."""

    name = "share_of_total"

    def plan(self, s, rng):
        groups = s.categories(present=2)
        numbers = s.numbers(fresh=False, does="share")  # a share of a total needs a total: quantities only
        if not groups or not numbers or len(s.rows) < 3:
            return None
        col, g = rng.choice(numbers), rng.choice(groups)
        if sum(num(r[col]) for r in s.rows) <= 0 or any(num(r[col]) < 0 for r in s.rows):
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
                "name": f"the total {s.noun(col)} and its share per {s.noun(g)}",
                "path": path,
                "expected": expected,
                "key": g,
                "weight": 3,
                "tolerance": 0.051,
            },
        ]
        figures = [
            Figure(
                f"the total {s.noun(col)} and its share per {s.noun(g)}",
                {row[g]: (row[f"total_{col}"], row["share_pct"]) for row in expected},
                (f"total_{col}", "share_pct"),
            )
        ]
        return Delivered(
            path,
            checks,
            code,
            {"path": path, "group": label(g), "gcol": g, "col": col, "field": label(col)},
            ["budgeting"],
            figures=figures,
        )


class Pivot(Deliver):
    """A count table: one row per value of one field, one column per value of another."""

    name = "pivot"

    def plan(self, s, rng):
        groups = [c for c in s.categories(present=2) if len({r[c] for r in s.rows}) <= 7]
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
                "name": f"the counts per {s.noun(a)} and {s.noun(b)}",
                "path": path,
                "expected": expected,
                "key": a,
                "weight": 3,
            },
        ]
        cells = {k: tuple(str(row[v]) for v in across) for k, row in sorted(counts.items())}
        return Delivered(
            path,
            checks,
            code,
            {"path": path, "rows": label(a), "cols": label(b), "a": a, "values": ", ".join(across)},
            ["csv"],
            figures=[Figure(f"the counts per {s.noun(a)} and {s.noun(b)}", cells, tuple(across))],
        )


class TotalsJson(Deliver):
    """Headline figures of one number field: its total where it adds up (a quantity), its average
    where that means something, and how many rows are left where the work changed that."""

    name = "totals_json"

    def plan(self, s, rng):
        numbers = [c for c in s.numbers(fresh=False) if s.can(c, "sum") or s.can(c, "mean")]
        if not numbers or not s.rows:
            return None
        col = rng.choice(numbers)
        average = s.can(col, "mean") and (rng.random() < 0.6 or not s.can(col, "sum"))
        stem = output_stem(s, rng, "totals", "summary", "{file}_totals", "figures")
        return {
            "col": col,
            "path": f"{s.out_dir}/{stem}.json",
            "total": s.can(col, "sum"),
            "average": average,
            "count_key": rng.choice(["count", s.domain.noun[1].replace(" ", "_"), "rows"]),
        }

    def deliver(self, s, p):
        path, col, ck = p["path"], p["col"], p["count_key"]
        vals = [num(r[col]) for r in s.rows]
        counted = len(vals) != s.read_rows  # the input's own row count needs no work
        expected: dict[str, Any] = {}
        said: list[str] = []
        shown: dict[str, tuple[str, ...]] = {}
        code = [f"{col}_values = [float({s.it}[{col!r}]) for {s.it} in {s.var}]", "figures = {}"]
        unit = unit_words(s, col)  # not where the column's phrase says it ("duration in minutes, in minutes")
        unit = "" if unit.removeprefix(", in ").lower() in s.noun(col).lower() else unit
        if counted:
            expected[ck] = len(vals)
            said.append(f'"{ck}" (how many {s.domain.noun[1]}, a whole number)')
            shown[ck] = (str(len(vals)),)
            code.append(f"figures[{ck!r}] = len({col}_values)")
        if p.get("total", True):
            expected[f"total_{col}"] = round(sum(vals), 2)
            said.append(f'"total_{col}" (the total {label(col)}{unit})')  # in words by request.relabel
            shown[f"total_{col}"] = (fmt(sum(vals), "money"),)
            code.append(f"figures['total_{col}'] = round(sum({col}_values), 2)")
        if p["average"] or not expected:
            expected[f"average_{col}"] = round(sum(vals) / len(vals), 2)
            said.append(f'"average_{col}" (the average {label(col)}{plain_mean(s)} to two decimals)')
            shown[f"average_{col}"] = (fmt(sum(vals) / len(vals), "money"),)
            code.append(f"figures['average_{col}'] = round(sum({col}_values) / len({col}_values), 2)")
        code += s.style.write_json(path, "figures", sort_keys=False)
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
        keys = ", ".join(said[:-1]) + (" and " if len(said) > 1 else "") + said[-1]
        figures = [Figure(f"the {s.noun(col)} figures", shown)]
        return Delivered(
            path, checks, code, {"path": path, "keys": f"{keys}, as JSON numbers"}, ["json-data"], figures=figures
        )


class ReportMd(Deliver):
    name = "report_md"

    def plan(self, s, rng):
        p = _group_plan(s, rng, ("sum", "count", "mean"))
        if p is None:
            return None
        stem = output_stem(s, rng, "report", "summary", "{file}_note", "{noun}_update")
        group = s.noun(p["group"])  # a heading names the group as a person does ("Claim status breakdown")
        title = rng.choice([f"{s.domain.noun[1].capitalize()} by {group}", f"{group[:1].upper()}{group[1:]} breakdown"])
        # the average over every record, said so (not an average of the groups' averages)
        final = f"Average over all {s.domain.noun[1]}" if p["how"] == "mean" else "Total"
        return {**p, "path": f"{s.out_dir}/{stem}.md", "title": title, "final": final}

    def deliver(self, s, p):
        rows = _table(s, p)
        kind = _group_kind(s, p)
        total = (
            fmt(sum(num(v) for _, v in rows), kind)
            if p["how"] != "mean"
            else fmt(sum(num(r[p["col"]]) for r in s.rows) / len(s.rows), "money")
        )
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
        # each line as asked ('- <group>: <value>'), the value in any equivalent form (12.5 = 12.50)
        patterns = [_line_rx(group, value, True) for group, value in rows]
        patterns.append(_line_rx(p["final"], total, False))
        checks = [
            exists_check(p["path"]),
            {  # the form asked for, which the request spells out: a gate worth nothing by itself
                "type": "markdown_section",
                "name": "the heading",
                "path": p["path"],
                "heading": p["title"],
                "gate": True,
                "weight": 0,
            },
            {  # one line per label: a list of guesses for one label ('- ERROR: 0' ... '- ERROR: 59') is no answer
                "type": "text_matches",
                "name": f"one line per {s.noun(g)}, and one {p['final'].lower()} line",
                "path": p["path"],
                "pattern": [_label_rx(group, True) for group, _ in rows] + [_label_rx(p["final"], False)],
                "max_count": 1,
                "gate": True,
                "weight": 0,
            },
            {
                "type": "text_matches",
                "name": f"a line per {s.noun(g)} with its {_measure_said(s, p)}, and the {p['final'].lower()}",
                "path": p["path"],
                "pattern": patterns,
                "weight": 3,
            },
        ]
        figures = [_figure(s, p, rows, "lines")]
        if p["how"] != "count":  # a count's total is the number of rows, already graded per group
            figures.append(
                Figure(f"the {p['final'].lower()} {_measure_said(s, p)}", {p["final"]: (total,)}, (), "lines")
            )
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
            figures=figures,
        )


def _label_rx(name: str, bullet: bool) -> str:
    """The start of a report line `[- ]<name>:`, whatever value follows."""
    lead = r"[-*+][ \t]+" if bullet else ""
    return rf"(?m)^[ \t]*{lead}{cell_rx(name)}[ \t]*:"


def _line_rx(name: str, value: str, bullet: bool) -> str:
    """A report line `[- ]<name>: <value>` (bold, a currency sign or a unit word around it allowed)."""
    lead = r"[-*+][ \t]+" if bullet else ""
    return (
        rf"(?m)^[ \t]*{lead}{cell_rx(name)}[ \t]*:(?:\*\*)?[ \t]*(?:\*\*)?[$€£]?[ \t]?"
        rf"{cell_rx(value)}(?:[ \t]*[A-Za-z%]+)?[ \t]*$"
    )
