"""The state a composed pipeline works on, and what every operation shares: the `Op` interface
(plan, prepare, apply, code, slots) and the number and label helpers."""

from __future__ import annotations

import functools
import math
import random
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

from .model import CATEGORY_TYPES, NUMBER_TYPES, Domain, allows, numeric_values
from .data import Row
from .style import Style

_CLOCK = re.compile(r"\d{1,2}:\d{2}(?::\d{2})?")


@dataclass
class State:
    """The pipeline so far."""

    domain: Domain
    rows: list[Row]
    columns: list[str]
    types: dict[str, str]
    var: str  # the rows variable of the reference solution
    it: str  # one row, in its loops
    input_path: str
    out_dir: str
    fmt: str = "csv"
    order: tuple[str, bool] | None = None  # (column, descending) once rows are ranked
    order_words: str = ""  # how the request says that order, when an operation set it
    used: set[str] = field(default_factory=set)  # columns an operation already keyed on
    unique: bool = False  # the input cannot repeat a key
    style: Style = field(default_factory=Style)  # the idioms of the reference solution
    record_files: list[tuple[str, Row]] = field(default_factory=list)  # (file, row) of a records input
    record_text: dict[str, str] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)  # column -> what its number is (model.ROLES)
    units: dict[str, str] = field(default_factory=dict)
    read_rows: int = 0  # how many rows the input reads back as (before any step)
    words: Any = None  # the task's Lexicon (lexicon.py): how its text names each column
    contacts: tuple[tuple[str, str], ...] = ()  # the persona's own contacts (name, email): who a message goes to
    currency: str = "$"  # the sign (or code and space) amounts carry where the persona lives
    must_show: set[str] = field(default_factory=set)  # columns a list of the rows shows (a per-group pick's group)

    def noun(self, column: str) -> str:
        """The column as a person names it ("claim status" for `reimbursed`), for every text the
        outputs or the checks hold (a report's heading, a check's name); its name in words when the
        task has no lexicon."""
        return str(self.words.said(column)) if self.words is not None else label(column)

    def which(self, column: str, value: str) -> str:
        """The clause picking the records whose column holds `value` ("that have been claimed",
        "whose host is nas")."""
        if self.words is not None:
            return str(self.words.said(column).which([value]))
        return f"whose {label(column)} is {value}"

    def __post_init__(self) -> None:
        for f in self.domain.fields:
            self.roles.setdefault(f.name, f.role)
            self.units.setdefault(f.name, f.unit)

    def role(self, column: str) -> str:
        return self.roles.get(column, "")

    def can(self, column: str, computation: str) -> bool:
        """Whether `computation` (model.COMPUTATIONS: sum, mean, rank, ...) means something on the column."""
        return allows(self.role(column), computation)

    def numbers(self, fresh: bool = True, does: str = "") -> list[str]:
        """The number columns (not yet keyed on, with `fresh`), those `does` means something on."""
        return [
            c
            for c in self.columns
            if self.types.get(c) in NUMBER_TYPES and not (fresh and c in self.used) and (not does or self.can(c, does))
        ]

    def categories(self, present: int = 2, fresh: bool = True) -> list[str]:
        """The label columns with `present` to 12 values (never a time of day: "per 02:14:07" sorts
        nothing into groups)."""
        return [
            c
            for c in self.columns
            if self.types.get(c) in CATEGORY_TYPES
            and present <= len({r[c] for r in self.rows}) <= max(present, 12)
            and not (fresh and c in self.used)
            and c != self.domain.key
            and not all(_CLOCK.fullmatch(r[c].strip()) for r in self.rows)
        ]

    def dates(self) -> list[str]:
        return [c for c in self.columns if self.types.get(c) == "date"]

    def labels(self, column: str) -> bool:
        """Whether a category column holds words (not a choice of numbers like 14/30/45 days)."""
        return not numeric_values(sorted({r[column] for r in self.rows}))


FLAG_WORDS = {"yes", "no", "true", "false", "y", "n", "partial", "0", "1"}


def is_flag(values: set[str]) -> bool:
    """A yes/no column (a billable or paid flag): grouping by it splits in two, nothing more."""
    return {v.strip().lower() for v in values} <= FLAG_WORDS


def num(text: str) -> float:
    return float(text)


# figures that landed on a rounding tie (7.125 to two decimals) while `rounding_ties()` listens: a
# person rounds it half up (7.13), Python half to even (7.12), so what computed it is not used
P = ParamSpec("P")
R = TypeVar("R")
ROUNDING_TIES: ContextVar[list[float] | None] = ContextVar("rounding_ties", default=None)


def own_ties(fn: Callable[P, R]) -> Callable[P, R]:
    """`fn` listens for ties only where it says so (`rounding_ties`), never for its caller's."""

    @functools.wraps(fn)
    def quiet(*args: P.args, **kwargs: P.kwargs) -> R:
        token = ROUNDING_TIES.set(None)
        try:
            return fn(*args, **kwargs)
        finally:
            ROUNDING_TIES.reset(token)

    return quiet


@contextmanager
def rounding_ties() -> Iterator[list[float]]:
    """The figures `fmt` rounds on a tie inside the block."""
    tied: list[float] = []
    token = ROUNDING_TIES.set(tied)
    try:
        yield tied
    finally:
        ROUNDING_TIES.reset(token)


def _on_tie(value: float, decimals: int) -> bool:
    scaled = abs(value) * 10**decimals
    return abs(scaled - math.floor(scaled) - 0.5) < 1e-6


def fmt(value: float, kind: str) -> str:
    ties = ROUNDING_TIES.get()
    if ties is not None and _on_tie(value, {"int": 0, "hours": 1}.get(kind, 2)):
        ties.append(value)
    if kind == "int":
        return str(int(round(value)))
    if kind == "hours":
        return f"{value:.1f}"
    return f"{value:.2f}"


def form_code(kind: str, expr: str) -> str:
    """The solution's expression formatting `expr` as `fmt(…, kind)` does."""
    return {"int": f"str(int(round({expr})))", "hours": f"format({expr}, '.1f')"}.get(kind, f"format({expr}, '.2f')")


def most(s: State, column: str, highest: bool) -> str:
    """How a person says the top of a ranking: the most recent year, the highest amount."""
    if s.role(column) == "year":
        return "most recent" if highest else "earliest"
    return "highest" if highest else "lowest"


# units worth naming beside a figure ("in ms"); a count's unit (people, words, units) goes without saying
MEASURING = ("ms", "seconds", "minutes", "hours", "days", "weeks", "years", "MB", "GB", "miles", "km", "percent")


def unit_words(s: State, column: str) -> str:
    """The words ", in ms" where the column's number has a measuring unit its name does not already say."""
    unit = s.units.get(column, "")
    return f", in {unit}" if unit in MEASURING and unit.lower() not in column.lower() else ""


def label(column: str) -> str:
    return column.replace("_", " ")


class Op:
    name = ""
    kind = ""
    formats: tuple[str, ...] | None = None  # the input formats it works on (None: all)

    def plan(self, s: State, rng: random.Random) -> dict[str, Any] | None:
        return None

    def prepare(self, rows: list[Row], p: dict[str, Any], rng: random.Random) -> list[Row]:
        return rows

    def apply(self, s: State, p: dict[str, Any]) -> None:
        raise NotImplementedError

    def code(self, s: State, p: dict[str, Any]) -> list[str]:
        raise NotImplementedError

    def slots(self, s: State, p: dict[str, Any]) -> dict[str, str]:
        return {}
