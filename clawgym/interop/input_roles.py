"""Decide, per input file of an imported task, whether grading restores it from the pristine copy.

Published graders recompute their expected answers from the input files in the workspace, so an
agent that truncates the inputs and writes outputs consistent with the truncation scores 1.0.
Restoring the inputs before grading closes that hole, but only for files the agent is not asked
to change: a config it must fix, a journal it must append to, files it must move keep the agent's
version. The instruction is read clause by clause, the way its author meant it:

- prohibitions, of a file or of a whole folder ("Do not modify files under input/", "Leave
  everything in data/ as it is", "the files in config/ are read-only", "leave everything else
  untouched"), with their exceptions ("except config/local.yaml");
- "only X" ("only adjust config/config.json", "the only file you should edit is ..."): X is to
  change, every other input is protected;
- change requests on files or folders ("fix src/parser.py", "append to journal.md", "move every
  file in inbox/", "apply these changes in place to a.md and b.md", "update both files in place");
- what only looks like a request: nouns and adjectives ("the 3 most recent updates", "the change
  log", "the updated prices", "sorted by date"), new files written into an input folder, and
  changes whose result goes to another file ("sort data.csv and write it to output/x.csv").

A file-level statement beats a folder-level one, a prohibition of a file beats everything, and
when nothing asks for a change the file is restored (the safe side). Every decision records its
reason; the spec lists them so a reviewer can override any.

This module weighs what the clauses say into decisions. Splitting the instruction into clauses and
finding the inputs each names is in `instruction_clauses`, change requests in `instruction_requests`,
prohibitions, "only X" and exceptions in `instruction_bans`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable

from .instruction_bans import EVERYTHING_ELSE, ONLY, banned_mentions, excepted_mentions, rest_is_left_alone
from .instruction_clauses import FILE_PATH, Clause, Mention, filtered, group_ending_at, group_starting_at, split_clauses
from .instruction_requests import CHANGE, changed_mentions

_GONE = re.compile(r"not\s+(?:os\.path\.(?:exists|isfile|lexists)|[\w().\[\]'\"/ +]*\.(?:exists|is_file)\(\))")


@dataclass(frozen=True)
class Decision:
    """One input file: restore it before grading or keep the agent's version, and why."""

    path: str
    restore: bool
    why: str


def decide(inputs: list[str], instruction: str, grader_source: str = "") -> list[Decision]:
    """A decision for every input file (same order)."""
    verdicts: dict[str, tuple[int, bool, str]] = {}  # path -> (priority, restore, why); the highest priority wins

    def say(paths: Iterable[str], priority: int, restore: bool, why: str) -> None:
        for path in paths:
            if path not in verdicts or priority > verdicts[path][0]:
                verdicts[path] = (priority, restore, why)

    for path in inputs:
        name = path.rsplit("/", 1)[-1]
        line = next((ln for ln in grader_source.splitlines() if (path in ln or name in ln) and _GONE.search(ln)), None)
        if line is not None:
            say([path], 100, False, f"kept: the grader checks that it is gone ({line.strip()[:100]})")
    clauses = split_clauses(instruction, inputs)
    rest_bans: list[str] = []
    previous: list[Mention] = []
    for clause in clauses:
        _read_clause(clause, previous, inputs, say, rest_bans)
        if clause.mentions or FILE_PATH.search(clause.text):
            previous = clause.antecedent
    kept = {p for p, (_, restore, _) in verdicts.items() if not restore}
    for quote in rest_bans:  # "leave everything else untouched": every input no clause asks to change
        say(
            [p for p in inputs if p not in kept],
            40,
            True,
            f'restored: the instruction says to leave the rest alone: "{quote}"',
        )
    named = {p for c in clauses for m in c.mentions for p in m.paths}
    out = []
    for path in inputs:
        if path in verdicts:
            _, restore, why = verdicts[path]
            out.append(Decision(path, restore, why))
        elif path in named:
            out.append(Decision(path, True, "restored: the instruction reads it but does not ask to change it"))
        else:
            out.append(Decision(path, True, "restored: the instruction does not name it"))
    return out


def _read_clause(clause: Clause, previous: list[Mention], inputs: list[str], say: Any, rest_bans: list[str]) -> None:
    """Record what one clause says about the inputs it names (or, through a pronoun, the last ones named)."""
    text, lower, quote, mentions = clause.text, clause.text.lower(), clause.quote, clause.mentions
    excepted = excepted_mentions(lower, mentions)
    if excepted:
        exc_paths = [p for m in excepted for p in m.paths]
        mentions = [m for m in mentions if m not in excepted]
    else:
        exc_paths = []
    only = ONLY.search(lower)
    if only:
        after = [m for m in mentions if m.start >= only.start()]
        before = [m for m in mentions if m.end <= only.start()]
        targets = (
            group_starting_at(mentions, after[0], lower)
            if after and not re.match(r"\b(?:is|are) the", only.group(0))
            else group_ending_at(mentions, before[-1], lower)
            if before
            else []
            if mentions
            else list(previous)
        )
        if targets:
            chosen = [p for m in targets for p in m.paths]
            say(chosen, 80, False, f'kept: the instruction asks to change only it: "{quote}"')
            say(
                [p for p in inputs if p not in chosen],
                65,
                True,
                f'restored: the instruction asks to change only {", ".join(chosen)[:80]}: "{quote}"',
            )
            return
    banned = banned_mentions(lower, mentions, previous)
    if banned is not None:
        for m in banned:
            say(
                filtered(m, lower),
                90 if m.level == "file" else 60,
                True,
                f'restored: the instruction says not to change it: "{quote}"',
            )
        if exc_paths:
            say(exc_paths, 70, False, f'kept: the instruction excepts it from what must not change: "{quote}"')
        if EVERYTHING_ELSE.search(lower):
            rest_bans.append(quote)
        return
    if EVERYTHING_ELSE.search(lower) and rest_is_left_alone(lower):
        rest_bans.append(quote)
        return
    changed = changed_mentions(text, lower, mentions, previous, inputs)
    for m in changed:
        paths = [p for p in filtered(m, lower) if p not in exc_paths]
        say(paths, 75 if m.level == "file" else 50, False, f'kept: the instruction asks to change it: "{quote}"')
    if exc_paths and changed:  # "update every file under docs/ except docs/LICENSE": the exception is not changed
        say(exc_paths, 72, True, f'restored: the instruction excepts it from the change: "{quote}"')
    elif exc_paths and not changed and CHANGE.search(lower):
        say(exc_paths, 70, False, f'kept: the instruction asks to change it: "{quote}"')
