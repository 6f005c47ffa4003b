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

# What a number is, and so what may be computed from it. A field's `role:` in domains.yaml says it;
# "cumulative" is never declared: it is the role of a running total an operation adds.
ROLES = {
    "quantity": "an amount that adds up across records (money, hours worked, counts, distances, downloads)",
    "measure": "a level read per record that averages but does not add up (ratings, prices, percentages, scores)",
    "duration": "a period one record allows or lasts (payment terms, retention days, lead times): compared, never summed",
    "year": "a calendar year: compared and ranked (most recent first), never summed or averaged",
    "identifier": "a number that names something (a table, run or revision number): never computed with",
}
CUMULATIVE = "cumulative"
# the computations each role allows
_ALLOWS = {
    "quantity": {"sum", "share", "running", "mean", "extreme", "threshold", "rank", "band", "compare", "reconcile"},
    "measure": {"mean", "extreme", "threshold", "rank", "band", "compare", "reconcile"},
    "duration": {"mean", "extreme", "threshold", "rank", "band", "compare"},
    "year": {"extreme", "threshold", "rank"},
    "identifier": set(),
    CUMULATIVE: set(),
}
COMPUTATIONS = ("sum", "share", "running", "mean", "extreme", "threshold", "rank", "band", "compare", "reconcile")
ROLE_TYPES = {  # the field types each role may be declared on
    "quantity": ("money", "int", "hours", "choice"),
    "measure": ("money", "int", "hours", "choice"),
    "duration": ("int", "hours", "choice"),
    "year": ("int", "choice"),
    "identifier": ("int", "choice", "status"),
}


def allows(role: str, computation: str) -> bool:
    """Whether a number of this role means something under `computation` (see COMPUTATIONS)."""
    return computation in _ALLOWS.get(role, set())


def numeric_values(values: Any) -> bool:
    """Whether every value of a choice reads as a number ("14", "30", "45")."""
    try:
        return bool(values) and all(float(str(v)) == float(str(v)) for v in values)
    except ValueError:
        return False


@dataclass(frozen=True)
class FieldSpec:
    name: str
    type: str
    options: dict[str, Any]

    @property
    def role(self) -> str:
        """What the value is: a declared role (ROLES), "date" for dates, else "" (a label)."""
        return str(self.options.get("role") or ("date" if self.type == "date" else ""))

    @property
    def unit(self) -> str:
        return str(self.options.get("unit") or ("hours" if self.type == "hours" else ""))


@dataclass(frozen=True)
class Derived:
    """A domain-specific computed column: `expr` over the row's number fields (+ - * /, numbers,
    max, min, abs, round), its type, and how a person asks for it."""

    name: str
    expr: str
    type: str
    ask: tuple[str, ...]
    role: str = "quantity"
    unit: str = ""

    def inputs(self) -> list[str]:
        import ast

        return sorted(
            {n.id for n in ast.walk(ast.parse(self.expr, mode="eval")) if isinstance(n, ast.Name)} - set(FUNCTIONS)
        )


FUNCTIONS = ("max", "min", "abs", "round")


def infer_role(expr: str, roles: dict[str, str]) -> str:
    """The role of a formula's result when domains.yaml does not declare one: a ratio of two fields
    is a measure; anything holding a quantity stays one (an amount scaled, capped, or priced: units
    times a unit cost); else a measure stays a measure and a year or a period gives a period."""
    import ast

    tree = ast.parse(expr, mode="eval")
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            if any(isinstance(n, ast.Name) and n.id not in FUNCTIONS for n in ast.walk(node.right)):
                return "measure"
    used = {roles.get(n.id, "") for n in ast.walk(tree) if isinstance(n, ast.Name)}
    if "quantity" in used:
        return "quantity"
    if "measure" in used:
        return "measure"
    if used & {"duration", "year"}:
        return "duration"
    return "quantity"


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


# -- the words of a request (lexicon.py, request.py): how a domain's columns are named and why the
# person asks; nothing here changes what is computed ---------------------------------------------
@dataclass(frozen=True)
class Say:
    """How a request names one column (domains.yaml `say:`): a noun phrase ("distance in miles"),
    its plural, the clause each value states about a record ({"yes": "that have been claimed"}) and
    the noun of the date derived from it (a field of days added to a date: "expiry date")."""

    noun: str
    plural: str = ""
    clauses: dict[str, str] = field(default_factory=dict)
    gives: str = ""


@dataclass(frozen=True)
class Reason:
    """Why the person asks (domains.yaml `reasons:`) and the chains it fits: every condition given
    must hold (lexicon.fits): the deliverable's kind, a column the chain works on, values every
    (keeps) or some (some) final row holds, an operation in the chain, the persona."""

    say: str
    deliver: tuple[str, ...] = ()
    uses: tuple[str, ...] = ()
    keeps: dict[str, str] = field(default_factory=dict)
    some: dict[str, str] = field(default_factory=dict)
    ops: tuple[str, ...] = ()
    who: tuple[str, ...] = ()

    @property
    def plain(self) -> bool:
        """A sentence with no condition: written to fit any chain over its domain."""
        return not (self.deliver or self.uses or self.keeps or self.some or self.ops or self.who)


@dataclass(frozen=True)
class Domain:
    name: str
    noun: tuple[str, str]  # singular, plural
    files: tuple[str, ...]
    folders: tuple[str, ...]
    scenarios: tuple[tuple[str, str], ...]  # (category, subcategory)
    personas: tuple[str, ...]
    reasons: tuple[Reason, ...]
    rows: tuple[int, int]
    key: str
    fields: tuple[FieldSpec, ...]
    relations: dict[str, str] = field(default_factory=dict)  # other domain -> field of this one naming its key
    formats: tuple[str, ...] = ("csv", "json", "jsonl", "semicolon", "md_table")
    line: str = ""  # the `lines` format's template, e.g. "{date} {level} {message}"
    split: str = ""  # a dataset split this domain is reserved for ("bench": never in training)
    derived: tuple[Derived, ...] = ()
    # the words (lexicon.py): canonical column -> how it is named, where renamed columns go
    say: dict[str, Say] = field(default_factory=dict)
    systems: tuple[str, ...] = ()

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
