"""Numbers in prose: a required number is found as a whole number, in any equivalent form.

A `contains` item that is only a number ("8", "1253.5", "1,253.50") is not a substring: it
matches a number written in the text whose value is the same ("1,253.50", "1253.5" and "1253.50"
are one number; so are "116" and "116.0"), never digits inside a longer number (the 8 of 1800 or
of 18.5), of a date or a time (2026-08-01, 12:08), of a range or fraction (8-10, 8/10) or of a code
(INV8). Codes written with a leading zero ("076052") match only as the same digits.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_BARE = re.compile(r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[+-]?\d+,\d{1,2}|[+-]?\.\d+")
_RUN = re.compile(r"[0-9.,]*[0-9][0-9.,]*")
_JOINERS = "-/:"


def bare_number(item: object) -> str | None:
    """`item` as text when it is only a number (sign, digits, thousands commas, decimals), else None."""
    if isinstance(item, bool):
        return None
    text = str(item).strip()
    return text if _BARE.fullmatch(text) else None


def _code(text: str) -> bool:
    """A digit string with a leading zero ("076052", "08"): an identifier, not a quantity."""
    digits = text.lstrip("+-")
    return len(digits) > 1 and digits[0] == "0" and digits[1].isdigit()


def _value(text: str) -> Decimal | None:
    """The value of a bare number: "1,253.50" and "1253,5" read 1253.5; None for a malformed one."""
    sign = "-" if text.startswith("-") else ""
    body = text.lstrip("+-")
    if re.fullmatch(r"\d+,\d{1,2}", body):  # one comma, no dot, one or two digits after: decimal comma
        body = body.replace(",", ".")
    elif re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", body):
        body = body.replace(",", "")
    elif not re.fullmatch(r"\d+(?:\.\d+)?|\.\d+", body):
        return None
    try:
        return Decimal(sign + body)
    except InvalidOperation:
        return None


def _readings(run: str) -> list[str]:
    """The numbers a run of digits, dots and commas may be: itself when it is one number, else
    its comma-separated parts ("3,4,5" is three numbers); a run with two dots is none."""
    run = run.strip(".,") if not run.startswith(".") else run.rstrip(".,")
    if not run or run.count(".") > 1:
        return []
    whole = [run] if _value(run) is not None else []
    if "," in run and not re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", run):
        return whole + [p for p in run.split(",") if p and _value(p) is not None]
    return whole


def numbers_in(text: str) -> list[tuple[str, bool]]:
    """(number as written, negative) for every standalone number in `text`."""
    out = []
    for m in _RUN.finditer(text):
        start, end = m.start(), m.end()
        before = text[start - 1] if start else ""
        after = text[end] if end < len(text) else ""
        if before.isalnum() or before == "_":
            continue  # part of a word or code: INV8, v2
        if before in _JOINERS and start >= 2 and text[start - 2].isalnum():
            continue  # the second part of a date, time, range or fraction
        if after in _JOINERS and end + 1 < len(text) and text[end + 1].isdigit():
            continue  # the first part of one
        negative = before == "-"
        out += [(r, negative) for r in _readings(m.group())]
    return out


def number_found(numbers: list[tuple[str, bool]], item: str) -> bool:
    """True when `numbers` (from `numbers_in`) hold the bare number `item`: the same digits for a
    code with a leading zero, else the same value (and sign)."""
    negative = item.startswith("-")
    if _code(item):
        want = item.lstrip("+-")
        return any(got == want and neg == negative for got, neg in numbers)
    value = _value(item)
    if value is None:
        return False
    sign = negative and value != 0
    return any(neg == sign and not _code(got) and _value(got) == abs(value) for got, neg in numbers)
