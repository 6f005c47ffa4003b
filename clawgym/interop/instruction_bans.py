"""What a clause of the instruction forbids: prohibitions of a file or a folder ("do not modify X", "X is
read-only", "nothing in tests/ may change"), "only X", their exceptions ("except config/local.yaml") and
"leave everything else alone"."""

from __future__ import annotations

import re

from .instruction_clauses import Mention, group_ending_at, group_starting_at
from .instruction_requests import VERB_ANY, VERBS

_NEG_LEAD = (
    r"\b(?:do not|don't|dont|never|must not|mustn't|should not|shouldn't|may not|cannot|can't|can not|"
    r"are not to|is not to|not allowed to|not permitted to|no need to|don't need to|do not need to|"
    r"you don't have to|without|nor)\s+(?!forget\b|hesitate\b|just\b)(?:\w+\s+){0,2}?"
)
_NEG_PRE = re.compile(
    _NEG_LEAD + rf"(?:{VERB_ANY}|touch(?:ing)?|alter(?:ing)?|mess with|tamper with|write (?:to|into))\b"
    r"|\b(?:leave|keep)\b[^;!?\n]{0,90}?\b(?:unchanged|untouched|unmodified|as is|as-is|as they are|as it is|"
    r"as it was|as they were|intact|alone|the way (?:it is|they are)|in their original state|"
    r"in its original state|where (?:it is|they are))\b"
    r"|\b(?:hands off|keep your hands off|stay away from|steer clear of)\b"
    r"|\btreat\b[^;!?\n]{0,60}?\bas (?:a )?(?:reference|read[- ]only)\b"
)
_NEG_POST = re.compile(
    r"^[^;!?\n]{0,40}?\b(?:is|are|stays?|remains?|must stay|must remain|should stay|should remain|"
    r"needs? to stay|has to stay|have to stay|must be left|should be left|be left|is to stay|are to stay)"
    r"\s+(?:\w+\s+){0,2}?(?:unchanged|untouched|unmodified|read-only|read only|intact|as is|"
    r"as it (?:is|was)|as they (?:are|were)|alone|the same|exactly as)\b"
    r"|^[^;!?\n]{0,40}?\b(?:is|are)\s+(?:\w+\s+)?(?:read-only|read only|fine|correct|right|ok|okay|"
    r"reference only|for reference|off limits|off-limits|third-party and stays untouched)\b"
    r"|^[^;!?\n]{0,30}?\b(?:must|should|may|can)(?: not|n't)\s+(?:be\s+)?(?:\w+\s+)?"
    rf"(?:{VERB_ANY}|touched|altered|change)\b"
    r"|^[^;!?\n]{0,20}?\b(?:stays?|remains?)\s+(?:exactly\s+)?as\b|^\s+(?:itself\s+)?(?:should|must)\s+be\s+left\b"
)
_NOTHING = re.compile(
    r"\b(?:nothing|no file|no files|none of the files|none of them|no changes?)\b[^;!?\n]{0,60}?"
    rf"\b(?:may|should|must|can|is to|are to|will|has to|have to|need to)\s+(?:\w+\s+)?(?:be\s+)?"
    rf"(?:{VERB_ANY}|differ|go|touched|altered)\b|\bno (?:changes|edits|modifications)\b[^;!?\n]{{0,40}}?"
    r"\b(?:to|in|under|are needed|needed)\b|\b(?:nothing|none) (?:in|under|inside) "
)
ONLY = re.compile(
    r"\b(?:only|just)\s+(?:\w+\s+){0,1}?(?:edit|modify|change|touch|adjust|update|fix|patch|alter|write to|rewrite)\b"
    r"|\b(?:edit|modify|change|touch|adjust|update|fix|patch|alter|rewrite)\s+only\b"
    r"|\bthe only (?:file|files|thing|one)s? (?:you|that)?\s*(?:\w+\s+){0,3}?(?:edit|modify|change|touch|adjust|update|"
    r"fix|patch|alter)\b"
    r"|\b(?:limit|restrict|confine) (?:your|all|the)? ?(?:changes|edits|work)\s+to\b"
    r"|\b(?:restrict|confine|limit) yourself to\b|\bstick to\b|\bkeep (?:your )?(?:changes|edits) (?:to|within)\b"
    r"|\b(?:changes|edits) (?:should|must) (?:only )?(?:be )?(?:limited|confined|restricted) to\b"
    r"|\b(?:edit|modify|change|touch) nothing (?:but|except|other than)\b|\bnothing (?:but|except|other than)\b"
    r"|\bno (?:other )?files? (?:other than|except|but)\b"
    r"|\bonly\b(?=(?:[^;!?.]|\.(?=\S)){0,120}?\b(?:should|may|can|must|need to|needs to|is to|are to|will)\s+(?:be\s+)?"
    r"(?:change|changed|edited|modified|updated|touched)\b)"
    r"|\b(?:is|are) the (?:only|sole|one) (?:files?|ones?|thing)\b"
)
_EXCEPT = re.compile(
    r"\b(?:except(?: for)?|other than|apart from|besides|but not|aside from|save for|excluding|"
    r"with (?:one|the) exception(?: of)?|the exception is)\b"
)
EVERYTHING_ELSE = re.compile(
    r"\b(?:everything else|all other (?:files|inputs|documents)|any other (?:files?|inputs?)|"
    r"the other (?:files|inputs)|the rest(?! of (?:each|the|this|that|every) (?:file|line|row|section)\b)"
    r"(?: of the (?:files|inputs|workspace|repo))?|"
    r"anything else|other files|all the others|every other file|the remaining (?:\w+ )?files|"
    r"my other (?:\w+ )?files|the other (?:\w+ )?files)\b"
)


def banned_mentions(lower: str, mentions: list[Mention], previous: list[Mention]) -> list[Mention] | None:
    """The mentions a prohibition in this clause covers (None: the clause prohibits nothing)."""
    found: list[Mention] = []
    hit = False
    for neg in _NEG_PRE.finditer(lower):  # "do not modify X", "leave X alone", "hands off X"
        hit = True
        objects = [m for m in mentions if m.start >= neg.start() - 1 and m.start - neg.end() <= 90]
        inside = [m for m in mentions if neg.start() <= m.start < neg.end()]
        found += inside + [m for m in objects if m not in inside]
    for m in mentions:  # "X must stay unchanged", "X is read-only", "X is fine as it is"
        if _NEG_POST.match(lower[m.end :]) and not _stated_as_wrong(lower[m.end :]):
            hit = True
            found += group_ending_at(mentions, m, lower)
    for neg in _NOTHING.finditer(lower):  # "nothing in tests/ may change", "no changes to the data"
        hit = True
        found += [m for m in mentions if neg.start() <= m.start <= neg.end() + 20]
    if not hit:
        return None
    if (
        not mentions
        and previous
        and re.search(
            rf"\b(?:{VERBS}|touch|alter|leave|keep)\w*\s+(?:it|them|those|these|"
            r"both|either|that file|the file|the files|those files)\b",
            lower,
        )
    ):
        return list(previous)
    return list(dict.fromkeys(found))


def _stated_as_wrong(after: str) -> bool:
    return bool(re.match(r"^(?:[^;!?.]|\.(?=\S)){0,30}\b(?:wrong|broken|outdated|out of date|incorrect)\b", after))


def rest_is_left_alone(lower: str) -> bool:
    return bool(
        re.search(
            r"\b(?:alone|untouched|unchanged|as is|as it is|as they are|the same|intact|be left)\b|"
            r"\b(?:fine|correct)\b|shouldn't change|should not change|must not change|took me ages",
            lower,
        )
    )


def excepted_mentions(lower: str, mentions: list[Mention]) -> list[Mention]:
    """The mentions right after "except / other than / apart from" (and listed with them)."""
    m = _EXCEPT.search(lower)
    if not m:
        return []
    after = [men for men in mentions if men.start >= m.end() and men.level == "file"]
    if not after or len(lower[m.end() : after[0].start].split()) > 4:
        return []
    return group_starting_at(mentions, after[0], lower)
