"""`scripted`: replays canned assistant turns. For unit tests and demos, never for evaluation."""

from __future__ import annotations

import json
import threading
from typing import Any

from .. import trial_controls as control
from ..registry import register
from .base import COMMON_POLICY_PROPS, Completion, ContextOverflow, Policy, PolicyError, RequestRejected


def tool_call(name: str, call_id: str | None = None, **arguments: Any) -> dict[str, Any]:
    """An OpenAI-format tool call (helper for writing scripts)."""
    return {
        "id": call_id or f"call_{name}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


@register("policy", "scripted")
class ScriptedPolicy(Policy):
    """Returns `turns` in order, one per call. A turn is an assistant message (a dict with
    `content` and/or `tool_calls`), a plain string (a final answer), {"error": "..."} to
    simulate a backend failure, {"context_overflow": "..."} a prompt past the context window, or
    {"rejected": "..."} a request the endpoint refuses (an HTTP 4xx).
    After the last turn it answers "done" with no tool call."""

    type = "scripted"
    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            **COMMON_POLICY_PROPS,
            "turns": {"type": "array", "description": "Assistant turns to replay, in order."},
            "latency_s": {
                "type": "number",
                "minimum": 0,
                "default": 0,
                "description": "Seconds each call waits, to simulate a model's latency (benchmarks).",
            },
        },
    }

    def __init__(self, config: dict[str, Any]):
        super().__init__(config)
        self.turns = list(config.get("turns") or [])
        self.calls: list[dict[str, Any]] = []  # what the policy was asked, for tests
        self._lock = threading.Lock()

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, **sampling: Any
    ) -> Completion:
        with self._lock:
            index = len(self.calls)
            self.calls.append({"messages": [dict(m) for m in messages], "tools": tools, "sampling": sampling})
        if self.config.get("latency_s"):
            control.sleep(float(self.config["latency_s"]))
        turn = self.turns[index] if index < len(self.turns) else "done"
        if isinstance(turn, dict) and "error" in turn:
            raise PolicyError(str(turn["error"]))
        if isinstance(turn, dict) and "context_overflow" in turn:
            raise ContextOverflow(str(turn["context_overflow"]))
        if isinstance(turn, dict) and "rejected" in turn:
            raise RequestRejected(str(turn["rejected"]))
        if isinstance(turn, str):
            message: dict[str, Any] = {"role": "assistant", "content": turn}
        else:
            message = {"role": "assistant", "content": turn.get("content")}
            if turn.get("tool_calls"):
                message["tool_calls"] = [dict(c) for c in turn["tool_calls"]]
        text = json.dumps(message)
        return Completion(
            message=message,
            finish_reason="tool_calls" if message.get("tool_calls") else "stop",
            usage={
                "prompt_tokens": sum(len(str(m.get("content") or "")) // 4 for m in messages),
                "completion_tokens": len(text) // 4,
            },
        )
