"""The check-name gate: a check whose name promises a property is graded on the reference's output
with only that property broken, and must lose score. "in order", "sorted", "highest first": the
rows reordered; "exactly", "only the X", "nothing else", "no other": one surplus row copied from
the input (the last row repeated when no input record fits); "every", "each", "one row per": one
row dropped; "untouched", "unchanged" (`unchanged` checks): an input file edited; "heading": the
heading renamed. Rows are those of `rows.py`; where a file has several groups of rows, the check
passes if breaking its property in one of them lowers its score."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from ...checks import check_class
from ...files import safefs
from ...files.tempdirs import make_temp
from ...spec.task import Task
from .records import EPS, OK, PROBLEM, SKIPPED, Grading, Mutation, Skip
from .rows import ATX, repeated, row_sets
from .workspace import Edits, apply_edits, check_files, input_records, read_text, workspace_files

# property -> the words of a check name that promise it
PROMISES: dict[str, re.Pattern] = {
    "order": re.compile(
        r"\bin (?:[\w'-]+ ){0,3}?order\b|\b(?:ordered|sorted|alphabetical(?:ly)?)\b"
        r"|\b(?:earliest|latest|oldest|newest|highest|lowest|largest|smallest|biggest|longest|shortest|most|least|fewest)"
        r"\b(?: [\w-]+){0,2} first\b",
        re.I,
    ),
    "exact": re.compile(r"\bexactly\b|\bonly the\b|\bnothing else\b|\bno other\b|\bno extra\b", re.I),
    "every": re.compile(r"\bevery\b|\beach\b|\bone [\w' -]{0,30}?\bper\b", re.I),
    "untouched": re.compile(r"\buntouched\b|\bunchanged\b|\bleft alone\b|\bunmodified\b", re.I),
    "heading": re.compile(r"\bheadings?\b", re.I),
}

_SAYS = {
    "order": "an order",
    "exact": "nothing more",
    "every": "every row",
    "untouched": "untouched inputs",
    "heading": "a heading",
}
TRIES = 12  # at most this many ways of breaking one property are graded


def promises(name: str) -> list[str]:
    """The properties a check's name promises (keys of PROMISES)."""
    return [prop for prop, rx in PROMISES.items() if rx.search(name)]


def _check_name(check: dict, i: int) -> str:
    """The name a check's result carries (as `run_checks` names it)."""
    try:
        return check_class(str(check.get("type")))(check).name
    except Exception:  # noqa: BLE001 - an unknown or invalid check: named as the verifier names it
        return str(check.get("name") or f"{check.get('type', '?')} #{i + 1}")


def _clean(heading: str) -> str:
    """A heading's text without emphasis marks, spacing or case."""
    return " ".join(re.sub(r"[*_`]+", "", heading).split()).casefold().rstrip(":")


def _rename_heading(text: str, check: dict) -> str:
    """`text` with the heading the check names (else the first) renamed."""
    lines = text.split("\n")
    heads = [(i, m) for i, line in enumerate(lines) if (m := ATX.match(line))]
    if not heads:
        raise Skip("the file has no heading")
    wanted = _clean(str(check.get("heading") or next(iter(check.get("headings") or []), "")))
    i, m = next(((i, m) for i, m in heads if wanted and _clean(m.group(2)) == wanted), heads[0])
    lines[i] = f"{m.group(1)} {'Notes' if _clean(m.group(2)) != 'notes' else 'Draft'}"
    return "\n".join(lines)


def _row_candidates(prop: str, rel: str, text: str, records: list[dict[str, Any]]) -> list[tuple[str, Edits]]:
    """Ways of breaking `prop` in the rows of one file (each group of rows in turn)."""
    out: list[tuple[str, Edits]] = []
    for rows in row_sets(rel, text):
        if prop == "order":
            changed = [o for o in (rows.items[::-1], rows.items[1:] + rows.items[:1]) if o != rows.items]
            out += [(f"the {rows.kind} of {rel} reordered", {rel: rows.render(changed[0]).encode()})] if changed else []
        elif prop == "every":
            out += [
                (
                    f"one of the {rows.kind} of {rel} dropped",
                    {rel: rows.render(rows.items[:i] + rows.items[i + 1 :]).encode()},
                )
                for i in reversed(range(len(rows.items)))
            ]
        else:
            extra = rows.from_input(records)
            how = "copied from the input" if extra is not None else "repeating the last one"
            new = rows.items + [extra if extra is not None else repeated(rows)]
            out.append((f"one surplus of the {rows.kind} of {rel} ({how})", {rel: rows.render(new).encode()}))
    return [c for c in out if c[1][rel] != text.encode()]


def _candidates(
    prop: str, check: dict, final: Path, inputs: set[str], records: list[dict[str, Any]]
) -> list[tuple[str, Edits]]:
    """Ways of breaking only `prop` in the reference's output `final`, each as (what, edits)."""
    files = check_files(check, workspace_files(final))
    if prop == "untouched":
        if check.get("type") != "unchanged":
            raise Skip("it is no `unchanged` check: no input file to edit")
        edited = [f for f in files if f in inputs]
        if not edited:
            raise Skip("no input file it covers is in the output")
        return [(f"the input {edited[0]} edited", {edited[0]: (final / edited[0]).read_bytes() + b"\nedited\n"})]
    if check.get("type") == "files_count":
        if prop not in ("every", "exact") or not files:
            raise Skip("it counts no file of the output" if not files else f"a count of files has no {prop}")
        last = files[-1]
        if prop == "every":
            return [(f"{last} deleted", {last: None})]
        stem, dot, suffix = last.rpartition(".")
        return [
            (
                f"a copy of {last} added",
                {f"{stem or suffix}-extra{dot}{suffix if stem else ''}": (final / last).read_bytes()},
            )
        ]
    if not files:
        raise Skip("it reads no file of the output")
    out: list[tuple[str, Edits]] = []
    for rel in files:
        text = read_text(final / rel)
        if prop == "heading":
            out += [(f"the heading of {rel} renamed", {rel: _rename_heading(text, check).encode()})]
        else:
            out += _row_candidates(prop, rel, text, records)
    if not out:
        raise Skip(f"{', '.join(files[:2])} has no rows to change")
    return out[:TRIES]


def check_name_mutations(
    task: Task, pristine: Path, final: Path, *, trajectory: dict | None = None, sandbox: dict | None = None
) -> list[Mutation]:
    """For each check whose name promises a property, break only that property in a copy of the
    reference's output (`final`, graded with the reference's `trajectory`) and require the check's
    score to drop. Where a file has several groups of rows (tables, sections, lists) or `every` can
    drop any of several rows, the check passes if one of those ways (up to TRIES) lowers it."""
    grading = Grading(task, Path(pristine), trajectory, sandbox)
    inputs, records = set(workspace_files(Path(pristine))), input_records(Path(pristine))
    root = make_temp("mutations")
    workspace = root / "output"
    out = []
    try:
        shutil.copytree(final, workspace, symlinks=True)
        for i, check in enumerate(grading.checks):
            name = _check_name(check, i)
            props = promises(name)
            alone = _alone(check)
            base = grading.verdict(workspace, [alone]).reward if props else 1.0
            for prop in props:
                out.append(_one_promise(grading, alone, name, prop, base, workspace, inputs, records))
    finally:
        safefs.remove_tree(root)
    return out


def _alone(check: dict) -> dict:
    """`check` scored on its own: weight 1 and no gate, so a gate that weighs 0 (an `unchanged`
    gate, say) still shows whether it tests what its name promises."""
    return {**check, "weight": 1, "gate": False}


def _one_promise(
    grading: Grading,
    check: dict,
    name: str,
    prop: str,
    base: float,
    workspace: Path,
    inputs: set[str],
    records: list[dict[str, Any]],
) -> Mutation:
    """The record of one promise of one check (`base`: its score on the reference's output)."""
    label = f"check '{name}': {prop}"
    if base < 1 - EPS:
        why = f"check '{name}' scores {base:.2f} on the reference's own output"
        return Mutation("check name", label, name, base, SKIPPED, why)
    try:
        candidates = _candidates(prop, check, workspace, inputs, records)
    except Skip as exc:
        return Mutation("check name", label, name, None, SKIPPED, f"check '{name}' promises {_SAYS[prop]}, but {exc}")
    for what, edits in candidates:
        undo = apply_edits(workspace, edits)
        try:
            score = grading.verdict(workspace, [check]).reward
        finally:
            undo()
        if score < 1 - EPS:
            return Mutation(
                "check name", f"{label}: {what}", name, score, OK, f"check '{name}' scores {score:.2f} with {what}"
            )
    what = candidates[0][0] + (f" (nor {len(candidates) - 1} other such changes)" if len(candidates) > 1 else "")
    why = (
        f"check '{name}' still scores 1.0 with {what}: it does not test what its name says "
        "(make it test that, or name what it tests)"
    )
    return Mutation("check name", f"{label}: {what}", name, 1.0, PROBLEM, why)
