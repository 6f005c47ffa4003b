"""Text checks: substrings, regexes, Markdown sections and line counts."""

from __future__ import annotations

import re

from ..registry import register
from .base import Check, CheckContext, CheckFailure, as_list, short, strings
from .number_text import bare_number, number_found, numbers_in
from .text_parts import longest_in_order, message_body

_PATH = {
    "type": "string",
    "minLength": 1,
    "x-template": "text",
    "description": "File to read, relative to the workspace.",
}
_FLAGS = {"multiline": re.M, "ignorecase": re.I, "dotall": re.S}
_BODY_ONLY = {
    "type": "boolean",
    "default": False,
    "description": "Read only a message's body: ignore its leading header lines (To:, From:, Cc:, "
    "Bcc:, Subject:, Date:, Reply-To:, Sent:, also in `**bold**`) up to the first blank line, so "
    "an address or a subject cannot satisfy what the body must say.",
}
NUMBERS_DOC = (
    " An item that is only a number (`8`, `1253.5`, `1,253.50`) matches a whole number of the same "
    "value in any of its forms (`1,253.50`, `1253.5`, `1253.50`; `116`, `116.0`), never digits inside "
    "a longer number, a date, a time, a range or a code; a number with a leading zero (`076052`) "
    "matches only as those digits. A whole number from 0 to 100 also matches in English words, in "
    "any case, as whole words (`6`: `six`, `Six`; `21`: `twenty-one`, `twenty one`), never inside "
    "another word (`someone`, `often`) or a larger number or fraction (`two hundred`, `thirty-six`, "
    "`two and a half`). Any other item is a substring whose leading and trailing digits, if any, may "
    "not continue a longer number (`8 overdue` is not found in `18 overdue`)."
)


def _norm(text: str, case_sensitive: bool, squash: bool) -> str:
    if squash:
        text = " ".join(text.split())
    return text if case_sensitive else text.casefold()


def _found(item: str, hay: str, numbers: list, case_sensitive: bool, squash: bool) -> bool:
    """Whether `item` is in `hay` (already normalised): a bare number as a whole number of the same
    value, in digits or (0 to 100) in words (`numbers_in(hay)`), any other item as a substring whose
    edge digits end where it does."""
    if bare_number(item) is not None:
        return number_found(numbers, bare_number(item) or "")
    want = _norm(item, case_sensitive, squash)
    if not want:
        return True
    if not (want[0].isdigit() or want[-1].isdigit()):
        return want in hay
    rx = ("(?<![0-9])" if want[0].isdigit() else "") + re.escape(want) + ("(?![0-9])" if want[-1].isdigit() else "")
    return re.search(rx, hay) is not None


def fraction_found(
    text: str, contains: list[str], not_contains: list[str], *, case_sensitive: bool, squash: bool
) -> tuple[float, list[str], int]:
    """(score, problems, total) for required and forbidden strings in `text` (see `_found`): the
    matching of `text_contains`, `markdown_section` and `message_sent`."""
    hay = _norm(text, case_sensitive, squash)
    numbers = numbers_in(hay) if any(bare_number(s) is not None for s in [*contains, *not_contains]) else []
    problems = []
    for s in contains:
        if not _found(str(s), hay, numbers, case_sensitive, squash):
            problems.append(f"missing {short(s, 60)}")
    for s in not_contains:
        if _found(str(s), hay, numbers, case_sensitive, squash):
            problems.append(f"forbidden {short(s, 60)} present")
    total = len(contains) + len(not_contains)
    return ((total - len(problems)) / total if total else 1.0), problems, total


def _short_numbers_only(config: dict) -> list[tuple[tuple, str, str]]:
    """A check whose every required string is a number of one or two characters can pass by luck."""
    items = as_list(config.get("contains"))
    if not items or not all((b := bare_number(i)) is not None and len(b) < 3 for i in items):
        return []
    shown = ", ".join(repr(str(i)) for i in items[:5])
    return [
        (
            ("contains",),
            f"every string this check requires is a one- or two-character number ({shown}), "
            "which an answer can contain by chance",
            "require each number with the words that say what it counts "
            '(e.g. "8 invoices overdue"), or grade it in a structured output with json_field_equals '
            "or numeric_close",
        )
    ]


def _summary(problems: list[str], total: int, what: str) -> str:
    if not problems:
        return f"all {total} {what} satisfied"
    more = f"; +{len(problems) - 3} more" if len(problems) > 3 else ""
    return f"{total - len(problems)}/{total} {what} satisfied: " + "; ".join(problems[:3]) + more


@register("check", "text_contains")
class TextContains(Check):
    """A text file contains every given string (score = fraction found) and none of `not_contains`.

    An item that is only a number is found as a whole number of that value, in digits or (0 to 100)
    in English words ("6" in "six blocked items"), never as digits or letters inside something else.
    """

    type = "text_contains"
    reads_only = True
    reads_trajectory = False
    schema = {
        "type": "object",
        "required": ["path"],
        "anyOf": [{"required": ["contains"]}, {"required": ["not_contains"]}],
        "properties": {
            "path": _PATH,
            "contains": strings("String or list of strings that must all appear." + NUMBERS_DOC),
            "not_contains": strings("String or list of strings that must not appear (numbers as in `contains`)."),
            "case_sensitive": {"type": "boolean", "default": True, "description": "Compare case-sensitively."},
            "normalize_whitespace": {
                "type": "boolean",
                "default": False,
                "description": "Collapse runs of whitespace (incl. newlines) "
                "to one space on both sides before comparing.",
            },
            "body_only": _BODY_ONLY,
        },
    }

    @classmethod
    def static_problems(cls, config: dict) -> list[tuple[tuple, str, str]]:
        return _short_numbers_only(config)

    def run(self, ctx: CheckContext) -> tuple:
        text = ctx.read_text(self.get("path"))
        if self.get("body_only"):
            text = message_body(text)
        score, problems, total = fraction_found(
            text,
            as_list(self.get("contains")),
            as_list(self.get("not_contains")),
            case_sensitive=self.get("case_sensitive"),
            squash=self.get("normalize_whitespace"),
        )
        return score, _summary(problems, total, "string checks")


_LIST_MARKER = re.compile(r"(?m)^[ \t]{0,16}\d{1,3}[.)][ \t]")  # as far in as the count patterns look
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b\.?"
)
# a day of a date written out ("13 August 2025", "March 3, 2026"): part of the date, not a figure
_WRITTEN_DAY = re.compile(
    rf"(?i)\b\d{{1,2}}(?:st|nd|rd|th)?[ \t]+(?!may\b){_MONTH}\b|\b{_MONTH}[ \t]+\d{{1,2}}(?:st|nd|rd|th)?\b"
)  # "14 may be late" is a number, "May 14" a date


_DECIMAL = re.compile(r"\d+(?:[.,]\d+)+")


def small_counts(text: str) -> set[int]:
    """The different whole numbers from 0 to 100 that `text` states on their own, in digits or
    words (see `numbers_in`): the range counts fall in. Decimals, larger numbers and years, days
    of dates written out and list markers aside ("RSA 2048", "89,69", "13 August 2025", "2.")."""
    out = set()
    plain = _WRITTEN_DAY.sub(" ", _LIST_MARKER.sub(" ", text))
    plain = re.sub(r"\b(\d+)[.,]0+\b", r"\1", plain)  # 15.0 and 15,00 are the whole number 15
    plain = _DECIMAL.sub(" ", plain)  # 89,69 and 1,253.50 are one amount each, not counts
    seen: set[str] = set()
    for written, negative in numbers_in(plain):
        if negative or not re.fullmatch(r"\d{1,3}", written) or written in seen:
            continue  # only a plain whole number; a decimal comma's parts are not numbers of their own
        seen.add(written)
        if int(written) <= 100:
            out.add(int(written))
    return out


def compile_patterns(patterns: list[str], flags: list[str]) -> list[re.Pattern]:
    bits = 0
    for f in flags:
        if f not in _FLAGS:
            raise CheckFailure(f"unknown regex flag {f!r} (use {', '.join(_FLAGS)})")
        bits |= _FLAGS[f]
    out = []
    for p in patterns:
        try:
            out.append(re.compile(str(p), bits))
        except re.error as e:
            raise CheckFailure(f"invalid regex {p!r}: {e}") from None
    return out


@register("check", "text_matches")
class TextMatches(Check):
    """Every regex matches the file at least `count` times (score = fraction of patterns satisfied)."""

    type = "text_matches"
    reads_only = True
    reads_trajectory = False
    schema = {
        "type": "object",
        "required": ["path", "pattern"],
        "properties": {
            "path": _PATH,
            "pattern": strings("Python regex, or list of regexes that must all match."),
            "flags": {
                "type": "array",
                "items": {"enum": list(_FLAGS)},
                "default": [],
                "description": "Regex flags: `multiline`, `ignorecase`, `dotall`.",
            },
            "count": {
                "type": "integer",
                "minimum": 1,
                "default": 1,
                "description": "Minimum number of (non-overlapping) matches per pattern.",
            },
            "max_count": {
                "type": "integer",
                "minimum": 0,
                "description": "Maximum number of matches per pattern (0 = must not match).",
            },
            "in_order": {
                "type": "boolean",
                "default": False,
                "description": "The patterns must also match in the order given, each after the one "
                "before (table rows in a required order, steps in sequence). Only the largest set of "
                "patterns whose matches come in that order counts as satisfied (the longest in-order "
                "run, not necessarily adjacent), so two rows swapped in a six-row table score 5/6 and "
                "a reversed table 1/6.",
            },
            "body_only": _BODY_ONLY,
            "max_numbers": {
                "type": "integer",
                "minimum": 1,
                "description": "At most this many different whole numbers from 0 to 100 (the range "
                "counts fall in) in the text, in digits or words (decimals, larger numbers, years, "
                "dates and list markers aside), else the check scores 0: a message that lists "
                "every count it can think of does not hit the right one by chance.",
            },
        },
    }

    def run(self, ctx: CheckContext) -> tuple:
        text = ctx.read_text(self.get("path"))
        if self.get("body_only"):
            text = message_body(text)
        if (most := self.get("max_numbers")) is not None and len(found := small_counts(text)) > most:
            shown = ", ".join(str(n) for n in sorted(found)[:15])
            return (
                0.0,
                f"{len(found)} different whole numbers up to 100 ({shown}...), more than {most}: a list of guesses",
                {},
            )
        pats = compile_patterns(as_list(self.get("pattern")), as_list(self.get("flags")))
        lo, hi = int(self.get("count")), self.get("max_count")
        problems, counts, bad = [], {}, set()
        for i, rx in enumerate(pats):
            n = 0
            for _ in rx.finditer(text):
                n += 1
                if n > max(lo, hi or 0):
                    break
            counts[rx.pattern] = n
            if hi is not None and n > hi:
                problems.append(f"/{_shown(rx)}/ matched more than {hi} time(s)")
            elif n < lo and not (hi == 0):
                problems.append(f"/{_shown(rx)}/ matched {n} time(s), need {lo}")
            else:
                continue
            bad.add(i)
        if self.get("in_order") and hi != 0:
            chain = set(longest_in_order(text, pats))
            problems += [
                f"/{_shown(rx)}/ (pattern {i + 1}) matched out of order"
                for i, rx in enumerate(pats)
                if i not in chain and i not in bad
            ]
        total = len(pats)
        score = (total - len(problems)) / total if total else 1.0  # no patterns: nothing to miss
        return score, _summary(problems, total, "patterns"), {"counts": counts}


def _shown(rx: re.Pattern) -> str:
    return rx.pattern[:60].replace("\n", "\\n").replace("\t", "\\t")


_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+\S")


def _headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line index, level, text) of ATX and setext headings outside fenced code."""
    out, fence = [], None
    for i, line in enumerate(lines):
        m = _FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)[0]
            elif m.group(1)[0] == fence:
                fence = None
            continue
        if fence:
            continue
        m = _ATX.match(line)
        if m:
            out.append((i, len(m.group(1)), (m.group(2) or "").strip()))
        elif (
            i > 0
            and lines[i - 1].strip()
            and re.match(r"^ {0,3}(=+|-+)[ \t]*$", line)
            and not _ATX.match(lines[i - 1])
            and not _ITEM.match(lines[i - 1])
            and not (out and out[-1][0] == i - 1)
        ):
            out.append((i - 1, 1 if line.strip()[0] == "=" else 2, lines[i - 1].strip()))
    return out


def _clean_heading(text: str) -> str:
    text = re.sub(r"[*_`]+", "", text)
    return " ".join(text.split()).casefold().rstrip(":")


@register("check", "markdown_section")
class MarkdownSection(Check):
    """A Markdown file has a heading (or several), optionally with required text and list items.

    A section runs to the next heading of the same or a higher level. Each heading scores the
    fraction of its criteria met (found, each `contains` string, `min_items`), 0 if missing;
    the check scores the mean over `heading`/`headings`.
    """

    type = "markdown_section"
    reads_only = True
    reads_trajectory = False
    schema = {
        "type": "object",
        "required": ["path"],
        "oneOf": [{"required": ["heading"]}, {"required": ["headings"]}],
        "properties": {
            "path": _PATH,
            "heading": {
                "type": "string",
                "minLength": 1,
                "x-template": "text",
                "description": "Heading text (case, emphasis and trailing colon ignored).",
            },
            "headings": {
                "type": "array",
                "minItems": 1,
                "x-template": "value",
                "items": {"type": ["string", "number"], "x-template": "text"},
                "description": "Several headings that must all exist, each checked like `heading`.",
            },
            "match": {
                "enum": ["exact", "contains", "regex"],
                "default": "exact",
                "description": "How `heading` is compared with heading text.",
            },
            "level": {
                "type": "integer",
                "minimum": 1,
                "maximum": 6,
                "description": "Required heading level (1 = `#`); any level if omitted.",
            },
            "contains": strings(
                "Strings that must appear inside the section (each section, with `headings`); "
                "an item that is only a number matches as in `text_contains`."
            ),
            "case_sensitive": {
                "type": "boolean",
                "default": False,
                "description": "Compare `contains` strings case-sensitively.",
            },
            "min_items": {
                "type": "integer",
                "minimum": 0,
                "description": "Minimum number of list items (`-`, `*`, `+`, `1.`) in the section.",
            },
        },
    }

    def _is_match(self, want: str, text: str) -> bool:
        mode = self.get("match")
        if mode == "regex":
            return compile_patterns([want], ["ignorecase"])[0].search(text) is not None
        got, want = _clean_heading(text), _clean_heading(want)
        return got == want if mode == "exact" else want in got

    def _section(self, want: str, lines: list[str], heads: list) -> tuple[float, list[str], int]:
        """(score, problems, list items) for one wanted heading."""
        level = self.get("level")
        found = [k for k, h in enumerate(heads) if (level is None or h[1] == level) and self._is_match(want, h[2])]
        if not found:
            have = ", ".join(short(h[2], 40) for h in heads[:8]) or "none"
            return 0.0, [f"heading {want!r}{f' (level {level})' if level else ''} not found; headings: {have}"], 0
        start, lvl, _ = heads[found[0]]
        end = next((h[0] for h in heads[found[0] + 1 :] if h[1] <= lvl), len(lines))
        skip = 2 if start + 1 < len(lines) and re.match(r"^ {0,3}(=+|-+)[ \t]*$", lines[start + 1]) else 1
        body_lines = lines[start + skip : end]
        _, problems, total = fraction_found(
            "\n".join(body_lines),
            [str(c) for c in as_list(self.get("contains"))],
            [],
            case_sensitive=self.get("case_sensitive"),
            squash=True,
        )
        problems = [f"{p} in section {want!r}" for p in problems]
        items = sum(1 for ln in body_lines if _ITEM.match(ln))
        if self.get("min_items") is not None:
            total += 1
            if items < self.get("min_items"):
                problems.append(f"{items} list item(s) in section {want!r}, need {self.get('min_items')}")
        return (1 + total - len(problems)) / (1 + total), problems, items

    def run(self, ctx: CheckContext) -> tuple:
        lines = ctx.read_text(self.get("path")).split("\n")
        heads = _headings(lines)
        wanted = [str(h) for h in as_list(self.get("headings"))] or [self.get("heading")]
        scores, problems, items = [], [], {}
        for want in wanted:
            score, probs, items[want] = self._section(want, lines, heads)
            scores.append(score)
            problems += probs
        score = sum(scores) / len(scores)
        what = f"{len(wanted)} section(s)" if len(wanted) > 1 else f"section {wanted[0]!r}"
        if not problems:
            return score, f"{what} found with all criteria", {"items": items}
        more = f"; +{len(problems) - 3} more" if len(problems) > 3 else ""
        return score, "; ".join(problems[:3]) + more, {"items": items}


@register("check", "line_count")
class LineCount(Check):
    """The number of lines in a text file lies within [min, max]."""

    type = "line_count"
    reads_only = True
    reads_trajectory = False
    schema = {
        "type": "object",
        "required": ["path"],
        "anyOf": [{"required": ["min"]}, {"required": ["max"]}],
        "properties": {
            "path": _PATH,
            "min": {"type": "integer", "minimum": 0, "description": "Minimum number of lines."},
            "max": {"type": "integer", "minimum": 0, "description": "Maximum number of lines."},
            "count_blank": {
                "type": "boolean",
                "default": False,
                "description": "Count blank (whitespace-only) lines too.",
            },
        },
    }

    def run(self, ctx: CheckContext) -> tuple:
        lines = ctx.read_text(self.get("path")).splitlines()
        if not self.get("count_blank"):
            lines = [ln for ln in lines if ln.strip()]
        n, lo, hi = len(lines), self.get("min"), self.get("max")
        ok = (lo is None or n >= lo) and (hi is None or n <= hi)
        bounds = f"[{lo if lo is not None else 0}, {hi if hi is not None else '∞'}]"
        return (1.0 if ok else 0.0), f"{n} line(s), {'within' if ok else 'outside'} {bounds}", {"lines": n}
