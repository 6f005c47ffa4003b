"""Helpers shared by the generators: schema building, dates, money, people and companies."""

from __future__ import annotations

import random
import re
from datetime import date, datetime, timedelta
from typing import Any, Sequence

from ..errors import ClawgymError
from . import vocab

SCHEMA_DRAFT = "https://json-schema.org/draft/2020-12/schema"
DATE_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
DATETIME_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2})?$"
MONTH_ABBR = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


# --------------------------------------------------------------------------------------------
# Schema building


def make_schema(name: str, description: str, props: dict[str, dict]) -> dict:
    """A draft 2020-12 object schema with the `type` selector and no extra keys allowed."""
    properties = {"type": {"const": name, "description": f"Selects the `{name}` generator."}}
    properties.update(props)
    return {
        "$schema": SCHEMA_DRAFT,
        "title": name,
        "description": description,
        "type": "object",
        "additionalProperties": False,
        "properties": properties,
    }


def p(typ: str | list, description: str, default: Any = None, **extra: Any) -> dict:
    """One property schema; `default=None` means no default unless the type allows null."""
    out: dict[str, Any] = {"type": typ, "description": description}
    if default is not None or (isinstance(typ, list) and "null" in typ):
        out["default"] = default
    out.update(extra)
    return out


def p_date(description: str, default: str | None) -> dict:
    typ: Any = "string" if default is not None else ["string", "null"]
    return p(typ, description, default, format="date", pattern=DATE_PATTERN)


def p_count(description: str, default: int, minimum: int = 0, maximum: int = 10_000) -> dict:
    return p("integer", description, default, minimum=minimum, maximum=maximum)


def p_strings(description: str, default: list[str] | None, **extra: Any) -> dict:
    typ: Any = "array" if default is not None else ["array", "null"]
    return p(typ, description, default, items={"type": "string", "minLength": 1}, **extra)


# --------------------------------------------------------------------------------------------
# Dates, money, text


def parse_date(value: Any, key: str) -> date:
    try:
        return date.fromisoformat(str(value))
    except ValueError:
        raise ClawgymError(f"{key}: {value!r} is not a date", hint="use YYYY-MM-DD") from None


def parse_datetime(value: Any, key: str) -> datetime:
    try:
        dt = datetime.fromisoformat(str(value).replace(" ", "T"))
    except ValueError:
        raise ClawgymError(f"{key}: {value!r} is not a date-time", hint="use YYYY-MM-DDTHH:MM:SS") from None
    return dt.replace(tzinfo=None)


def iso(d: date | datetime) -> str:
    """ISO text: YYYY-MM-DD for dates, YYYY-MM-DDTHH:MM:SS for date-times."""
    return d.isoformat(timespec="seconds") if isinstance(d, datetime) else d.isoformat()


def rand_date(rng: random.Random, start: date, days: int) -> date:
    """Uniform date in [start, start + days - 1]."""
    return start + timedelta(days=rng.randrange(max(1, days)))


def money(cents: int) -> float:
    """Cents to a float that prints (and rounds) to exactly two decimals."""
    return round(cents / 100, 2)


def fmt_money(cents: int, thousands: bool = False) -> str:
    return f"{cents / 100:,.2f}" if thousands else f"{cents / 100:.2f}"


def rand_cents(rng: random.Random, low: float, high: float) -> int:
    return rng.randint(int(round(low * 100)), int(round(high * 100)))


def slug(text: str, sep: str = "-") -> str:
    return re.sub(r"[^a-z0-9]+", sep, text.lower()).strip(sep)


def weighted(rng: random.Random, items: Sequence[Any], weights: Sequence[float]) -> Any:
    return rng.choices(items, weights=weights, k=1)[0]


def fill(template: str, rng: random.Random, **given: Any) -> str:
    """Fill {n} {pct} {company} {person} {city} {project} placeholders (plus any given ones)."""
    values = dict(given)
    for key in re.findall(r"{(\w+)}", template):
        if key in values:
            continue
        if key == "n":
            values[key] = rng.randint(2, 12)
        elif key == "pct":
            values[key] = rng.randint(3, 40)
        elif key == "company":
            values[key] = rng.choice(vocab.COMPANIES)
        elif key == "person":
            values[key] = f"{rng.choice(vocab.FIRST_NAMES)} {rng.choice(vocab.LAST_NAMES)}"
        elif key == "city":
            values[key] = rng.choice(vocab.CITIES)
        elif key == "project":
            values[key] = rng.choice(vocab.PROJECTS)
        else:
            values[key] = key
    return template.format(**values)


# --------------------------------------------------------------------------------------------
# People and companies


def company_domain(company: str) -> str:
    words = [w for w in slug(company, " ").split() if w not in ("co", "corp", "inc")]
    return "".join(words[:2]) + ".com"


class People:
    """Draws distinct people (first, last) for one generated file."""

    def __init__(self, rng: random.Random, unique_first: bool = False):
        self.rng = rng
        self.unique_first = unique_first
        self.used: set[tuple[str, str]] = set()
        self.firsts: set[str] = set()

    def one(self) -> tuple[str, str]:
        rng = self.rng
        pair = (rng.choice(vocab.FIRST_NAMES), rng.choice(vocab.LAST_NAMES))
        for _ in range(50):
            if pair not in self.used and not (self.unique_first and pair[0] in self.firsts):
                break
            pair = (rng.choice(vocab.FIRST_NAMES), rng.choice(vocab.LAST_NAMES))
        self.used.add(pair)
        self.firsts.add(pair[0])
        return pair

    def many(self, n: int) -> list[tuple[str, str]]:
        return [self.one() for _ in range(n)]


def email_for(rng: random.Random, first: str, last: str, domain: str | None = None) -> str:
    """A plausible address: work style at `domain`, else a personal-provider style."""
    f = first.lower() if first.isalpha() and first.isascii() else slug(first, "")
    l = last.lower() if last.isalpha() and last.isascii() else slug(last, "")
    if domain:
        return f"{f}.{l}@{domain}"
    style = rng.randrange(4)
    local = (f"{f}.{l}", f"{f[0]}{l}", f"{f}{l}{rng.randint(1, 99)}", f"{f}_{l}")[style]
    return f"{local}@{rng.choice(vocab.PERSONAL_DOMAINS)}"


def phone(rng: random.Random) -> str:
    return f"+1-555-{rng.randint(100, 999)}-{rng.randint(1000, 9999)}"


def product_sku(index: int) -> str:
    name, category, _ = vocab.PRODUCTS[index]
    return f"{category[:3].upper()}-{1000 + index * 17}"
