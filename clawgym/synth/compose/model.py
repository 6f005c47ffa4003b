"""The compose catalog's data model: field types, domains, derived fields, operations, the catalog.

Loaded and checked by `catalog.py`; the operations (cleaning.py, filtering.py, enriching.py,
selecting.py, row_files.py, folders.py, reconcile.py, message.py, registered in ops.py and
deliver.py, ...) and the input formats build on these types only, so nothing here imports them
back.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FIELD_TYPES = ("id", "person", "email", "date", "choice", "status", "money", "int", "hours", "text", "code")
NUMBER_TYPES = ("money", "int", "hours")
CATEGORY_TYPES = ("choice", "status")


@dataclass(frozen=True)
class FieldSpec:
    name: str
    type: str
    options: dict[str, Any]


@dataclass(frozen=True)
class Derived:
    """A domain-specific computed column: `expr` over the row's number fields (+ - * /, numbers,
    max, min, abs, round), its type, and how a person asks for it."""

    name: str
    expr: str
    type: str
    ask: tuple[str, ...]

    def inputs(self) -> list[str]:
        import ast

        return sorted(
            {n.id for n in ast.walk(ast.parse(self.expr, mode="eval")) if isinstance(n, ast.Name)} - set(FUNCTIONS)
        )


FUNCTIONS = ("max", "min", "abs", "round")


def check_expr(expr: str) -> str | None:
    """Why `expr` is not an allowed formula (None when it is)."""
    import ast

    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as exc:
        return f"not an expression: {exc.msg}"
    allowed = (
        ast.Expression,
        ast.BinOp,
        ast.UnaryOp,
        ast.Add,
        ast.Sub,
        ast.Mult,
        ast.Div,
        ast.USub,
        ast.Name,
        ast.Load,
        ast.Constant,
        ast.Call,
    )
    for node in ast.walk(tree):
        if not isinstance(node, allowed):
            return f"{type(node).__name__} is not allowed (use + - * /, numbers, field names, max, min, abs, round)"
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS):
            return "only max, min, abs and round may be called"
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float)):
            return "constants must be numbers"
    return None


@dataclass(frozen=True)
class Domain:
    name: str
    noun: tuple[str, str]  # singular, plural
    files: tuple[str, ...]
    folders: tuple[str, ...]
    scenarios: tuple[tuple[str, str], ...]  # (category, subcategory)
    personas: tuple[str, ...]
    reasons: tuple[str, ...]
    rows: tuple[int, int]
    key: str
    fields: tuple[FieldSpec, ...]
    relations: dict[str, str] = field(default_factory=dict)  # other domain -> field of this one naming its key
    formats: tuple[str, ...] = ("csv", "json", "jsonl", "semicolon", "md_table")
    line: str = ""  # the `lines` format's template, e.g. "{date} {level} {message}"
    split: str = ""  # a dataset split this domain is reserved for ("bench": never in training)
    derived: tuple[Derived, ...] = ()

    def field(self, name: str) -> FieldSpec:
        return next(f for f in self.fields if f.name == name)

    def type_of(self, name: str) -> str:
        return next((f.type for f in self.fields if f.name == name), "")

    def of_type(self, *types: str) -> list[FieldSpec]:
        return [f for f in self.fields if f.type in types]


def named(domain: Domain, rng: random.Random) -> Domain:
    """The domain with each field under one of its names (`names:` lists the other names real
    exports use for it: amount, total_eur, value), every reference to a field renamed alike."""
    import dataclasses
    import re

    rename = {f.name: rng.choice([f.name, *map(str, f.options.get("names") or ())]) for f in domain.fields}
    if len(set(rename.values())) < len(rename):
        rename = {f.name: f.name for f in domain.fields}
    refs = ("of", "company", "adds_to")
    fields = tuple(
        FieldSpec(rename[f.name], f.type, {k: (rename.get(v, v) if k in refs else v) for k, v in f.options.items()})
        for f in domain.fields
    )
    line = re.sub(r"\{(\w+)\}", lambda m: "{" + rename.get(m.group(1), m.group(1)) + "}", domain.line)
    derived = tuple(
        dataclasses.replace(d, expr=re.sub(r"\b(\w+)\b", lambda m: rename.get(m.group(1), m.group(1)), d.expr))
        for d in domain.derived
    )
    return dataclasses.replace(
        domain,
        fields=fields,
        key=rename[domain.key],
        line=line,
        derived=derived,
        relations={k: rename[v] for k, v in domain.relations.items()},
    )


@dataclass(frozen=True)
class Operation:
    name: str
    skill: str
    kind: str
    ask: tuple[str, ...]


@dataclass(frozen=True)
class Catalog:
    domains: dict[str, Domain]
    operations: dict[str, Operation]
    folder: Path
