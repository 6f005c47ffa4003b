"""`clawgym diff` output: the cause (each spec file's own YAML change) next to its effect (what
changed in the compiled instances on each seed), as terminal text or as markdown for a
pull-request comment.

Spec files, their names and what they render come from whoever wrote the change: every line shown
goes through `clawgym.files.textsafe` (controls, escapes and bidi characters made visible; markdown
and HTML in names shown as text), so neither output can drive a terminal or reshape the comment."""

from __future__ import annotations

import json
import re
from typing import Any

from rich.text import Text

from ..files.textsafe import html_safe, markdown_code, markdown_safe, printable
from .diff import Change, Diff

#: Instance diffs shown in full per spec in markdown; the rest are summarised in one line each.
MARKDOWN_INSTANCES = 3


def _value(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str) if not isinstance(value, str) else value
    return text if len(text) <= 40 else text[:37] + "..."


def effect_line(change: Change) -> str:
    """One line saying what changed in an instance: params, files, instruction, checks, the rest."""
    parts = []
    if change.params:
        parts.append("params " + ", ".join(f"{k} {_value(a)} → {_value(b)}" for k, (a, b) in change.params.items()))
    for kind in ("added", "removed", "changed"):
        names = change.files[kind]
        if names:
            shown = [
                f"{n} ({change.lines[n][0]} → {change.lines[n][1]} lines)" if n in change.lines else n
                for n in names[:4]
            ]
            parts.append(
                f"files {kind}: {', '.join(shown)}" + (f" and {len(names) - 4} more" if len(names) > 4 else "")
            )
    if change.instruction_diff:
        parts.append("instruction changed")
    if change.checks_diff:
        parts.append("checks changed")
    if change.other:
        parts.append("also " + ", ".join(change.other))
    return "; ".join(parts) or "content hash changed"


def _by_spec(diff: Diff) -> dict[str, dict[str, list]]:
    """For each spec file: its instances added, changed and removed."""
    out: dict[str, dict[str, list]] = {}
    for key, spec in diff.added:
        out.setdefault(spec, {"added": [], "changed": [], "removed": []})["added"].append(key)
    for change in diff.changed:
        out.setdefault(change.spec, {"added": [], "changed": [], "removed": []})["changed"].append(change)
    for key, spec in diff.removed:
        out.setdefault(spec, {"added": [], "changed": [], "removed": []})["removed"].append(key)
    return out


def broken(diff: Diff) -> list[tuple[str, str]]:
    """(side, message) of specs broken on one side only: a spec broken at both is not this change's."""
    base = [p.format() for p in diff.broken_base]
    head = [p.format() for p in diff.broken_head]
    return [("at " + diff.base, m) for m in base if m not in head] + [("now", m) for m in head if m not in base]


def summary_line(diff: Diff) -> str:
    seeds = ", ".join(map(str, diff.seeds))
    text = (
        f"{len(diff.added)} added, {len(diff.changed)} changed, {len(diff.removed)} removed, "
        f"{diff.unchanged} unchanged since {diff.base} (seeds {seeds})"
    )
    if diff.compiled_all:
        text += f"; every spec compiled: {diff.compiled_all}"
    elif diff.not_compiled:
        text += f"; {diff.not_compiled} spec file{'s' if diff.not_compiled != 1 else ''} not affected, not compiled"
    return text


def print_diff(diff: Diff, console: Any, *, full: bool = True) -> None:
    """The listing, each spec's own change with its effect per seed, then (with `full`) the
    rendered instruction and checks diffs of each changed instance."""
    changed = [(c.key, c.spec) for c in diff.changed]
    for label, items, style in (
        ("added", diff.added, "green"),
        ("changed", changed, "yellow"),
        ("removed", diff.removed, "red"),
    ):
        for key, spec in items:
            console.print(printable(f"{label:<8} {key}  ({spec})"), style=style, markup=False, highlight=False)
    for side, message in broken(diff):
        console.print(printable(f"{'broken':<8} {side}: {message}"), style="red", markup=False, highlight=False)
    console.print(printable(summary_line(diff)), highlight=False, markup=False)
    if not full:
        return
    spec_changes = {c.spec: c for c in diff.specs}
    instances = _by_spec(diff)
    for spec in sorted(set(spec_changes) | set(instances)):
        own = spec_changes.get(spec)
        console.rule(
            Text(
                printable(
                    f"{spec}"
                    + (
                        f" ({own.status}: {', '.join(own.sections)})"
                        if own and own.sections
                        else f" ({own.status})"
                        if own
                        else ""
                    )
                )
            ),
            style="yellow",
        )
        if own and own.diff:
            console.print("the spec's change:", markup=False, highlight=False)
            _print_lines(console, own.diff)
        elif own is None:
            console.print("the spec file is the same; a file it uses changed", markup=False, highlight=False)
        got = instances.get(spec, {"added": [], "changed": [], "removed": []})
        if got["changed"]:
            console.print("its effect:", markup=False, highlight=False)
            for change in got["changed"]:
                console.print(printable(f"  {change.key}: {effect_line(change)}"), markup=False, highlight=False)
        for kind in ("added", "removed"):
            if got[kind]:
                console.print(printable(f"  instances {kind}: {', '.join(got[kind])}"), markup=False, highlight=False)
        for change in got["changed"]:
            if change.instruction_diff or change.checks_diff:
                console.print(printable(f"{change.key}, rendered:"), markup=False, highlight=False)
                _print_lines(console, change.instruction_diff + change.checks_diff)


def _print_lines(console: Any, lines: list[str]) -> None:
    for line in lines:
        style = (
            "bold"
            if line.startswith(("---", "+++"))
            else "green"
            if line.startswith("+")
            else "red"
            if line.startswith("-")
            else "cyan"
            if line.startswith("@@")
            else None
        )
        console.print(printable(line), style=style, markup=False, highlight=False, soft_wrap=True)


def _fence(lines: list[str]) -> list[str]:
    """A ```diff block of the lines, made visible, whose fence is longer than any backtick run in them."""
    shown = [printable(line) for line in lines]
    longest = max((len(run) for line in shown for run in re.findall("`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}diff", *shown, fence]


def markdown(diff: Diff) -> str:
    """The comparison as a pull-request comment: a summary, then per spec file its own change
    (a YAML diff) and a table of its effect on each seed, with the rendered diffs folded away."""
    out = ["## Task changes", "", markdown_safe(summary_line(diff)), ""]
    for side, message in broken(diff):
        out.append(f"- :x: broken {markdown_safe(side)}: {markdown_code(message)}")
    if broken(diff):
        out.append("")
    spec_changes = {c.spec: c for c in diff.specs}
    instances = _by_spec(diff)
    for spec in sorted(set(spec_changes) | set(instances)):
        own = spec_changes.get(spec)
        status = own.status if own else "changed (a file it uses)"
        out += [f"### {markdown_code(spec)} ({status})", ""]
        if own and own.diff:
            out += [f"Spec change ({markdown_safe(', '.join(own.sections))}):", "", *_fence(own.diff), ""]
        got = instances.get(spec, {"added": [], "changed": [], "removed": []})
        if got["changed"]:
            out += ["| instance | effect |", "|---|---|"]
            out += [f"| {markdown_code(c.key, table=True)} | {markdown_safe(effect_line(c))} |" for c in got["changed"]]
            out.append("")
        for kind in ("added", "removed"):
            if got[kind]:
                out += [f"Instances {kind}: " + ", ".join(markdown_code(k) for k in got[kind]), ""]
        shown = [c for c in got["changed"] if c.instruction_diff or c.checks_diff][:MARKDOWN_INSTANCES]
        for change in shown:
            out += [
                "<details>",
                f"<summary>{html_safe(change.key)}: rendered instruction and checks</summary>",
                "",
                *_fence(change.instruction_diff + change.checks_diff),
                "",
                "</details>",
                "",
            ]
    if not diff.specs and not diff.changed and not diff.added and not diff.removed:
        out += ["No task instance changed.", ""]
    return "\n".join(out).rstrip() + "\n"
