"""The reconciliation deliverable: the rows compared with another party's copy of one number field
(written as a second input), every key missing on either side or with a different amount."""

from __future__ import annotations

import re

from .data import to_csv
from .state import fmt, label, num
from .delivered import Deliver, Delivered, Figure, exists_check


class Reconcile(Deliver):
    """Compare the rows with another party's copy: missing on either side, or a different amount."""

    name = "reconcile"

    def plan(self, s, rng):
        numbers = [c for c in s.numbers(fresh=False, does="reconcile") if s.domain.type_of(c)]
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
                t[col] = fmt(
                    num(r[col]) + rng.choice([-1, 1]) * rng.choice([1, 5, 10, 0.5]) * (2 if num(r[col]) > 50 else 1),
                    s.types[col],
                )
            theirs.append(t)
        extra = [
            {s.domain.key: f"{keys[0]}-X{i}", col: r[col]} for i, r in enumerate(rng.sample(rows, rng.randint(0, 2)), 1)
        ]
        theirs += extra
        rng.shuffle(theirs)
        folder, _, base = s.input_path.rstrip("/").rpartition("/")
        stem = re.sub(r"[^a-z0-9]+", "_", base.split(".")[0].lower()).strip("_") or "records"
        stem = re.sub(r"_(?:part)?(?:1|2|a|b|old|new)$", "", stem)  # the other copy is of all of it, not of one part
        # the other copy comes from a system the domain's records live in, not another trade's
        sources = [
            re.sub(r"[^a-z0-9]+", "_", re.sub(r"^(?:the|my) ", "", x.lower())).strip("_") for x in s.domain.systems
        ]
        names = [f"{stem}_their_copy", f"{stem}_system_export", f"{stem}_reported"]
        names += [f"{stem}_from_{x}" for x in sources if x]
        if s.domain.type_of(col) == "money":  # money is reconciled against a statement or a ledger
            names += ["statement", "bank_export", "ledger", f"{stem}_from_accounts"]
        other = rng.choice([n for n in names if n != stem])
        return {
            "col": col,
            "theirs": theirs,
            "other_path": f"{folder}/{other}.csv",
            "how": rng.choice(["union", "get", "passes"]),
            "path": f"{s.out_dir}/{rng.choice(['discrepancies', 'reconciliation', 'mismatches'])}.csv",
        }

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
        code = [
            f"ours = {{{s.it}[{key!r}]: {s.it}[{col!r}] for {s.it} in {s.var}}}",
            *s.style.reading(other, _read_pairs(p.get("how", "union"), key, col), newline=True),
            *_compare_code(p.get("how", "union")),
            *s.style.write_rows(path, repr([key, "issue", "ours", "theirs"]), ["issues"]),
        ]
        checks = [
            exists_check(path),
            {
                "type": "csv_rows_equal",
                "name": "every discrepancy and nothing else",
                "path": path,
                "expected": expected,
                "key": key,
                "weight": 3,
                "tolerance": 0.01,
            },
        ]
        text = to_csv(p["theirs"], [key, col])
        figure = Figure(
            "the discrepancies",
            {e[key]: (e["issue"], e["ours"], e["theirs"]) for e in expected},
            ("issue", "ours", "theirs"),
        )
        return Delivered(
            path,
            checks,
            code,
            {"path": path, "other": other, "field": label(col), "key": key},
            ["csv"],
            files={other: text},
            figures=[figure],
        )


def _read_pairs(how: str, key: str, col: str) -> list[str]:
    """Solution lines (inside `with ... as fh`) reading the other party's key → value."""
    if how == "passes":  # by column position, from the header
        return [
            "rows = list(csv.reader(fh))",
            f"at_key, at_value = rows[0].index({key!r}), rows[0].index({col!r})",
            "theirs = {row[at_key]: row[at_value] for row in rows[1:] if row}",
        ]
    return [f"theirs = {{row[{key!r}]: row[{col!r}] for row in csv.DictReader(fh)}}"]


def _compare_code(how: str) -> list[str]:
    """Solution lines comparing `ours` with `theirs` into `issues`, ordered by key."""
    if how == "get":
        return [
            "issues = []",
            "for k in sorted(ours.keys() | theirs.keys()):",
            "    mine, other = ours.get(k), theirs.get(k)",
            "    if other is None:",
            "        issues.append([k, 'missing_in_theirs', mine, ''])",
            "    elif mine is None:",
            "        issues.append([k, 'missing_in_ours', '', other])",
            "    elif abs(float(mine) - float(other)) > 0.005:",
            "        issues.append([k, 'mismatch', mine, other])",
        ]
    if how == "passes":  # one pass per kind of difference, then in key order
        return [
            "issues = [[k, 'missing_in_theirs', ours[k], ''] for k in ours if k not in theirs]",
            "issues += [[k, 'missing_in_ours', '', theirs[k]] for k in theirs if k not in ours]",
            "issues += [[k, 'mismatch', ours[k], theirs[k]] for k in ours",
            "           if k in theirs and abs(float(ours[k]) - float(theirs[k])) > 0.005]",
            "issues.sort(key=lambda issue: issue[0])",
        ]
    return [
        "issues = []",
        "for k in sorted(set(ours) | set(theirs)):",
        "    if k not in theirs:",
        "        issues.append([k, 'missing_in_theirs', ours[k], ''])",
        "    elif k not in ours:",
        "        issues.append([k, 'missing_in_ours', '', theirs[k]])",
        "    elif abs(float(ours[k]) - float(theirs[k])) > 0.005:",
        "        issues.append([k, 'mismatch', ours[k], theirs[k]])",
    ]
