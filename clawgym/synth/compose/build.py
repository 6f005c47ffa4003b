"""Compose one task: a domain's seeded rows written in one of its formats, a chain of 2-6
operations whose types fit, the expected outputs computed by running that chain on what the input
reads back as, the reference solution that spells it out (solution.py), the checks the
deliverables imply, and a persona's request in words drawn from the operations' ways of asking
(request.py). The result is an ordinary concrete task spec.

Every step asked for changes a graded value (`_observed` drops one that does not), and no graded
value can be had without the work: a deliverable a lazy answer would score is passed over for
another, and a candidate that still has one is refused with the reason (guessable.py).
"""

from __future__ import annotations

import copy
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .catalog import Catalog, Domain, named
from .data import rows_for, to_csv
from .deliver import DELIVERABLES, MESSAGE
from .delivered import Delivered
from .formats import FORMATS
from ...checks.base import parse_number
from . import guessable, scenarios
from .ops import CLEANING, ENRICHING, FILTERS, OPERATIONS, SELECTING
from .lexicon import DELIVER_KINDS, Lexicon
from .request import instruction_text, persona_of
from .solution import reference_solution, row_names, snake
from .state import State, own_ties, rounding_ties
from .style import Style

OUT_DIRS = ("output", "reports", "out", "summary", "results", "exports", "done")
# Whose workspace a composed task happens in: the persona's own (three workspaces were written for
# one persona each: the Brennans' family hub, Lumen Ledger's ops host, Novak Software's laptop; the
# analysis workspace is the finance analyst's), an organisation's shared drive for people who work
# in one, a self-employed person's home office for the rest. A category never decides it: an
# executive assistant's planning task is not in the Brennans' family hub.
WORKSPACE_OF = {
    "indie-developer": "dev-laptop",
    "devops-engineer": "ops-server",
    "family-organizer": "family-hub",
    "finance-analyst": "research-lab",
    **dict.fromkeys(
        (
            "freelance-designer",
            "travel-blogger",
            "retired-traveler",
            "homelab-hobbyist",
            "phd-student",
            "oss-maintainer",
        ),
        "home-office",
    ),
}
SHARED_DRIVE = "small-business"  # an organisation's shared drive, rendered for the persona's organisation
ROW_WRITERS = ("write_rows", "write_json", "markdown_table", "split_by_group")
SUMMARIES = ("group_aggregate", "group_json", "totals_json", "report_md", "share_of_total", "pivot")


@dataclass
class Composed:
    spec: dict[str, Any]
    chain: list[str]
    skills: list[str]
    fmt: str
    rescoped: str = ""  # why the task is filed under another scenario than the one drawn (scenarios.py)


def _join_plan(s: State, catalog: Catalog, rng: random.Random, folder: str) -> tuple[dict[str, Any], str, str] | None:
    """Parameters of a join with one related domain, its rows written as a second CSV input."""
    if not s.domain.relations:
        return None
    other_name, via = rng.choice(sorted(s.domain.relations.items()))
    if via not in s.columns:
        return None
    other: Domain = named(catalog.domains[other_name], rng)
    keys = sorted({r[via] for r in s.rows})
    other_rows = rows_for(other, rng, len(keys), fixed={other.key: keys})
    rng.shuffle(other_rows)
    candidates = [f.name for f in other.fields if f.name != other.key and f.name not in s.columns]
    if not candidates:
        return None
    columns = rng.sample(candidates, min(len(candidates), rng.randint(1, 2)))
    path = f"{folder}/{rng.choice(other.files)}.csv"
    params = {
        "other_rows": other_rows,
        "other_key": other.key,
        "field": via,
        "columns": columns,
        "path": path,
        "other_types": {f.name: f.type for f in other.fields},
        "other_roles": {f.name: f.role for f in other.fields},
        "other_units": {f.name: f.unit for f in other.fields},
        "other_var": snake(other.noun[0]) + "_by_key",
    }
    return params, path, to_csv(other_rows, [f.name for f in other.fields])


def _usable(op_name: str, fmt: str) -> bool:
    allowed = OPERATIONS[op_name].formats
    return allowed is None or fmt in allowed


@own_ties  # ties are listened for only where this task's own figures are made
def compose(
    catalog: Catalog,
    domain_name: str,
    scenario: tuple[str, str],
    persona: str,
    seed: int,
    library_root: Path,
    name: str,
) -> Composed:
    """The concrete spec of one composed task; ValueError when this seed gives no usable chain."""
    rng = random.Random(f"compose:{domain_name}:{scenario[0]}/{scenario[1]}:{persona}:{seed}")
    domain = named(catalog.domains[domain_name], rng)
    who = persona_of(library_root, persona)
    formats = [f for f in domain.formats if FORMATS[f].applies(domain)]
    # a ';' export with decimal commas only where the persona's own software writes one
    fmt = rng.choice([f for f in formats if f != "semicolon" or who["decimal_comma"]] or formats)
    folder = rng.choice(domain.folders)
    stem = rng.choice(domain.files)
    out_dir = rng.choice([d for d in OUT_DIRS if d != folder])
    workspace_name = WORKSPACE_OF.get(persona, SHARED_DRIVE)
    rows = rows_for(domain, rng)
    columns = [f.name for f in domain.fields]
    style = Style.draw(rng)
    var, it = row_names(stem, domain.noun[0])
    clean = State(
        domain, copy.deepcopy(rows), list(columns), {f.name: f.type for f in domain.fields}, var, it, "", out_dir, fmt
    )
    clean.currency = who["currency"]
    budget = rng.choice((2, 3, 3, 4, 4, 5, 5, 6, 6))
    promise = scenarios.favours(scenario[1])  # what the scenario says the task does: drawn first
    wanted = set(promise.ops) if promise is not None else set()
    steps: list[tuple[str, dict[str, Any]]] = []
    order = [n for n in rng.sample(CLEANING, len(CLEANING)) if n != "drop_invalid"] + ["drop_invalid"]
    for op_name in order:  # drop_invalid planned last, so it breaks none of the fields the others clean
        # data quality promises validation: the rows are checked there even past the budget
        forced = bool(wanted & set(CLEANING)) and op_name == "drop_invalid"
        chance = 1.0 if forced else 0.3
        if (len(steps) >= max(1, budget - 2) and not forced) or rng.random() > chance or not _usable(op_name, fmt):
            continue
        if (p := OPERATIONS[op_name].plan(clean, rng)) is not None:
            steps.append((op_name, p))
            clean.used.add(p.get("field", ""))
    steps.sort(key=lambda step: CLEANING.index(step[0]))  # de-duplicate, then drop the broken, then repair
    written = copy.deepcopy(rows)
    for op_name, p in steps:
        written = OPERATIONS[op_name].prepare(written, p, rng)
    if fmt != "records" and len(written) >= 10 and rng.random() < 0.2:
        broken = {i for i, r in enumerate(written) for n, p in steps if n == "drop_invalid" and r[p["key"]] in p["bad"]}
        rendered, texts = _two_parts(domain, written, columns, folder, stem, var, it, fmt, rng, style, broken)
        steps.insert(0, ("merge_inputs", {"paths": list(rendered.files)}))  # in the order they are read
    else:
        rendered = FORMATS[fmt].render(domain, written, columns, folder, stem, var, it, rng, style)
        texts = [(len(rendered.rows), rendered.files.get(rendered.path, ""))]
    parts = [
        (n, guessable.cuttable(fmt, text)) for n, text in texts
    ]  # each input file: its rows, whether it is a table
    if len(rendered.rows) != len(written):
        raise ValueError(f"the {fmt} input does not read back")

    lexicon: dict[str, Lexicon] = {}  # the task's words, once the chain's columns are known

    def fresh() -> State:
        """The state right after reading the input (each replay starts from it)."""
        st = State(
            domain,
            [dict(r) for r in rendered.rows],
            list(rendered.columns),
            {f.name: f.type for f in domain.fields},
            var,
            it,
            rendered.path,
            out_dir,
            fmt,
            unique=rendered.unique,
            style=style,
            read_rows=len(rendered.rows),
            words=lexicon.get("words"),
        )
        if fmt == "records":
            st.record_files = [(path, row) for path, row in zip(sorted(rendered.files), st.rows)]
            st.record_text = dict(rendered.files)
        return st

    state = fresh()
    files: dict[str, str] = dict(rendered.files)
    steps = [
        (n, p)
        for n, p in steps  # a log line may not hold every field a cleaning step is about
        if all(f in state.columns for f in ([p["field"]] if "field" in p else p.get("fields", [])))
    ]
    with rounding_ties() as tied:  # a figure of the chain's rows on a tie: another draw
        for op_name, p in steps:
            OPERATIONS[op_name].apply(state, p)
        # the middle of the chain: enrich, filter, select
        middle: list[str] = []
        if rng.random() < 0.4:
            middle.append("join")
        middle += rng.sample(ENRICHING, k=rng.choice([0, 0, 1, 1, 2]))
        middle += rng.sample(FILTERS, k=rng.choice([0, 1, 1, 2]))
        if rng.random() < 0.3:
            middle.append(rng.choice(SELECTING))
        if "reconcile" in wanted and rng.random() < 0.8:  # a reconciliation compares the whole copy
            middle = [n for n in middle if n not in FILTERS and n not in SELECTING]
        elif promise is not None and (promise.measure or promise.kinds) and rng.random() < 0.8:
            middle = [n for n in middle if n not in SELECTING]  # ranked rows are listed, never summarised
        rank = {"join": 0, **{n: 1 for n in ENRICHING}, **{n: 2 for n in FILTERS}, **{n: 3 for n in SELECTING}}
        room = max(0, budget - len(steps) - 1)
        chosen = sorted(rng.sample(middle, len(middle))[:room], key=lambda n: rank[n])
        for op_name in chosen:
            op = OPERATIONS[op_name]
            if op_name == "join":
                planned = _join_plan(state, catalog, rng, folder)
                if planned is None:
                    continue
                p, path, text = planned
                if path in files:
                    continue
                files[path] = text
            elif (p := op.plan(state, rng)) is None:
                continue
            op.apply(state, p)
            steps.append((op_name, p))
    if why := _tie(tied):
        raise ValueError(why)
    if len(state.rows) < 3:  # one or two rows left: an order, a filter or a repair can hardly show in them
        raise ValueError(f"the chain leaves {len(state.rows)} row(s)")
    lexicon["words"] = state.words = Lexicon(catalog, domain, steps)  # headings and check names in words
    workspace = guessable.workspace_tables(library_root, workspace_name)
    known = guessable.known_of(fresh, parts, steps, [], workspace)
    state.contacts = persona_of(library_root, persona)["contacts"]  # a message goes to someone the persona knows
    planned = _deliver(state, steps, rng, guessable.answers(fresh, steps, parts), known, promise)
    delivered = [(n, d) for n, d, _ in planned]
    kept = _observed(fresh, steps, [(n, p) for n, _, p in planned])
    if why := _only_on_dropped(fresh, kept, [(n, p) for n, _, p in planned], domain.key, state.rows):
        raise ValueError(why)
    for _, p in [(n, p) for n, p in steps if n == "join" and all(p is not q for _, q in kept)]:
        files.pop(p["path"], None)  # a lookup table no output needs is not handed over either
    steps = kept
    subcategory, rescoped = scenarios.file_under(scenario, domain.scenarios, _work(state, steps, planned))
    side = [
        (n, Delivered(p["path"], OPERATIONS[n].checks(state, p), [], {}))
        for n, p in steps
        if hasattr(OPERATIONS[n], "checks")
    ]  # a rejects file, say
    for _, d in delivered:
        if set(d.files) & set(files):
            raise ValueError(f"a deliverable's input would overwrite {sorted(set(d.files) & set(files))[0]}")
        files.update(d.files)
    chain = [n for n, _ in steps] + [n for n, _ in delivered]
    if not 2 <= len(chain) <= 6:
        raise ValueError(f"a chain of {len(chain)} operations")
    who = persona_of(library_root, persona)
    moved = any(d.moves_input for _, d in delivered)
    protect = rendered.path.rstrip("/") if moved else folder
    instruction = instruction_text(catalog, rng, who, domain, rendered.phrase, protect, moved, steps, delivered, state)
    # the final chain (a step no output shows is gone), every input and the numbers the request states
    known = guessable.known_of(fresh, parts, steps, planned, workspace, instruction)
    why = guessable.stated(delivered, instruction, domain.noun) or guessable.refusal(
        planned, guessable.answers(fresh, steps, parts), known
    )
    if why is not None:
        raise ValueError(f"guessable: {why}")
    code = reference_solution(state, rendered.code, steps, delivered)
    checks = [c for _, d in side + delivered for c in d.checks]
    if not moved:
        checks.append(
            {"type": "unchanged", "name": f"{folder}/ untouched", "paths": [f"{folder}/**"], "gate": True, "weight": 0}
        )
    op_skills = [FORMATS[fmt].skill] + [catalog.operations[n].skill for n in chain]
    skills = list(dict.fromkeys(s.split(".")[0] for s in op_skills))
    spec: dict[str, Any] = {
        "apiVersion": "clawgym/v1",
        "kind": "Task",
        "name": name,
        "title": f"{domain.noun[1].capitalize()}: {', '.join(c.replace('_', ' ') for c in chain)}",
        "description": f"Composed from the {domain.name} domain ({fmt} input): {' -> '.join(chain)}.",
        "category": scenario[0],
        "subcategory": subcategory,
        "difficulty": "easy" if len(chain) <= 2 else "medium" if len(chain) <= 4 else "hard",
        "tags": ["composed", domain.name, fmt],
        "persona": persona,
        "skills": skills,
        "operations": list(dict.fromkeys(op_skills)),
        "workspace": workspace_name,
        "files": [{"path": path, "content": text} for path, text in sorted(files.items())],
        "instruction": instruction,
        "solution": [{"python": "\n".join(code) + "\n"}],
        "checks": checks,
    }
    return Composed(spec, chain, skills, fmt, rescoped)


def _work(s: State, steps: list, planned: list) -> scenarios.Work:
    """What the chain does, as a scenario's promise reads it: its operations, its deliverables'
    kinds, and the measures of the columns its figures sum or average."""
    kinds = {k for n, _, _ in planned for k in DELIVER_KINDS.get(n, ())}
    measures = {
        scenarios.measure_of(s.types.get(p["col"], ""), s.units.get(p["col"], ""))
        for n, _, p in planned
        if n in SUMMARIES + (MESSAGE.name,) and p.get("col") and p.get("how", "sum") != "distinct"
    }
    ops = frozenset([n for n, _ in steps] + [n for n, _, _ in planned])
    return scenarios.Work(ops, frozenset(kinds), frozenset(measures - {""}))


def _two_parts(
    domain: Domain,
    rows: list,
    columns: list[str],
    folder: str,
    stem: str,
    var: str,
    it: str,
    fmt: str,
    rng: random.Random,
    style: Style,
    broken: set[int],
):
    """The input split over two files of the same format, read one after the other; the second
    does not start with a broken row (the first rows of a file are the ones anybody looks at). Both
    are written the same way (the second drawn as the first was), and the request says it once."""
    from .formats import Rendered

    cuts = range(len(rows) // 3, 2 * len(rows) // 3 + 1)
    cut = rng.choice([c for c in cuts if not {c, c + 1} & broken] or list(cuts))
    suffixes = rng.choice([("1", "2"), ("old", "new"), ("part1", "part2"), ("a", "b")])
    twin = random.Random()
    twin.setstate(rng.getstate())
    first = FORMATS[fmt].render(
        domain, rows[:cut], columns, folder, f"{stem}_{suffixes[0]}", f"{var}_{suffixes[0]}", it, rng, style
    )
    second = FORMATS[fmt].render(
        domain, rows[cut:], columns, folder, f"{stem}_{suffixes[1]}", f"{var}_{suffixes[1]}", it, twin, style
    )
    code = first.code + second.code + [f"{var} = {var}_{suffixes[0]} + {var}_{suffixes[1]}"]
    paths = f"{first.path} and {second.path}"
    phrase = first.both.replace("{paths}", paths) if first.both else f"{first.phrase} and {second.phrase}"
    both = Rendered({**first.files, **second.files}, first.path, first.columns, first.rows + second.rows, code, phrase)
    return both, [(len(part.rows), part.files.get(part.path, "")) for part in (first, second)]


ALWAYS_SEEN = ("merge_inputs", "drop_invalid")  # their own input files or output show them


def _graded(checks: list[list[dict[str, Any]]]) -> str:
    """What the checks grade: every option but the names (a check's name is its label, not a value),
    a number however it is written (the checks read "$1,234.00" as 1234.0)."""
    return json.dumps(
        [[{k: _canonical(v) for k, v in c.items() if k != "name"} for c in group] for group in checks],
        sort_keys=True,
        default=str,
    )


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    if isinstance(value, str) and (number := parse_number(value)) is not None:
        return round(number, 6)
    return value


def _outcome(fresh: Any, steps: list, deliveries: list, skip: set[int]) -> str | None:
    """What the checks would grade with the steps of `skip` left out (None if the chain breaks)."""
    st = fresh()
    try:
        kept = [(n, copy.deepcopy(p)) for i, (n, p) in enumerate(steps) if i not in skip]
        for n, p in kept:
            OPERATIONS[n].apply(st, p)
        checks = [OPERATIONS[n].checks(st, p) for n, p in kept if hasattr(OPERATIONS[n], "checks")]
        for n, p in deliveries:
            op = MESSAGE if n == MESSAGE.name else DELIVERABLES[n]
            checks.append(op.deliver(st, copy.deepcopy(p)).checks)
        return _graded(checks)
    except Exception:  # noqa: BLE001 - a later step needs what the skipped one made: it is seen
        return None


def _observed(fresh: Any, steps: list, deliveries: list) -> list:
    """The steps whose effect reaches a graded value: a step the outputs never show (trimming a
    column no output holds, a date nobody reads, a de-duplication before a maximum, a sort before a
    total) would be asked for and never graded, so it is left out."""
    baseline = _outcome(fresh, steps, deliveries, set())
    skip: set[int] = set()
    for i in reversed(range(len(steps))):
        if steps[i][0] not in ALWAYS_SEEN and _outcome(fresh, steps, deliveries, skip | {i}) == baseline:
            skip.add(i)
    return [step for i, step in enumerate(steps) if i not in skip]


def _only_on_dropped(fresh: Any, steps: list, deliveries: list, key: str, final: list) -> str | None:
    """Why a cleaning step is asked for and never graded: the rows it mends are all ones the chain
    drops later, so a solver who filters first never meets them (a "$" price repaired on rows of
    a maker the request leaves out). Seen by replaying the chain on the rows that survive it alone,
    with and without the step; None when every cleaning step still changes what is graded."""
    survivors = {r.get(key) for r in final}

    def kept_rows() -> Any:
        st = fresh()
        st.rows = [r for r in st.rows if r.get(key) in survivors]
        return st

    cleaning = [i for i, (n, _) in enumerate(steps) if n in CLEANING and n not in ALWAYS_SEEN]
    if not cleaning or len(survivors) == len({r.get(key) for r in fresh().rows}):
        return None  # nothing is dropped: what a step mends reaches the outputs or `_observed` removed it
    baseline = _outcome(kept_rows, steps, deliveries, set())
    for i in cleaning:
        if baseline is not None and _outcome(kept_rows, steps, deliveries, {i}) == baseline:
            return f"{steps[i][0]} mends only rows the chain drops"
    return None


def _plan(s: State, d_name: str, rng: random.Random, measure: str) -> dict[str, Any] | None:
    """A deliverable's plan; where the scenario promises a figure of a measure (budget analysis:
    money), a few more draws for one over a column of that measure."""
    p = DELIVERABLES[d_name].plan(s, rng)
    for _ in range(4 if measure and d_name in SUMMARIES else 0):
        col = (p or {}).get("col")
        if p is None or (col and scenarios.measure_of(s.types.get(col, ""), s.units.get(col, "")) == measure):
            break
        p = DELIVERABLES[d_name].plan(s, rng)
    return p


def _tie(tied: list[float]) -> str | None:
    """Why figures rounded on a tie cannot be graded: a person rounds 7.125 half up (7.13), Python
    half to even (7.12), and the request cannot fairly ask for either."""
    return f"{tied[0]:g} lands on a rounding tie" if tied else None


def _deliver(
    state: State,
    steps: list,
    rng: random.Random,
    lazy: tuple,
    known: guessable.Known,
    promise: scenarios.Promise | None = None,
) -> list[tuple[str, Delivered, dict]]:
    """One or two deliverables that fit the rows the chain ends with, maybe a message after; one
    whose figures need no work (`guessed`) is passed over for the next. Those the scenario
    promises (`promise`: a reconciliation, a summary) are tried first."""
    narrowed = any(n in FILTERS or n in SELECTING for n, _ in steps)
    # one record picked per group is itself the answer: a list of them, never a sum of the picks
    # over some other column ("each venue's smallest event, totalled by indoor flag" means nothing)
    picked = any(n == "top_per_group" for n, _ in steps)
    if state.order is not None or picked:
        options = ["write_rows", "write_rows", "markdown_table", "write_json"]
    else:
        options = list(ROW_WRITERS) + list(SUMMARIES) + ["group_aggregate", "group_json"]
        if not narrowed:
            options += ["reconcile", "organise", "organise"] if state.fmt == "records" else ["reconcile"]
    delivered: list[tuple[str, Delivered, dict]] = []
    passed: list[str] = []
    rng.shuffle(options)
    if promise is not None:
        first = set(promise.ops) | {n for n in options if set(DELIVER_KINDS.get(n, ())) & set(promise.kinds)}
        if promise.measure:
            first |= set(SUMMARIES)
        options.sort(key=lambda n: n not in first)  # stable: the shuffled order within each part
    wanted = 2 if rng.random() < 0.25 else 1
    for d_name in options:
        if len(delivered) >= wanted or any(n == d_name for n, _, _ in delivered):
            continue
        if delivered and (d_name in ("organise", "reconcile") or delivered[0][0] in ("organise", "reconcile")):
            continue
        p = _plan(state, d_name, rng, promise.measure if promise is not None else "")
        if p is None:
            continue
        with rounding_ties() as tied:
            d = DELIVERABLES[d_name].deliver(state, copy.deepcopy(p))
        why = _tie(tied) or guessable.guessed(d_name, d, p, lazy, known)
        if why is not None:
            passed.append(why)
            continue
        delivered.append((d_name, d, p))
    if not delivered:
        raise ValueError("no deliverable fits the chain" + (f" ({'; '.join(passed)})" if passed else ""))
    ranked = any(n == "rank_top" for n, _ in steps)  # "the 5 with the highest ...": the count is given
    asked = promise is not None and promise.ops == (MESSAGE.name,)  # a follow-up is a message
    if (
        (asked or rng.random() < 0.3)
        and delivered[0][0] != "organise"
        and not ranked
        and (p := MESSAGE.plan(state, rng))
    ):
        with rounding_ties() as tied:
            d = MESSAGE.deliver(state, copy.deepcopy(p))
        if not tied and guessable.guessed(MESSAGE.name, d, p, lazy, known) is None:
            delivered.append((MESSAGE.name, d, p))
    return delivered
