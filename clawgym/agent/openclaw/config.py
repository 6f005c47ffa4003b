"""The `openclaw.json` a trial runs with, per OpenClaw version, and its hash (recorded with results).

Everything OpenClaw sees is inside the sandbox: the model is the recording proxy's relay on the
sandbox's own loopback, the workspace is the task's, heartbeats and update checks are off, web
search and vector memory search are denied (no network; OpenClaw's memory files still work through
`read`/`memory_get`). 2026.9.6 validates its config strictly, so only keys it knows are written.

How long OpenClaw waits for the model (`model_timeout_s`) is set where each version reads it, so a
slow model (a CPU one) is not cut off by OpenClaw's own default: 2026.4.x aborts a model request
that sends no token for `agents.defaults.llm.idleTimeoutSeconds` (default 60 s); 2026.9.x rejects
that key and takes `models.providers.<id>.timeoutSeconds` (its request, first-event and idle
timeouts, within the agent's `timeoutSeconds`).
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

PROVIDER = "clawgym"
DENY = ["web_search", "memory_search"]
# Denied as well when the model's context window is under LEAN_BELOW tokens: the scheduling, session,
# sub-agent and fetching tools, whose schemas are about 2,800 of the ~9,800 tokens of OpenClaw's first
# prompt (2026.4.1, Hermes-rendered for SmolLM2); without them a file task's first prompt fits an
# 8K window. The file, edit and shell tools stay.
LEAN_DENY = [
    "cron",
    "sessions_list",
    "sessions_history",
    "sessions_send",
    "sessions_yield",
    "sessions_spawn",
    "subagents",
    "session_status",
    "web_fetch",
    "memory_get",
]
LEAN_BELOW = 16384


def denied_tools(deny: list[str] | None, context_window: int | None) -> tuple[list[str], bool]:
    """The tools OpenClaw is denied, and whether the lean set was chosen for a small window: an
    explicit `deny` is kept as given; without one, the defaults, plus LEAN_DENY below LEAN_BELOW."""
    if deny is not None:
        return list(deny), False
    if context_window is not None and context_window < LEAN_BELOW:
        return [*DENY, *LEAN_DENY], True
    return list(DENY), False


def model_timeout_key(version: str) -> str:
    """The config key that holds how long OpenClaw `version` waits for the model, in seconds."""
    if version.startswith("2026.4."):
        return "agents.defaults.llm.idleTimeoutSeconds"
    return f"models.providers.{PROVIDER}.timeoutSeconds"


def build_config(
    version: str,
    *,
    port: int,
    model_id: str,
    workspace: str,
    timeout_s: int,
    context_window: int,
    max_tokens: int,
    model_timeout_s: int | None = None,
    gateway: dict[str, Any] | None = None,
    deny: list[str] | None = None,
) -> dict[str, Any]:
    """The config for OpenClaw `version` talking to http://127.0.0.1:`port`/v1 as model `model_id`;
    it waits `model_timeout_s` (default `timeout_s`) for a model request (`model_timeout_key`)."""
    model = {
        "id": model_id,
        "name": model_id,
        "reasoning": False,
        "input": ["text"],
        "contextWindow": int(context_window),
        "maxTokens": int(max_tokens),
    }
    config: dict[str, Any] = {
        "models": {
            "mode": "replace",
            "providers": {
                PROVIDER: {
                    "baseUrl": f"http://127.0.0.1:{port}/v1",
                    "apiKey": "clawgym-proxy",
                    "api": "openai-completions",
                    "models": [model],
                }
            },
        },
        "agents": {
            "defaults": {
                "model": {"primary": f"{PROVIDER}/{model_id}"},
                "workspace": workspace,
                "timeoutSeconds": int(timeout_s),
                "heartbeat": {"every": "0m"},
            }
        },
        "tools": {
            "profile": "coding",
            "deny": list(DENY if deny is None else deny),
            "exec": {"host": "gateway", "security": "full"},
        },
        "update": {"checkOnStart": False},
    }
    wait = max(int(model_timeout_s if model_timeout_s is not None else timeout_s), 1)
    if model_timeout_key(version).startswith("agents."):
        config["agents"]["defaults"]["llm"] = {"idleTimeoutSeconds": wait}
    else:
        config["models"]["providers"][PROVIDER]["timeoutSeconds"] = wait
    if version.startswith("2026.4."):
        config["agents"]["defaults"]["skipBootstrap"] = True  # no seeded AGENTS.md..., no `git init`
        config["session"] = {"dmScope": "per-channel-peer"}
    if gateway is not None:
        config["gateway"] = {
            "mode": "local",
            "bind": "loopback",
            "port": int(gateway["port"]),
            "auth": {"mode": "token", "token": gateway["token"]},
            "http": {"endpoints": {"chatCompletions": {"enabled": True}}},
        }
    return config


def config_hash(config: dict[str, Any]) -> str:
    """sha256 of the config as canonical JSON, with the gateway's per-trial token left out."""
    data = copy.deepcopy(config)
    auth = (data.get("gateway") or {}).get("auth") or {}
    if "token" in auth:
        auth["token"] = "<per-trial>"
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
