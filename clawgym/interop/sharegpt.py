"""ShareGPT rows with tools (the layout LLaMA-Factory reads), to and from trajectories.

A row is `{"conversations": [{"from": ..., "value": ...}], "system": "...", "tools": "<JSON string of
the tool schemas>", "metadata": {...}}`. The first system message becomes `system`, user messages
`human`, tool results `observation`, and an assistant turn becomes:

- its text as `gpt` (when it has text, or when it has no tool calls), then
- one `function_call` per tool call, each `{"name": ..., "arguments": {...}}` as JSON (arguments that
  are not a JSON object stay the original string).

So a turn with text and two calls gives `gpt, function_call, function_call`, followed by its two
`observation`s in the order of the calls. Import reverses this: a `function_call` right after a `gpt`
or another `function_call` joins that assistant message, and each `observation` answers the oldest
unanswered call of the turn. ShareGPT has no call ids: the k-th call of the n-th assistant message
(both from 0) gets id `call_<n>_<k>` on import, and results are linked to it by order (the export
orders a turn's results by the calls they answer). A `function_call` value holding a JSON list (the
parallel-call form) gives several calls.

What ShareGPT cannot say, and comes back different: an assistant turn with calls and empty text gets
content None; an assistant message with text and no calls directly followed by one with calls and no
text merges into one; argument JSON is re-serialised (`json.dumps(..., ensure_ascii=False)`), equal
as JSON. A trajectory the layout cannot hold (a system message after the first, a tool result that
answers no call of the turn before it) raises ClawgymError: export it with --format openai instead.

LLaMA-Factory's loader expects turns to alternate (human/observation, then gpt/function_call): rows
where a turn has text and calls, or several calls, do not alternate in this layout.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import ClawgymError
from ..records.trajectory import Trajectory
from .rows import arguments_text, build_trajectory, chat_messages, metadata_of, parse_tools, row_shape, text_of

TAGS = {
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
    "function_call": "call",
    "observation": "tool",
    "tool": "tool",
    "system": "system",
}
SHAPE = (
    'a ShareGPT row is {"conversations": [{"from": "human"|"gpt"|"function_call"|"observation", '
    '"value": "..."}], "system": "...", "tools": "[...]"}'
)
CALL_SHAPE = 'a function_call value is JSON {"name": ..., "arguments": {...}}, or a list of those'


def _call_value(call: dict[str, Any]) -> str:
    fn = call["function"]
    args: Any = fn["arguments"]
    try:
        parsed = json.loads(args)
        args = parsed if isinstance(parsed, dict) else args
    except (TypeError, json.JSONDecodeError):
        pass
    return json.dumps({"name": fn["name"], "arguments": args}, ensure_ascii=False)


def to_sharegpt_row(t: Trajectory) -> dict[str, Any]:
    """One ShareGPT row (see the module docstring for how assistant turns with tool calls are laid out)."""
    messages = chat_messages(t.messages)
    system = None
    if messages and messages[0]["role"] == "system":
        system, messages = text_of(messages[0]["content"]), messages[1:]
    conv: list[dict[str, str]] = []
    i = 0
    while i < len(messages):
        m = messages[i]
        role, text = m["role"], text_of(m.get("content"))
        i += 1
        if role == "user":
            conv.append({"from": "human", "value": text or ""})
        elif role == "assistant":
            calls = m.get("tool_calls") or []
            if text or not calls:
                conv.append({"from": "gpt", "value": text or ""})
            conv += [{"from": "function_call", "value": _call_value(c)} for c in calls]
            ids = [c["id"] for c in calls]
            results = []
            while i < len(messages) and messages[i]["role"] == "tool":
                results.append(messages[i])
                i += 1
            order = sorted(
                ids.index(r.get("tool_call_id")) if r.get("tool_call_id") in ids else len(ids) for r in results
            )
            if order != list(range(len(results))):
                raise ClawgymError("tool results do not answer the calls before them one to one")
            results.sort(key=lambda r: ids.index(r["tool_call_id"]))
            conv += [{"from": "observation", "value": text_of(r.get("content")) or ""} for r in results]
        elif role == "tool":
            raise ClawgymError("a tool result does not follow an assistant turn with calls")
        else:
            raise ClawgymError(f"a {role} message after the start cannot be written as ShareGPT")
    row: dict[str, Any] = {"conversations": conv}
    if system is not None:
        row["system"] = system
    row["tools"] = json.dumps(list(t.tools or []), ensure_ascii=False)
    row["metadata"] = metadata_of(t)
    return row


def _calls(value: Any, **where: Any) -> list[dict[str, Any]]:
    """The tool calls of a function_call value: one object or a list of them."""
    try:
        parsed = json.loads(value) if isinstance(value, str) else value
    except json.JSONDecodeError as e:
        raise ClawgymError(
            f"function_call value is not JSON: {e.msg} (column {e.colno})", hint=CALL_SHAPE, **where
        ) from None
    calls = parsed if isinstance(parsed, list) else [parsed]
    if not calls or not all(isinstance(c, dict) and isinstance(c.get("name"), str) and c["name"] for c in calls):
        raise ClawgymError("function_call value has no function name", hint=CALL_SHAPE, **where)
    return calls


def from_sharegpt_row(
    d: Any, *, file: str | None = None, line: int | None = None, key: str | None = None
) -> Trajectory:
    """A Trajectory from a ShareGPT row (tool calls get ids `call_<turn>_<k>`, results linked in order)."""
    where = {"file": file, "line": line}
    prefix = f"{key}." if key else ""
    if not isinstance(d, dict) or not isinstance(d.get("conversations"), list):
        raise ClawgymError(
            f'expected an object with a "conversations" list, got {row_shape(d, "conversations")}',
            hint=SHAPE,
            key=key,
            **where,
        )
    messages: list[dict[str, Any]] = []
    if d.get("system"):
        messages.append({"role": "system", "content": text_of(d["system"])})
    pending: list[str] = []
    turns = 0
    for j, entry in enumerate(d["conversations"]):
        at = {"key": f"{prefix}conversations[{j}]", **where}
        tag = entry.get("from") if isinstance(entry, dict) else None
        value = entry.get("value") if isinstance(entry, dict) else None
        if tag not in TAGS:
            raise ClawgymError(f"unknown speaker {tag!r}", hint=f"from is one of {', '.join(TAGS)}", **at)
        role = TAGS[tag]
        if role != "call" and not isinstance(value, str):
            raise ClawgymError(f"value must be text, got {type(value).__name__}", hint=SHAPE, **at)
        if role == "call":
            calls = _calls(value, **at)
            if not messages or messages[-1]["role"] != "assistant":
                messages.append({"role": "assistant", "content": None})
                turns, pending = turns + 1, []
            own = messages[-1].setdefault("tool_calls", [])
            for c in calls:
                call_id = f"call_{turns - 1}_{len(own)}"
                own.append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": c["name"], "arguments": arguments_text(c.get("arguments"))},
                    }
                )
                pending.append(call_id)
        elif role == "tool":
            if not pending:
                raise ClawgymError(
                    "observation answers no function_call",
                    hint="each observation must follow the function_call it answers",
                    **at,
                )
            messages.append({"role": "tool", "tool_call_id": pending.pop(0), "content": value})
        elif role == "system" and messages:
            raise ClawgymError("a system entry after the start", hint='give the system prompt as "system"', **at)
        else:
            messages.append({"role": role, "content": value})
            if role == "assistant":
                turns, pending = turns + 1, []
            elif role == "user":
                pending = []
    tools = parse_tools(d.get("tools"), key=f"{prefix}tools", **where)
    return build_trajectory(messages, tools, d.get("metadata"), key=key, **where)
