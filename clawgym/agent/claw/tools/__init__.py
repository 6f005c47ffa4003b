"""The claw agent's tools: one function per tool, `fn(ctx, args) -> str`, grouped by family.

A tool signals a failure by raising ToolError (or PathError); the loop turns it into the JSON
error message the model sees. Which tools a task gets: `select_tools`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ....sandbox import Sandbox
from ....spec.task import Task, thaw
from ..paths import PathError, Workspace

ALWAYS = ("read", "write", "edit", "exec", "process")
DEFAULT_ON = ("memory_search", "memory_get", "session_status")
OPTIONAL = ("web_search", "web_fetch", "message", "cron")
ALL_TOOLS = ALWAYS + DEFAULT_ON + OPTIONAL


class ToolError(Exception):
    """A tool failed; the message goes back to the model as JSON."""


@dataclass
class RunState:
    """Per-run state the tools share (one per `ClawAgent.run`, never shared between threads)."""

    task: Task
    sandbox: Sandbox
    workspace: Workspace
    deadline: float  # time.monotonic() at which the wall budget ends
    max_turns: int
    max_tokens_total: int | None
    tool_output_chars: int
    model: str = ""
    turn: int = 0
    tokens_used: int = 0
    side_effects: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {"outbox": [], "cron": [], "web": []})
    sessions: Any = None  # shell.Sessions, created on first use
    cron_next_id: int = 1
    corpus: list[dict[str, Any]] = field(default_factory=list)
    cache: dict[str, Any] = field(default_factory=dict)  # tools' per-run caches (search indexes)

    def __post_init__(self) -> None:
        self.corpus = [dict(p) for p in thaw((self.task.tools or {}).get("corpus") or [])]

    @property
    def turn_index(self) -> int:
        """0-based index of the current model turn (as in `trajectory.turns`)."""
        return max(self.turn - 1, 0)

    def seconds_left(self) -> float:
        return self.deadline - time.monotonic()


Tool = Callable[[RunState, dict[str, Any]], str]


def as_json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2)


def arg_str(args: dict[str, Any], name: str, required: bool = True, default: str | None = None) -> str | None:
    value = args.get(name)
    if value is None:
        if required:
            raise ToolError(f"missing required argument {name!r}")
        return default
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise ToolError(f"argument {name!r} must be a string, got {type(value).__name__}")
    return value


def arg_num(
    args: dict[str, Any], name: str, default: float | None = None, minimum: float | None = None, integer: bool = True
) -> Any:
    value = args.get(name)
    if value is None or value == "":
        return default
    try:
        num = float(value)
        if integer:
            if num != int(num):
                raise ValueError
            num = int(num)
    except (TypeError, ValueError):
        kind = "an integer" if integer else "a number"
        raise ToolError(f"argument {name!r} must be {kind}, got {value!r}") from None
    if minimum is not None and num < minimum:
        raise ToolError(f"argument {name!r} must be at least {minimum}, got {num}")
    return num


def registry() -> dict[str, Tool]:
    """Every tool function by name (imports are local so the package stays light)."""
    from . import files, memory, shell, simulated

    return {
        "read": files.read,
        "write": files.write,
        "edit": files.edit,
        "exec": shell.exec_tool,
        "process": shell.process,
        "memory_search": memory.memory_search,
        "memory_get": memory.memory_get,
        "session_status": memory.session_status,
        "web_search": simulated.web_search,
        "web_fetch": simulated.web_fetch,
        "message": simulated.message,
        "cron": simulated.cron,
    }


def select_tools(task_tools: dict[str, Any] | None, overrides: dict[str, Any] | None = None) -> list[str]:
    """Tool names offered for a task: always-on + default-on, then the task's enable/disable, then
    the agent's `tools` overrides (enable/disable) on top. The always-on tools cannot be removed."""
    chosen = set(ALWAYS + DEFAULT_ON)
    for layer in (task_tools or {}, overrides or {}):
        chosen |= set(layer.get("enable") or ())
        chosen -= set(layer.get("disable") or ()) - set(ALWAYS)
    return [name for name in ALL_TOOLS if name in chosen]


__all__ = [
    "ALL_TOOLS",
    "ALWAYS",
    "DEFAULT_ON",
    "OPTIONAL",
    "PathError",
    "RunState",
    "Tool",
    "ToolError",
    "Workspace",
    "arg_num",
    "arg_str",
    "as_json",
    "registry",
    "select_tools",
]
