"""The message deliverable: an email draft to a named person with the count (and maybe the total) of
the rows the pipeline ends with.

The request never states either number, and the checks read them in the body only (not the To: and
Subject: lines), each as a whole number in any of its forms (36, thirty-six; 1253.5 = 1,253.50):
the count beside what it counts, as the request says to write it ("36 builds", also "36 in all",
"builds: 36"), the total on its own. A body that names more than `MAX_NUMBERS` different whole
numbers up to 100 scores nothing: guesses listed side by side do not state a count."""

from __future__ import annotations

import re

from .state import fmt, form_code, label, num, unit_words
from .delivered import Deliver, Delivered, Figure, exists_check, number_rx


MAX_NUMBERS = 12  # different whole numbers up to 100: a short note's figures, far fewer than a list of guesses
MAX_COUNTED = 3  # '<number> <things>' phrases in a body: the count and two more ("6 of the 43 strings")


class DraftEmail(Deliver):
    name = "draft_email"

    def plan(self, s, rng):
        if not s.rows:
            return None
        if not s.contacts:  # nobody the persona knows would want these figures: no message to a stranger
            return None
        name, email = s.contacts[0]  # the closest contact (a partner, a manager, a co-host)
        first = (
            re.sub(r"^(?:ms|mr|mrs|mx|dr|prof)\.?\s+", "", name.lower()).split()[0].strip(".")
        )  # "Dr. Fiona" -> fiona
        # only a quantity has a total worth reporting (not a year, a rating or a price each)
        numbers = [c for c in s.numbers(fresh=False, does="sum") if len({r[c] for r in s.rows}) > 1]
        col = rng.choice(numbers) if numbers else None
        stem = rng.choice(["email_draft", "message_to_" + first, "draft", "note_for_" + first])
        subject = rng.choice(
            [
                f"{s.domain.noun[1].capitalize()} update",
                f"The {s.domain.noun[1]} you asked about",
                f"Quick numbers on {s.domain.noun[1]}",
            ]
        )
        return {"name": name, "email": email, "col": col, "path": f"{s.out_dir}/{stem}.txt", "subject": subject}

    def deliver(self, s, p):
        count = len(s.rows)
        one, many = s.domain.noun
        said = f" (as '<number> {many}')"  # the form the check reads, so no convention is hidden
        what = f"number of {many}{said}"
        code = [f"how_many = len({s.var})"]
        body = "f'There are {how_many} " + many + ".'"
        patterns = [counted_rx(str(count), one, many)]
        shown = {"count": (str(count),)}
        if p["col"]:
            kind = s.types[p["col"]]
            total = fmt(sum(num(r[p["col"]]) for r in s.rows), kind)
            unit = unit_words(s, p["col"]).removeprefix(", ")
            what = f"number of {many}{said} and their total {label(p['col'])}" + (
                " (to the cent)" if kind == "money" else f" ({unit})" if unit else ""
            )
            summed = f"sum(float({s.it}[{p['col']!r}]) for {s.it} in {s.var})"
            code.append(f"total = {form_code(kind, summed)}")
            noun = s.noun(p["col"]).replace("\\", "").replace("'", "\\'").replace("{", "").replace("}", "")
            body = "f'There are {how_many} " + many + f"; the total {noun} is {{total}}.'"
            patterns.append(count_rx(total) if re.fullmatch(r"\d+", total) else number_rx(total))
            shown["total"] = (total,)
        head = f"To: {p['name']} <{p['email']}>\\nSubject: {p['subject']}\\n\\n"
        code += s.style.write_text(p["path"], f"'{head}' + {body} + '\\n'")
        checks = [
            exists_check(p["path"]),
            {
                "type": "text_matches",
                "name": "addressed as asked",
                "path": p["path"],
                "pattern": [
                    # the address, with or without the name and brackets ("To: ana@x.org" is as good)
                    rf"(?im)^[ \t]*To[ \t]*:[^\n]*?<?{re.escape(p['email'])}>?[ \t]*$",
                    rf"(?im)^[ \t]*Subject[ \t]*:[ \t]*{re.escape(p['subject'])}[ \t]*$",
                ],
                "gate": True,  # the form asked for, which the request spells out: worth nothing by itself
                "weight": 0,
            },
            {  # the count stated, not a list of '<n> <things>' guesses ('32 strings, 33 strings, ...')
                "type": "text_matches",
                "name": f"the number of {many} stated once",
                "path": p["path"],
                "pattern": any_counted_rx(one, many),
                "body_only": True,
                "max_count": MAX_COUNTED,
                "gate": True,
                "weight": 0,
            },
            {
                "type": "text_matches",
                "name": "the body gives the numbers",
                "path": p["path"],
                "pattern": patterns,
                "body_only": True,
                "max_numbers": MAX_NUMBERS,  # a list of guesses is not a count
                "weight": 2,
            },
        ]
        return Delivered(
            p["path"],
            checks,
            code,
            {"path": p["path"], "to": f"{p['name']} <{p['email']}>", "what": what, "subject": p["subject"]},
            ["email-draft"],
            figures=[
                Figure(
                    f"the number of {many}" + (f" and the total {s.noun(p['col'])}" if p["col"] else ""),
                    shown,
                    (),
                    "text",
                )
            ],
        )


_ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()


def count_words(n: int) -> str | None:
    """A whole number from 0 to 100 as a regex of its English words ("twenty[- ]one"), else None."""
    if 0 <= n < 20:
        return _ONES[n]
    if 20 <= n < 100:
        tens, ones = _TENS[n // 10 - 2], n % 10
        return tens if not ones else f"{tens}[- ]{_ONES[ones]}"
    return "(?:one|a) hundred" if n == 100 else None


_MONTHS = "january february march april may june july august september october november december".split()
_MONTH_WORDS = sorted({m for full in _MONTHS for m in (full, full[:3])} | {"sept"})
_NOT_AFTER_MONTH = "(?i:" + "".join(f"(?<!{m} )(?<!{m}\\. )" for m in _MONTH_WORDS) + ")"  # "March 14"
# "14 March", "3rd March" (not "may": "14 may be late")
_BEFORE_MONTH = rf"(?:st|nd|rd|th)?[ \t]+(?i:{'|'.join(m for m in _MONTH_WORDS if m != 'may')})\b"
_UNITS = "|".join(_ONES[1:10])
_AFTER_TENS = "(?i:" + "".join(f"(?<!{w} )" for w in _TENS) + ")"  # not the "two" of "twenty two"


def count_rx(value: str) -> str:
    """A count in digits or, from 0 to 100, in words as a whole word ("six builds", "Twenty-one
    tickets"): a count written out is as right as its digits. Never a part of a code, an ordinal,
    a larger number or a number in words ("L10", "Q3", "2nd", "3 666 839", "twenty-two", "two
    hundred"); any other value as `number_rx` finds it."""
    if not re.fullmatch(r"\d+", value.strip()):
        return number_rx(value)
    n = int(value)
    # any form number_rx accepts (1,234 or 1 234), never after or before a letter or a group of
    # three, never a list item's number ("40. ...") nor the day of a date written out ("14 March")
    marker = "".join(rf"(?!(?<=(?m:^)[ \t]{{{k}}}){n}[.)][ \t])" for k in range(17))  # indented up to 16
    digits = rf"{marker}(?<![^\W\d_]){_NOT_AFTER_MONTH}{number_rx(str(n))}(?![^\W\d_]|[ \u00a0\u202f]\d{{3}}\b|{_BEFORE_MONTH})"
    words = count_words(n)
    if not words:
        return digits
    # not the end of "twenty-two"/"twenty two", nor the start of "two hundred", "two-thirds" or "thirty four"
    spoken = rf"(?<![\w-]){_AFTER_TENS}(?i:{words})(?![\w-]|[ ](?i:hundred|thousand|million|{_UNITS})\b)"
    return f"(?:{digits}|{spoken})"


# what any count may be said to count, whatever the records are ("21 entries", "21 in total")
_ANY_COUNT = ("row", "rows", "record", "records", "entry", "entries", "item", "items", "line", "lines")
_ANY_COUNT += ("ones", "of them", "in total", "in all", "total")


def counted_rx(value: str, one: str, many: str) -> str:
    """A count (`count_rx`) beside what it counts, either way round: "36 builds", "36 failed
    builds", "13 of the 22 action items" (up to five words between), "builds: 36", "the number of
    builds is 36" (the last word of the noun, singular or plural, or a word any count takes: "36
    entries", "36 in total", "36 of them"). A number alone is not a count: a body that lists
    numbers, or pastes the input, does not state one."""
    words = {one.split()[-1], many.split()[-1], *_ANY_COUNT}
    nouns = "|".join(re.escape(w).replace("\\ ", "[ \\t]+") for w in sorted(words, key=len, reverse=True))
    number = count_rx(value)
    # noun first: "builds: 36", "the number of builds is 36" (no other figure or clause between)
    return (
        rf"(?i:{number}[ \t]+(?:[\w'’-]+[ \t]+){{0,5}}?(?:{nouns})\b"
        rf"|\b(?:{nouns})\b[^\n.;,\d]{{0,30}}?{number})"
    )


_ANY_NUMBER = (
    r"(?:\d{1,3}(?:,\d{3})+|\d+|(?:"
    + "|".join(_TENS)
    + r")(?:[- ](?:"
    + _UNITS
    + r"))?|"
    + "|".join(sorted(_ONES, key=len, reverse=True))
    + r"|hundred)"
)


def any_counted_rx(one: str, many: str) -> str:
    """Any whole number (digits or words) followed, within two words, by the noun of the count:
    what a list of guessed counts repeats ("32 strings, 33 strings, ...")."""
    nouns = "|".join(re.escape(w) for w in sorted({one.split()[-1], many.split()[-1]}, key=len, reverse=True))
    return rf"(?i:(?<![\w.,]){_ANY_NUMBER}[ \t]+(?:[\w'’-]+[ \t]+){{0,2}}?(?:{nouns})\b)"
