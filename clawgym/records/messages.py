"""The one message layer: OpenAI chat messages as every part of the package normalises them.

The trajectory store, the OpenAI / ShareGPT / Hugging Face exporters and the chat rendering for
training all build on these rules:
- content is text, None, or a list of parts kept as is when some part is not text (`content_of`);
  `text_of` gives the text of any content;
- tool-call arguments travel as the JSON string OpenAI uses (`arguments_text`) and render as an
  object where they are one (`arguments_object`);
- a tool call without an id gets `call_<turn>_<k>`; `tool_call_id` and `name` are kept when set.
`fixed_columns` projects a normalised message onto the fixed set of columns a dataset needs.
"""

from __future__ import annotations

import json
from typing import Any, Iterable


def text_of(content: Any) -> str | None:
    """Content as plain text: a list of parts gives the text of its text parts, joined."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p if isinstance(p, str) else str(p.get("text") or "") if isinstance(p, dict) else str(p) for p in content
        )
    return json.dumps(content, ensure_ascii=False, default=str)


def content_of(content: Any) -> Any:
    """OpenAI content: text, None, or a list of parts when some part is not text (kept as it is)."""
    if isinstance(content, list) and any(isinstance(p, dict) and p.get("type", "text") != "text" for p in content):
        return content
    return text_of(content)


def arguments_text(arguments: Any) -> str:
    """Tool-call arguments as the JSON string OpenAI uses (a string is kept, even when not JSON)."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps({} if arguments is None else arguments, ensure_ascii=False)


def arguments_object(arguments: Any) -> Any:
    """Tool-call arguments as an object where they are one (JSON text of an object is parsed);
    anything else is returned unchanged."""
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            return arguments
        return parsed if isinstance(parsed, dict) else arguments
    return arguments


def chat_message(m: dict[str, Any], turn: int = 0) -> dict[str, Any]:
    """One message in the normalised OpenAI form; a tool call without id gets `call_<turn>_<k>`."""
    out: dict[str, Any] = {"role": m.get("role"), "content": content_of(m.get("content"))}
    if m.get("tool_calls"):
        out["tool_calls"] = []
        for k, call in enumerate(m["tool_calls"]):
            fn = call.get("function") or {}
            out["tool_calls"].append(
                {
                    "id": call.get("id") or f"call_{turn}_{k}",
                    "type": call.get("type") or "function",
                    "function": {"name": fn.get("name"), "arguments": arguments_text(fn.get("arguments"))},
                }
            )
    for key in ("tool_call_id", "name"):
        if m.get(key) is not None:
            out[key] = m[key]
    return out


def chat_messages(messages: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Normalised messages, assistant turns counted from 0 for generated call ids."""
    out, turn = [], 0
    for m in messages:
        out.append(chat_message(m, turn))
        turn += m.get("role") == "assistant"
    return out


def fixed_columns(m: dict[str, Any]) -> dict[str, Any]:
    """A normalised message with exactly the columns role, content (text), tool_calls, tool_call_id
    and name (None where absent): the shape a typed dataset column needs."""
    calls = [
        {
            "id": str(c["id"]),
            "type": str(c["type"]),
            "function": {"name": str(c["function"]["name"] or ""), "arguments": c["function"]["arguments"]},
        }
        for c in m.get("tool_calls") or []
    ] or None
    return {
        "role": str(m.get("role") or ""),
        "content": text_of(m.get("content")),
        "tool_calls": calls,
        "tool_call_id": m.get("tool_call_id"),
        "name": m.get("name"),
    }
