"""What every command module shares: the console, and the wrapper that turns a ClawgymError into
its message and exit code (no traceback for user mistakes)."""

from __future__ import annotations

import sys
from functools import wraps
from typing import Any, Callable, Sequence

from rich.console import Console

from ..errors import ClawgymError
from ..files.textsafe import printable

CONSOLE = Console(width=None if sys.stdout.isatty() else 140)


def error_text(text: str) -> str:
    """An error message safe for the terminal: control characters escaped, continuation lines indented.

    Messages can quote agent data (file names, check reasons); the indent keeps a newline inside
    them from starting a line that looks like another message.
    """
    return printable(text, multiline=True).replace("\n", "\n  ")


def friendly(fn: Callable) -> Callable:
    """Map ClawgymError to its message and exit code; no traceback for user mistakes."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ClawgymError as exc:
            for problem in exc.problems:
                print(f"error: {error_text(problem.format())}", file=sys.stderr)
            summary = getattr(exc, "summary", None)  # a command's own summary line, always printed
            if summary:
                print(summary, file=sys.stderr)
            elif len(exc.problems) > 1:
                print(f"{len(exc.problems)} problems found", file=sys.stderr)
            sys.exit(exc.exit_code)

    return wrapper


def name_at_version(spec: str, known: Sequence[str], what: str, example: str) -> tuple[str, str | None]:
    """`NAME` or `NAME@VERSION` of something installable (`what`: "engine"), NAME one of `known`."""
    name, _, version = spec.partition("@")
    if name not in known:
        raise ClawgymError(f"unknown {what} {name!r}", hint=f"installable: {', '.join(known)} (e.g. {example})")
    return name, version or None
