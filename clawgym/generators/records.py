"""`json_records`: contacts, support tickets, orders, inventory, tasks or custom records as JSON."""

from __future__ import annotations

import json
import math
import random
from json.encoder import encode_basestring as _enc  # type: ignore[attr-defined]
from datetime import date, datetime, timedelta
from typing import Any, Callable

from ..errors import ClawgymError
from ..registry import register
from . import vocab
from .base import Generated
from .common import (
    People,
    company_domain,
    email_for,
    iso,
    make_schema,
    money,
    p,
    p_count,
    p_date,
    parse_date,
    phone,
    product_sku,
    rand_date,
    weighted,
)
from .table import COLUMN_SCHEMA, RowMaker, check_columns

ID_KEYS = {"contacts": "id", "tickets": "id", "orders": "id", "inventory": "sku", "tasks": "id", "custom": "id"}


def _when(rng: random.Random, start: date, days: int) -> datetime:
    """A business-hours date-time in the window."""
    d = rand_date(rng, start, days)
    return datetime(d.year, d.month, d.day, rng.randint(8, 18), rng.randrange(0, 60))


def _contacts(rng: random.Random, n: int, start: date, days: int, prm: dict) -> list[dict]:
    out = []
    for i, (first, last) in enumerate(People(rng).many(n)):
        company = rng.choice(vocab.COMPANIES)
        work = rng.random() < 0.6
        out.append(
            {
                "id": f"C-{i + 1:03d}",
                "name": f"{first} {last}",
                "first_name": first,
                "last_name": last,
                "email": email_for(rng, first, last, company_domain(company) if work else None),
                "phone": phone(rng),
                "company": company,
                "title": rng.choice(vocab.JOB_TITLES),
                "city": rng.choice(vocab.CITIES),
                "birthday": iso(date(rng.randint(1960, 2002), rng.randint(1, 12), rng.randint(1, 28))),
                "tags": sorted(
                    rng.sample(("client", "colleague", "friend", "family", "vendor", "investor"), rng.randint(1, 2))
                ),
                "last_contacted": iso(rand_date(rng, start - timedelta(days=120), 120 + days)),
            }
        )
    return out


def _tickets(rng: random.Random, n: int, start: date, days: int, prm: dict) -> list[dict]:
    agents = [f"{f} {l}" for f, l in People(rng).many(4)]
    people = People(rng)
    first_id = rng.randint(1000, 8000)
    rows = []
    for _ in range(n):
        first, last = people.one()
        subject, tag = rng.choice(vocab.TICKET_SUBJECTS)
        created = _when(rng, start, days)
        status = weighted(rng, ("open", "pending", "resolved", "closed"), (3, 2, 3, 2))
        updated = created + timedelta(minutes=rng.randint(5, 60 * 72))
        rows.append(
            {
                "subject": subject,
                "requester": f"{first} {last}",
                "requester_email": email_for(rng, first, last),
                "priority": weighted(rng, ("low", "medium", "high", "urgent"), (3, 4, 2, 1)),
                "status": status,
                "assignee": None if status == "open" and rng.random() < 0.4 else rng.choice(agents),
                "channel": rng.choice(("email", "email", "chat", "phone", "web form")),
                "created": created,
                "updated": updated,
                "tags": [tag],
            }
        )
    rows.sort(key=lambda r: r["created"])
    for i, r in enumerate(rows):
        r.update(id=f"TCK-{first_id + i}", created=iso(r["created"]), updated=iso(r["updated"]))
    return rows


def _orders(rng: random.Random, n: int, start: date, days: int, prm: dict) -> list[dict]:
    people = People(rng)
    first_id = rng.randint(10000, 90000)
    rows = []
    for _ in range(n):
        first, last = people.one()
        items, total = [], 0
        for idx in rng.sample(range(len(vocab.PRODUCTS)), rng.randint(1, 4)):
            name, _, price = vocab.PRODUCTS[idx]
            qty = weighted(rng, (1, 2, 3, 4), (6, 3, 1, 0.5))
            items.append({"sku": product_sku(idx), "product": name, "qty": qty, "unit_price": price})
            total += qty * round(price * 100)
        rows.append(
            {
                "customer": f"{first} {last}",
                "email": email_for(rng, first, last),
                "date": rand_date(rng, start, days),
                "items": items,
                "total": money(total),
                "currency": prm["currency"],
                "status": weighted(
                    rng, ("pending", "shipped", "delivered", "cancelled", "refunded"), (2, 3, 5, 1, 0.5)
                ),
                "ship_city": rng.choice(vocab.CITIES),
            }
        )
    rows.sort(key=lambda r: r["date"])
    for i, r in enumerate(rows):
        r.update(id=f"ORD-{first_id + i}", date=iso(r["date"]))
    return rows


def _inventory(rng: random.Random, n: int, start: date, days: int, prm: dict) -> list[dict]:
    count = len(vocab.PRODUCTS)
    pool = count * len(vocab.COLORS) if n > count else count
    if n > pool:
        raise ClawgymError(f"json_records: at most {pool} inventory items")
    picks = rng.sample(range(pool), n)
    low = set(rng.sample(range(n), min(int(prm["low_stock"]), n)))
    suppliers = rng.sample(vocab.SUPPLIERS, 4)
    rows = []
    for i, k in enumerate(picks):
        idx, color = k % count, k // count
        name, category, price = vocab.PRODUCTS[idx]
        variant = n > count
        reorder = rng.randrange(10, 55, 5)
        qty = rng.randint(0, reorder - 1) if i in low else rng.randint(reorder + 1, reorder * 6)
        rows.append(
            {
                "sku": product_sku(idx) + (f"-{vocab.COLOR_CODES[color]}" if variant else ""),
                "name": name + (f" ({vocab.COLORS[color]})" if variant else ""),
                "category": category,
                "quantity": qty,
                "reorder_level": reorder,
                "unit_cost": money(round(price * 100 * 0.55)),
                "location": rng.choice(("Warehouse A", "Warehouse B", "Store room")),
                "supplier": rng.choice(suppliers),
                "last_restocked": iso(rand_date(rng, start, days)),
            }
        )
    rows.sort(key=lambda r: r["sku"])
    return rows


def _tasks(rng: random.Random, n: int, start: date, days: int, prm: dict) -> list[dict]:
    team = [f"{f} {l}" for f, l in People(rng).many(4)]
    titles = rng.sample(vocab.TASK_TITLES, min(n, len(vocab.TASK_TITLES)))
    titles += [rng.choice(vocab.TASK_TITLES) + f" ({i + 2})" for i in range(n - len(titles))]
    first_id = rng.randint(100, 900)
    rows = []
    for title in titles:
        due = rand_date(rng, start, days)
        created = due - timedelta(days=rng.randint(1, 21))
        done = rng.random() < float(prm["done_ratio"])
        rows.append(
            {
                "title": title,
                "project": rng.choice(vocab.PROJECTS),
                "assignee": rng.choice(team),
                "priority": weighted(rng, ("low", "medium", "high"), (2, 3, 2)),
                "created": created,
                "due": due,
                "done": done,
                "completed": iso(due - timedelta(days=rng.randint(0, (due - created).days))) if done else None,
            }
        )
    rows.sort(key=lambda r: (r["due"], r["created"]))
    for i, r in enumerate(rows):
        r.update(id=f"T-{first_id + i}", created=iso(r["created"]), due=iso(r["due"]))
    return rows


def pretty_json(value: Any, level: int = 0) -> str:
    """Same text as `json.dumps(value, indent=2, ensure_ascii=False)`, several times faster."""
    if isinstance(value, str):
        return _enc(value)
    if value is None or isinstance(value, bool):
        return "null" if value is None else ("true" if value else "false")
    if isinstance(value, (int, float)):
        return json.dumps(value) if isinstance(value, float) and not math.isfinite(value) else repr(value)
    pad = "\n" + "  " * (level + 1)
    if isinstance(value, dict):
        if not value:
            return "{}"
        body = ",".join(f"{pad}{_enc(str(k))}: {pretty_json(v, level + 1)}" for k, v in value.items())
        return "{" + body + "\n" + "  " * level + "}"
    if not value:
        return "[]"
    return "[" + ",".join(pad + pretty_json(v, level + 1) for v in value) + "\n" + "  " * level + "]"


def _sorted(value: Any) -> Any:
    """Recursively sort dict keys (records stay in order; `layout: object` keeps record order)."""
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


KINDS: dict[str, Callable[..., list[dict]]] = {
    "contacts": _contacts,
    "tickets": _tickets,
    "orders": _orders,
    "inventory": _inventory,
    "tasks": _tasks,
}


@register("generator", "json_records")
class JsonRecords:
    """JSON array (or object keyed by id) of records, indent 2, keys sorted within each record.

    data: list of record dicts in file order (for `layout: object` too; each record keeps its id).
    Kinds and fields -- contacts: id name first_name last_name email phone company title city
    birthday tags last_contacted; tickets: id subject requester requester_email priority status
    assignee channel created updated tags; orders: id customer email date items[sku product qty
    unit_price] total currency status ship_city; inventory: sku name category quantity
    reorder_level unit_cost location supplier last_restocked (exactly `low_stock` items have
    quantity < reorder_level, the rest quantity > reorder_level); tasks: id title project assignee
    priority created due done completed; custom: the declared `fields`.
    """

    name = "json_records"
    schema = make_schema(
        name,
        __doc__.split("\n")[0],
        {
            "kind": p("string", "Record kind (`custom` uses `fields`).", "contacts", enum=[*KINDS, "custom"]),
            "count": p_count("Number of records.", 12, minimum=0),
            "layout": p(
                "string", "`array` of records or `object` keyed by the id field.", "array", enum=["array", "object"]
            ),
            "root_key": p(["string", "null"], "Wrap the output as {root_key: ...}.", None),
            "start_date": p_date("First day of the date window (YYYY-MM-DD).", "2026-03-01"),
            "days": p_count("Length of the date window in days.", 30, minimum=1, maximum=3660),
            "currency": p("string", "orders: currency code.", "USD", pattern="^[A-Z]{3}$"),
            "low_stock": p_count("inventory: number of items below their reorder level.", 2),
            "done_ratio": p("number", "tasks: share of tasks already done.", 0.3, minimum=0, maximum=1),
            "fields": {
                "type": ["array", "null"],
                "default": None,
                "items": COLUMN_SCHEMA,
                "description": "custom: field specs (same as csv_table columns).",
            },
            "id_field": p(
                ["string", "null"],
                "custom/object layout: field holding the record id "
                "(null: `id` for custom records, else the kind's id field).",
                None,
            ),
        },
    )

    @staticmethod
    def generate(rng: random.Random, params: dict) -> Generated:
        kind, n = params["kind"], int(params["count"])
        start = parse_date(params["start_date"], "start_date")
        days = int(params["days"])
        if kind == "custom":
            fields = params["fields"] or []
            if not fields:
                raise ClawgymError("json_records: kind custom needs `fields`")
            check_columns(fields, "json_records")
            maker = RowMaker(rng, fields)
            records = [maker.row() for _ in range(n)]
        else:
            records = KINDS[kind](rng, n, start, days, params)
        records = [_sorted(r) for r in records]
        id_key = params["id_field"] or ID_KEYS[kind]
        body: Any = records
        if params["layout"] == "object":
            if records and id_key not in records[0]:
                raise ClawgymError(f"json_records: layout object needs an {id_key!r} field")
            body = {str(r[id_key]): r for r in records}
            if len(body) != len(records):
                raise ClawgymError(f"json_records: field {id_key!r} has duplicate values")
        if params["root_key"]:
            body = {params["root_key"]: body}
        text = pretty_json(body) + "\n"
        return Generated(content=text.encode(), data=records)
