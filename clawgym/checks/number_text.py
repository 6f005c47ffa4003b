"""Numbers in prose: a required number is found as a whole number, in any equivalent form.

A `contains` item that is only a number ("8", "1253.5", "1,253.50") is not a substring: it
matches a number written in the text whose value is the same ("1,253.50", "1253.5" and "1253.50"
are one number; so are "116" and "116.0"), never digits inside a longer number (the 8 of 1800 or
of 18.5), of a date or a time (2026-08-01, 12:08), of a range or fraction (8-10, 8/10) or of a code
(INV8). Codes written with a leading zero ("076052") match only as the same digits.

A whole number from 0 to 100 is also found written in English words, in any case: "six", "Six",
"twenty-one", "twenty one", "one hundred" (`number_words_in`). A word form is a whole word
("someone" holds no "one", "often" no "ten") and a whole number: the words of a larger number or
of a fraction (the "two" of "two hundred", "two thousand", "two and a half", "two point five",
"two thirds"; the "six" of "thirty-six" or "hundred and six"), of a range or time ("six-eight",
"ten-fifteen") and of "no one" are not found.
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
    """(number as written, negative) for every standalone number in `text`, in digits, then those
    written in words (`number_words_in`, as digits)."""
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
    return out + number_words_in(text)


_SMALL = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen".split()
    )
}
_TENS = {w: 10 * i for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), start=2)}
_ORDINALS = "third fourth fifth sixth seventh eighth ninth tenth".split()
_PARTS = {"half", "halves", *_ORDINALS, *(o + "s" for o in _ORDINALS)}  # two thirds; not "two quarters" (of a year)
_AND_PARTS = _PARTS | {"quarter", "quarters"}  # two and a half, one and three quarters
_LARGER = {"point", "dozen", "dozens"} | {
    w + s for w in ("hundred", "thousand", "million", "billion", "trillion") for s in ("", "s")
}
_LETTERS = re.compile(r"[^\W\d_]+")
_WORD_JOINERS = "-/:\u2013"  # a hyphen, slash, colon or en dash between two numbers: a range or a time


def number_words_in(text: str) -> list[tuple[str, bool]]:
    """(number in digits, negative) for every whole number from 0 to 100 written in words in `text`
    ("six", "Twenty-one", "twenty one", "one hundred", "a hundred"; "minus six" is negative).

    Only whole words count, and only a whole number: not the words of a larger number or a
    fraction ("two hundred", "six thousand", "two and a half", "two point five", "two thirds";
    "thirty-six" holds no six, "hundred and six" no six), of a range or a time ("six-eight",
    "ten/twelve", "ten-fifteen"), of a name or code ("team-one", "six_b", "6six"), nor "no one"
    and "one another"."""
    return _Words(text).numbers()


class _Words:
    """The letter runs of a text (casefolded, with their offsets) and what stands between them."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = [(m.group().casefold(), m.start(), m.end()) for m in _LETTERS.finditer(text)]

    def word(self, k: int) -> str:
        return self.toks[k][0] if 0 <= k < len(self.toks) else ""

    def gap(self, k: int) -> str | None:
        """The text between word k-1 and word k (None at either end)."""
        return self.text[self.toks[k - 1][2] : self.toks[k][1]] if 0 < k < len(self.toks) else None

    def joined(self, k: int) -> bool:
        """Whether word k follows word k-1 in one phrase (after a hyphen or whitespace only)."""
        g = self.gap(k)
        return g is not None and (g == "-" or (g != "" and g.isspace()))

    def number(self, k: int) -> bool:
        return self.word(k) in _SMALL or self.word(k) in _TENS

    def numbers(self) -> list[tuple[str, bool]]:
        out = []
        k = 0
        while k < len(self.toks):
            w, first = self.word(k), k
            if w in _TENS:
                value = _TENS[w]
                if self.joined(k + 1) and 0 < _SMALL.get(self.word(k + 1), 0) < 10:
                    k += 1
                    value += _SMALL[self.word(k)]
            elif w in _SMALL:
                value = _SMALL[w]
                if value == 1 and self.joined(k + 1) and self.word(k + 1) == "hundred":
                    k, value = k + 1, 100
            elif w == "hundred" and self.joined(k) and self.word(k - 1) == "a":
                first, value = k - 1, 100
            else:
                k += 1
                continue
            last, k = k, k + 1
            if self.whole(first, last) and not (value == 1 and self.pronoun(first, last)):
                negative = self.joined(first) and self.word(first - 1) in ("minus", "negative")
                out.append((str(value), negative and value != 0))
        return out

    def pronoun(self, first: int, last: int) -> bool:
        """ "one" in "no one" or "one another": nobody, each other."""
        return (self.joined(first) and self.word(first - 1) == "no") or self.word(last + 1) == "another"

    def whole(self, first: int, last: int) -> bool:
        """Whether words first..last stand alone as a whole number."""
        text, start, end = self.text, self.toks[first][1], self.toks[last][2]
        word, joined = self.word, self.joined
        before = text[start - 1] if start else ""
        after = text[end] if end < len(text) else ""
        if before.isalnum() or before == "_" or after.isalnum() or after == "_":
            return False  # part of a word or a code: 6six, six_b
        if before in _WORD_JOINERS and start >= 2 and text[start - 2].isalnum():
            return False  # the second part of a range, a time or a hyphenated name: six-eight, team-one
        if after in _WORD_JOINERS and end + 1 < len(text) and text[end + 1].isdigit():
            return False  # the first part of a range: six-8
        if self.gap(last + 1) in tuple(_WORD_JOINERS) and (self.number(last + 1) or word(last + 1) in _LARGER):
            return False  # the first part of a range or a time: six-eight, ten-fifteen
        if joined(first) and word(first - 1) in _LARGER:
            return False  # the end of a larger number or a decimal: hundred six, point five
        if joined(first) and word(first - 1) == "and" and joined(first - 1) and word(first - 2) in _LARGER:
            return False  # hundred and six
        if joined(last + 1) and word(last + 1) in _LARGER:
            return False  # two hundred, six thousand, two point five
        if joined(last + 1) and word(last + 1) in _PARTS and self.gap(last + 2) != "-":
            return False  # two thirds, one half (not: two third-party vendors, two half-day sessions)
        if word(last + 1) == "and" and joined(last + 1) and joined(last + 3) and word(last + 3) in _AND_PARTS:
            return False  # two and a half, one and three quarters
        if joined(first) and word(first - 1) == "and" and joined(last + 1) and word(last + 1) in _AND_PARTS:
            return False  # the three of "one and three quarters"
        if word(last) == "hundred" and joined(last + 1) and (self.number(last + 1) or word(last + 1) == "and"):
            return False  # one hundred five, a hundred and one
        return True


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
