"""Deliverables that write the pipeline's rows to one file: a CSV (under the receiving system's
headers where it names the columns its own way), a JSON lookup keyed by the record id, or a
Markdown table, each checked row by row."""

from __future__ import annotations

from .model import NUMBER_TYPES
from .lexicon import Ref
from .delivered import (
    Deliver,
    Delivered,
    Figure,
    exists_check,
    key_set_gate,
    lookup_checks,
    cell_rx,
    order_words,
    ordered_by,
    pick_columns,
    sort_code,
    output_stem,
    tolerance_for,
)


class WriteRows(Deliver):
    name = "write_rows"

    def plan(self, s, rng):
        if not 1 <= len(s.rows) <= 60:
            return None
        stem = output_stem(s, rng, "{noun}_selected", "{file}_filtered", "{noun}_report", "result", "{noun}_list")
        cols = pick_columns(s, rng)
        rename = {}
        if rng.random() < 0.3:  # the system it goes into names the columns its own way
            for c in cols:
                other = (
                    [n for n in (s.domain.field(c).options.get("names") or []) if n not in s.columns]
                    if s.domain.type_of(c)
                    else []
                )
                if other:
                    rename[c] = rng.choice(other)
        return {
            "columns": cols,
            "path": f"{s.out_dir}/{stem}.csv",
            "rename": rename,
            "system": rng.choice(s.domain.systems or ("our importer",)),  # where this domain's records go
        }

    def deliver(self, s, p):
        cols, path, rename = p["columns"], p["path"], p.get("rename") or {}
        header = [rename.get(c, c) for c in cols]
        expected = [{rename.get(c, c): r[c] for c in cols} for r in ordered_by(s)]
        code = sort_code(s)
        rows_var = s.var
        if rename:
            rows_var = "for_import"
            code += [
                f"renamed = {rename!r}",
                f"for_import = [{{renamed.get(k, k): v for k, v in {s.it}.items()}} for {s.it} in {s.var}]",
            ]
        code += s.style.write_dicts(repr(path), header, rows_var)
        key = rename.get(s.domain.key, s.domain.key)
        checks = [
            exists_check(path),
            key_set_gate(path, key, [row[key] for row in expected], s.domain.noun[1]),
            {
                "type": "csv_rows_equal",
                "name": f"every {s.domain.noun[0]}'s row right, in {order_words(s)} order",
                "path": path,
                "expected": expected,
                "key": key,
                "ignore_order": False,  # a row out of place costs what a wrong row does
                "weight": 3,
                **tolerance_for([s.types.get(c, "") for c in cols]),
            },
        ]
        columns = ", ".join(cols)
        if rename:
            columns += (
                f" (they go into {p['system']}: use the headers "
                + " and ".join(f"'{b}' instead of '{a}'" for a, b in rename.items())
                + ")"
            )
        shown = [c for c in header if c != key]
        figure = Figure(
            f"the {s.domain.noun[1]} listed",
            {row[key]: tuple(row[c] for c in shown) for row in expected},
            tuple(shown),
            gated=True,
            poured=True,
            records=True,
        )
        return Delivered(
            path, checks, code, {"path": path, "columns": columns, "order": order_words(s)}, ["csv"], figures=[figure]
        )


class WriteJson(Deliver):
    """The rows as one JSON object keyed by the domain key (a lookup table for another tool)."""

    name = "write_json"

    def plan(self, s, rng):
        if not 1 <= len(s.rows) <= 60:
            return None
        cols = [c for c in pick_columns(s, rng) if c != s.domain.key]
        read = {f.name for f in s.domain.fields}
        if len(s.rows) >= s.read_rows and set(cols) <= read:
            return None  # every record, every column as read: the input re-keyed, no work to grade
        numeric = [c for c in cols if s.types.get(c) in NUMBER_TYPES]
        stem = output_stem(s, rng, "{noun}_by_id", "{file}_lookup", "{noun}", "index")
        return {"columns": cols, "numeric": numeric, "path": f"{s.out_dir}/{stem}.json"}

    def deliver(self, s, p):
        cols, numeric, path, key = p["columns"], p["numeric"], p["path"], s.domain.key
        data = {r[key]: {c: (float(r[c]) if c in numeric else r[c]) for c in cols} for r in s.rows}
        code = [
            f"numeric = {set(numeric)!r}" if numeric else "numeric = set()",
            f"lookup = {{{s.it}[{key!r}]: {{c: float({s.it}[c]) if c in numeric else {s.it}[c] for c in {cols!r}}} "
            f"for {s.it} in {s.var}}}",
            *s.style.write_json(path, "lookup"),
        ]
        checks = [exists_check(path), *lookup_checks(dict(sorted(data.items())), path, s.domain.noun[0])]
        kinds = ", ".join(cols) + (f" ({', '.join(numeric)} as numbers)" if numeric else "")
        figure = Figure(
            f"the {s.domain.noun[1]} looked up",
            {r[key]: tuple(r[c] for c in cols) for r in s.rows},
            tuple(cols),
            records=True,
        )
        return Delivered(
            path, checks, code, {"path": path, "columns": kinds, "key": Ref(key)}, ["json-data"], figures=[figure]
        )


class MarkdownOut(Deliver):
    name = "markdown_table"

    def plan(self, s, rng):
        if not 1 <= len(s.rows) <= 40:
            return None
        stem = output_stem(s, rng, "{noun}_table", "{file}", "summary", "{noun}_for_review")
        return {
            "columns": at_most(s, pick_columns(s, rng), 5),
            "path": f"{s.out_dir}/{stem}.md",
            "title": rng.choice([f"{s.domain.noun[1].capitalize()}", f"{s.domain.noun[1].capitalize()} to review"]),
        }

    def deliver(self, s, p):
        cols, path = p["columns"], p["path"]
        rows = ordered_by(s)
        patterns = []
        for r in rows:
            cells = [cell_rx(r[c]) for c in cols]  # any number in its forms, any text marked up or escaped
            patterns.append(r"(?m)^[ \t]*\|?[ \t]*" + r"[ \t]*\|[ \t]*".join(cells) + r"[ \t]*\|?[ \t]*$")
        code = sort_code(s) + [
            f"lines = ['# {p['title']}', '', '| ' + ' | '.join({cols!r}) + ' |', '|' + '---|' * {len(cols)}]",
            f"for {s.it} in {s.var}:",
            f"    lines.append('| ' + ' | '.join({s.it}[c] for c in {cols!r}) + ' |')",
            *s.style.write_text(path, "'\\n'.join(lines) + '\\n'"),
        ]
        # the heading and the table's size are the form asked for: gates, worth nothing by themselves
        checks = [
            exists_check(path),
            {
                "type": "markdown_section",
                "name": "the heading",
                "path": path,
                "heading": p["title"],
                "gate": True,
                "weight": 0,
            },
            {
                "type": "text_matches",
                "name": f"a table of {len(rows)} {s.domain.noun[0] if len(rows) == 1 else s.domain.noun[1]}, no other rows",
                "path": path,
                "pattern": r"(?m)^[^\n|]*\|[^\n]*$",  # a line with a cell bar: the header, its rule and each row
                "count": len(rows) + 2,
                "max_count": len(rows) + 2,
                "gate": True,
                "weight": 0,
            },
            {  # every record asked for has its row: the first rows of the input copied out earn nothing
                "type": "text_matches",
                "name": f"every {s.domain.noun[0]} asked for has its row",
                "path": path,
                "pattern": [rf"(?m)^[ \t]*\|?[ \t]*{cell_rx(r[cols[0]])}[ \t]*\|" for r in rows],
                "gate": True,
                "weight": 0,
            },
            {
                "type": "text_matches",
                "name": f"one table row per {s.domain.noun[0]}, in {order_words(s)} order",
                "path": path,
                "pattern": patterns,
                "in_order": True,  # rows out of order count as missing (only the longest run in order counts)
                "weight": 3,
            },
        ]
        figure = Figure(
            f"the {s.domain.noun[1]} tabled",
            {r[cols[0]]: tuple(r[c] for c in cols[1:]) for r in rows},
            tuple(cols[1:]),
            gated=True,
            poured=True,
            records=True,
        )
        return Delivered(
            path,
            checks,
            code,
            {"path": path, "columns": ", ".join(cols), "title": p["title"], "order": order_words(s)},
            ["report-writing"],
            figures=[figure],
        )


def at_most(s, cols: list[str], n: int) -> list[str]:
    """The first `n` of `cols`, the key and the columns the rows must show kept first (in order)."""
    needed = {c for c in cols if c == s.domain.key or c in s.must_show}
    room = set([c for c in cols if c not in needed][: max(0, n - len(needed))])
    return [c for c in cols if c in needed or c in room]
