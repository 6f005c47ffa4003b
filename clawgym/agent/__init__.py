"""Agents: the loop that does a task inside a sandbox. Built-ins: `oracle`, `nop`, `tamper`, `claw`, `command`."""

from .base import Agent, agent_label, make_agent
from . import oracle as _oracle  # noqa: F401  (registers oracle and nop)
from .claw import ClawAgent  # noqa: F401  (registers claw)
from .command import CommandAgent  # noqa: F401  (registers command)
from . import tamper as _tamper  # noqa: F401  (registers tamper)

__all__ = ["Agent", "agent_label", "make_agent"]
