"""The state a composed pipeline works on, and what every operation shares: the `Op` interface
(plan, prepare, apply, code, slots) and the number and label helpers."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from .model import CATEGORY_TYPES, NUMBER_TYPES, Domain
from .data import Row
from .style import Style


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

    def numbers(self, fresh: bool = True) -> list[str]:
        return [c for c in self.columns if self.types.get(c) in NUMBER_TYPES and not (fresh and c in self.used)]

    def categories(self, present: int = 2, fresh: bool = True) -> list[str]:
        return [
            c
            for c in self.columns
            if self.types.get(c) in CATEGORY_TYPES
            and present <= len({r[c] for r in self.rows}) <= max(present, 12)
            and not (fresh and c in self.used)
            and c != self.domain.key
        ]

    def dates(self) -> list[str]:
        return [c for c in self.columns if self.types.get(c) == "date"]


def num(text: str) -> float:
    return float(text)


def fmt(value: float, kind: str) -> str:
    if kind == "int":
        return str(int(round(value)))
    if kind == "hours":
        return f"{value:.1f}"
    return f"{value:.2f}"


def form_code(kind: str, expr: str) -> str:
    """The solution's expression formatting `expr` as `fmt(…, kind)` does."""
    return {"int": f"str(int(round({expr})))", "hours": f"format({expr}, '.1f')"}.get(kind, f"format({expr}, '.2f')")


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
