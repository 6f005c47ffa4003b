"""Error types. Every user-facing error knows where it happened, what was expected and how to fix it.

The CLI prints `format()` and exits with `exit_code`; no traceback is shown for these.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Iterable, Sequence


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """Return " (did you mean 'x'?)"-style text listing the closest choices, or ''."""
    close = difflib.get_close_matches(str(word), sorted(set(choices)), n=2, cutoff=0.6)
    if not close:
        return ""
    return "did you mean " + " or ".join(repr(c) for c in close) + "?"


def key_path(parts: Sequence[object]) -> str:
    """Render a key path such as ('checks', 2, 'path') as 'checks[2].path'."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


@dataclass
class Problem:
    """One thing wrong with a spec, located by file, line and key path."""

    what: str
    file: str | None = None
    line: int | None = None
    key: str | None = None
    hint: str | None = None

    def format(self) -> str:
        where = ""
        if self.file:
            where = f"{self.file}:{self.line}: " if self.line else f"{self.file}: "
        key = f"{self.key}: " if self.key else ""
        hint = f" ({self.hint})" if self.hint else ""
        return f"{where}{key}{self.what}{hint}"


class ClawgymError(Exception):
    """A user-facing error: bad input or a missing prerequisite. Exit code 2 by default."""

    exit_code = 2

    def __init__(
        self,
        what: str,
        *,
        file: str | None = None,
        line: int | None = None,
        key: str | None = None,
        hint: str | None = None,
    ):
        self.problems = [Problem(what, file, line, key, hint)]
        super().__init__(self.format())

    def format(self) -> str:
        return "\n".join(p.format() for p in self.problems)


class SpecError(ClawgymError):
    """One or more problems with spec files, reported all at once."""

    def __init__(self, problems: Sequence[Problem]):
        self.problems = list(problems)
        Exception.__init__(self, self.format())

    @classmethod
    def one(cls, what: str, **where) -> "SpecError":
        return cls([Problem(what, **where)])


class PrerequisiteError(ClawgymError):
    """Something the machine needs is missing (bubblewrap, a Docker daemon, an extra)."""

    exit_code = 3


class InfraError(Exception):
    """An infrastructure failure during a rollout (sandbox died, endpoint down).

    Recorded as a trial with status `error`, never as reward 0, and retried on resume.
    """
