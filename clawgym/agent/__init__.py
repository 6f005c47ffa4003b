"""Agents: the loop that does a task inside a sandbox. Built-ins: `oracle`, `nop`, `tamper`, `claw`, `command`,
`openclaw` (the real OpenClaw, pinned)."""

from .base import Agent, agent_label, make_agent
from . import oracle as _oracle  # noqa: F401  (registers oracle and nop)
from .claw import ClawAgent  # noqa: F401  (registers claw)
from .command import CommandAgent  # noqa: F401  (registers command)
from . import tamper as _tamper  # noqa: F401  (registers tamper)
from .openclaw import OpenClawAgent  # noqa: F401  (registers openclaw)

__all__ = ["Agent", "agent_label", "make_agent"]
