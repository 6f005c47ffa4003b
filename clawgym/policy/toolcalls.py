"""Parse tool calls out of raw model text, for backends that generate plain text (`hf`).

Formats understood (several calls per turn in each):
- Hermes / ChatML / Qwen: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (an unclosed
  last block is accepted; the body may be a JSON list or sit in a ```json fence);
- Qwen3-Coder XML: `<tool_call><function=NAME><parameter=KEY>value</parameter></function></tool_call>`;
- Llama 3.x: `<|python_tag|>{"name": ..., "parameters": {...}}` (calls separated by `;`) and
  `<function=NAME>{...}</function>`;
- Mistral: `[TOOL_CALLS] [{"name": ..., "arguments": {...}}]`;
- plain JSON as the whole answer (optionally fenced): one object, several, or a list, each
  `{"name", "arguments"}`, `{"name", "parameters"}`, `{"tool", "parameters"|"arguments"|"args"}` or
  `{"function": {"name", "arguments"}}`. When `tool_names` is given, such an object is also found
  inside surrounding prose, if its name is one of the tools.

Returns (content_without_calls, calls): calls are OpenAI tool-call dicts with generated ids and
`arguments` as a JSON string. Arguments that are not a JSON object are kept verbatim (as a string)
so the agent can report the error to the model; text that is not a recognisable call stays content.
"""

from __future__ import annotations

import ast
import json
import re
import uuid
from typing import Any, Iterable

_DECODER = json.JSONDecoder()
_TAG_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.S)
_XML_FUNCTION = re.compile(r"<function=([^>\s]+)>(.*?)(?:</function>|$)", re.S)
_XML_PARAM = re.compile(r"<parameter=([^>\s]+)>(.*?)(?:</parameter>|(?=<parameter=)|$)", re.S)
_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n?(.*?)\n?```$", re.S)
_PYTHON_TAG = "<|python_tag|>"
_MISTRAL_TAG = "[TOOL_CALLS]"
_END_TOKENS = re.compile(r"<\|(?:eom_id|eot_id|im_end|endoftext)\|>|</s>")
_NAME_KEYS = ("name", "tool", "tool_name", "function_name")
_ARG_KEYS = ("arguments", "parameters", "args", "input", "tool_input")


def new_call_id() -> str:
    """An OpenAI-style tool-call id."""
    return "call_" + uuid.uuid4().hex[:24]


def make_call(name: str, arguments: Any) -> dict[str, Any]:
    """An OpenAI tool-call dict; `arguments` as an object (serialised) or a string (kept)."""
    if not isinstance(arguments, str):
        arguments = json.dumps({} if arguments is None else arguments, ensure_ascii=False)
    return {"id": new_call_id(), "type": "function", "function": {"name": name, "arguments": arguments}}


def _loads(text: str) -> Any:
    """JSON, or failing that a Python literal (small models emit single quotes / True)."""
    text = text.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None


def _as_call(obj: Any, tool_names: set[str] | None = None) -> dict[str, Any] | None:
    """An OpenAI call from one parsed object, or None when it does not look like a call."""
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict) and "name" in obj["function"]:
        obj = obj["function"]
    name = next((obj[k] for k in _NAME_KEYS if isinstance(obj.get(k), str) and obj[k].strip()), None)
    if name is None or (tool_names is not None and name not in tool_names):
        return None
    arg_key = next((k for k in _ARG_KEYS if k in obj), None)
    if arg_key is None:
        if set(obj) - set(_NAME_KEYS) - {"id", "type"}:
            return None  # some other object that happens to have a "name"
        arguments: Any = {}
    else:
        arguments = obj[arg_key]
    if isinstance(arguments, str):
        parsed = _loads(arguments) if arguments.strip() else {}
        if isinstance(parsed, dict):
            arguments = parsed
    return make_call(name.strip(), arguments)


def _calls_from_value(value: Any, tool_names: set[str] | None = None) -> list[dict[str, Any]] | None:
    """Calls from a parsed object or list of objects; None unless every item is a call."""
    items = value if isinstance(value, list) else [value]
    calls = [_as_call(item, tool_names) for item in items]
    if not items or any(c is None for c in calls):
        return None
    return calls  # type: ignore[return-value]


def _json_values(text: str) -> list[Any] | None:
    """All JSON values making up `text` (separated by whitespace, `;` or `,`), or None."""
    values, pos, text = [], 0, text.strip()
    while pos < len(text):
        while pos < len(text) and text[pos] in " \t\r\n;,":
            pos += 1
        if pos >= len(text):
            break
        try:
            value, pos = _DECODER.raw_decode(text, pos)
        except ValueError:
            single = _loads(text[pos:]) if not values else None
            if single is None:
                return None
            values.append(single)
            break
        values.append(value)
    return values or None


def _calls_from_json_text(text: str, tool_names: set[str] | None = None) -> list[dict[str, Any]] | None:
    fenced = _FENCE.match(text.strip())
    values = _json_values(fenced.group(1) if fenced else text)
    if values is None:
        return None
    calls: list[dict[str, Any]] = []
    for value in values:
        found = _calls_from_value(value, tool_names)
        if found is None:
            return None
        calls.extend(found)
    return calls


def _xml_calls(body: str) -> list[dict[str, Any]]:
    calls = []
    for name, inner in _XML_FUNCTION.findall(body):
        params = {k: _param_value(v) for k, v in _XML_PARAM.findall(inner)}
        if not params and inner.strip():
            parsed = _loads(inner)
            params = parsed if isinstance(parsed, dict) else inner.strip()
        calls.append(make_call(name.strip(), params))
    return calls


def _param_value(raw: str) -> Any:
    raw = raw.strip("\n")
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    return value if not isinstance(value, str) else raw


def _embedded_calls(text: str, tool_names: set[str]) -> tuple[str, list[dict[str, Any]]]:
    """Call-shaped JSON objects inside prose, for known tool names only."""
    calls, kept, pos = [], [], 0
    for match in re.finditer(r"\{", text):
        start = match.start()
        if start < pos:
            continue
        try:
            value, end = _DECODER.raw_decode(text, start)
        except ValueError:
            continue
        call = _as_call(value, tool_names)
        if call is not None:
            calls.append(call)
            kept.append(text[pos:start])
            pos = end
    kept.append(text[pos:])
    return "".join(kept), calls


def parse_tool_calls(text: str | None, tool_names: Iterable[str] | None = None) -> tuple[str, list[dict[str, Any]]]:
    """Split raw model text into (content without the calls, OpenAI tool-call dicts)."""
    if not text:
        return "", []
    names = set(tool_names) if tool_names is not None else None
    text = _END_TOKENS.sub("", text)
    calls: list[dict[str, Any]] = []

    if "<tool_call>" in text:

        def take(match: re.Match[str]) -> str:
            body = match.group(1)
            found = _xml_calls(body) if "<function=" in body else _calls_from_json_text(body)
            if not found:
                return match.group(0)  # junk inside the tags: leave it visible
            calls.extend(found)
            return ""

        text = _TAG_BLOCK.sub(take, text)
        return text.replace("</tool_call>", "").strip(), calls

    for tag in (_PYTHON_TAG, _MISTRAL_TAG):
        if tag in text:
            head, _, tail = text.partition(tag)
            found = _calls_from_json_text(tail)
            if found:
                return head.strip(), found
            text = head + tail

    if "<function=" in text:
        found = _xml_calls(text)
        if found:
            return _XML_FUNCTION.sub("", text).strip(), found

    found = _calls_from_json_text(text, names)
    if found:
        return "", found
    if names:
        content, found = _embedded_calls(text, names)
        if found:
            return content.strip(), found
    return text.strip(), []
