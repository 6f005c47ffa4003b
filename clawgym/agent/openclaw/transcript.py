"""Reading what OpenClaw leaves behind, as untrusted data: its `--json` result in the command's
output, its session transcript (2026.4.x: `STATE/agents/main/sessions/<id>.jsonl`), and the tool
calls of the recorded conversation as trajectory steps.

Everything here was written by a program the agent controls: files are read without following
links and with a size cap, JSON is only parsed, never executed or used as a path.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ...files import safefs
from .recorder import text_of

SESSION_FILE = "openclaw-session.jsonl"
MAX_TRANSCRIPT = 32 << 20
PREVIEW = 2000
SESSIONS = "agents/main/sessions"


def parse_result(output: str) -> dict[str, Any] | None:
    """The last top-level JSON object in `output` (2026.4.x prints it to stderr among log lines)."""
    decoder = json.JSONDecoder()
    found: dict[str, Any] | None = None
    pos = 0
    while True:
        start = output.find("{", pos)
        if start < 0:
            return found
        if start == 0 or output[start - 1] == "\n":
            try:
                value, end = decoder.raw_decode(output, start)
            except ValueError:
                pos = start + 1
                continue
            if isinstance(value, dict) and ({"payloads", "meta", "ok", "status"} & set(value)):
                found = value
            pos = end
        else:
            pos = start + 1


def read_session(state: Path) -> bytes | None:
    """The newest session transcript under `state`, or None (no links followed, at most 32 MiB)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        fd = os.open(state, flags)
    except OSError:
        return None
    try:
        for part in SESSIONS.split("/"):
            sub = os.open(part, flags, dir_fd=fd)
            os.close(fd)
            fd = sub
        names = sorted(n for n in os.listdir(fd) if n.endswith(".jsonl"))
    except OSError:
        return None
    finally:
        os.close(fd)
    for name in names[-1:]:
        try:
            return safefs.read_under(state, f"{SESSIONS}/{name}", MAX_TRANSCRIPT)
        except ValueError:
            return None
    return None


def tool_steps(messages: list[dict[str, Any]], start: int = 0) -> list[dict[str, Any]]:
    """One `tool` step per tool call in the conversation, with its result (as the claw harness records)."""
    results: dict[str, str] = {}
    order: list[str] = []
    for m in messages:
        if m.get("role") == "tool":
            key = str(m.get("tool_call_id") or "")
            results[key] = text_of(m.get("content"))
            order.append(key)
    steps: list[dict[str, Any]] = []
    turn = -1
    for m in messages:
        if m.get("role") != "assistant":
            continue
        turn += 1
        for call in m.get("tool_calls") or []:
            if not isinstance(call, dict):
                continue
            fn = call.get("function") or {}
            cid = str(call.get("id") or "")
            result = results.get(cid)
            if result is None:  # OpenClaw rewrites ids (call_exec -> callexec)
                loose = cid.replace("_", "").replace("-", "")
                result = next((v for k, v in results.items() if k.replace("_", "").replace("-", "") == loose), None)
            ok = result is not None and not _is_error(result)
            steps.append(
                {
                    "index": start + len(steps),
                    "kind": "tool",
                    "turn": turn,
                    "name": str(fn.get("name") or ""),
                    "call_id": cid,
                    "arguments": fn.get("arguments"),
                    "ok": ok,
                    "result": (result or "")[:PREVIEW],
                    "source": "openclaw",
                }
            )
    return steps


def _is_error(text: str) -> bool:
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, dict) and value.get("status") == "error"
