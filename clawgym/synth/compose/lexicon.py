"""The words of a composed request: how it names each column, and why the person asks.

domains.yaml gives per domain a `say:` block (canonical column -> a noun phrase, or {noun, plural,
is: {value: clause}, gives}), `systems:` (where renamed columns go: "the reference manager") and
`reasons:` (a sentence, or {say, and the conditions of the chains it fits}). `read_words` loads and
checks them; a `Lexicon` applies them to one task: each column of the chain (the domain's fields
under the names drawn for this task, joined columns, the columns operations add) gets a `Said`,
the operations' slots name columns with `Ref`, `Which` and `Cmp` and the request words them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ...errors import Problem
from .model import Domain, Reason, Say

DELIVER_KINDS = {
    "write_rows": ("list",),
    "write_json": ("list",),
    "markdown_table": ("list",),
    "split_by_group": ("list",),
    "group_aggregate": ("summary",),
    "group_json": ("summary",),
    "pivot": ("summary", "count"),
    "report_md": ("summary",),
    "share_of_total": ("summary", "total"),
    "totals_json": ("summary", "total"),
    "reconcile": ("reconcile",),
    "organise": ("organise",),
    "draft_email": ("message",),
}
KINDS = ("list", "summary", "total", "count", "reconcile", "organise", "message")
YES_NO = {"yes", "no"}
_REASON_KEYS = ("say", "deliver", "uses", "keeps", "some", "ops", "who")


def label(column: str) -> str:
    return column.replace("_", " ")


def plural(noun: str) -> str:
    """The plural of a noun phrase: its head word (before 'in', 'of', 'who', ...) made plural."""
    m = re.search(r" (?:in|of|for|who|that|since|from|per|on|with)\b", noun)
    head, tail = (noun[: m.start()], noun[m.start() :]) if m else (noun, "")
    words = head.split(" ")
    last = words[-1]
    if last == "person":
        last = "people"
    elif last.isupper():
        last += "s"
    elif re.search(r"[^aeiou]y$", last):
        last = last[:-1] + "ies"
    elif re.search(r"(?:s|x|z|ch|sh)$", last):
        last += "es"
    else:
        last += "s"
    return " ".join(words[:-1] + [last]) + tail


def default_noun(name: str, kind: str) -> str:
    """A column's noun when domains.yaml declares none: its name in words ("claim ID")."""
    words = label(name).split(" ")
    words = ["ID" if w == "id" else w for w in words]
    if kind in ("id", "code") and not {"ID", "number", "no", "ref", "reference", "code"} & set(words):
        words.append("ID")
    return " ".join(words)


# -- loading ------------------------------------------------------------------------------------
def read_words(
    d: dict[str, Any], columns: dict[str, dict[str, Any]], personas: tuple[str, ...], doc: Any, path: tuple
) -> tuple[dict[str, Say], tuple[Reason, ...], tuple[str, ...], list[Problem]]:
    """A domain's `say`, `reasons` and `systems`, checked against its columns (`columns`: field or
    derived name -> its declaration) and personas."""
    problems: list[Problem] = []
    says: dict[str, Say] = {}
    for col, spec in (d.get("say") or {}).items():
        where = doc.where(path + ("say", col))
        if col not in columns:
            problems.append(Problem(f"say: {col!r} is not a field or derived column", **where, hint=_cols(columns)))
            continue
        if isinstance(spec, str):
            spec = {"noun": spec}
        clauses = {str(k).lower(): str(v) for k, v in (spec.get("is") or {}).items()}
        says[str(col)] = Say(str(spec["noun"]), str(spec.get("plural") or ""), clauses, str(spec.get("gives") or ""))
    for col, spec in columns.items():
        values = {str(v).lower() for v in spec.get("values") or ()}
        if spec.get("type") in ("choice", "status") and values & YES_NO:
            missing = sorted(values - set(says[col].clauses if col in says else ()))
            if missing:
                problems.append(
                    Problem(
                        f"say: field {col!r} holds yes/no values: give the clause each value states about a record",
                        **doc.where(path + ("say",)) if "say" in d else doc.where(path + ("fields", col)),
                        hint=f'{col}: {{noun: ..., is: {{"yes": "that have been ...", "no": "that have not been ..."}}}}'
                        f" (missing: {', '.join(missing)})",
                    )
                )
    reasons = []
    for i, r in enumerate(d.get("reasons") or ()):
        reason, why = _reason(r, columns, personas)
        if why:
            problems.append(Problem(f"reason {i + 1}: {why}", **doc.where(path + ("reasons", i))))
        elif reason is not None:
            reasons.append(reason)
    systems = tuple(map(str, d.get("systems") or ()))
    renamed = [c for c, spec in columns.items() if spec.get("names")]
    if renamed and not systems:
        problems.append(
            Problem(
                "a domain whose columns go by other names needs `systems`: where renamed columns are sent",
                **doc.where(path),
                hint='systems: ["the accounting tool", "the new CRM"] (systems this domain\'s personas use)',
            )
        )
    return says, tuple(reasons), systems, problems


def _cols(columns: dict) -> str:
    return f"columns: {', '.join(sorted(columns))}"


def _reason(r: Any, columns: dict, personas: tuple[str, ...]) -> tuple[Reason | None, str]:
    if isinstance(r, str):
        return Reason(r), ""
    if not isinstance(r, dict) or not isinstance(r.get("say"), str):
        return None, "a reason is a sentence or {say: ..., and the conditions it fits}"
    unknown = set(r) - set(_REASON_KEYS)
    if unknown:
        return None, f"unknown key(s) {', '.join(sorted(unknown))} (keys: {', '.join(_REASON_KEYS)})"

    def many(key: str) -> tuple[str, ...]:
        value = r.get(key) or ()
        return (str(value),) if isinstance(value, str) else tuple(map(str, value))

    keeps = {str(k): str(v) for k, v in (r.get("keeps") or {}).items()}
    some = {str(k): str(v) for k, v in (r.get("some") or {}).items()}
    bad = [c for c in (*many("uses"), *keeps, *some) if c not in columns]
    if bad:
        return None, f"{', '.join(bad)} is not a column of the domain ({_cols(columns)})"
    if set(many("deliver")) - set(KINDS):
        return None, f"deliver must name kinds among {', '.join(KINDS)}"
    if set(many("who")) - set(personas):
        return (
            None,
            f"who names personas the domain does not have ({', '.join(sorted(set(many('who')) - set(personas)))})",
        )
    return Reason(r["say"], many("deliver"), many("uses"), keeps, some, many("ops"), many("who")), ""


# -- one task's words ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Said:
    """One column as the request names it: `{x}` is the noun phrase, `{x.col}` the column as the
    file writes it, `{x.plural}` the plural."""

    col: str
    noun: str
    plural: str = ""
    clauses: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.noun

    def __format__(self, spec: str) -> str:
        return format(self.noun, spec)

    @property
    def columns(self) -> str:
        """The column(s) as the file writes them, named as columns: "a manager column", "columns
        email and manager"."""
        return f"a {self.col} column" if " and " not in self.col else f"columns {self.col}"

    def which(self, values: list[str]) -> str:
        """The clause picking the records whose column holds one of `values`."""
        said = [self.clauses.get(v.strip().lower()) for v in values]
        if all(said):
            return " or ".join(dict.fromkeys(s for s in said if s))
        return f"whose {self.noun} is {_either(values)}"


def _either(values: list[str]) -> str:
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + " or " + values[-1]


@dataclass(frozen=True)
class Ref:
    """A slot naming a column: worded as its `Said`."""

    col: str


@dataclass(frozen=True)
class Refs:
    """A slot naming several columns: "department and manager" (`.col`: "department and manager"
    as the file writes them)."""

    cols: tuple[str, ...]


@dataclass(frozen=True)
class Which:
    """A slot picking the records whose column holds one of `values`."""

    col: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Cmp:
    """A slot picking the records whose number passes a threshold."""

    col: str
    op: str
    threshold: str


_CMP = {">": "above", ">=": "at least", "<": "below", "<=": "at most"}
# the nouns of the columns derive_product adds (enriching.py), none starting with "total" ("its total total")
_PRODUCTS = {
    "line_total": "line amount",
    "total_value": "line value",
    "total": "combined amount",
    "extended": "extended price",
    "product": "combined amount",
}
_CHAINED = (
    "join",
    "derive_product",
    "derive_days",
    "derive_date",
    "month",
    "weekday",
    "bucket",
    "compare_fields",
    "running_total",
)


class Lexicon:
    """The words for one task's columns: the domain's fields under this task's names, its derived
    columns, the columns joined in and those the chain's operations add."""

    def __init__(self, catalog: Any, domain: Domain, steps: list[tuple[str, dict[str, Any]]]) -> None:
        original = catalog.domains[domain.name]
        self.domain = domain
        self.canonical = {r.name: o.name for r, o in zip(domain.fields, original.fields)}
        self.words: dict[str, Said] = {}
        for f, o in zip(domain.fields, original.fields):
            self.words[f.name] = self._said(f.name, original.say.get(o.name), default_noun(o.name, o.type))
            said = self.words[f.name]
            if f.name == domain.key and f.type == "person" and not said.noun.endswith("name"):
                # "sorted by the user" leaves name or email open
                self.words[f.name] = Said(f.name, f"{said.noun}'s name", f"{said.plural or said.noun}'s names")
        for d in domain.derived:
            self.words[d.name] = self._said(d.name, original.say.get(d.name), default_noun(d.name, d.type))
            self.canonical[d.name] = d.name
        for name, p in steps:
            if name in _CHAINED:
                self._added(catalog, name, p)

    @staticmethod
    def _said(col: str, say: Say | None, fallback: str) -> Said:
        if say is None:
            return Said(col, fallback, plural(fallback))
        return Said(col, say.noun, say.plural or plural(say.noun), dict(say.clauses))

    def said(self, col: str) -> Said:
        return self.words.get(col) or Said(col, default_noun(col, ""), plural(default_noun(col, "")))

    def _add(self, col: str, noun: str, clauses: dict[str, str] | None = None) -> None:
        self.words[col] = Said(col, noun, plural(noun), clauses or {})

    def _added(self, catalog: Any, name: str, p: dict[str, Any]) -> None:
        """The words for the column(s) an operation adds."""
        if name == "join":
            other_name = next((k for k, v in self.domain.relations.items() if v == p["field"]), "")
            other = catalog.domains.get(other_name)
            for col in p["columns"]:
                o = next((f for f in other.fields if col == f.name or col in (f.options.get("names") or ())), None)
                if o is not None:
                    self.words[col] = self._said(col, other.say.get(o.name), default_noun(o.name, o.type))
                    self.canonical[col] = o.name
            return
        new = p.get("new", "")
        if name == "derive_product":
            self._add(new, _PRODUCTS.get(new, label(new)))
        elif name == "derive_days":
            self._add(new, f"number of days since the {self.said(p['field'])}")
        elif name == "derive_date":
            say = self.domain_say(p["days"])
            self._add(new, say.gives if say is not None and say.gives else label(new))
        elif name == "month":
            self._add(new, "month")
        elif name == "weekday":
            self._add(new, "day of the week")
        elif name == "bucket":
            field_noun = str(self.said(p["field"]))
            self._add(new, f"band of the {field_noun}" if " in " in field_noun else f"{field_noun} band")
        elif name == "compare_fields":
            a, b = self.said(p["a"]), self.said(p["b"])
            self._add(
                new,
                f"flag for whether the {a} is more than the {b}",
                {"yes": f"whose {a} is more than their {b}", "no": f"whose {a} is not more than their {b}"},
            )
        elif name == "running_total":
            self._add(new, f"running total of the {self.said(p['field'])}")

    def domain_say(self, col: str) -> Say | None:
        original = self.canonical.get(col, col)
        return self.domain.say.get(original)

    # -- slots --------------------------------------------------------------------------------
    def word(self, value: Any) -> Any:
        """A slot's value in words: a Said for a column, a clause for a selection."""
        if isinstance(value, Ref):
            return self.said(value.col)
        if isinstance(value, Refs):
            saids = [self.said(c) for c in value.cols]
            joined = " and ".join(str(s) for s in saids)
            return Said(" and ".join(value.cols), joined, " and ".join(s.plural for s in saids))
        if isinstance(value, Which):
            return self.said(value.col).which(list(value.values))
        if isinstance(value, Cmp):
            return f"whose {self.said(value.col)} is {_CMP[value.op]} {value.threshold}"
        return value

    def column(self, text: str) -> str | None:
        """The column a plain slot string names (as written, or as its name in words)."""
        if text in self.words:
            return text
        return next((c for c in self.words if label(c) == text), None)


def fits(reason: Reason, facts: "Facts") -> bool:
    """Whether a reason fits what the chain does (every condition it gives holds). A reason with
    conditions also names every column the chain selects rows by: a story about the biggest
    audience does not front a chain that keeps the episodes still in editing, and one with only a
    deliverable ("I want to stop buying books I already own") fronts no selection at all. A plain
    sentence is written to fit any chain over its domain."""
    if reason.deliver and not set(reason.deliver) & facts.kinds:
        return False
    if not reason.deliver and (facts.kinds & {"reconcile", "organise"}) and _conditional(reason):
        return False  # a comparison with another copy, or files moved into folders, serves its own reasons
    if reason.uses and not _about(reason, facts):
        return False
    if not reason.plain and not facts.selects <= {*reason.uses, *reason.keeps, *reason.some}:
        return False  # the story must account for the records the chain keeps or drops
    if reason.ops and not set(reason.ops) & facts.ops:
        return False
    if reason.who and facts.persona not in reason.who:
        return False
    for col, value in reason.keeps.items():
        values = facts.values.get(col)
        if not values or values != {value.lower()}:
            return False
    for col, value in reason.some.items():
        if value.lower() not in facts.values.get(col, set()):
            return False
    if reason.some and not reason.keeps and not set(reason.some) & facts.uses:
        return False  # "the ferry times changed" is about a chain that works on the transport, not any that has a ferry
    return True


def _about(reason: Reason, facts: "Facts") -> bool:
    """Whether the chain is about what a reason with `uses` says: its first column (what the story
    is about; the rest are other columns that serve it) is shown or summarised by a deliverable
    (what the trip will cost needs a cost in the output, not only a filter on it), and every column
    the deliverable groups by is one it uses (campaign totals are not a split by receipt status)."""
    shown = facts.uses if facts.shown is None else facts.shown
    return reason.uses[0] in shown and facts.groups <= set(reason.uses)


def _conditional(reason: Reason) -> bool:
    """Whether a reason is about some of the records ("the ferry times changed": the ferry stops),
    not the whole set."""
    return bool(reason.uses or reason.ops or reason.keeps or reason.some)


@dataclass
class Facts:
    """What a chain does, as reasons test it: its deliverables' kinds, the (canonical) columns it
    works on, its operations, the persona, and the values of the final rows per canonical column."""

    kinds: set[str]
    uses: set[str]
    ops: set[str]
    persona: str
    values: dict[str, set[str]]
    selects: set[str] = field(default_factory=set)  # columns the chain keeps or drops rows by
    groups: set[str] = field(default_factory=set)  # columns the deliverables group by
    shown: set[str] | None = None  # columns the deliverables show or summarise (None: as `uses`)
