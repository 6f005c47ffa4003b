"""The Policy interface: messages (+ tool schemas) in, the next assistant message out.

Every backend (an OpenAI-compatible endpoint, an in-process Hugging Face model, a scripted
replay) returns a `Completion` in OpenAI chat format, plus token ids and log-probabilities when
it has them (needed for RL). A backend that cannot answer after its retries raises PolicyError,
an InfraError: the trial becomes `model_error`, never reward 0. A prompt longer than the model's
context window raises its subclass ContextOverflow (the trial becomes `context_overflow`).
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, ClassVar

from .. import trial_controls as control
from ..errors import InfraError
from ..registry import get

COMMON_POLICY_PROPS: dict[str, Any] = {
    "type": {"type": "string", "description": "Policy backend name."},
    "temperature": {"type": "number", "minimum": 0, "default": 0.7, "description": "Sampling temperature."},
    "top_p": {
        "type": "number",
        "exclusiveMinimum": 0,
        "maximum": 1,
        "default": 1.0,
        "description": "Nucleus sampling mass.",
    },
    "max_tokens": {"type": "integer", "minimum": 1, "default": 1024, "description": "Most tokens generated per turn."},
    "seed": {"type": ["integer", "null"], "default": None, "description": "Sampling seed, where supported."},
}


class PolicyError(InfraError):
    """The model backend failed after its retries (timeout, HTTP error, unparseable output...)."""


class ContextOverflow(PolicyError):
    """The prompt does not fit the model's context window: nothing was generated, and asking again
    cannot help (never retried). An agent ends such a trial as `context_overflow`, not as an
    infrastructure error."""

    def __init__(self, message: str, *, prompt_tokens: int | None = None, context_window: int | None = None):
        super().__init__(message)
        self.prompt_tokens, self.context_window = prompt_tokens, context_window


class RequestRejected(PolicyError):
    """The endpoint refused this request as it was made (an HTTP 4xx other than a rate limit or an
    overflow): the request's doing, not a failure of the endpoint. Never retried. A black-box agent's
    rejected request is its own failure, never an infrastructure outcome (see `agent/proxy.py`)."""


@dataclass
class Completion:
    """One assistant turn. `message` is an OpenAI chat message:
    {"role": "assistant", "content": str | None, "tool_calls": [{"id", "type": "function",
    "function": {"name", "arguments": JSON string}}]} (tool_calls omitted when there are none)."""

    message: dict[str, Any]
    finish_reason: str = "stop"
    usage: dict[str, int] = field(default_factory=dict)  # prompt_tokens, completion_tokens
    prompt_token_ids: list[int] | None = None
    token_ids: list[int] | None = None  # sampled completion tokens
    logprobs: list[float] | None = None  # one per sampled token
    raw_text: str | None = None  # decoded completion before parsing
    latency_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return list(self.message.get("tool_calls") or [])


class Policy(ABC):
    """A model backend. Must be safe to call from several threads at once."""

    type: ClassVar[str]
    schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "properties": COMMON_POLICY_PROPS,
    }

    def __init__(self, config: dict[str, Any]):
        self.config = dict(config)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every backend's `complete` holds one of the run's model-request slots while it works."""
        super().__init_subclass__(**kwargs)
        if "complete" in cls.__dict__ and not getattr(cls.__dict__["complete"], "_capped", False):
            cls.complete = _capped(cls.__dict__["complete"])  # type: ignore[method-assign]

    def sampling(self, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
        """Sampling settings: the config's, with per-call overrides."""
        out = {
            k: self.config.get(k, COMMON_POLICY_PROPS[k]["default"])
            for k in ("temperature", "top_p", "max_tokens", "seed")
        }
        out.update({k: v for k, v in (overrides or {}).items() if v is not None})
        return out

    def describe(self) -> dict[str, Any]:
        """What results record about the policy (never secrets)."""
        return {k: v for k, v in self.config.items() if "key" not in k.lower()} | {"type": self.type}

    @abstractmethod
    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, **sampling: Any
    ) -> Completion:
        """The next assistant message for `messages`, offered `tools` (OpenAI function schemas)."""

    def close(self) -> None:
        """Release connections or memory."""


def _capped(complete: Callable[..., Completion]) -> Callable[..., Completion]:
    @functools.wraps(complete)
    def wrapper(self: Policy, *args: Any, **kwargs: Any) -> Completion:
        with control.model_request():
            return complete(self, *args, **kwargs)

    wrapper._capped = True  # type: ignore[attr-defined]
    return wrapper


def make_policy(config: dict[str, Any]) -> Policy:
    """Build a policy from its config (`type:` picks the backend)."""
    return get("policy", config["type"])(config)
