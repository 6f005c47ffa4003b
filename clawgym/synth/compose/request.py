"""The request a composed task's persona writes: a greeting, a reason that fits what the chain does,
the input, each step in words drawn from its operation's ways of asking (operations.yaml) with every
column named as the catalog says it (lexicon.py), what must stay untouched and a closing, laid out
as a numbered list, bullets or prose."""

from __future__ import annotations

import random
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from .catalog import Catalog, Domain
from .lexicon import DELIVER_KINDS, Facts, Lexicon, fits, label
from .ops import CLEANING, FILTERS, OPERATIONS, SELECTING
from .delivered import numbered
from .state import State

CONNECT = ("Then", "After that,", "Next,", "Once that's done,", "Also", "And")
# slots of the deliverables and cleaning steps that name a column by a plain string
_COLUMN_SLOTS = ("field", "group", "rows", "cols", "key")
# slots holding a deliverable's own description of its figures ("the total duration s")
_FREE_SLOTS = ("what", "keys")
# when no reason of the domain fits the chain: what any such deliverable serves
_GENERIC = {
    "total": ("I need the totals for a report", "I have to report the figures this week"),
    "summary": ("I need the overall picture for a report", "I want to see how it breaks down"),
    "list": ("I need a clean list to work from", "I want a short list I can work through"),
    "reconcile": ("I doubt our records match the other copy", "our records and the other copy should agree"),
    "organise": ("the folder has become hard to find anything in",),
}


# a relation outside the persona's own household or team: a supplier is not sent the staff rota
# people a persona knows who would not want their working figures: outsiders to the work (suppliers,
# clients), and advisers and family helpers asked about other things (the accountant gets the books,
# not a contact list's head count)
_OUTSIDER = re.compile(
    r"\b(?:suppliers?|vendors?|clients?|customers?|landlord|carpool|contractor|accountant|bookkeeper|sponsor"
    r"|counselor|florist|consultant|teacher|mother)\b",
    re.I,
)


@lru_cache(maxsize=256)
def persona_of(root: Path, name: str) -> dict[str, Any]:
    """The first name, organisation and contacts (name, email; the profile lists the closest first;
    suppliers, clients and other outsiders left out) of a persona (read once per process)."""
    try:
        data = yaml.safe_load((root / "personas" / f"{name}.yaml").read_text(encoding="utf-8")) or {}
    except OSError:
        data = {}
    full = str(data.get("full_name") or data.get("name") or "Sam Rivera")
    contacts = tuple(
        (str(c["name"]), str(c["email"]))
        for c in data.get("contacts") or ()
        if isinstance(c, dict)
        and len(str(c.get("name", "")).split()) >= 2
        and "@" in str(c.get("email", ""))
        and not _OUTSIDER.search(str(c.get("relation", "")))
    )
    country = str(data.get("location") or "").rsplit(",", 1)[-1].strip()
    currency = str((data.get("facts") or {}).get("currency") or _CURRENCY_OF.get(country, "USD"))
    return {
        "first": full.split()[0].capitalize(),
        "org": data.get("organization") or "",
        "name": name,
        "contacts": contacts,
        "currency": _SIGN.get(currency, currency + " "),  # how an amount is marked where they live
        "decimal_comma": country not in _DECIMAL_POINT,  # exports with ';' and decimal commas are theirs
    }


# where a persona lives decides the money sign their exports carry and whether a decimal comma is theirs
_CURRENCY_OF = {
    "USA": "USD",
    "Canada": "CAD",
    "United Kingdom": "GBP",
    "Ireland": "EUR",
    "Portugal": "EUR",
    "Germany": "EUR",
    "Spain": "EUR",
    "France": "EUR",
    "Sweden": "SEK",
    "Norway": "NOK",
    "South Africa": "ZAR",
}
_SIGN = {"USD": "$", "CAD": "$", "GBP": "£", "EUR": "€"}
_DECIMAL_POINT = {"USA", "Canada", "United Kingdom", "Ireland", "Australia", "New Zealand"}


class _Default(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"  # left visible: the wording check rejects an unfilled slot


def _ask(catalog: Catalog, name: str, rng: random.Random, slots: dict[str, Any]) -> str:
    text = rng.choice(catalog.operations[name].ask).format_map(_Default(slots))
    return re.sub(r"\b(value|values) values\b", "values", text)  # "replacement value values"


def words(lex: Lexicon, slots: dict[str, Any]) -> dict[str, Any]:
    """An operation's slots in words: columns as the catalog names them, selections as clauses."""
    out: dict[str, Any] = {}
    for key, value in slots.items():
        if isinstance(value, str):
            col = lex.column(value) if key in _COLUMN_SLOTS else None
            out[key] = lex.said(col) if col is not None else value
        else:
            out[key] = lex.word(value)
    if isinstance(out.get("measure"), str):
        out["measure"] = _measure(lex, out["measure"])
    for key in _FREE_SLOTS:
        if isinstance(out.get(key), str):
            out[key] = relabel(lex, out[key])
    if isinstance(out.get("rules"), str):
        out["rules"] = _rules(lex, out["rules"])
    return out


def relabel(lex: Lexicon, text: str) -> str:
    """A deliverable's own description ("the total duration s (in seconds)", "their total on hand")
    with each figure's column named in the catalog's words: "the total duration in seconds"."""
    quoted = re.compile(r"(?<!\w)'[^'\n]*'(?!\w)|\"[^\"\n]*\"")
    parts = quoted.split(text)
    marks = quoted.findall(text)
    out = []
    for part in parts:
        for col in sorted(lex.words, key=lambda c: len(label(c)), reverse=True):
            noun = str(lex.said(col))
            rx = rf"\b(total|average|highest|lowest|most recent|earliest) {re.escape(label(col))}\b(?: \((?:in|to the) [^)]*\))?"

            def swap(m: re.Match, noun: str = noun) -> str:
                unit = re.search(r" \(((?:in|to the) [^)]*)\)$", m.group(0))
                if unit is None or unit.group(1) in noun or re.search(r"\bin \w+$", noun):
                    return f"{m.group(1)} {noun}"  # the noun says its unit already ("duration in seconds")
                return f"{m.group(1)} {noun} ({unit.group(1)})"

            part = re.sub(rx, swap, part)
        out.append(part)
    return "".join(p + (marks[i] if i < len(marks) else "") for i, p in enumerate(out))


def _measure(lex: Lexicon, text: str) -> str:
    """A summary's measure ("total downloads", "number of different role values") in the catalog's words
    (a precision it states, " to two decimals", kept at its end)."""
    tail = ""
    if m := re.fullmatch(r"(.+?)( to two decimals)", text):
        text, tail = m.group(1), m.group(2)
    return _measure_core(lex, text) + tail


def _person(lex: Lexicon, col: str) -> bool:
    """Whether a column holds people's names (told apart by the name as written)."""
    return any(f.name == col and f.type == "person" for f in lex.domain.fields)


def _measure_core(lex: Lexicon, text: str) -> str:
    m = re.fullmatch(r"number of different (.+) values", text)
    if m and (col := lex.column(m.group(1))):
        if _person(lex, col):
            # people are counted by the names written, which is what "different respondents" leaves open
            return f"number of different {lex.said(col)} names"
        return f"number of different {lex.said(col).plural}"
    m = re.fullmatch(r"(total|average|highest|lowest|most recent|earliest) (.+)", text)
    if m and (col := lex.column(m.group(2))):
        return f"{m.group(1)} {lex.said(col)}"
    return relabel(lex, text)


def _rules(lex: Lexicon, text: str) -> str:
    """Validation rules ("amount must be a number") with each column named in words."""
    for col in sorted(lex.words, key=len, reverse=True):
        text = re.sub(rf"(^|and ){re.escape(label(col))} must be", rf"\1the {lex.said(col)} must be", text)
    return text


def _order(lex: Lexicon, s: State, steps: list) -> str:
    """The order the rows are written in, in words."""
    running = next((p for n, p in steps if n == "running_total"), None)
    if s.order_words and running is not None:
        return f"the {lex.said(running['date'])}, earliest first (ties by the {lex.said(running['key'])})"
    if s.order:
        return f"the {lex.said(s.order[0])}, {'highest' if s.order[1] else 'lowest'} first"
    if numbered(s):  # M1 ... M23: a text sort puts M10 before M2, so the request says which order
        keys = sorted((str(r[s.domain.key]) for r in s.rows), key=lambda k: int(re.sub(r"\D", "", k)))
        short = next(k for k in keys if len(k) == len(keys[0]))
        long = next(k for k in keys if len(k) > len(short))
        return f"the {lex.said(s.domain.key)}, by its number ({short} before {long})"
    return f"the {lex.said(s.domain.key)}"


def facts(lex: Lexicon, steps: list, delivered: list, s: State, persona: str) -> Facts:
    """What the chain does, for choosing a reason that fits it."""
    kinds = {k for name, _ in delivered for k in DELIVER_KINDS.get(name, ())}
    for name, d in delivered:
        if name in ("group_aggregate", "group_json", "report_md") and str(d.slots.get("measure", "")).startswith(
            "total"
        ):
            kinds.add("total")
        if str(d.slots.get("measure", "")).startswith("number of"):
            kinds.add("count")
    used: set[str] = set()
    selects = _selected(lex, steps)
    groups = _columns(lex, [d.slots.get(k) for n, d in delivered if n in _SUMMARIES for k in _GROUP_SLOTS])

    shown: set[str] = set()  # the columns the deliverables show, list or summarise

    def note(value: Any, into: set[str] = used) -> None:
        if isinstance(value, str):
            col = lex.column(value)
            if col is not None:
                into.add(lex.canonical.get(col, col))
                for d in lex.domain.derived:
                    if d.name == col:
                        into.update(lex.canonical.get(c, c) for c in d.inputs())
        elif isinstance(value, (list, tuple)):
            for v in value:
                note(v, into)

    for name, p in steps:
        if name in CLEANING:
            continue  # tidying a column is not what the work is for
        for key, value in p.items():
            if key not in ("other_rows", "other_types", "rows", "path", "paths", "bad"):
                note(value)
    for name, d in delivered:
        for key in ("gcol", "col", "a", "group", "field", "rows", "cols"):
            note(d.slots.get(key), shown)
        if "list" in DELIVER_KINDS.get(name, ()):  # the columns a list shows are what it is for
            note(re.findall(r"\w+", str(d.slots.get("columns", "")).split(" (")[0]), shown)
        m = re.fullmatch(
            r"(?:total|average|highest|lowest) (.+?)(?: to two decimals)?", str(d.slots.get("measure", ""))
        )
        if m:
            note(m.group(1), shown)
    used |= shown
    values: dict[str, set[str]] = {}
    for col in s.columns:
        values[lex.canonical.get(col, col)] = {str(r.get(col, "")).strip().lower() for r in s.rows}
    ops = {n for n, _ in steps} | {n for n, _ in delivered}
    return Facts(kinds, used, ops, persona, values, selects, groups, shown)


_GROUP_SLOTS = ("gcol", "group", "rows", "cols")  # the slots of a summary naming the columns it groups by


def _selected(lex: Lexicon, steps: list) -> set[str]:
    """The canonical columns the chain keeps or drops rows by (its filters and selections)."""
    return _columns(lex, [p.get(k) for n, p in steps if n in FILTERS + SELECTING for k in ("field", "group")])


_EMPTY = ("none", "n/a", "-", "unassigned", "no one", "nobody")
_SUMMARIES = ("group_aggregate", "group_json", "share_of_total", "pivot", "report_md")


def _empty_group(lex: Lexicon, s: State, name: str, d: Any, noun: str) -> str:
    """Where a summary groups by a column some records leave empty ("none" for an episode with no
    sponsor), the sentence saying those records make a group of their own: a careful reader would
    otherwise leave them out, and the checks count that group."""
    if name not in _SUMMARIES:
        return ""
    for key in _GROUP_SLOTS:
        value = d.slots.get(key)
        col = getattr(value, "col", None) if not isinstance(value, str) else lex.column(value)
        if col is None or col not in s.columns:
            continue
        empty = sorted({str(r.get(col, "")).strip() for r in s.rows} & {*_EMPTY, *(e.title() for e in _EMPTY)})
        if empty:
            said = lex.said(col)
            which = said.which([empty[0]])
            return f'; the {noun} {which} make a group of their own, "{empty[0]}"'
    return ""


_INACTIVE = {"cancelled", "canceled", "waitlisted", "withdrawn", "declined", "no-show", "failed", "rejected"}


def _every_status(lex: Lexicon, s: State, name: str, d: Any, steps: list, one: str) -> str:
    """Where a figure is summed over records some of which are cancelled, waitlisted or the like
    (a status column the chain neither filters nor groups by), the clause saying every record
    counts whatever its status: a careful reader would otherwise leave the cancelled ones out."""
    if name not in (*_SUMMARIES, "totals_json", "draft_email"):
        return ""
    picked = _selected(lex, steps) | _columns(lex, [d.slots.get(k) for k in _GROUP_SLOTS])
    for col in s.columns:
        if s.types.get(col) != "status" or lex.canonical.get(col, col) in picked:
            continue
        values = {str(r.get(col, "")).strip().lower() for r in s.rows}
        if values & _INACTIVE and values - _INACTIVE:
            return f"; count every {one} whatever its {lex.said(col)}"
    return ""


def _columns(lex: Lexicon, values: list[Any]) -> set[str]:
    """The canonical columns that slot values name (a column, its name in words, or a Ref)."""
    out: set[str] = set()
    for value in values:
        col = getattr(value, "col", None) if not isinstance(value, str) else lex.column(value)
        if col is not None:
            out.add(lex.canonical.get(col, col))
    return out


def reason_for(domain: Domain, fact: Facts, rng: random.Random) -> str:
    """A reason of the domain that fits the chain: one whose conditions say what this chain does
    when there is one (the specific story), else a plain one of the domain, else a plain one for
    its deliverable; a chain that splits its figures by a column no specific reason accounts for is
    refused (ValueError): a neutral sentence does not explain "attachments per replied flag"."""
    fitting = [r for r in domain.reasons if fits(r, fact)]
    specific = [r.say for r in fitting if not r.plain]
    if specific:
        return rng.choice(specific)
    if fact.groups:  # a split no story of the domain asks for: drawn again
        raise ValueError(f"no reason of the domain accounts for a split by {', '.join(sorted(fact.groups))}")
    if fitting:
        return rng.choice([r.say for r in fitting])
    for kind in ("total", "summary", "list", "reconcile", "organise"):
        if kind in fact.kinds:
            return rng.choice(_GENERIC[kind])
    return "I need this sorted"


_INTROS = (
    "{Reason}, so I need a hand with {input}.",
    "Could you work through {input} for me? {Reason}.",
    "The {noun} are in {input}; {reason}.",
    "{Reason}. Everything is in {input}.",
    "Quick job on {input}: {reason}.",
    "{Reason}, and I could use some help with {input}.",
)
_GREETINGS = (
    "Hi, it's {first}.",
    "Hey, {first} here.",
    "Hello! {first} again.",
    "{first} here, quick one.",
    "Morning. It's {first}.",
    "Hi there, {first} speaking.",
    "",
    "",
    "",
)
_CLOSINGS = ("Thanks!", "Thanks a lot.", "Cheers.", "Much appreciated.", "", "", "Thank you!")
_PROTECT = (
    "Don't change anything in {folder}/.",
    "Leave the files in {folder}/ as they are.",
    "Please don't edit {folder}/ itself.",
    "The originals in {folder}/ must stay untouched.",
    "Treat {folder}/ as read-only.",
)
_MOVED = (
    "Move the files themselves (no copies) and keep their contents exactly as they are; only {folder}/ should change.",
    "Keep every file's contents as they are, just move them within {folder}/.",
)


def instruction_text(
    catalog: Catalog,
    rng: random.Random,
    who: dict[str, Any],
    domain: Domain,
    phrase: str,
    folder: str,
    moved: bool,
    steps: list,
    delivered: list,
    s: State,
) -> str:
    """The request: every step and deliverable in the persona's words, in order, around the input."""
    noun, one = domain.noun[1], domain.noun[0]
    lex = Lexicon(catalog, domain, steps)
    base = {"noun": noun, "one": one}
    parts = [
        _ask(catalog, op_name, rng, {**base, **words(lex, OPERATIONS[op_name].slots(s, p))}) for op_name, p in steps
    ]
    order = _order(lex, s, steps)
    for d_name, d in delivered:
        said = words(lex, d.slots)
        if "order" in said:
            said["order"] = order
        asked = _ask(catalog, d_name, rng, {**base, **said})
        extra = _empty_group(lex, s, d_name, d, noun) + _every_status(lex, s, d_name, d, steps, one)
        parts.append(asked[:-1] + extra + "." if extra and asked.endswith(".") else asked + extra)
    # "before anything else" and a cleaning step's "... first" only where it is first ("Then trim it first"
    # reads both ways); a step after others carries no "and"/"then" of its own
    parts = [parts[0]] + [
        re.sub(
            r"^(?:and|then|also) ", "", _not_first(p, i + 1 < len(steps) and steps[i + 1][0] in CLEANING), flags=re.I
        )
        for i, p in enumerate(parts[1:])
    ]
    reason = reason_for(domain, facts(lex, steps, delivered, s, str(who.get("name", ""))), rng)
    intro = rng.choice(_INTROS).format(Reason=_cap(reason), reason=reason, input=phrase, noun=noun)
    greetings = [
        g for g in _GREETINGS if "quick" not in g or "quick" not in intro.lower()
    ]  # not "quick one. Quick job"
    greeting = rng.choice(greetings).format(first=who["first"])
    notes = rng.choice(_MOVED if moved else _PROTECT).format(folder=folder)
    closing = rng.choice(_CLOSINGS)
    style = rng.choice(["list", "prose", "prose", "bullets"])
    head = f"{greeting} {intro}".strip()
    if style == "list":
        body = "\n".join(f"{i}. {_cap(p)}." for i, p in enumerate(parts, 1))
        text = f"{head}\n\n{body}\n\n{notes} {closing}"
    elif style == "bullets":
        body = "\n".join(f"- {_cap(p)}" for p in parts)
        text = f"{head} {rng.choice(['What I need:', 'Steps:', 'Here is what I need:'])}\n\n{body}\n\n{notes} {closing}"
    else:
        sentences = [_cap(parts[0]) + "."] + [f"{rng.choice(CONNECT)} {p}." for p in parts[1:]]
        text = f"{head} {' '.join(sentences)} {notes} {closing}"
    return articles(text.strip()) + "\n"


def _not_first(part: str, cleaning: bool) -> str:
    """A step's words once other steps come before it: no "before anything else", and a cleaning
    step's closing "first" ("de-duplicate on the trip ID first", "check the rows first:") dropped."""
    part = part.replace(" before anything else", "")
    return re.sub(r" first(?=$|:| \()", "", part) if cleaning else part


def articles(text: str) -> str:
    """'a' or 'an' as the next word sounds ("an age_days column", "a user")."""

    def fix(m: re.Match) -> str:
        word = m.group(2).lower()
        vowel = bool(re.match(r"(?:[aeio]|u(?!ni|s[eu]|ti|r[io])|hour|honest)", word)) and not re.match(
            r"(?:one\b|once|eu)", word
        )
        art = m.group(1)
        want = ("An" if art[0] == "A" else "an") if vowel else ("A" if art[0] == "A" else "a")
        return f"{want} {m.group(2)}"

    text = re.sub(r"(?<![\w'/.-])(a|an) ([A-Za-z][\w-]*)", fix, text)
    return re.sub(r"(?:^|(?<=[.!?:] )|(?<=\n)|(?<=- )|(?<=\d\. ))(A|An) ([A-Za-z][\w-]*)", fix, text)


def _cap(text: str) -> str:
    """Capitalised, unless it starts with a path or a name that must stay as written."""
    first = text.split(" ", 1)[0] if text else ""
    if not text or "/" in first or "." in first or "_" in first or not first[:1].isalpha():
        return text
    return text[:1].upper() + text[1:]
