"""What every trajectory row format shares (clawgym, OpenAI messages, ShareGPT): message
normalising, provenance metadata, tool schemas, rebuilding a Trajectory from a row, and the words
for a malformed row. `trajectory_formats` (OpenAI rows, reading and writing files) and `sharegpt`
build on it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..records.outcomes import INFRASTRUCTURE, normalize
from ..errors import ClawgymError
from ..files.textsafe import printable
from ..records.store import reward_of, status_of
from ..records.messages import arguments_text, chat_message, chat_messages, content_of, text_of  # noqa: F401
from ..records.trajectory import FORMAT, OUTCOMES, Trajectory


# ---------------------------------------------------------------------------------------------
# Messages


# text_of, arguments_text, chat_message and chat_messages are the package's one message layer
# (records/messages.py); they are imported above and re-exported here.


# ---------------------------------------------------------------------------------------------
# Provenance


def metadata_of(t: Trajectory) -> dict[str, Any]:
    """The flat provenance object written with every row (the same keys on every row).

    Its strings are names people read in dataset viewers: their controls, escapes and bidi
    characters are shown as visible escapes (`printable`). The row's messages and tools are training
    data and stay byte for byte."""
    task, verdict, agent = t.task or {}, t.verdict or {}, t.agent or {}
    meta = {
        "format": t.format or FORMAT,
        "task_id": task.get("id") or task.get("name"),
        "task_name": task.get("name"),
        "task_hash": task.get("hash"),
        "seed": task.get("seed"),
        "category": task.get("category"),
        "reward": reward_of(t),
        "status": status_of(t) or ("error" if normalize(t.outcome) in INFRASTRUCTURE else None),
        "outcome": t.outcome,
        "agent": agent.get("name") or agent.get("type"),
        "agent_type": agent.get("type"),
        "trial_id": verdict.get("trial_id"),
    }
    return {k: printable(v) if isinstance(v, str) else v for k, v in meta.items()}


def where_label(file: str | None, line: int | None, key: str | None) -> str:
    """`file:line` (or `file key` for rows without lines) for messages and unknown provenance."""
    return f"{file}:{line}" if line else f"{file} {key}" if key else str(file)


def build_trajectory(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    metadata: Any,
    *,
    file: str | None = None,
    line: int | None = None,
    key: str | None = None,
) -> Trajectory:
    """A Trajectory from chat messages, tools and (optional) provenance metadata."""
    meta = metadata if isinstance(metadata, dict) else {}
    task_id, name, seed = meta.get("task_id") or None, meta.get("task_name") or None, meta.get("seed")
    task_id = None if task_id is None else str(task_id)
    if task_id or name:
        if not name:  # clawgym ids are name@seed
            name = task_id.rsplit("@", 1)[0] if seed is not None and task_id.endswith(f"@{seed}") else task_id
        task = {"name": name, "id": task_id or name}
        task.update(
            {
                k: meta[src]
                for k, src in (("hash", "task_hash"), ("seed", "seed"), ("category", "category"))
                if meta.get(src) not in (None, "")
            }
        )
    else:
        stem = Path(file).stem if file else "imported"
        task = {"name": stem, "id": f"{stem}:{line or key}", "source": where_label(file, line, key)}
    agent_type = meta.get("agent_type") or meta.get("agent") or "imported"
    t = Trajectory(
        task=task,
        agent={"type": agent_type, "name": meta.get("agent") or agent_type},
        messages=messages,
        tools=tools,
        outcome=meta.get("outcome") if meta.get("outcome") in OUTCOMES else "completed",
    )
    if meta.get("reward") is not None or meta.get("status"):
        t.verdict = {"status": meta.get("status"), "reward": meta.get("reward")}
        if meta.get("trial_id"):
            t.verdict["trial_id"] = meta["trial_id"]
    last = messages[-1] if messages else {}
    if last.get("role") == "assistant" and not last.get("tool_calls"):
        t.final_message = text_of(last.get("content"))
    return t


def parse_tools(tools: Any, **where: Any) -> list[dict[str, Any]]:
    """Tool schemas from a list or a JSON string of one (None or "" give no tools)."""
    if tools in (None, ""):
        return []
    if isinstance(tools, str):
        try:
            tools = json.loads(tools)
        except json.JSONDecodeError as e:
            raise ClawgymError(
                f"tools is not JSON: {e.msg} (column {e.colno})",
                hint="tools must be a list of function-tool schemas, or a JSON string of one",
                **where,
            ) from None
    if not isinstance(tools, list) or not all(isinstance(x, dict) for x in tools):
        raise ClawgymError(
            f"tools must be a list of objects, got {type(tools).__name__}",
            hint='e.g. [{"type": "function", "function": {"name": ..., "parameters": {...}}}]',
            **where,
        )
    return tools


def row_shape(d: Any, field: str) -> str:
    """What a row that lacks a proper `field` list holds, for error messages."""
    if not isinstance(d, dict):
        return type(d).__name__
    if field in d:
        return f"{field} of type {type(d[field]).__name__}"
    return f"keys {', '.join(sorted(map(str, d))) or 'none'}"
