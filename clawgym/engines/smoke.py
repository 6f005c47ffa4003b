"""The smoke test of an installed engine, and `install_and_check`: install, then smoke-test.

The smoke test starts the engine on the embedded model (as every engine is started: supervised,
health-checked, logged), generates a few tokens with their ids and log-probabilities after a short
warm-up request, stops it, and records what it measured in the install's marker: how long the
engine took to become healthy and the single-stream tokens per second. Without the embedded model
(no model stack) it is recorded as skipped.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from ..errors import ClawgymError, PrerequisiteError
from .install import EngineInstall, install, install_hint, record_smoke
from .vllm import EngineSettings, VLLMServer, http_json

SMOKE_PROMPT = "What is the capital of France? Answer in one sentence."
SMOKE_TOKENS = 32


def install_and_check(
    name: str = "vllm",
    version: str | None = None,
    *,
    device: str | None = None,
    force: bool = False,
    smoke: bool = True,
    log: Callable[[str], None] = print,
) -> EngineInstall:
    """Install the engine (a no-op when installed), then smoke-test it unless its smoke test passed
    before; a failed smoke test is recorded, then raised (PrerequisiteError naming the log)."""
    inst = install(name, version, device=device, force=force, log=log)
    if smoke and inst.smoke.get("ok") is not True:
        log(f"smoke test: starting {inst.name} on the embedded model and generating (about a minute)...")
        inst = record_smoke(inst, smoke_test(inst))
        log(f"smoke test: {inst.smoke_summary()}")
    if inst.smoke.get("ok") is False:
        raise PrerequisiteError(
            f"the {name} engine installed in {inst.folder} but its smoke test failed: {inst.smoke.get('error')}",
            hint=f"read {inst.smoke.get('log') or inst.logs}; then {install_hint(name)} (runs the smoke test again)",
        )
    return inst


def smoke_test(install: EngineInstall) -> dict[str, Any]:
    """Start the engine on the embedded model, generate a few tokens, stop it: what it measured."""
    try:
        from ..policy.embedded import embedded_model_path

        embedded_model_path()
    except (ClawgymError, OSError, ImportError) as exc:
        return {"ok": None, "skipped": f"the embedded model is not available here ({exc})", "at": time.time()}
    server = VLLMServer(EngineSettings(model="embedded", max_num_seqs=2, kv_cache_gb=1), install=install)
    try:
        server.start()
        result = _generate(server)
    except (ClawgymError, OSError, ValueError, KeyError) as exc:
        return {"ok": False, "error": str(exc).splitlines()[0][:300], "log": str(server.log), "at": time.time()}
    finally:
        server.stop()
    return {"ok": True, "load_s": round(server.load_s or 0.0, 1), **result, "log": str(server.log), "at": time.time()}


def _generate(server: VLLMServer) -> dict[str, Any]:
    """One chat completion of SMOKE_TOKENS tokens, with token ids and log-probabilities, after a
    short one that warms the engine up (its first request sets up kernels)."""
    body = {
        "model": server.served_name,
        "messages": [{"role": "user", "content": SMOKE_PROMPT}],
        "max_tokens": 2,
        "temperature": 0.0,
        "ignore_eos": True,
        "logprobs": True,
        "return_token_ids": True,
    }
    http_json(server.base_url + "/chat/completions", body, timeout=300)
    body["max_tokens"] = SMOKE_TOKENS
    start = time.monotonic()
    status, data = http_json(server.base_url + "/chat/completions", body, timeout=300)
    seconds = time.monotonic() - start
    if status != 200 or not isinstance(data, dict):
        raise ValueError(f"the engine answered HTTP {status}: {str(data)[:200]}")
    choice = data["choices"][0]
    ids = choice.get("token_ids") or []
    logprobs = (choice.get("logprobs") or {}).get("content") or []
    if not ids or len(ids) != len(logprobs):
        raise ValueError(f"the answer has {len(ids)} token ids and {len(logprobs)} log-probabilities")
    return {
        "tokens": len(ids),
        "seconds": round(seconds, 2),
        "tokens_per_s": round(len(ids) / seconds, 1),
        "text": (choice["message"].get("content") or "")[:200],
    }
