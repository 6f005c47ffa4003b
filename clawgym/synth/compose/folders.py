"""Deliverables that lay files out in folders: one CSV per value of a field, or the one-file-per-record
input moved into sub-folders named after a field's value."""

from __future__ import annotations

import re
from typing import Any

from .data import Row
from .state import label
from .delivered import Deliver, Delivered, Figure, key_set_gate, ordered_by, pick_columns, sort_code, tolerance_for


class SplitByGroup(Deliver):
    """One CSV per group value in a folder (files organised by a field)."""

    name = "split_by_group"

    def plan(self, s, rng):
        groups = [
            c
            for c in s.categories(present=2, fresh=False)
            if len({r[c] for r in s.rows}) <= 6
            and all(re.fullmatch(r"[A-Za-z0-9 ._-]+", r[c]) and _slug(r[c]) for r in s.rows)
            and len({_slug(r[c]) for r in s.rows}) == len({r[c] for r in s.rows})
        ]  # one file per value
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
        checks: list[dict[str, Any]] = [
            {
                "type": "files_count",
                "name": f"one file per {s.noun(g)}",
                "pattern": f"{folder}/*.csv",
                "min": len(buckets),
                "max": len(buckets),
                "gate": True,  # the layout asked for: worth nothing by itself
                "weight": 0,
            }
        ]
        figures = []
        rest = [c for c in cols if c != s.domain.key]
        for value, rows in sorted(buckets.items()):
            path = f"{folder}/{_slug(value)}.csv"
            keys = [r[s.domain.key] for r in rows]
            those = f"{s.domain.noun[1]} {s.which(g, value)}"  # "journeys that have not been claimed yet"
            checks.append(key_set_gate(path, s.domain.key, keys, those))
            checks.append(
                {
                    "type": "csv_rows_equal",
                    "name": f"the {those}",
                    "path": path,
                    "expected": [{c: r[c] for c in cols} for r in rows],
                    "key": s.domain.key,
                    "weight": 1,
                    **tolerance_for([s.types.get(c, "") for c in cols]),
                }
            )
            figures.append(
                Figure(
                    f"the {those}",
                    {r[s.domain.key]: tuple(r[c] for c in rest) for r in rows},
                    tuple(rest),
                    gated=True,
                    poured=True,
                    records=True,
                )
            )
        code = sort_code(s) + [
            s.style.mkdir(folder),
            f"for value in sorted({{{s.it}[{g!r}] for {s.it} in {s.var}}}):",
            "    name = re.sub(r'[^a-z0-9]+', '-', value.lower()).strip('-')",
            *s.style.write_dicts(
                f"{folder!r} + '/' + name + '.csv'",
                cols,
                f"[{s.it} for {s.it} in {s.var} if {s.it}[{g!r}] == value]",
                indent="    ",
            ),
        ]
        names = [f"{folder}/{_slug(v)}.csv" for v in sorted(buckets)]
        listed = ", ".join(names[:-1]) + " and " + names[-1]
        return Delivered(
            folder + "/",
            checks,
            code,
            {
                "folder": folder + "/",
                "group": label(g),
                "files": listed,
                "columns": ", ".join(cols),
                "n": str(len(names)),
            },
            ["csv"],
            figures=figures,
        )


def _slug(value: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", value.lower()).strip("-")


class Organise(Deliver):
    """Move the one-file-per-record input into sub-folders named after a field's value."""

    name = "organise"
    formats = ("records",)

    def plan(self, s, rng):
        if s.fmt != "records" or not s.record_files or len(s.rows) != len(s.record_files):
            return None  # every record file is moved, each by its own row
        groups = [
            c
            for c in s.categories(present=2, fresh=False)
            if s.domain.type_of(c)
            and all(re.fullmatch(r"[A-Za-z0-9 ._-]+", r[c]) and _slug(r[c]) for r in s.rows)
            and len({_slug(r[c]) for r in s.rows}) == len({r[c] for r in s.rows})
        ]
        if not groups:
            return None
        return {"group": rng.choice(groups)}

    def deliver(self, s, p):
        g, base = p["group"], s.input_path
        files = s.record_files
        checks: list[dict[str, Any]] = [
            {
                "type": "files_count",
                "name": "nothing left loose in the folder",
                "pattern": f"{base}*.*",
                "max": 0,
                "kind": "file",
                "weight": 1,
            }
        ]
        by_group: dict[str, int] = {}
        moved = []
        for path, row in files:
            dest = f"{base}{_slug(row[g])}/{path.rsplit('/', 1)[1]}"
            by_group[_slug(row[g])] = by_group.get(_slug(row[g]), 0) + 1
            moved.append((dest, s.record_text[path]))
        for value, n in sorted(by_group.items()):
            checks.append(
                {
                    "type": "files_count",
                    "name": f"{value}: {n} file(s)",
                    "pattern": f"{base}{value}/*",
                    "min": n,
                    "max": n,
                    "kind": "file",
                    "weight": 1,
                }
            )
        for dest, text in moved:
            checks.append(
                {
                    "type": "text_contains",
                    "name": f"{dest} moved whole",
                    "path": dest,
                    "contains": [ln for ln in text.splitlines() if ln.strip()],
                    "gate": True,
                    "weight": 0,
                }
            )
        code = [
            f"for {s.it}, name in zip({s.var}, sorted(glob.glob({base + '*.*'!r}))):",
            f"    target = os.path.join({base!r}, re.sub(r'[^a-z0-9]+', '-', {s.it}[{g!r}].lower()).strip('-'))",
            "    os.makedirs(target, exist_ok=True)",
            "    shutil.move(name, os.path.join(target, os.path.basename(name)))",
        ]
        folders = [f"{base}{v}/" for v in sorted(by_group)]
        listed = ", ".join(folders[:-1]) + " and " + folders[-1]
        return Delivered(
            base,
            checks,
            code,
            {"folder": base, "group": label(g), "folders": listed, "example": moved[0][0]},
            ["shell-scripting"],
            moves_input=True,
        )
