"""The record of one attempt of one task by one agent (versioned JSON)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from .outcomes import LEGACY
from .outcomes import OUTCOMES as CONTRACT

FORMAT = "clawgym.trajectory/v1"
# how an agent says its run ended: the trial outcome contract (clawgym.records.outcomes), plus the
# older words still read (timeout, failed, error)
OUTCOMES = CONTRACT + tuple(LEGACY)


@dataclass
class Trajectory:
    """What one agent did on one task instance.

    - `outcome`: how the agent's run ended, in the trial outcome contract's words
      (`clawgym.records.outcomes`): completed, agent_timeout, budget_exhausted, context_overflow,
      agent_crash, or an infrastructure outcome such as model_error (never graded, never a reward
      of 0). Older agents' words (timeout, failed, error) are read as the contract's.
    - `steps`: what happened in the sandbox (exec results, tool calls with their results).
    - `messages`: for model-driven agents, the full conversation in OpenAI chat format (system,
      user, assistant with `tool_calls`, tool results), and `tools` the function schemas offered.
    - `turns`: one entry per model call: index, finish_reason, usage, latency_s, and when the
      backend gives them `prompt_token_ids`, `token_ids` and `logprobs` (for RL).
    - `side_effects`: recorded simulated effects for checks: {"outbox": [...], "cron": [...],
      "web": [...]}.
    - `verdict` and `diff` are attached after verification when trajectories are exported.
    """

    task: dict[str, Any]
    agent: dict[str, Any]
    steps: list[dict[str, Any]] = field(default_factory=list)
    outcome: str = "completed"
    final_message: str | None = None
    error: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    started_at: float = field(default_factory=time.time)
    ended_at: float | None = None
    policy: dict[str, Any] | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)
    turns: list[dict[str, Any]] = field(default_factory=list)
    side_effects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    verdict: dict[str, Any] | None = None
    diff: str | None = None
    format: str = FORMAT

    def add(self, kind: str, **fields: Any) -> dict[str, Any]:
        """Append one step (`kind` is exec, write, tool, message...) and return it."""
        step = {"index": len(self.steps), "kind": kind, **fields}
        self.steps.append(step)
        return step

    def finish(self, outcome: str | None = None, error: str | None = None) -> "Trajectory":
        if outcome:
            self.outcome = outcome
        if error:
            self.error = error
        self.ended_at = time.time()
        return self

    def to_dict(self) -> dict[str, Any]:
        """A plain dict of the fields (containers copied one level deep: cheap, not a deep copy)."""
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            out[name] = value.copy() if isinstance(value, (list, dict)) else value
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Trajectory":
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)
