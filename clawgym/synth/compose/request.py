"""The request a composed task's persona writes: a greeting, a reason and the input, each step in
words drawn from its operation's ways of asking (operations.yaml), what must stay untouched and a
closing, laid out as a numbered list, bullets or prose."""

from __future__ import annotations

import random
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from .catalog import Catalog, Domain
from .ops import OPERATIONS
from .state import State

CONNECT = ("Then", "After that,", "Next,", "Once that's done,", "Also", "And")


@lru_cache(maxsize=256)
def persona_of(root: Path, name: str) -> dict[str, Any]:
    """The first name and organisation of a persona (read once per process)."""
    try:
        data = yaml.safe_load((root / "personas" / f"{name}.yaml").read_text(encoding="utf-8")) or {}
    except OSError:
        data = {}
    full = str(data.get("full_name") or data.get("name") or "Sam Rivera")
    return {"first": full.split()[0].capitalize(), "org": data.get("organization") or ""}


class _Default(dict):
    def __missing__(self, key: str) -> str:
        return key


def _ask(catalog: Catalog, name: str, rng: random.Random, slots: dict[str, str]) -> str:
    asks = [a for a in catalog.operations[name].ask if slots.get("_only", "") in a] or catalog.operations[name].ask
    text = rng.choice(asks).format_map(_Default(slots))
    text = re.sub(r"\b(value|values) values\b", "values", text)  # "replacement value values"
    return re.sub(r"\ba (?=[aeiou][a-z]*_)", "an ", text)  # "an age_days column"


_INTROS = (
    "{Reason}, so I need a hand with {input}.",
    "Could you work through {input} for me? {Reason}.",
    "I've got our {noun} in {input} ({reason}).",
    "The {noun} are in {input}; {reason}.",
    "{Reason}. Everything is in {input}.",
    "Quick job on {input}: {reason}.",
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
    parts = [
        _ask(catalog, op_name, rng, {"noun": noun, "one": one, **OPERATIONS[op_name].slots(s, p)})
        for op_name, p in steps
    ]
    parts += [_ask(catalog, d_name, rng, {"noun": noun, "one": one, **d.slots}) for d_name, d in delivered]
    # "before anything else" only where it is first; a step after others carries no "and"/"then" of its own
    parts = [parts[0]] + [
        re.sub(r"^(?:and|then|also) ", "", p.replace(" before anything else", ""), flags=re.I) for p in parts[1:]
    ]
    reason = rng.choice(domain.reasons) if domain.reasons else "I need this sorted"
    intro = rng.choice(_INTROS).format(Reason=_cap(reason), reason=reason, input=phrase, noun=noun)
    greeting = rng.choice(_GREETINGS).format(first=who["first"])
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
    return text.strip() + "\n"


def _cap(text: str) -> str:
    """Capitalised, unless it starts with a path or a name that must stay as written."""
    first = text.split(" ", 1)[0] if text else ""
    if not text or "/" in first or "." in first or "_" in first or not first[:1].isalpha():
        return text
    return text[:1].upper() + text[1:]
