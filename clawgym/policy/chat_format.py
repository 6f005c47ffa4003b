"""How a conversation becomes prompt text: one function shared by the `hf` policy and the SFT data.

`render_chat` applies the tokenizer's chat template (or a given one; plain ChatML when the
tokenizer has none) with the tool schemas. A template that renders `tools` (its output changes
when tools are given) gets the messages as they are, with tool-call arguments given as objects,
as Hugging Face templates expect (`tool_call.arguments | tojson`). A template that ignores
`tools` (SmolLM2's, for one) gets the Hermes fallback instead: the schemas and our instructions
at the start of the system message (before the agent's own text, which names the task's skills and
files: trials with the same tools share that prefix, so an engine's prefix cache skips it on every
trial after the first), assistant tool calls as `<tool_call>` blocks after the text, and tool
results as user messages in `<tool_response>` tags (consecutive results in one message).

Training renders with this same function, so a fine-tuned model sees exactly the text it will be
prompted with.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..records.messages import arguments_object, text_of

CHATML = (
    "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + (m['content'] or '') + '<|im_end|>\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
TOOL_INSTRUCTIONS = """You can call tools. The tools available are described by these JSON schemas:
<tools>
{schemas}
</tools>
To call a tool, write one block per call, exactly like this, with the arguments as a JSON object:
<tool_call>
{{"name": "tool_name", "arguments": {{"arg": "value"}}}}
</tool_call>
You may make several calls in one answer. Each result comes back to you inside <tool_response> tags.
When the task is done, answer in plain text without any tool call."""
_PROBE = [{"role": "user", "content": "hi"}]


def read_template(value: str | None) -> str | None:
    """A chat template given as Jinja text or as the path of a file holding it."""
    if value and "{" not in value and Path(value).expanduser().is_file():
        return Path(value).expanduser().read_text(encoding="utf-8")
    return value or None


def resolve_template(tokenizer: Any, chat_template: str | None) -> str | None:
    """The template to apply: the given one, else the tokenizer's (None), else plain ChatML."""
    return chat_template or (None if getattr(tokenizer, "chat_template", None) else CHATML)


def _apply(
    tokenizer: Any,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    template: str | None,
    add_generation_prompt: bool,
) -> str:
    return tokenizer.apply_chat_template(
        messages, tools=tools, add_generation_prompt=add_generation_prompt, tokenize=False, chat_template=template
    )


def tools_supported(tokenizer: Any, tools: list[dict[str, Any]] | None, *, chat_template: str | None = None) -> bool:
    """Whether the template renders `tools` itself (its output for a probe changes when they are given)."""
    if not tools:
        return False
    template = resolve_template(tokenizer, chat_template)
    try:
        return _apply(tokenizer, _PROBE, tools, template, True) != _apply(tokenizer, _PROBE, None, template, True)
    except Exception:  # noqa: BLE001 - a template that chokes on tools does not support them
        return False


def _text(content: Any) -> str:
    return text_of(content) or ""


def text_history(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages for a template without tool support: calls and results as Hermes-style text."""
    out: list[dict[str, Any]] = []
    for m in messages:
        role, content = m.get("role"), _text(m.get("content"))
        if role == "assistant" and m.get("tool_calls"):
            blocks = []
            for call in m["tool_calls"]:
                fn = call.get("function", {})
                args = arguments_object(fn.get("arguments") or "{}")
                blocks.append(
                    "<tool_call>\n" + json.dumps({"name": fn.get("name"), "arguments": args}) + "\n</tool_call>"
                )
            content = "\n".join(([content] if content else []) + blocks)
        elif role == "tool":
            role, content = "user", f"<tool_response>\n{content}\n</tool_response>"
        if out and role == "user" and out[-1]["role"] == "user" and out[-1].get("_tool"):
            out[-1]["content"] += "\n" + content
        else:
            out.append({"role": role, "content": content, **({"_tool": True} if m.get("role") == "tool" else {})})
    return [{"role": m["role"], "content": m["content"]} for m in out]


def native_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages for a template that renders tools: tool-call arguments that are JSON objects given
    as text (the OpenAI form) become objects, so `arguments | tojson` writes them once, not quoted."""
    out = []
    for m in messages:
        if m.get("role") == "assistant" and m.get("tool_calls"):
            calls = []
            for call in m["tool_calls"]:
                fn = dict(call.get("function") or {})
                if "arguments" in fn:
                    fn["arguments"] = arguments_object(fn["arguments"])
                calls.append({**call, "function": fn})
            m = {**m, "tool_calls": calls}
        out.append(m)
    return out


def render_chat(
    tokenizer: Any,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    *,
    chat_template: str | None = None,
    add_generation_prompt: bool = True,
    tools_native: bool | None = None,
) -> str:
    """The text of `messages` (OpenAI chat form) as the model sees it.

    `tools_native` says whether the template renders tools itself; None probes it (pass the
    result of `tools_supported` to skip the probe when rendering many conversations).
    """
    template = resolve_template(tokenizer, chat_template)
    if tools and tools_native is None:
        tools_native = tools_supported(tokenizer, tools, chat_template=chat_template)
    if tools and tools_native:
        return _apply(tokenizer, native_messages(messages), tools, template, add_generation_prompt)
    history = text_history(messages)
    if tools:
        schemas = "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)
        extra = TOOL_INSTRUCTIONS.format(schemas=schemas)
        if history and history[0]["role"] == "system":  # the tools first: the prefix every task shares
            history[0] = {"role": "system", "content": extra + "\n\n" + history[0]["content"]}
        else:
            history.insert(0, {"role": "system", "content": extra})
    return _apply(tokenizer, history, None, template, add_generation_prompt)
