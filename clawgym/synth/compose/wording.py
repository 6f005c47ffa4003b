"""The wording check of a composed request: rules that catch sentences a person would not write or
could misread, run on every instruction the compose route makes (a draw that fails is drawn again,
route.py) and over thousands of them in the tests.

The rules (each `Hit` names its rule and quotes the words):
- raw-name: a column name with underscores used as a word ("per sponsored_by"), outside the places
  a column is named as such (a column list, "the x column", quotes, paths);
- field-label: a column's name written out in words where the catalog gives it a phrase ("per
  sponsored by" where the catalog says "sponsor", "the keep days");
- bare-name: a column name the catalog phrases otherwise, used as a noun ("per claimed", "the
  lowest miles", "a miles below 50");
- value-as-noun: a yes/no value or a value label standing for the records ("the no donations",
  "just the low ones (priority)");
- article: "a" before a vowel sound or "an" before a consonant ("a added on");
- doubled-word: the same word twice in a row;
- name-value: a column's name straight before one of its values ("I only care about repeats
  monthly");
- per-adjective: "per" or "each" before a participle or adjective ("per booked");
- dangling-aside: a remark in brackets straight after another bracket or a path ("... .csv (I need
  to send the emails)");
- unfilled-slot: a template slot left in the text ("{field}");
- stated-count: a count given away ("(8 here)", "there are 12 of them");
- given-answer: a graded figure (a total, an average, a count in a message) written in the request;
- possessive-phrase: a possessive on a phrase ("each band of the number of downloads in the last 30
  days's total");
- title-name: a heading or subject line the request asks for in quotes ('# Is returned breakdown',
  'Subject: Po status update') that names a column by its file name where the catalog gives it a
  phrase: the output must carry that title, so it has to read right too (raw names with
  underscores in it are raw-name hits).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Iterable

from .lexicon import Lexicon, label


@dataclass(frozen=True)
class Hit:
    rule: str
    words: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.words!r}"


@dataclass(frozen=True)
class Vocabulary:
    """What the rules need of a domain: column names (as files write them), each with the phrases
    the catalog gives it (noun and plural first, then its clauses), and which names read as
    adjectives (a yes/no column, a participle: "claimed", "issued") rather than nouns."""

    names: dict[str, tuple[str, ...]]  # raw column name -> its phrases
    adjectives: frozenset[str] = frozenset()
    values: dict[str, tuple[str, ...]] = field(default_factory=dict)  # raw name -> the values it holds

    @classmethod
    def of(cls, catalog: Any, domain: str) -> "Vocabulary":
        """Every column a task over `domain` can hold: its fields under all their names, its derived
        columns and the fields of the domains it joins."""
        names: dict[str, tuple[str, ...]] = dict(_ADDED)
        adjectives: set[str] = set()
        values: dict[str, tuple[str, ...]] = {}
        dom = catalog.domains[domain]
        for d in [dom] + [catalog.domains[o] for o in dom.relations if o in catalog.domains]:
            lex = Lexicon(catalog, d, [])
            for f in d.fields:
                said = lex.said(f.name)
                phrases = (said.noun, said.plural, *said.clauses.values())
                for raw in (f.name, *map(str, f.options.get("names") or ())):
                    names.setdefault(raw, phrases)
                    if said.clauses or re.fullmatch(r"[a-z]+ed", raw):
                        adjectives.add(raw)
                    if f.type in ("choice", "status"):
                        values.setdefault(raw, tuple(dict.fromkeys(map(str, f.options.get("values") or ()))))
            for x in d.derived:
                said = lex.said(x.name)
                names.setdefault(x.name, (said.noun, said.plural))
        return cls(names, frozenset(adjectives), values)

    @cached_property
    def phrases(self) -> re.Pattern:
        words = [p for ps in self.names.values() for p in ps if p]
        return re.compile(rf"(?<![\w-])(?:{_alternation(words)})(?![\w-])", re.I)

    @cached_property
    def rules(self) -> list[tuple[str, re.Pattern]]:
        return _rules(self)

    @cached_property
    def file_names(self) -> re.Pattern | None:
        """The column names (in words) that are not how the catalog names the column: "is returned"
        where it says "return status", "status" where it says "run result"."""
        words = [
            label(raw)
            for raw, ps in self.names.items()
            if ps
            and label(raw).lower() not in _FUNCTION_WORDS  # a column called "by" is no word of a title
            and not re.search(rf"(?<![\w-]){re.escape(label(raw))}(?![\w-])", " | ".join(ps[:2]), re.I)
        ]
        return re.compile(rf"(?<![\w-])(?:{_alternation(words)})(?![\w-])", re.I) if words else None


# columns operations add, with the phrase the request gives them (lexicon.py)
_ADDED = {
    name: ("number of days since",) for name in ("days_ago", "age_days", "days_since", "days_open", "days_elapsed")
}
_ADDED["weekday"] = ("day of the week", "days of the week")
_FUNCTION_WORDS = frozenset({"by", "of", "in", "on", "at", "to", "for", "from", "with", "per", "and", "or", "the", "a"})

# where a column is named as such (its label), not used as a word
_QUOTED = r"(?<!\w)'[^'\n]*'(?!\w)|\"[^\"\n]*\"|`[^`\n]*`"
_LABELS = (
    _QUOTED,
    r"\S*/\S*",  # paths
    r"\S+\.(?:csv|json|jsonl|md|txt|log)\b",
    r"\b\w+(?:,\w+)+\b",  # a header written out: key,field,value
    # "the columns a, b and c", "header a,b", "first column a", "a days_open column", "(state column)"
    r"(?:\b\w+\s+)?\b(?:columns|headers?|keys)\b:?\s+(?:\w[\w.-]*(?:\s*(?:,|\band\b)\s*))*\w[\w.-]*",
    r"(?:\b\w+\s+)?\bcolumn\s+\w+",
    r"\b\w+\s+columns?\b",
    r"\(\s*\w+\s*\)",  # (total_amount)
    r"\((?:\w+,\s*)*\w+ as numbers\)",
    r"\b(?:called|named)\s+\w+",
)
_LABEL_RX = re.compile("|".join(f"(?:{rx})" for rx in _LABELS), re.I)
_SNAKE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
# where a word stands as a noun: "per claimed", "the lowest miles", "except keep days"
_NOUN_AT = (
    r"\b(?:(?:per|each|every|by|whose|about|except|different|with an?)|"
    r"(?:the|a|an|its|their)?\s*(?:highest|lowest|total|average|most recent|earliest))\s+"
)
_PARTICIPLES = re.compile(
    r"\b(?:per|each)\s+(\w+ed|paid|done|due|open|late|booked)\b(?=\s*(?:[,.;:)]|$|\s+(?:in|to|from|and|the|with|is|are)\b))",
    re.I | re.M,
)
_YES_NO = re.compile(r"\b(?:the|just the|only the|all the)\s+(?:yes|no|true|false)\b(?![\w-])(?!\s+(?:or|and)\b)", re.I)
_ONES = re.compile(r"\b(?:the|just the|only the)\s+[\w-]+\s+ones\s+\((?!\d)[\w ]+\)")
_DOUBLED = re.compile(r"\b(\w+)\s+\1\b", re.I)
_ARTICLE = re.compile(r"(?<![\w'/.-])(a|an)\s+([A-Za-z][\w-]*)")
_STATED = re.compile(
    r"\(\s*\d[\d,.]*\s+(?:here|of them|in all|in total|rows?)\s*\)|\bthere (?:are|were) \d+\b|\b\d+ of them\b", re.I
)
_ASIDE = re.compile(
    r"\)\s+\([^)]*\)|(?:\S+/\S*|\S+\.(?:csv|json|jsonl|md|txt|log))\s+\((?:I|I'm|I've|we|we're|my|our)\b[^)]*\)"
)
_SLOT = re.compile(r"\{[a-z_.]+\}")
_POSSESSIVE = re.compile(
    r"\b(?:each|every)\s+(?:[\w-]+\s+){1,8}?(?:of|in|for|since|from|per)\s+(?:[\w-]+\s+){0,8}?[\w-]+'s\b", re.I
)
# a heading or subject line asked for word for word: '# Title', "## Title", 'Subject: Title'
_TITLE = re.compile(r"(?<!\w)'(?:#{1,6}\s+|Subject:\s*)([^'\n]+)'|\"(?:#{1,6}\s+|Subject:\s*)([^\"\n]+)\"")


def _blank(text: str, rx: re.Pattern) -> str:
    """`text` with what `rx` matches masked (same length, so positions hold; no words or spaces
    left, so nothing reads across the mask)."""
    return rx.sub(lambda m: "#" * len(m.group(0)), text)


def _an(word: str) -> bool:
    w = word.lower()
    if re.match(r"(?:one\b|once|eu|uni|us[eu]|uti|ur[io])", w):
        return False
    return bool(re.match(r"(?:[aeiou]|hour|honest)", w))


def check(text: str, vocab: Vocabulary | None = None, answers: Iterable[str] = ()) -> list[Hit]:
    """The rules' hits on one request (empty when it reads right)."""
    hits: list[Hit] = []
    plain = _blank(text, _LABEL_RX)
    unquoted = _blank(text, re.compile(_QUOTED + r"|\S*/\S*"))
    for m in _SNAKE.finditer(plain):
        hits.append(Hit("raw-name", _around(text, m)))
    if vocab is not None:
        hits += _names(text, plain, unquoted, vocab)
    for m in _YES_NO.finditer(unquoted):
        hits.append(Hit("value-as-noun", _around(text, m)))
    for m in _ONES.finditer(unquoted):
        hits.append(Hit("value-as-noun", _around(text, m)))
    for m in _ARTICLE.finditer(unquoted):
        if (m.group(1).lower() == "an") != _an(m.group(2)) and not m.group(2).isupper():
            hits.append(Hit("article", _around(text, m)))
    for m in _DOUBLED.finditer(unquoted):
        if not m.group(1).isdigit():
            hits.append(Hit("doubled-word", _around(text, m)))
    for m in _PARTICIPLES.finditer(unquoted):
        hits.append(Hit("per-adjective", _around(text, m)))
    for m in _ASIDE.finditer(text):
        hits.append(Hit("dangling-aside", _around(text, m)))
    for m in _SLOT.finditer(text):
        hits.append(Hit("unfilled-slot", _around(text, m)))
    for m in _STATED.finditer(text):
        hits.append(Hit("stated-count", _around(text, m)))
    for m in _POSSESSIVE.finditer(unquoted):
        hits.append(Hit("possessive-phrase", _around(text, m)))
    hits += _titles(text, vocab)
    hits += _given(text, answers)
    return hits


def _titles(text: str, vocab: Vocabulary | None) -> list[Hit]:
    """The rules a quoted heading or subject line must pass: no raw column name, and no column
    named by its file name where the catalog gives it a phrase."""
    hits = []
    for m in _TITLE.finditer(text):
        title = m.group(1) or m.group(2) or ""
        for n in _SNAKE.finditer(title):
            hits.append(Hit("raw-name", f"{title} ({n.group(0)})"))
        if vocab is not None and vocab.file_names is not None:
            for n in vocab.file_names.finditer(_blank(title, vocab.phrases)):
                hits.append(Hit("title-name", f"{title} ({n.group(0)})"))
    return hits


def _names(text: str, plain: str, unquoted: str, vocab: Vocabulary) -> list[Hit]:
    said = _blank(plain, vocab.phrases)  # the catalog's phrases read right where they stand
    hits = []
    for rule, rx in vocab.rules:
        for m in rx.finditer(said):
            hits.append(Hit(rule, _around(text, m)))
    return hits


def _alternation(words: Iterable[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True))


def _rules(vocab: "Vocabulary") -> list[tuple[str, re.Pattern]]:
    units, labels, adjectives = [], [], []
    for raw, ps in vocab.names.items():
        if not ps:
            continue
        words, noun = label(raw).lower(), ps[0].lower()
        if re.search(rf"\bin {re.escape(words)}$", noun):
            units.append(words)  # a unit used as a noun: "a miles below 50"
        elif re.search(rf"(?<![\w-]){re.escape(words)}(?![\w-])", " | ".join(p.lower() for p in ps[:2])):
            continue  # the name is itself the catalog's noun ("pocket money" in "pocket money earned")
        elif " " in words:
            labels.append(words)  # "per sponsored by", "the lowest age days"
        elif raw in vocab.adjectives:
            adjectives.append(raw)  # "per claimed", "the highest receipted"
    out = []
    article = r"\b(?:a|an)\s+"
    # a name straight before one of its values: "I only care about repeats monthly", "except keep days 365"
    pairs = [
        rf"(?:{re.escape(raw)}|{re.escape(label(raw))})\s+(?:=\s*)?(?:{_alternation(vals)})"
        for raw, vals in vocab.values.items()
        if vals and vocab.names.get(raw) and label(raw).lower() != vocab.names[raw][0].lower()
    ]
    if pairs:
        out.append(("name-value", r"(?<![\w-])(?:" + "|".join(pairs) + r")(?![\w-])"))
    # "each progress's total": a column's name as the owner of a figure where the catalog names it otherwise
    owners = [raw for raw, ps in vocab.names.items() if ps and label(raw).lower() not in ps[0].lower()]
    if owners:
        out.append(("bare-name", rf"\b(?:each|every)\s+({_alternation(owners)})'s\b"))
    if units:
        superlative = r"\b(?:the\s+)?(?:highest|lowest|most|least)\s+"
        rx = rf"(?:\b(?:a|an|per|each)\s+|{superlative})({_alternation(units)})\b(?!\s+columns?\b)"
        out.append(("bare-name", rx))
    if labels:
        out.append(("field-label", rf"(?:{_NOUN_AT}|{article})({_alternation(labels)})(?![\w-])"))
    if adjectives:
        out.append(("bare-name", rf"(?:{_NOUN_AT}|{article})({_alternation(adjectives)})\b(?!\s+columns?\b)"))
    return [(rule, re.compile(rx, re.I)) for rule, rx in out]


_PARAMETER = re.compile(
    r"\b(?:at|times|by|plus|minus|of|over|under|below|above|least|most|than|top|first)\b(?:\s+the)?\s*$", re.I
)


def _given(text: str, answers: Iterable[str]) -> list[Hit]:
    """A graded figure (not a small count, which may be a parameter like "the 6 with") in the text."""
    hits = []
    body = _blank(text, re.compile(r"`[^`\n]*`|\S*/\S*|\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}"))  # not in a quoted input line
    for value in dict.fromkeys(answers):
        try:
            number = float(value)
        except ValueError:
            continue
        if abs(number) < 1 or (number * 4).is_integer() and (abs(number) < 100 or number % 100 == 0):
            continue  # a round number: as likely a parameter of the request ("the 6 with", "at 0.50", "under 1300")
        forms = {value, f"{number:g}", f"{number:.2f}", f"{number:.1f}", f"{number:,.2f}"}
        for form in forms:
            for m in re.finditer(rf"(?<![\d.,]){re.escape(form)}(?![\d]|[.,]\d)", body):
                if _PARAMETER.search(body[max(0, m.start() - 16) : m.start()]):
                    continue  # a rate, a threshold or a cut the request sets ("at 11.44", "times 240")
                hits.append(Hit("given-answer", _around(text, m)))
                break
    return hits


def answers(checks: list[dict[str, Any]]) -> list[str]:
    """The figures a task's checks grade that a request could give away: numbers in the expected
    JSON fields and in the lines a text check looks for."""
    out: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, bool):
            return
        if isinstance(value, (int, float)):
            out.append(str(value))
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for c in checks:
        if c.get("type") == "json_field_equals":
            walk(c.get("fields"))
            walk(c.get("expected"))
        elif c.get("type") == "text_contains":
            for line in c.get("contains") or ():
                out += re.findall(r"-?\d+(?:\.\d+)?", str(line).split(":", 1)[-1])
    return out


def _around(text: str, m: re.Match) -> str:
    start, end = m.span()
    return text[max(0, start - 25) : end + 25].replace("\n", " ")


def check_spec(spec: dict[str, Any], vocab: Vocabulary | None) -> list[Hit]:
    """The rules' hits on a composed task spec's request, its graded figures included."""
    return check(str(spec.get("instruction", "")), vocab, answers(spec.get("checks") or []))
