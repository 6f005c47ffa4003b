"""`csv_ledger`: bank transactions, expense reports or invoices as CSV."""

from __future__ import annotations

import csv
import io
import random
from datetime import date, timedelta
from typing import Any

from ..errors import ClawgymError
from ..registry import register
from . import vocab
from .base import Generated
from .common import (
    People,
    iso,
    make_schema,
    money,
    p,
    p_count,
    p_date,
    p_strings,
    parse_date,
    rand_cents,
    rand_date,
    weighted,
)

KINDS: dict[str, tuple[list[str], list[str]]] = {
    # kind: (available columns, default columns)
    "transactions": (
        [
            "id",
            "date",
            "vendor",
            "description",
            "category",
            "amount",
            "currency",
            "account",
            "payment_method",
            "status",
        ],
        ["date", "vendor", "description", "category", "amount", "currency"],
    ),
    "expenses": (
        [
            "id",
            "date",
            "employee",
            "department",
            "category",
            "vendor",
            "description",
            "amount",
            "currency",
            "payment_method",
            "receipt",
            "status",
        ],
        ["id", "date", "employee", "category", "vendor", "description", "amount", "currency", "receipt"],
    ),
    "invoices": (
        ["id", "client", "description", "issued", "due", "amount", "currency", "status", "paid_date"],
        ["id", "client", "issued", "due", "amount", "currency", "status"],
    ),
}
ALL_COLUMNS = sorted({c for avail, _ in KINDS.values() for c in avail})
DEFAULT_CATEGORIES = {
    "transactions": ["groceries", "dining", "rent", "utilities", "transport", "subscriptions", "shopping", "travel"],
    "expenses": ["travel", "lodging", "meals", "transport", "office", "software"],
    "invoices": [],
}
INVOICE_SERVICES = (
    "Consulting services",
    "Website maintenance",
    "Design retainer",
    "Catering",
    "Equipment rental",
    "Software development",
    "Photography",
    "Translation services",
    "Bookkeeping",
    "Event staffing",
)
LIST_PRICES = {
    x.split("=")[0].strip(): round(float(x.split("=")[1].split("/")[0]) * 100)
    for *_, spec in vocab.CATEGORY_PROFILES.values()
    for x in spec.split("|")
    if "=" in x
}
METHODS = {"rent": "bank transfer", "subscriptions": "card", "utilities": "direct debit", "insurance": "direct debit"}


@register("generator", "csv_ledger")
class CsvLedger:
    """Financial CSV: `transactions` (bank export), `expenses` (expense report) or `invoices`.

    data: list of row dicts keyed by column, in file order; `amount` is a float with 2 decimals,
    dates are YYYY-MM-DD strings, an empty cell is None, everything else a string.
    Invoices: status is `paid` (paid_date set), else `overdue` if due < as_of, else `unpaid`;
    no unpaid invoice falls due exactly on `as_of`, so `<` and `<=` agree.
    """

    name = "csv_ledger"
    schema = make_schema(
        name,
        __doc__.split("\n")[0],
        {
            "kind": p("string", "What the ledger holds.", "transactions", enum=list(KINDS)),
            "rows": p_count("Number of data rows.", 20, minimum=1),
            "start_date": p_date("First day of the period (YYYY-MM-DD).", "2026-03-01"),
            "days": p_count(
                "Length of the period in days; dates fall in [start_date, start_date+days-1].",
                30,
                minimum=1,
                maximum=3660,
            ),
            "currency": p("string", "Currency code written in the `currency` column.", "USD", pattern="^[A-Z]{3}$"),
            "categories": p_strings(
                "Categories to draw from (each appears at least once when rows allow). "
                "Null: a sensible set for the kind. Unknown names get generic vendors.",
                None,
            ),
            "columns": {
                "type": ["array", "null"],
                "default": None,
                "uniqueItems": True,
                "minItems": 1,
                "items": {"type": "string", "enum": ALL_COLUMNS},
                "description": "Columns and their order (must be valid for the kind). Null: the kind's defaults.",
            },
            "include_status": p(
                ["boolean", "null"],
                "Add the `status` column to the default columns "
                "(null: only for invoices). Ignored when `columns` is given.",
                None,
            ),
            "as_of": p_date("Invoices: the day status is judged on. Null: start_date + days.", None),
            "paid_ratio": p("number", "Invoices: share of invoices that are paid.", 0.5, minimum=0, maximum=1),
            "employees": p_count("Expenses: number of distinct employees.", 4, minimum=1, maximum=50),
        },
    )

    @staticmethod
    def generate(rng: random.Random, params: dict) -> Generated:
        kind = params["kind"]
        avail, default_cols = KINDS[kind]
        columns = list(params["columns"] or default_cols)
        bad = [c for c in columns if c not in avail]
        if bad:
            raise ClawgymError(
                f"csv_ledger: column(s) {', '.join(bad)} not available for kind {kind!r}",
                hint=f"choose from {', '.join(avail)}",
            )
        if not params["columns"]:
            status = params["include_status"]
            if status is None:
                status = kind == "invoices"
            if status and "status" not in columns:
                columns.append("status")
            elif not status and "status" in columns:
                columns.remove("status")
        start = parse_date(params["start_date"], "start_date")
        days = int(params["days"])
        n = int(params["rows"])
        if kind == "invoices":
            rows = _invoices(rng, params, start, days, n)
        else:
            rows = _spending(rng, params, kind, start, days, n)
        data = [{c: row.get(c) for c in columns} for row in rows]
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(columns)
        for row in data:
            writer.writerow(["" if row[c] is None else (f"{row[c]:.2f}" if c == "amount" else row[c]) for c in columns])
        return Generated(content=buf.getvalue().encode(), data=data)


def _profile(category: str) -> tuple[float, float, float, bool, list[tuple[str, str]]]:
    weight, low, high, fixed, spec = vocab.CATEGORY_PROFILES.get(category, vocab.DEFAULT_PROFILE)
    pairs = (
        [(x.split("/", 1)[0].split("=")[0].strip(), x.split("/", 1)[1].strip()) for x in spec.split("|")]
        if spec
        else []
    )
    return weight, low, high, fixed, pairs


def _spending(rng: random.Random, params: dict, kind: str, start: date, days: int, n: int) -> list[dict]:
    categories = list(params["categories"] or DEFAULT_CATEGORIES[kind])
    profiles = {c: _profile(c) for c in categories}
    for c, (w, lo, hi, fx, pairs) in profiles.items():
        if not pairs:
            vendors = rng.sample(vocab.COMPANIES, 3)
            profiles[c] = (w, lo, hi, fx, [(v, c.replace("_", " ").capitalize()) for v in vendors])
    picks = list(categories[:n])
    rng.shuffle(picks)
    weights = [profiles[c][0] for c in categories]
    picks += [weighted(rng, categories, weights) for _ in range(n - len(picks))]
    fixed_amounts = dict(LIST_PRICES)
    accounts = [f"Checking {rng.randint(1000, 9999)}", f"Visa {rng.randint(1000, 9999)}"]
    people = [" ".join(x) for x in People(rng).many(int(params["employees"]))]
    depts = {e: rng.choice(vocab.DEPARTMENTS) for e in people}
    end = start + timedelta(days=days - 1)
    rows = []
    if "rent" in profiles:  # one landlord
        w, lo, hi, fx, pairs = profiles["rent"]
        profiles["rent"] = (w, lo, hi, fx, [rng.choice(pairs)])
    flexible = [c for c in categories if not profiles[c][3]]
    used: set[tuple[str, int]] = set()  # (vendor, month) of recurring charges: at most one each
    for cat in picks:
        day = rand_date(rng, start, days)
        _, low, high, fixed, pairs = profiles[cat]
        if fixed:
            free = [x for x in pairs if (x[0], day.month) not in used]
            if not free and flexible:
                cat = rng.choice(flexible)
                _, low, high, fixed, pairs = profiles[cat]
            else:
                pairs = free or pairs
        vendor, memo = rng.choice(pairs)
        if cat == "rent":
            day = day.replace(day=1) if day.replace(day=1) >= start else start
        if fixed:
            used.add((vendor, day.month))
            if vendor not in fixed_amounts:
                cents = rand_cents(rng, low, high)
                fixed_amounts[vendor] = cents - cents % 2500 if cat == "rent" else cents - cents % 100 + 99
            cents = fixed_amounts[vendor]
        else:
            cents = rand_cents(rng, low, high)
        memo = memo.format(city=rng.choice(vocab.CITIES), month=vocab.MONTHS[day.month - 1])
        row: dict[str, Any] = {
            "date": iso(day),
            "vendor": vendor,
            "description": memo,
            "category": cat,
            "amount": money(cents),
            "currency": params["currency"],
        }
        method = METHODS.get(cat) or rng.choice(("card", "card", "card", "mobile pay"))
        if kind == "transactions":
            row["account"] = accounts[0] if method != "card" else rng.choice(accounts)
            row["payment_method"] = method
            recent = (end - day).days < 4
            row["status"] = "pending" if recent and rng.random() < 0.5 else "cleared"
        else:
            emp = rng.choice(people)
            row.update(
                employee=emp,
                department=depts[emp],
                payment_method=rng.choice(("corporate card", "corporate card", "personal card", "cash")),
                receipt="yes" if rng.random() < 0.85 else "no",
                status=weighted(rng, ("approved", "pending", "rejected"), (6, 3, 1)),
            )
        rows.append(row)
    rows.sort(key=lambda r: r["date"])
    prefix, first = ("TXN", rng.randint(10000, 80000)) if kind == "transactions" else ("EXP", rng.randint(1000, 8000))
    for i, row in enumerate(rows):
        row["id"] = f"{prefix}-{first + i}"
    return rows


def _invoices(rng: random.Random, params: dict, start: date, days: int, n: int) -> list[dict]:
    as_of = parse_date(params["as_of"], "as_of") if params["as_of"] else start + timedelta(days=days)
    clients = rng.sample(vocab.COMPANIES, min(len(vocab.COMPANIES), max(3, n // 2)))
    year_seq = rng.randint(1000, 3000)
    rows = []
    for _ in range(n):
        issued = rand_date(rng, start, days)
        terms = rng.choice((7, 14, 15, 30, 30))
        due = issued + timedelta(days=terms)
        if rng.random() < 0.55:
            half_hours, rate = rng.randint(4, 80), rng.choice((85, 95, 110, 120, 150, 175))
            cents = half_hours * 50 * rate
        else:
            cents = rand_cents(rng, 150, 9500) // 500 * 500
        rows.append(
            {
                "client": rng.choice(clients),
                "description": rng.choice(INVOICE_SERVICES),
                "issued": issued,
                "due": due,
                "cents": max(cents, 5000),
            }
        )
    rows.sort(key=lambda r: r["issued"])
    for i, r in enumerate(rows):
        paid_date = None
        latest = min(as_of - timedelta(days=1), r["due"] + timedelta(days=10))
        if rng.random() < float(params["paid_ratio"]) and latest >= r["issued"]:
            paid_date = r["issued"] + timedelta(days=rng.randint(0, (latest - r["issued"]).days))
            status = "paid"
        else:
            if r["due"] == as_of:
                r["due"] += timedelta(days=1)
            status = "overdue" if r["due"] < as_of else "unpaid"
        r.update(
            id=f"INV-{r['issued'].year}-{year_seq + i:04d}",
            issued=iso(r["issued"]),
            due=iso(r["due"]),
            amount=money(r.pop("cents")),
            currency=params["currency"],
            status=status,
            paid_date=iso(paid_date) if paid_date else None,
        )
    return rows
