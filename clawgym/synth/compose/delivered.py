"""What every deliverable shares: the `Deliver` interface, the `Delivered` result (checks, solution
lines, phrasing words) and small helpers for paths, order and columns."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from .model import NUMBER_TYPES
from .data import Row
from .state import State, label


@dataclass
class Delivered:
    path: str
    checks: list[dict[str, Any]]
    code: list[str]
    slots: dict[str, str]
    skills: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)  # further inputs this deliverable needs
    moves_input: bool = False  # the input itself is reorganised


def tolerance_for(kinds: list[str]) -> dict[str, Any]:
    return {"tolerance": 0.01} if any(k in NUMBER_TYPES for k in kinds) else {}


def exists_check(path: str) -> dict[str, Any]:
    return {"type": "file_exists", "path": path, "gate": True}


def output_stem(s: State, rng: random.Random, *options: str) -> str:
    noun = s.domain.noun[1].replace(" ", "_")
    return rng.choice(options).format(noun=noun, file=s.domain.files[0])


def ordered_by(s: State) -> list[Row]:
    return s.rows if s.order else sorted(s.rows, key=lambda r: r[s.domain.key])


def sort_code(s: State) -> list[str]:
    return [] if s.order else [f"{s.var}.sort(key=lambda {s.it}: {s.it}[{s.domain.key!r}])"]


def order_words(s: State) -> str:
    if s.order_words:
        return s.order_words
    if s.order:
        return f"{label(s.order[0])}, {'highest' if s.order[1] else 'lowest'} first"
    return label(s.domain.key)


def pick_columns(s: State, rng: random.Random) -> list[str]:
    key = s.domain.key
    derived = [c for c in s.columns if c != key and s.domain.type_of(c) == ""]
    rest = [c for c in s.columns if c != key and c not in derived]
    chosen = derived + rng.sample(rest, min(len(rest), rng.randint(1, 3)))
    return [key] + [c for c in s.columns if c in chosen]


class Deliver:
    name = ""
    needs_rows = True

    def plan(self, s: State, rng: random.Random) -> dict[str, Any] | None:
        raise NotImplementedError

    def deliver(self, s: State, p: dict[str, Any]) -> Delivered:
        raise NotImplementedError


def field_key(key: str) -> str:
    """A json_field_equals path naming one top-level key, whatever it holds."""
    return f'["{key}"]' if '"' not in key else f"['{key}']"


def NUM_RX(value: str) -> str:
    """A regex for a number as written, trailing decimal zeros optional."""
    if re.fullmatch(r"-?\d+\.\d+", value):
        whole, frac = value.split(".")
        frac = frac.rstrip("0")
        return re.escape(whole) + (r"\." + frac + "0*" if frac else r"(?:\.0*)?")
    return re.escape(value)
