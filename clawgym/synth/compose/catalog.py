"""The compose catalogs: typed data domains and atomic operations (YAML, reviewed like any spec).

`domains.yaml` (kind ComposeDomains) declares, per domain, its nouns, file names and folders, the
task scenarios it serves, the personas who keep such records, their reasons, the row count and the
typed fields (with the relation fields naming another domain's key; every number field's `role`
says what it is, model.ROLES, so that operations only compute what means something with it).
`operations.yaml` (kind
ComposeOperations) declares each operation's grounding skill operation, its kind and the ways a
person asks for it; cleaning.py, filtering.py, enriching.py, selecting.py, the deliverables
(row_files.py, folders.py, reconcile.py, message.py) and summaries.py implement them under the same
names (registered in ops.py and deliver.py). Problems are reported with the file, line and key
path.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from ...errors import Problem, SpecError
from ...spec.load import Document, load_file
from .lexicon import read_words
from .scenarios import unkeepable
from .model import (
    CATEGORY_TYPES,
    FIELD_TYPES,
    FUNCTIONS,  # noqa: F401
    NUMBER_TYPES,
    ROLE_TYPES,
    ROLES,
    Catalog,
    Derived,  # noqa: F401
    Domain,
    FieldSpec,
    Operation,
    check_expr,
    infer_role,
    named,  # noqa: F401
    numeric_values,
)


def _domain(name: str, d: dict, doc: Document, path: tuple) -> tuple[Domain | None, list[Problem]]:
    problems = []

    def need(key: str, kind: type) -> Any:
        value = d.get(key)
        if not isinstance(value, kind):
            problems.append(Problem(f"`{key}` must be a {kind.__name__}", **doc.where(path + (key,))))
        return value

    fields = []
    for fname, spec in (need("fields", dict) or {}).items():
        if not isinstance(spec, dict) or spec.get("type") not in FIELD_TYPES:
            problems.append(
                Problem(
                    f"field {fname!r} needs a type, one of {', '.join(FIELD_TYPES)}",
                    **doc.where(path + ("fields", fname)),
                )
            )
            continue
        why = _role_problem(str(fname), spec)
        if why is not None:
            problems.append(Problem(why[0], **doc.where(path + ("fields", fname, *why[1])), hint=why[2]))
            continue
        fields.append(FieldSpec(str(fname), spec["type"], {k: v for k, v in spec.items() if k != "type"}))
    scenarios = []
    for i, s in enumerate(need("scenarios", list) or []):
        if not isinstance(s, str) or "/" not in s:
            problems.append(Problem("a scenario is 'category/subcategory'", **doc.where(path + ("scenarios", i))))
            continue
        cat, sub = s.split("/", 1)
        scenarios.append((cat, sub))
    key = need("key", str)
    if key and not any(f.name == key for f in fields):
        problems.append(Problem(f"key {key!r} is not one of the fields", **doc.where(path + ("key",))))
    rows = need("rows", list) or [10, 20]
    from .formats import FORMATS

    formats = tuple(map(str, d.get("formats") or Domain.formats))
    for i, f in enumerate(formats):
        if f not in FORMATS:
            problems.append(
                Problem(
                    f"unknown format {f!r}", **doc.where(path + ("formats", i)), hint=f"formats: {', '.join(FORMATS)}"
                )
            )
    if "lines" in formats and not d.get("line"):
        problems.append(Problem("the lines format needs a `line` template", **doc.where(path + ("formats",))))
    derived = []
    names = {f.name for f in fields}
    for dname, spec in (d.get("derived") or {}).items():
        where = doc.where(path + ("derived", dname))
        if not isinstance(spec, dict) or not isinstance(spec.get("expr"), str) or spec.get("type") not in NUMBER_TYPES:
            problems.append(
                Problem(f"derived {dname!r} needs `expr` (a formula) and `type` (money, int or hours)", **where)
            )
            continue
        why = check_expr(spec["expr"])
        role = spec.get("role")
        if role is not None and role not in ROLES:
            problems.append(
                Problem(
                    f"derived {dname!r}: unknown role {role!r}",
                    **doc.where(path + ("derived", dname, "role")),
                    hint=_ROLE_HINT,
                )
            )
            continue
        if why is None and role is None:
            role = infer_role(spec["expr"], {f.name: f.role for f in fields})
        item = Derived(
            str(dname),
            spec["expr"],
            spec["type"],
            tuple(map(str, spec.get("ask") or ())),
            str(role or "quantity"),
            str(spec.get("unit") or ""),
        )
        if why is None and set(item.inputs()) - names:
            why = f"unknown field(s) {', '.join(sorted(set(item.inputs()) - names))}"
        if why is None and not item.ask:
            why = "give at least one way to ask for it (`ask`)"
        if why is not None:
            problems.append(Problem(f"derived {dname!r}: {why}", **doc.where(path + ("derived", dname, "expr"))))
            continue
        derived.append(item)
    noun = need("noun", list)
    # the words of the request (lexicon.py): how columns are named, why the person asks
    columns = {**{str(k): v for k, v in (d.get("fields") or {}).items()}, **(d.get("derived") or {})}
    says, reasons, systems, why_words = read_words(d, columns, tuple(map(str, d.get("personas") or ())), doc, path)
    problems += why_words
    if problems:
        return None, problems
    domain = Domain(
        name,
        (str(noun[0]), str(noun[1])),
        tuple(map(str, need("files", list))),
        tuple(map(str, need("folders", list))),
        tuple(scenarios),
        tuple(map(str, need("personas", list))),
        reasons,
        (int(rows[0]), int(rows[1])),
        key,
        tuple(fields),
        {str(k): str(v) for k, v in (d.get("relations") or {}).items()},
        formats,
        str(d.get("line") or ""),
        str(d.get("split") or ""),
        tuple(derived),
        say=says,
        systems=systems,
    )
    for i, (cat, sub) in enumerate(scenarios):  # a scenario promising work no chain over the domain can do
        why = unkeepable(sub, domain)
        if why is not None:
            problems.append(
                Problem(
                    f"scenario {cat}/{sub}: {why}",
                    **doc.where(path + ("scenarios", i)),
                    hint="file the domain under a scenario its chains serve, or give it such a column",
                )
            )
    return (None if problems else domain), problems


_ROLE_HINT = "roles: " + "; ".join(f"{name}: {meaning}" for name, meaning in ROLES.items())


def _role_problem(name: str, spec: dict) -> tuple[str, tuple, str] | None:
    """(message, key path below the field, hint) when a field's role is missing or does not fit its
    type: every money, int and hours field says what the number is, so that no operation sums a
    year or averages a run number."""
    role, kind = spec.get("role"), spec["type"]
    if role is None:
        if kind in NUMBER_TYPES:
            return f"field {name!r} ({kind}) needs a `role`: what the number is", (), _ROLE_HINT
        return None
    if role not in ROLES:
        return f"field {name!r}: unknown role {role!r}", ("role",), _ROLE_HINT
    if kind not in ROLE_TYPES[role]:
        return (
            f"field {name!r}: a {kind} field cannot have the role {role}",
            ("role",),
            f"the role {role} fits {', '.join(ROLE_TYPES[role])} fields",
        )
    if kind in CATEGORY_TYPES and not numeric_values(spec.get("values")):
        return f"field {name!r}: only a choice of numbers has a role", ("role",), "drop `role` or list numbers"
    return None


def _skill_problems(ref: str, doc: Document, path: tuple) -> list[Problem]:
    """`skill.operation` names an operation of a skill in the project's skills/ folder."""
    from ...errors import ClawgymError
    from ...spec.library import find_root, library_for

    skill, _, op = ref.partition(".")
    try:
        entry = library_for(find_root(Path(doc.file).parent)).skill(skill, doc.where(path))
    except ClawgymError as exc:
        return list(exc.problems)
    ops = [str(o.get("name")) for o in entry.spec.get("operations") or [] if isinstance(o, dict)]
    if op not in ops:
        return [
            Problem(
                f"skill {skill!r} has no operation {op!r}",
                **doc.where(path),
                hint=f"its operations: {', '.join(ops) or 'none'} (skills/{skill}/skill.yaml)",
            )
        ]
    return []


@lru_cache(maxsize=8)
def load_catalog(folder: str) -> Catalog:
    """Read `domains.yaml` and `operations.yaml` of a compose folder; all problems at once."""
    base = Path(folder)
    problems: list[Problem] = []
    ddoc, odoc = load_file(str(base / "domains.yaml")), load_file(str(base / "operations.yaml"))
    from ...spec.validate import validate_document

    problems = validate_document(ddoc, expected_kind="ComposeDomains") + validate_document(
        odoc, expected_kind="ComposeOperations"
    )
    if problems:  # the structure first: the checks below read it
        raise SpecError(problems)
    domains: dict[str, Domain] = {}
    for name, d in ((ddoc.data or {}).get("domains") or {}).items():
        dom, probs = _domain(str(name), d if isinstance(d, dict) else {}, ddoc, ("domains", name))
        problems += probs
        if dom is not None:
            domains[dom.name] = dom
    for dom in domains.values():
        for other, via in dom.relations.items():
            if other not in domains:
                problems.append(
                    Problem(
                        f"relation to unknown domain {other!r}", **ddoc.where(("domains", dom.name, "relations", other))
                    )
                )
            elif not any(f.name == via for f in dom.fields):
                problems.append(
                    Problem(
                        f"relation field {via!r} is not a field of {dom.name}",
                        **ddoc.where(("domains", dom.name, "relations", other)),
                    )
                )
    from .deliver import DELIVERABLES, MESSAGE
    from .ops import OPERATIONS

    implemented = {**OPERATIONS, **DELIVERABLES, MESSAGE.name: MESSAGE}
    operations: dict[str, Operation] = {}
    for name, o in ((odoc.data or {}).get("operations") or {}).items():
        where = odoc.where(("operations", name))
        if name not in implemented:
            problems.append(
                Problem(
                    f"operation {name!r} has no implementation",
                    **where,
                    hint=f"implemented: {', '.join(sorted(implemented))}",
                )
            )
            continue
        asks = o.get("ask") if isinstance(o, dict) else None
        if not asks:
            problems.append(Problem("an operation needs at least one way to ask for it (`ask`)", **where))
            continue
        problems += _skill_problems(str(o.get("skill", "")), odoc, ("operations", name, "skill"))
        operations[str(name)] = Operation(
            str(name), str(o.get("skill", "")), str(o.get("kind", "")), tuple(map(str, asks))
        )
    for name in sorted(set(implemented) - set(operations)):
        if not any(name in str(p.message) for p in problems):
            problems.append(
                Problem(
                    f"operation {name!r} is implemented but not declared",
                    file=odoc.file,
                    line=1,
                    hint="give it a skill, a kind and its ways of asking under `operations`",
                )
            )
    if problems:
        raise SpecError(problems)
    return Catalog(domains, operations, base)
