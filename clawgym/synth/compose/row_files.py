"""Deliverables that write the pipeline's rows to one file: a CSV (under the receiving system's
headers where it names the columns its own way), a JSON lookup keyed by the record id, or a
Markdown table, each checked row by row."""

from __future__ import annotations

import re

from .model import NUMBER_TYPES
from .state import label
from .delivered import (
    Deliver,
    Delivered,
    exists_check,
    field_key,
    NUM_RX,
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
            "system": rng.choice(
                ["the payroll system", "the new CRM", "the accounting tool", "our importer", "the shared dashboard"]
            ),
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
            {
                "type": "csv_rows_equal",
                "name": f"the {s.domain.noun[1]} asked for, exactly",
                "path": path,
                "expected": expected,
                "key": key,
                "weight": 3,
                **tolerance_for([s.types.get(c, "") for c in cols]),
            },
        ]
        columns = ", ".join(cols)
        if rename:
            columns += (
                f" ({p['system']} calls "
                + ", ".join(f"{a} '{b}'" for a, b in rename.items())
                + ", so use those headers)"
            )
        return Delivered(path, checks, code, {"path": path, "columns": columns, "order": order_words(s)}, ["csv"])


class WriteJson(Deliver):
    """The rows as one JSON object keyed by the domain key (a lookup table for another tool)."""

    name = "write_json"

    def plan(self, s, rng):
        if not 1 <= len(s.rows) <= 60:
            return None
        cols = [c for c in pick_columns(s, rng) if c != s.domain.key]
        numeric = [c for c in cols if s.types.get(c) in NUMBER_TYPES]
        stem = output_stem(s, rng, "{noun}_by_id", "{file}_lookup", "{noun}", "index")
        return {"columns": cols, "numeric": numeric, "path": f"{s.out_dir}/{stem}.json"}

    def deliver(self, s, p):
        cols, numeric, path, key = p["columns"], p["numeric"], p["path"], s.domain.key
        data = {r[key]: {c: (float(r[c]) if c in numeric else r[c]) for c in cols} for r in s.rows}
        fields = {field_key(k): v for k, v in sorted(data.items())}
        code = [
            f"numeric = {set(numeric)!r}" if numeric else "numeric = set()",
            f"lookup = {{{s.it}[{key!r}]: {{c: float({s.it}[c]) if c in numeric else {s.it}[c] for c in {cols!r}}} "
            f"for {s.it} in {s.var}}}",
            *s.style.write_json(path, "lookup"),
        ]
        schema = {"type": "object", "required": sorted(data), "propertyNames": {"enum": sorted(data)}}
        checks = [
            exists_check(path),
            {
                "type": "json_field_equals",
                "name": f"every {s.domain.noun[0]}'s entry",
                "path": path,
                "fields": fields,
                "tolerance": 0.01,
                "weight": 3,
            },
            {
                "type": "json_schema",
                "name": f"only the {s.domain.noun[1]} asked for",
                "path": path,
                "schema": schema,
                "weight": 1,
            },
        ]
        kinds = ", ".join(cols) + (f" ({', '.join(numeric)} as numbers)" if numeric else "")
        return Delivered(path, checks, code, {"path": path, "columns": kinds, "key": label(key)}, ["json-data"])


class MarkdownOut(Deliver):
    name = "markdown_table"

    def plan(self, s, rng):
        if not 1 <= len(s.rows) <= 40:
            return None
        stem = output_stem(s, rng, "{noun}_table", "{file}", "summary", "{noun}_for_review")
        return {
            "columns": pick_columns(s, rng)[:5],
            "path": f"{s.out_dir}/{stem}.md",
            "title": rng.choice([f"{s.domain.noun[1].capitalize()}", f"{s.domain.noun[1].capitalize()} to review"]),
        }

    def deliver(self, s, p):
        cols, path = p["columns"], p["path"]
        rows = ordered_by(s)
        patterns = []
        for r in rows:
            cells = [(NUM_RX(r[c]) if s.types.get(c) in NUMBER_TYPES else re.escape(r[c].strip())) for c in cols]
            patterns.append(r"(?m)^\|?\s*" + r"\s*\|\s*".join(cells) + r"\s*\|?\s*$")
        code = sort_code(s) + [
            f"lines = ['# {p['title']}', '', '| ' + ' | '.join({cols!r}) + ' |', '|' + '---|' * {len(cols)}]",
            f"for {s.it} in {s.var}:",
            f"    lines.append('| ' + ' | '.join({s.it}[c] for c in {cols!r}) + ' |')",
            *s.style.write_text(path, "'\\n'.join(lines) + '\\n'"),
        ]
        checks = [
            exists_check(path),
            {"type": "markdown_section", "name": "the heading", "path": path, "heading": p["title"], "weight": 1},
            {
                "type": "text_matches",
                "name": f"one table row per {s.domain.noun[0]}, in order",
                "path": path,
                "pattern": patterns,
                "weight": 3,
            },
            {
                "type": "text_matches",
                "name": "no other table rows",
                "path": path,
                "pattern": r"(?m)^\s*\|.*\|\s*$",
                "count": len(rows) + 2,
                "max_count": len(rows) + 2,
                "weight": 1,
            },
        ]
        return Delivered(
            path,
            checks,
            code,
            {"path": path, "columns": ", ".join(cols), "title": p["title"], "order": order_words(s)},
            ["report-writing"],
        )
