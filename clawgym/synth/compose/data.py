"""Seeded rows for a domain, from its typed fields (every value a string, as a CSV holds it)."""

from __future__ import annotations

import datetime as dt
import random
import string

from ...generators.vocab import FIRST_NAMES, LAST_NAMES, PERSONAL_DOMAINS
from .model import Domain, FieldSpec

Row = dict[str, str]


def people(rng: random.Random, n: int) -> list[str]:
    """`n` distinct full names."""
    seen: list[str] = []
    while len(seen) < n:
        name = f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
        if name not in seen:
            seen.append(name)
    return seen


def _email(name: str, company: str | None, personal: bool, rng: random.Random) -> str:
    first, last = name.lower().split(" ", 1)
    local = rng.choice([f"{first}.{last}", f"{first[0]}{last}", f"{first}"]).replace(" ", "")
    if personal or not company:
        return f"{local}@{rng.choice(PERSONAL_DOMAINS)}"
    slug = "".join(ch for ch in company.lower() if ch.isalnum())
    return f"{local}@{slug}.example"


def _value(f: FieldSpec, i: int, rng: random.Random, pools: dict[str, list[str]], row: Row) -> str:
    o = f.options
    if f.type == "id":
        return f"{o.get('prefix', '')}{int(o.get('start', 1)) + i}"
    if f.type == "code":
        return o.get("prefix", "") + "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(4))
    if f.type == "person":
        return rng.choice(pools[f.name])
    if f.type == "email":
        return _email(row[o["of"]], row.get(o.get("company", "")), bool(o.get("personal")), rng)
    if f.type == "date":
        start = dt.date.fromisoformat(str(o.get("start", "2026-01-01")))
        return (start + dt.timedelta(days=rng.randrange(int(o.get("days", 30))))).isoformat()
    if f.type in ("choice", "status", "text"):
        return str(rng.choice(list(o["values"])))
    if f.type == "money":
        return f"{rng.uniform(float(o.get('min', 1)), float(o.get('max', 100))):.2f}"
    if f.type == "int":
        return str(rng.randint(int(o.get("min", 0)), int(o.get("max", 100))))
    if f.type == "hours":
        steps = int((float(o.get("max", 8)) - float(o.get("min", 0.5))) * 2)
        return f"{float(o.get('min', 0.5)) + 0.5 * rng.randint(0, max(steps, 0)):.1f}"
    raise ValueError(f"unknown field type {f.type}")


def rows_for(
    domain: Domain, rng: random.Random, n: int | None = None, fixed: dict[str, list[str]] | None = None
) -> list[Row]:
    """`n` rows (default: from the domain's range). `fixed` gives, per field, the values it must take
    one by one (a related domain's key column matching what the main domain refers to)."""
    fixed = fixed or {}
    if n is None:
        n = len(next(iter(fixed.values()))) if fixed else rng.randint(*domain.rows)
    pools: dict[str, list[str]] = {}
    for f in domain.fields:
        if f.type == "person":
            size = n if f.options.get("unique") else int(f.options.get("pool", 6))
            pools[f.name] = people(rng, max(size, 1))
    uniques = {
        f.name: rng.sample(list(f.options["values"]), len(f.options["values"]))
        for f in domain.fields
        if f.options.get("unique") and f.type in ("choice", "text")
    }
    out: list[Row] = []
    for i in range(n):
        row: Row = {}
        for f in domain.fields:
            if f.name in fixed:
                row[f.name] = fixed[f.name][i]
            elif f.name in uniques:
                row[f.name] = uniques[f.name][i % len(uniques[f.name])]
            elif f.type == "person" and f.options.get("unique"):
                row[f.name] = pools[f.name][i]
            else:
                row[f.name] = _value(f, i, rng, pools, row)
        out.append(row)
    return out


def to_csv(rows: list[Row], columns: list[str]) -> str:
    """The CSV text Python's csv module writes for these rows (minimal quoting, \\n line ends)."""
    import csv
    import io

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for r in rows:
        writer.writerow([r.get(c, "") for c in columns])
    return buf.getvalue()
