"""Whether a composed task's scenario says what its chain does: a subcategory that promises an
activity ("data quality": validating or cleaning records; "financial reconciliation": matching two
copies) is only given to a chain that does it.

`PROMISES` says what each such subcategory needs of a chain; `file_under` keeps the drawn
scenario when the chain keeps its promise, else files the task under another scenario of its
domain in the same category whose promise it keeps (the category balance holds), else refuses the
pair so the route draws again. `favours` tells the chain builder what to draw more often, so that
most draws keep the promise by construction.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import Domain
from .ops import CLEANING

SUMMARY_KINDS = ("summary", "total", "count")
TIME_UNITS = ("hours", "minutes", "seconds", "ms")
DOCUMENT = ("markdown_table", "report_md", "draft_email")  # deliverables written to be read


@dataclass(frozen=True)
class Promise:
    """What a subcategory says a task does: an operation of the chain (any of `ops`), a deliverable
    of a kind (any of `kinds`, lexicon.DELIVER_KINDS), or a figure summed or averaged over a
    column of a measure (`measure`: "money" or "time")."""

    what: str  # in words, for the manifest: "validating or cleaning the records"
    ops: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    measure: str = ""


PROMISES: dict[str, Promise] = {
    "data quality": Promise("validating or cleaning the records", ops=CLEANING),
    "financial reconciliation": Promise("matching the records against another copy", ops=("reconcile",)),
    "document filing": Promise("filing the records into folders or files", ops=("organise", "split_by_group")),
    "budget analysis": Promise("a figure of money (a total, an average or a share)", measure="money"),
    "time tracking": Promise("a figure of time logged (hours, minutes)", measure="time"),
    "sales analytics": Promise("figures summarising the sales", kinds=SUMMARY_KINDS),
    "grade statistics": Promise("statistics of the results", kinds=SUMMARY_KINDS),
    "survey analysis": Promise("figures summarising the responses", kinds=SUMMARY_KINDS),
    "code metrics": Promise("figures measuring the code", kinds=SUMMARY_KINDS),
    "status reporting": Promise(
        "figures to report (a summary, a total or a message)", kinds=(*SUMMARY_KINDS, "message")
    ),
    "meeting follow-up": Promise("a follow-up message to send", ops=("draft_email",)),
    "inventory analysis": Promise("figures summarising the stock", kinds=SUMMARY_KINDS),
    "invoicing and billing": Promise("a figure of money billed, owed or paid", measure="money"),
    "contact management": Promise(
        "keeping the contact records right (de-duplicating, validating, normalising)", ops=CLEANING
    ),
    # content is something written to be read: a table or report in Markdown, or a message
    "newsletter assembly": Promise(
        "a piece for the newsletter (a Markdown table or report, or a message)", ops=DOCUMENT
    ),
    "social media planning": Promise(
        "the posts to schedule, as a Markdown table or report, or a message", ops=DOCUMENT
    ),
    "blog writing": Promise("a piece for the blog (a Markdown table or report)", ops=DOCUMENT),
    "recipes and menus": Promise(
        "a menu or recipe list to read (a Markdown table or report, or a message)", ops=DOCUMENT
    ),
    "product catalog": Promise("a catalogue page or list of the products", kinds=("list",)),
    "bibliography and citations": Promise(
        "a reference list, cleaned or ordered", ops=(*CLEANING, *DOCUMENT), kinds=("list",)
    ),
    "documentation and glossary": Promise("a page or list of the documentation", kinds=("list",)),
    "translation tables": Promise("a table of the strings", kinds=("list",)),
}


@dataclass(frozen=True)
class Work:
    """What a chain does, as the promises test it: its operations, its deliverables' kinds and
    the measures ("money", "time") of the columns its figures sum or average."""

    ops: frozenset[str]
    kinds: frozenset[str]
    measures: frozenset[str]


def measure_of(kind: str, unit: str) -> str:
    """ "money" for an amount, "time" for hours or minutes logged, else ""."""
    if kind == "money":
        return "money"
    if kind == "hours" or unit in TIME_UNITS:
        return "time"
    return ""


def keeps(sub: str, work: Work) -> bool:
    """Whether a chain doing `work` does what the subcategory `sub` promises (True where it
    promises nothing in particular)."""
    promise = PROMISES.get(sub)
    if promise is None:
        return True
    if promise.ops and not set(promise.ops) & work.ops:
        return False
    if promise.kinds and not set(promise.kinds) & work.kinds:
        return False
    return not promise.measure or promise.measure in work.measures


def file_under(scenario: tuple[str, str], others: tuple[tuple[str, str], ...], work: Work) -> tuple[str, str]:
    """The scenario a chain is filed under, and why when it is not the drawn one: the drawn one
    when the chain keeps its promise, else the first of the domain's other scenarios of the same
    category whose promise it keeps (one that promises this work before one that promises
    nothing); ValueError ("scenario: ...") when none does, so the route draws again."""
    category, sub = scenario
    if keeps(sub, work):
        return sub, ""
    said = f"{category}/{sub} promises {PROMISES[sub].what}, which the chain does not do"
    fitting = [s for c, s in others if c == category and s != sub and keeps(s, work)]
    fitting.sort(key=lambda s: s not in PROMISES)
    if not fitting:
        raise ValueError(f"scenario: {said}")
    return fitting[0], f"{said}: filed under {category}/{fitting[0]}"


def unkeepable(sub: str, domain: Domain) -> str | None:
    """Why no chain over `domain` can keep the promise of `sub` (a figure of time logged, where
    no column holds time), or None."""
    promise = PROMISES.get(sub)
    if promise is None or not promise.measure:
        return None
    numbers = [(f.type, f.unit, f.role) for f in domain.fields] + [(d.type, d.unit, d.role) for d in domain.derived]
    if any(
        measure_of(kind, unit) == promise.measure and role in ("quantity", "measure") for kind, unit, role in numbers
    ):
        return None
    return f"{sub!r} promises {promise.what}, and no column of the domain holds one"


def favours(sub: str) -> Promise | None:
    """What the chain builder should draw first for the subcategory (None: nothing in particular)."""
    return PROMISES.get(sub)
