"""`csv_table`: generic CSV from declared columns; the column engine is shared with `json_records`."""

from __future__ import annotations

import csv
import io
import random
from datetime import timedelta
from typing import Any

from ..errors import ClawgymError
from ..registry import register
from . import vocab
from .base import Generated, apply_defaults
from .common import (
    DATE_PATTERN,
    People,
    company_domain,
    email_for,
    iso,
    make_schema,
    p,
    p_count,
    parse_date,
    phone,
    product_sku,
)

PERSON_KINDS = {"name", "first_name", "last_name", "email", "phone", "job_title", "department"}
PRODUCT_KINDS = {"product", "product_category", "price", "sku"}
COLUMN_KINDS = sorted(
    PERSON_KINDS
    | PRODUCT_KINDS
    | {"id", "int", "float", "choice", "date", "datetime", "bool", "city", "country", "company"}
)

COLUMN_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "kind"],
    "description": "One column: `name` is the header, `kind` how values are drawn. Person columns in "
    "a row describe the same person (email matches name, at the row's company if "
    "there is a company column); product columns describe the same product.",
    "properties": {
        "name": p("string", "Column header / record key.", minLength=1),
        "kind": p("string", "Value kind.", enum=COLUMN_KINDS),
        "min": p("number", "int/float: lowest value (inclusive).", 0),
        "max": p("number", "int/float: highest value (inclusive).", 100),
        "decimals": p("integer", "float: digits after the point.", 2, minimum=0, maximum=6),
        "choices": {
            "type": "array",
            "minItems": 1,
            "items": {"type": ["string", "number", "boolean"]},
            "description": "choice: the values to pick from.",
        },
        "weights": {
            "type": "array",
            "items": {"type": "number", "minimum": 0},
            "description": "choice: relative weight of each choice (same length as choices).",
        },
        "prefix": p("string", "id: text before the number, e.g. `EMP-`.", ""),
        "start": p("integer", "id: first number.", 1),
        "step": p("integer", "id: increment.", 1, minimum=1),
        "width": p("integer", "id: zero-pad the number to this many digits (0: no padding).", 0, minimum=0, maximum=12),
        "start_date": p("string", "date/datetime: earliest date (YYYY-MM-DD).", "2026-01-01", pattern=DATE_PATTERN),
        "end_date": p(
            "string", "date/datetime: latest date (YYYY-MM-DD), included.", "2026-03-31", pattern=DATE_PATTERN
        ),
        "p": p("number", "bool: probability of true.", 0.5, minimum=0, maximum=1),
        "null_rate": p(
            "number", "Share of rows where the value is missing (empty cell / null).", 0, minimum=0, maximum=1
        ),
    },
}


class RowMaker:
    """Draws rows for a list of column specs (missing column defaults are filled in)."""

    def __init__(self, rng: random.Random, columns: list[dict]):
        self.rng = rng
        self.columns = columns = [apply_defaults(COLUMN_SCHEMA, c) for c in columns]
        self.people = People(rng)
        kinds = {c["kind"] for c in columns}
        self.need_person = bool(kinds & PERSON_KINDS)
        self.need_product = bool(kinds & PRODUCT_KINDS)
        self.need_company = "company" in kinds
        self.counters = {c["name"]: int(c["start"]) for c in columns if c["kind"] == "id"}
        for c in columns:
            if c["kind"] in ("date", "datetime"):
                c["_start"] = parse_date(c["start_date"], f"{c['name']}.start_date")
                c["_span"] = (parse_date(c["end_date"], f"{c['name']}.end_date") - c["_start"]).days + 1
                if c["_span"] < 1:
                    raise ClawgymError(f"column {c['name']!r}: end_date is before start_date")
            if c["kind"] == "choice":
                if not c.get("choices"):
                    raise ClawgymError(f"column {c['name']!r}: kind choice needs `choices`")
                if c.get("weights") is not None and len(c["weights"]) != len(c["choices"]):
                    raise ClawgymError(f"column {c['name']!r}: weights and choices differ in length")
            if c["kind"] in ("int", "float") and c["min"] > c["max"]:
                raise ClawgymError(f"column {c['name']!r}: min is greater than max")

    def row(self) -> dict[str, Any]:
        rng = self.rng
        ctx: dict[str, Any] = {}
        if self.need_company:
            ctx["company"] = rng.choice(vocab.COMPANIES)
        if self.need_person:
            ctx["first"], ctx["last"] = self.people.one()
        if self.need_product:
            ctx["product"] = rng.randrange(len(vocab.PRODUCTS))
        out = {}
        for col in self.columns:
            value = self.value(col, ctx)
            if col["null_rate"] and rng.random() < col["null_rate"]:
                value = None
            out[col["name"]] = value
        return out

    def value(self, col: dict, ctx: dict) -> Any:
        rng, kind = self.rng, col["kind"]
        if kind == "id":
            n = self.counters[col["name"]]
            self.counters[col["name"]] = n + int(col["step"])
            return f"{col['prefix']}{n:0{int(col['width'])}d}" if col["width"] else f"{col['prefix']}{n}"
        if kind == "int":
            return rng.randint(int(col["min"]), int(col["max"]))
        if kind == "float":
            scale = 10 ** int(col["decimals"])
            return round(
                rng.randint(round(col["min"] * scale), round(col["max"] * scale)) / scale, int(col["decimals"])
            )
        if kind == "choice":
            w = col.get("weights")
            return rng.choices(col["choices"], weights=w)[0] if w else rng.choice(col["choices"])
        if kind in ("date", "datetime"):
            d = col["_start"] + timedelta(days=rng.randrange(col["_span"]))
            if kind == "date":
                return iso(d)
            return f"{iso(d)}T{rng.randint(7, 20):02d}:{rng.randrange(0, 60, 5):02d}:00"
        if kind == "bool":
            return rng.random() < col["p"]
        if kind in PERSON_KINDS:
            first, last = ctx["first"], ctx["last"]
            if kind == "name":
                return f"{first} {last}"
            if kind == "first_name":
                return first
            if kind == "last_name":
                return last
            if kind == "email":
                if "email" not in ctx:
                    domain = company_domain(ctx["company"]) if "company" in ctx else None
                    ctx["email"] = email_for(rng, first, last, domain)
                return ctx["email"]
            if kind == "phone":
                return phone(rng)
            return rng.choice(vocab.JOB_TITLES if kind == "job_title" else vocab.DEPARTMENTS)
        if kind in PRODUCT_KINDS:
            idx = ctx["product"]
            name, category, price = vocab.PRODUCTS[idx]
            return {"product": name, "product_category": category, "price": price, "sku": product_sku(idx)}[kind]
        if kind == "company":
            return ctx["company"]
        return rng.choice(vocab.CITIES if kind == "city" else vocab.COUNTRIES)


def check_columns(columns: list[dict], what: str) -> None:
    names = [c["name"] for c in columns]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ClawgymError(f"{what}: duplicate column name(s) {', '.join(dupes)}")


def cell(value: Any, col: dict | None = None) -> str:
    """CSV text of a value; floats keep the column's fixed number of decimals."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and col is not None and col["kind"] in ("float", "price"):
        return f"{value:.{int(col['decimals']) if col['kind'] == 'float' else 2}f}"
    return str(value)


def sort_rows(rows: list[dict], key: str | None, descending: bool) -> list[dict]:
    if not key:
        return rows
    if rows and key not in rows[0]:
        raise ClawgymError(f"sort_by: no column named {key!r}")
    present = [r for r in rows if r[key] is not None]
    missing = [r for r in rows if r[key] is None]
    return sorted(present, key=lambda r: r[key], reverse=descending) + missing


DEFAULT_COLUMNS = [
    {"name": "id", "kind": "id", "prefix": "U-", "start": 1001},
    {"name": "name", "kind": "name"},
    {"name": "email", "kind": "email"},
    {"name": "city", "kind": "city"},
    {"name": "signup_date", "kind": "date"},
    {"name": "plan", "kind": "choice", "choices": ["free", "pro", "team"], "weights": [5, 3, 1]},
]


@register("generator", "csv_table")
class CsvTable:
    """Generic CSV table from a declared column list (inventories, grades, signups, ...).

    data: list of row dicts keyed by column name, in file order: int -> int, float -> float rounded
    to `decimals`, bool -> bool (written true/false), missing -> None (empty cell), else str.
    """

    name = "csv_table"
    schema = make_schema(
        name,
        __doc__.split("\n")[0],
        {
            "rows": p_count("Number of data rows.", 20, minimum=1),
            "columns": {
                "type": "array",
                "minItems": 1,
                "items": COLUMN_SCHEMA,
                "default": DEFAULT_COLUMNS,
                "description": "Column specs, in order (default: a small user sign-up table).",
            },
            "delimiter": p("string", "Field separator.", ",", enum=[",", ";", "\t", "|"]),
            "header": p("boolean", "Write the header row.", True),
            "sort_by": p(["string", "null"], "Sort rows by this column (missing values last).", None),
            "descending": p("boolean", "Sort descending.", False),
        },
    )

    @staticmethod
    def generate(rng: random.Random, params: dict) -> Generated:
        check_columns(params["columns"], "csv_table")
        maker = RowMaker(rng, params["columns"])
        columns = maker.columns
        rows = sort_rows([maker.row() for _ in range(int(params["rows"]))], params["sort_by"], params["descending"])
        buf = io.StringIO()
        writer = csv.writer(buf, delimiter=params["delimiter"], lineterminator="\n")
        if params["header"]:
            writer.writerow([c["name"] for c in columns])
        for row in rows:
            writer.writerow([cell(row[c["name"]], c) for c in columns])
        return Generated(content=buf.getvalue().encode(), data=rows)
