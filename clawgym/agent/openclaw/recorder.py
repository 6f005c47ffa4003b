"""What the recording proxy does for OpenClaw on top of recording: budgets, and segments where
OpenClaw rewrites its earlier context.

Budgets: past the turn or token budget a request is not sent to the model; it is answered with a
final assistant message (no tool call), so OpenClaw ends its run cleanly instead of retrying a
refusal, and the trajectory ends as `timeout` with the reason.

Segments: each request should continue the last one (its messages, then the answer given). When
it does not (OpenClaw compacted or rewrote its history), the conversation so far is closed as a
segment (kept in a `context_rewritten` step) and a new one starts; every turn records its segment.
Two changes are expected and are not splits: 2026.9.6 appends a transient "internal context" user
message to each request and drops it from the next, and a re-generated system prompt (a new run
of `agent --local` stamps a new date) is noted, not split on. Tool-call ids are compared loosely:
OpenClaw rewrites them (`call_exec` becomes `callexec`).
"""

from __future__ import annotations

import json
import threading
from typing import Any

from ...policy.base import Completion, Policy
from ...records.trajectory import Trajectory
from ..proxy import RecordingPolicy

INTERNAL_CONTEXT = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"
BUDGET_REPLY = "Stopping here: this run's budget is used up."


def text_of(content: Any) -> str:
    """The text of an OpenAI message content (a string or a list of parts)."""
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _args(raw: Any) -> Any:
    try:
        return json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return raw


def normalise(message: dict[str, Any]) -> tuple:
    """What must stay the same when a request continues the conversation."""
    calls = tuple(
        (
            str((c.get("function") or {}).get("name")),
            json.dumps(_args((c.get("function") or {}).get("arguments")), sort_keys=True),
        )
        for c in message.get("tool_calls") or []
        if isinstance(c, dict)
    )
    return (message.get("role"), text_of(message.get("content")).strip(), calls)


def transient(message: dict[str, Any]) -> bool:
    return message.get("role") == "user" and INTERNAL_CONTEXT in text_of(message.get("content"))


class OpenClawRecorder(RecordingPolicy):
    """A RecordingPolicy that keeps turn and token budgets and splits segments at rewritten context."""

    type = "recording"

    def __init__(
        self,
        upstream: Policy,
        trajectory: Trajectory,
        *,
        max_turns: int | None = None,
        max_tokens_total: int | None = None,
        reply: str = BUDGET_REPLY,
        max_tokens: int | None = None,
    ):
        super().__init__(upstream, trajectory, max_tokens=max_tokens)
        self.max_turns, self.max_tokens_total, self.reply = max_turns, max_tokens_total, reply
        self.spent: str | None = None  # why the budget stopped the run, once it did
        self.segments = 0
        self._previous: list[tuple] | None = None
        self._system: str | None = None
        self._guard = threading.Lock()

    def _budget(self) -> str | None:
        traj = self.trajectory
        if self.max_turns is not None and len(traj.turns) >= self.max_turns:
            return f"turn budget of {self.max_turns} model turns used up"
        used = int(traj.usage.get("prompt_tokens", 0)) + int(traj.usage.get("completion_tokens", 0))
        if self.max_tokens_total and used >= self.max_tokens_total:
            return f"token budget of {self.max_tokens_total} used up ({used} tokens)"
        return None

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, **sampling: Any
    ) -> Completion:
        with self._guard:  # one OpenClaw run asks one call at a time; keep the bookkeeping ordered
            reason = self._budget()
            if reason:
                if self.spent is None:
                    self.spent = reason
                    self.trajectory.add("budget_spent", turn=len(self.trajectory.turns), reason=reason)
                return Completion(message={"role": "assistant", "content": self.reply}, finish_reason="stop")
            self._note_context(messages)
            out = super().complete(messages, tools=tools, **sampling)
            self.trajectory.turns[-1]["segment"] = self.segments
            kept = [m for m in messages if not transient(m)]
            self._previous = [normalise(m) for m in kept[1:]] + [normalise(out.message)]
            return out

    def _note_context(self, messages: list[dict[str, Any]]) -> None:
        system = text_of(messages[0].get("content")) if messages and messages[0].get("role") == "system" else None
        body = [normalise(m) for m in (messages[1:] if system is not None else messages) if not transient(m)]
        turn = len(self.trajectory.turns)
        if self._previous is not None:
            if body[: len(self._previous)] != self._previous:
                same = next(
                    (i for i, (a, b) in enumerate(zip(body, self._previous)) if a != b),
                    min(len(body), len(self._previous)),
                )
                self.trajectory.add(
                    "context_rewritten",
                    turn=turn,
                    segment=self.segments,
                    messages=[dict(m) for m in self.trajectory.messages],
                    kept_messages=same,
                    previous_messages=len(self._previous),
                    request_messages=len(body),
                )
                self.segments += 1
            elif system is not None and self._system is not None and system != self._system:
                self.trajectory.add("system_prompt_changed", turn=turn, chars=len(system))
        self._system = system
