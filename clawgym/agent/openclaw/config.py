"""The `openclaw.json` a trial runs with, per OpenClaw version, and its hash (recorded with results).

Everything OpenClaw sees is inside the sandbox: the model is the recording proxy's relay on the
sandbox's own loopback, the workspace is the task's, heartbeats and update checks are off, web
search and vector memory search are denied (no network; OpenClaw's memory files still work through
`read`/`memory_get`). 2026.9.6 validates its config strictly, so only keys it knows are written.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

PROVIDER = "clawgym"
DENY = ["web_search", "memory_search"]


def build_config(
    version: str,
    *,
    port: int,
    model_id: str,
    workspace: str,
    timeout_s: int,
    context_window: int,
    max_tokens: int,
    gateway: dict[str, Any] | None = None,
    deny: list[str] | None = None,
) -> dict[str, Any]:
    """The config for OpenClaw `version` talking to http://127.0.0.1:`port`/v1 as model `model_id`."""
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
