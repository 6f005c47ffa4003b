"""Deliverables of a composed pipeline (rows, files, reconciliations, messages here; summaries in
summaries.py) and their registry: the files the person asked for, the reference solution's
lines that write them, and the checks their expected contents imply.

Each `Deliver` gets the final pipeline state, draws what it needs from the seed (`plan`, None where
it does not fit), and returns a `Delivered`: the checks (a gate that the file exists, then its
exact contents: rows, fields, lines or files), the solution lines and the words for its phrasing.
"""

from __future__ import annotations

import re
from typing import Any

from .model import NUMBER_TYPES
from .data import Row, people, to_csv
from .state import fmt, form_code, label, num
from .delivered import (Deliver, Delivered, exists_check, field_key, NUM_RX, order_words, ordered_by, pick_columns,
                        sort_code, output_stem, tolerance_for)
from .summaries import GroupAggregate, GroupJson, Pivot, ReportMd, ShareOfTotal, TotalsJson


class WriteRows(Deliver):
    name = "write_rows"

    def plan(self, s, rng):
        if not 1 <= len(s.rows) <= 60:
            return None
        stem = output_stem(s, rng, "{noun}_selected", "{file}_filtered", "{noun}_report", "result", "{noun}_list")
        cols = pick_columns(s, rng)
        rename = {}
        if rng.random() < 0.3:   # the system it goes into names the columns its own way
            for c in cols:
                other = [n for n in (s.domain.field(c).options.get("names") or []) if n not in s.columns] \
                    if s.domain.type_of(c) else []
                if other:
                    rename[c] = rng.choice(other)
        return {"columns": cols, "path": f"{s.out_dir}/{stem}.csv", "rename": rename,
                "system": rng.choice(["the payroll system", "the new CRM", "the accounting tool", "our importer",
                                      "the shared dashboard"])}

    def deliver(self, s, p):
        cols, path, rename = p["columns"], p["path"], p.get("rename") or {}
        header = [rename.get(c, c) for c in cols]
        expected = [{rename.get(c, c): r[c] for c in cols} for r in ordered_by(s)]
        code = sort_code(s)
        rows_var = s.var
        if rename:
            rows_var = "for_import"
            code += [f"renamed = {rename!r}",
                     f"for_import = [{{renamed.get(k, k): v for k, v in {s.it}.items()}} for {s.it} in {s.var}]"]
        code += s.style.write_dicts(repr(path), header, rows_var)
        key = rename.get(s.domain.key, s.domain.key)
        checks = [exists_check(path), {"type": "csv_rows_equal", "name": f"the {s.domain.noun[1]} asked for, exactly",
                                  "path": path, "expected": expected, "key": key, "weight": 3,
                                  **tolerance_for([s.types.get(c, "") for c in cols])}]
        columns = ", ".join(cols)
        if rename:
            columns += (f" ({p['system']} calls " + ", ".join(f"{a} '{b}'" for a, b in rename.items())
                        + ", so use those headers)")
        return Delivered(path, checks, code, {"path": path, "columns": columns, "order": order_words(s)},
                         ["csv"])


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
        code = [f"numeric = {set(numeric)!r}" if numeric else "numeric = set()",
                f"lookup = {{{s.it}[{key!r}]: {{c: float({s.it}[c]) if c in numeric else {s.it}[c] for c in {cols!r}}} "
                f"for {s.it} in {s.var}}}",
                *s.style.write_json(path, "lookup")]
        schema = {"type": "object", "required": sorted(data), "propertyNames": {"enum": sorted(data)}}
        checks = [exists_check(path),
                  {"type": "json_field_equals", "name": f"every {s.domain.noun[0]}'s entry", "path": path,
                   "fields": fields, "tolerance": 0.01, "weight": 3},
                  {"type": "json_schema", "name": f"only the {s.domain.noun[1]} asked for", "path": path,
                   "schema": schema, "weight": 1}]
        kinds = ", ".join(cols) + (f" ({', '.join(numeric)} as numbers)" if numeric else "")
        return Delivered(path, checks, code, {"path": path, "columns": kinds, "key": label(key)}, ["json-data"])


class MarkdownOut(Deliver):
    name = "markdown_table"

    def plan(self, s, rng):
        if not 1 <= len(s.rows) <= 40:
            return None
        stem = output_stem(s, rng, "{noun}_table", "{file}", "summary", "{noun}_for_review")
        return {"columns": pick_columns(s, rng)[:5], "path": f"{s.out_dir}/{stem}.md",
                "title": rng.choice([f"{s.domain.noun[1].capitalize()}", f"{s.domain.noun[1].capitalize()} to review"])}

    def deliver(self, s, p):
        cols, path = p["columns"], p["path"]
        rows = ordered_by(s)
        patterns = []
        for r in rows:
            cells = [(NUM_RX(r[c]) if s.types.get(c) in NUMBER_TYPES else re.escape(r[c].strip())) for c in cols]
            patterns.append(r"(?m)^\|?\s*" + r"\s*\|\s*".join(cells) + r"\s*\|?\s*$")
        code = sort_code(s) + [
            f"lines = ['# {p['title']}', '', '| ' + ' | '.join({cols!r}) + ' |', '|' + '---|' * {len(cols)}]",
            f"for {s.it} in {s.var}:", f"    lines.append('| ' + ' | '.join({s.it}[c] for c in {cols!r}) + ' |')",
            *s.style.write_text(path, "'\\n'.join(lines) + '\\n'")]
        checks = [exists_check(path),
                  {"type": "markdown_section", "name": "the heading", "path": path, "heading": p["title"], "weight": 1},
                  {"type": "text_matches", "name": f"one table row per {s.domain.noun[0]}, in order", "path": path,
                   "pattern": patterns, "weight": 3},
                  {"type": "text_matches", "name": "no other table rows", "path": path,
                   "pattern": r"(?m)^\s*\|.*\|\s*$", "count": len(rows) + 2, "max_count": len(rows) + 2, "weight": 1}]
        return Delivered(path, checks, code, {"path": path, "columns": ", ".join(cols), "title": p["title"],
                                              "order": order_words(s)}, ["report-writing"])


class SplitByGroup(Deliver):
    """One CSV per group value in a folder (files organised by a field)."""

    name = "split_by_group"

    def plan(self, s, rng):
        groups = [c for c in s.categories(present=2, fresh=False) if len({r[c] for r in s.rows}) <= 6
                  and all(re.fullmatch(r"[A-Za-z0-9 ._-]+", r[c]) and _slug(r[c]) for r in s.rows)
                  and len({_slug(r[c]) for r in s.rows}) == len({r[c] for r in s.rows})]   # one file per value
        if not groups or len(s.rows) < 4:
            return None
        g = rng.choice(groups)
        folder = f"{s.out_dir}/{rng.choice(['by_' + g, g, s.domain.noun[1].replace(' ', '_') + '_by_' + g])}"
        return {"group": g, "folder": folder, "columns": pick_columns(s, rng)}

    def deliver(self, s, p):
        g, folder, cols = p["group"], p["folder"], p["columns"]
        buckets: dict[str, list[Row]] = {}
        for r in ordered_by(s):
            buckets.setdefault(r[g], []).append(r)
        checks: list[dict[str, Any]] = [{"type": "files_count", "name": f"one file per {label(g)}",
                                         "pattern": f"{folder}/*.csv", "min": len(buckets), "max": len(buckets),
                                         "weight": 1}]
        for value, rows in sorted(buckets.items()):
            path = f"{folder}/{_slug(value)}.csv"
            checks.append({"type": "csv_rows_equal", "name": f"{label(g)} {value}", "path": path,
                           "expected": [{c: r[c] for c in cols} for r in rows], "key": s.domain.key, "weight": 1,
                           **tolerance_for([s.types.get(c, "") for c in cols])})
        code = sort_code(s) + [
            s.style.mkdir(folder), f"for value in sorted({{{s.it}[{g!r}] for {s.it} in {s.var}}}):",
            "    name = re.sub(r'[^a-z0-9]+', '-', value.lower()).strip('-')",
            *s.style.write_dicts(f"{folder!r} + '/' + name + '.csv'", cols,
                                 f"[{s.it} for {s.it} in {s.var} if {s.it}[{g!r}] == value]", indent="    ")]
        names = [f"{folder}/{_slug(v)}.csv" for v in sorted(buckets)]
        listed = ", ".join(names[:-1]) + " and " + names[-1]
        return Delivered(folder + "/", checks, code, {"folder": folder + "/", "group": label(g), "files": listed,
                                                      "columns": ", ".join(cols), "n": str(len(names))}, ["csv"])


def _slug(value: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", value.lower()).strip("-")


class Reconcile(Deliver):
    """Compare the rows with another party's copy: missing on either side, or a different amount."""

    name = "reconcile"

    def plan(self, s, rng):
        numbers = [c for c in s.numbers(fresh=False) if s.domain.type_of(c)]
        if not numbers or len(s.rows) < 6 or s.domain.key in ("issue", "ours", "theirs"):
            return None
        col = rng.choice(numbers)
        rows = [dict(r) for r in s.rows]
        keys = [r[s.domain.key] for r in rows]
        drop = set(rng.sample(keys, rng.randint(1, 2)))
        change = set(rng.sample([k for k in keys if k not in drop], rng.randint(1, 3)))
        theirs = []
        for r in rows:
            if r[s.domain.key] in drop:
                continue
            t = {s.domain.key: r[s.domain.key], col: r[col]}
            if r[s.domain.key] in change:
                t[col] = fmt(num(r[col]) + rng.choice([-1, 1]) * rng.choice([1, 5, 10, 0.5]) * (2 if num(r[col]) > 50 else 1),
                             s.types[col])
            theirs.append(t)
        extra = [{s.domain.key: f"{keys[0]}-X{i}", col: r[col]} for i, r in enumerate(rng.sample(rows, rng.randint(0, 2)), 1)]
        theirs += extra
        rng.shuffle(theirs)
        folder, _, base = s.input_path.rstrip("/").rpartition("/")
        stem = re.sub(r"[^a-z0-9]+", "_", base.split(".")[0].lower()).strip("_") or "records"
        source = rng.choice(["head_office", "the_partner", "the_portal", "accounts"])
        names = [f"{stem}_their_copy", f"{stem}_system_export", f"{stem}_reported", f"{stem}_from_{source}"]
        if s.domain.type_of(col) == "money":   # money is reconciled against a statement or a ledger
            names += ["statement", "bank_export", "ledger"]
        other = rng.choice([n for n in names if n != stem])
        return {"col": col, "theirs": theirs, "other_path": f"{folder}/{other}.csv", "how": rng.choice(["union", "get", "passes"]),
                "path": f"{s.out_dir}/{rng.choice(['discrepancies', 'reconciliation', 'mismatches'])}.csv"}

    def deliver(self, s, p):
        key, col, path, other = s.domain.key, p["col"], p["path"], p["other_path"]
        ours = {r[key]: r[col] for r in s.rows}
        theirs = {t[key]: t[col] for t in p["theirs"]}
        expected = []
        for k in sorted(set(ours) | set(theirs)):
            if k not in theirs:
                expected.append({key: k, "issue": "missing_in_theirs", "ours": ours[k], "theirs": ""})
            elif k not in ours:
                expected.append({key: k, "issue": "missing_in_ours", "ours": "", "theirs": theirs[k]})
            elif abs(num(ours[k]) - num(theirs[k])) > 0.005:
                expected.append({key: k, "issue": "mismatch", "ours": ours[k], "theirs": theirs[k]})
        code = [f"ours = {{{s.it}[{key!r}]: {s.it}[{col!r}] for {s.it} in {s.var}}}",
                *s.style.reading(other, _read_pairs(p.get("how", "union"), key, col), newline=True),
                *_compare_code(p.get("how", "union")),
                *s.style.write_rows(path, repr([key, "issue", "ours", "theirs"]), ["issues"])]
        checks = [exists_check(path), {"type": "csv_rows_equal", "name": "every discrepancy and nothing else", "path": path,
                                  "expected": expected, "key": key, "weight": 3, "tolerance": 0.01}]
        text = to_csv(p["theirs"], [key, col])
        return Delivered(path, checks, code, {"path": path, "other": other, "field": label(col), "key": key},
                         ["csv"], files={other: text})


def _read_pairs(how: str, key: str, col: str) -> list[str]:
    """Solution lines (inside `with ... as fh`) reading the other party's key → value."""
    if how == "passes":   # by column position, from the header
        return ["rows = list(csv.reader(fh))", f"at_key, at_value = rows[0].index({key!r}), rows[0].index({col!r})",
                "theirs = {row[at_key]: row[at_value] for row in rows[1:] if row}"]
    return [f"theirs = {{row[{key!r}]: row[{col!r}] for row in csv.DictReader(fh)}}"]


def _compare_code(how: str) -> list[str]:
    """Solution lines comparing `ours` with `theirs` into `issues`, ordered by key."""
    if how == "get":
        return ["issues = []", "for k in sorted(ours.keys() | theirs.keys()):",
                "    mine, other = ours.get(k), theirs.get(k)", "    if other is None:",
                "        issues.append([k, 'missing_in_theirs', mine, ''])", "    elif mine is None:",
                "        issues.append([k, 'missing_in_ours', '', other])",
                "    elif abs(float(mine) - float(other)) > 0.005:", "        issues.append([k, 'mismatch', mine, other])"]
    if how == "passes":   # one pass per kind of difference, then in key order
        return ["issues = [[k, 'missing_in_theirs', ours[k], ''] for k in ours if k not in theirs]",
                "issues += [[k, 'missing_in_ours', '', theirs[k]] for k in theirs if k not in ours]",
                "issues += [[k, 'mismatch', ours[k], theirs[k]] for k in ours",
                "           if k in theirs and abs(float(ours[k]) - float(theirs[k])) > 0.005]",
                "issues.sort(key=lambda issue: issue[0])"]
    return ["issues = []", "for k in sorted(set(ours) | set(theirs)):", "    if k not in theirs:",
            "        issues.append([k, 'missing_in_theirs', ours[k], ''])", "    elif k not in ours:",
            "        issues.append([k, 'missing_in_ours', '', theirs[k]])",
            "    elif abs(float(ours[k]) - float(theirs[k])) > 0.005:",
            "        issues.append([k, 'mismatch', ours[k], theirs[k]])"]


class Organise(Deliver):
    """Move the one-file-per-record input into sub-folders named after a field's value."""

    name = "organise"
    formats = ("records",)

    def plan(self, s, rng):
        if s.fmt != "records" or not s.record_files or len(s.rows) != len(s.record_files):
            return None   # every record file is moved, each by its own row
        groups = [c for c in s.categories(present=2, fresh=False) if s.domain.type_of(c)
                  and all(re.fullmatch(r"[A-Za-z0-9 ._-]+", r[c]) and _slug(r[c]) for r in s.rows)
                  and len({_slug(r[c]) for r in s.rows}) == len({r[c] for r in s.rows})]
        if not groups:
            return None
        return {"group": rng.choice(groups)}

    def deliver(self, s, p):
        g, base = p["group"], s.input_path
        files = s.record_files
        checks: list[dict[str, Any]] = [{"type": "files_count", "name": "nothing left loose in the folder",
                                         "pattern": f"{base}*.*", "max": 0, "kind": "file", "weight": 1}]
        by_group: dict[str, int] = {}
        moved = []
        for path, row in files:
            dest = f"{base}{_slug(row[g])}/{path.rsplit('/', 1)[1]}"
            by_group[_slug(row[g])] = by_group.get(_slug(row[g]), 0) + 1
            moved.append((dest, s.record_text[path]))
        for value, n in sorted(by_group.items()):
            checks.append({"type": "files_count", "name": f"{value}: {n} file(s)", "pattern": f"{base}{value}/*",
                           "min": n, "max": n, "kind": "file", "weight": 1})
        for dest, text in moved:
            checks.append({"type": "text_contains", "name": f"{dest} moved whole", "path": dest,
                           "contains": [ln for ln in text.splitlines() if ln.strip()], "gate": True, "weight": 0})
        code = [f"for {s.it}, name in zip({s.var}, sorted(glob.glob({base + '*.*'!r}))):",
                f"    target = os.path.join({base!r}, re.sub(r'[^a-z0-9]+', '-', {s.it}[{g!r}].lower()).strip('-'))",
                "    os.makedirs(target, exist_ok=True)", "    shutil.move(name, os.path.join(target, os.path.basename(name)))"]
        folders = [f"{base}{v}/" for v in sorted(by_group)]
        listed = ", ".join(folders[:-1]) + " and " + folders[-1]
        return Delivered(base, checks, code, {"folder": base, "group": label(g), "folders": listed,
                                              "example": moved[0][0]}, ["shell-scripting"], moves_input=True)


class DraftEmail(Deliver):
    name = "draft_email"

    def plan(self, s, rng):
        if not s.rows:
            return None
        name = people(rng, 1)[0]
        org = rng.choice(["northwind", "brightside", "harbourworks", "cedarline", "meridian", "fernhill", "quayside"])
        email = f"{name.split()[0].lower()}.{name.split()[1].lower()}@{org}.example"
        numbers = [c for c in s.columns if s.types.get(c) in ("money", "hours")]
        col = rng.choice(numbers) if numbers else None
        stem = rng.choice(["email_draft", "message_to_" + name.split()[0].lower(), "draft", "note_for_"
                           + name.split()[0].lower()])
        subject = rng.choice([f"{s.domain.noun[1].capitalize()} update", f"The {s.domain.noun[1]} you asked about",
                              f"Quick numbers on {s.domain.noun[1]}"])
        return {"name": name, "email": email, "col": col, "path": f"{s.out_dir}/{stem}.txt", "subject": subject}

    def deliver(self, s, p):
        count = len(s.rows)
        facts = [str(count)]
        what = f"number of {s.domain.noun[1]} ({count} here)"
        code = [f"how_many = len({s.var})"]
        body = "f'There are {how_many} " + s.domain.noun[1] + ".'"
        if p["col"]:
            kind = s.types[p["col"]]
            facts.append(fmt(sum(num(r[p["col"]]) for r in s.rows), kind))
            what = f"number of {s.domain.noun[1]} and their total {label(p['col'])}"
            summed = f"sum(float({s.it}[{p['col']!r}]) for {s.it} in {s.var})"
            code.append(f"total = {form_code(kind, summed)}")
            body = "f'There are {how_many} " + s.domain.noun[1] + f", {label(p['col'])} {{total}} in all.'"
        head = f"To: {p['name']} <{p['email']}>\\nSubject: {p['subject']}\\n\\n"
        code += s.style.write_text(p["path"], f"'{head}' + {body} + '\\n'")
        checks = [exists_check(p["path"]), {"type": "text_contains", "name": "addressed right, with the numbers",
                                       "path": p["path"], "contains": [f"To: {p['name']} <{p['email']}>",
                                                                       f"Subject: {p['subject']}"] + facts,
                                       "weight": 2}]
        return Delivered(p["path"], checks, code, {"path": p["path"], "to": f"{p['name']} <{p['email']}>",
                                                   "what": what, "subject": p["subject"]}, ["email-draft"])


DELIVERABLES: dict[str, Deliver] = {d.name: d for d in (
    WriteRows(), WriteJson(), MarkdownOut(), GroupAggregate(), GroupJson(), ShareOfTotal(), Pivot(), TotalsJson(),
    ReportMd(), SplitByGroup(), Reconcile(), Organise())}
MESSAGE = DraftEmail()
