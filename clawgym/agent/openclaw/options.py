"""The `openclaw` agent's options: the JSON Schema of its config (version, how it is driven, the
model behind the proxy and what OpenClaw is told about it, budgets, follow-up messages, denied tools)."""

from __future__ import annotations

from typing import Any

from ..base import COMMON_AGENT_PROPS
from . import config as config_mod
from .install import DEFAULT_VERSION

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["policy"],
    "properties": {
        **COMMON_AGENT_PROPS,
        "version": {
            "type": "string",
            "default": DEFAULT_VERSION,
            "description": "OpenClaw version (installed with `clawgym agents install openclaw@VERSION`).",
        },
        "mode": {
            "enum": ["auto", "local", "exec", "gateway"],
            "default": "auto",
            "description": "How it is driven: `local` (agent --local, one session turn by turn; 2026.4.x), "
            "`exec` (agent exec; 2026.9.x), `gateway` (the gateway's chat endpoint, the way "
            "the published ClawGym pipeline drove 2026.4.1); auto picks local or exec by version.",
        },
        "policy": {
            "type": "object",
            "required": ["type"],
            "description": "The model the recording proxy forwards to (hf, vllm, openai, scripted...).",
        },
        "model_name": {"type": "string", "default": "clawgym-model", "description": "Model id OpenClaw is told."},
        "context_window": {
            "type": "integer",
            "minimum": 1024,
            "default": 32768,
            "description": "Context window OpenClaw is told the model has.",
        },
        "max_tokens": {
            "type": "integer",
            "minimum": 1,
            "default": 1024,
            "description": "Most tokens per model call (OpenClaw's maxTokens).",
        },
        "model_timeout": {
            "type": ["integer", "null"],
            "minimum": 1,
            "default": None,
            "description": "Seconds OpenClaw waits for a model request before giving up (its own default "
            "is 60 s in 2026.4.x); default: the trial's time, so a slow model is never cut off early.",
        },
        "max_turns": {
            "type": "integer",
            "minimum": 1,
            "default": 50,
            "description": "Most model calls per trial (the task's limits.turns wins when smaller).",
        },
        "max_tokens_total": {
            "type": ["integer", "null"],
            "minimum": 1,
            "default": None,
            "description": "Budget of prompt + completion tokens over the trial.",
        },
        "follow_up": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "More user messages, sent one turn each after the instruction (local mode).",
        },
        "deny_tools": {
            "type": "array",
            "items": {"type": "string"},
            "default": list(config_mod.DENY),
            "description": "OpenClaw tools denied (no network here: web search, vector memory search). "
            "Unset, with a model whose context window is under 16K tokens (the embedded model's is 8K), "
            "the scheduling, session, sub-agent and fetching tools are denied too, so the first prompt fits.",
        },
    },
}
