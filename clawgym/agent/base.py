"""The Agent interface: drive work inside a sandbox for one task, return a Trajectory."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from ..registry import get
from ..sandbox import Sandbox
from ..spec.task import Task
from ..records.trajectory import Trajectory

COMMON_AGENT_PROPS = {
    "type": {"type": "string", "description": "Agent name."},
    "name": {
        "type": "string",
        "description": "Label for this agent in results (default: its type); "
        "use it to run two configurations of one agent side by side.",
    },
    "policy_version": {
        "type": "integer",
        "minimum": 0,
        "description": "Set by `clawgym train rl`: the step whose weights sample this rollout (0: the "
        "starting weights; a step without an update keeps its weights), recorded with every rollout.",
    },
}


class Agent(ABC):
    """An agent is configured once and then run on many (task, sandbox) pairs, possibly in parallel."""

    type: ClassVar[str]
    schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "properties": COMMON_AGENT_PROPS,
    }

    def __init__(self, config: dict[str, Any]):
        self.config = dict(config)

    @property
    def label(self) -> str:
        return str(self.config.get("name") or self.type)

    def describe(self) -> dict[str, Any]:
        """What a trajectory records about the agent (type, label, settings)."""
        return {**self.config, "type": self.type, "name": self.label}

    def sandbox_options(self, task: Task) -> dict[str, Any]:
        """Extra options this agent needs from the sandbox (e.g. read-only binds of its program)."""
        return {}

    def new_trajectory(self, task: Task) -> Trajectory:
        return Trajectory(task=task.summary(), agent=self.describe())

    @abstractmethod
    def run(self, task: Task, sandbox: Sandbox) -> Trajectory:
        """Do the task inside `sandbox` and return what happened. Infrastructure failures raise InfraError."""


def make_agent(config: dict[str, Any]) -> Agent:
    """Build an agent from its config (`type:` picks the class)."""
    cls = get("agent", config["type"])
    return cls(config)


def agent_label(config: dict[str, Any]) -> str:
    return str(config.get("name") or config["type"])
