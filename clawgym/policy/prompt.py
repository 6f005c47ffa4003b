"""Token-level chat turns, shared by the policies that see tokens (`hf` in this process, `vllm` in an
engine): the prompt's token ids from a conversation, the ids that end a turn, and the assistant
turn made from sampled ids (text decoded here, tool calls parsed from it).

Both render with `chat_format.render_chat`, so a model sees the same prompt text, token for
token, whichever of the two generates (and the same text SFT trained it on).
"""

from __future__ import annotations

import threading
from typing import Any

from .base import Completion, ContextOverflow
from .chat_format import render_chat, tools_supported
from .toolcalls import parse_tool_calls

END_TOKENS = ("<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<|end|>", "<|endoftext|>", "</s>")


def end_token_ids(tokenizer: Any, eos: Any = None) -> list[int]:
    """Token ids that end an assistant turn: the model's `eos` (an id or a list of them), the
    tokenizer's, and the usual end-of-turn tokens its vocabulary has."""
    ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    vocab = tokenizer.get_vocab()
    ids.update(vocab[t] for t in END_TOKENS if t in vocab)
    return sorted(ids)


class ChatPrompt:
    """A tokenizer and a chat template: conversations to prompt token ids (thread-safe)."""

    def __init__(self, tokenizer: Any, chat_template: str | None = None):
        self.tokenizer, self.template = tokenizer, chat_template
        self._tools_native: bool | None = None
        self._lock = threading.Lock()

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
        if tools and self._tools_native is None:
            native = tools_supported(self.tokenizer, tools, chat_template=self.template)
            with self._lock:
                self._tools_native = native
        return render_chat(
            self.tokenizer,
            messages,
            tools,
            chat_template=self.template,
            add_generation_prompt=True,
            tools_native=bool(self._tools_native),
        )

    def ids(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> list[int]:
        """The token ids of the prompt for `messages` offered `tools`."""
        return list(self.tokenizer(self.render(messages, tools), add_special_tokens=False)["input_ids"])

    def token_strings(self, ids: list[int]) -> list[str]:
        """Each token id decoded on its own (for OpenAI-style logprobs)."""
        return [self.tokenizer.decode([i]) for i in ids]


def room_to_generate(prompt: list[int], max_tokens: int, window: int | None, model: str) -> int:
    """The most tokens to generate after `prompt`: `max_tokens`, or only the room left in the
    model's context window; ContextOverflow when the prompt leaves none."""
    if window is None:
        return max_tokens
    if len(prompt) >= window:
        raise ContextOverflow(
            f"the prompt has {len(prompt)} tokens; model {model!r} takes at most "
            f"{window} (its context window), leaving no room to generate",
            prompt_tokens=len(prompt),
            context_window=window,
        )
    return min(max_tokens, window - len(prompt))


def turn_from_tokens(
    tokenizer: Any,
    prompt: list[int],
    ids: list[int],
    logprobs: list[float] | None,
    end_ids: list[int],
    tools: list[dict[str, Any]] | None,
    *,
    latency_s: float = 0.0,
) -> Completion:
    """The assistant turn for sampled `ids` (the end-of-turn token, if sampled, stays in `ids` and
    out of the text); tool calls are parsed from the decoded text."""
    ended = bool(ids) and ids[-1] in end_ids
    text = tokenizer.decode(ids[:-1] if ended else ids, skip_special_tokens=False)
    content, calls = parse_tool_calls(text, [t["function"]["name"] for t in tools or [] if "function" in t])
    message: dict[str, Any] = {"role": "assistant", "content": content or (None if calls else "")}
    if calls:
        message["tool_calls"] = calls
    finish = "tool_calls" if calls else ("stop" if ended else "length")
    return Completion(
        message=message,
        finish_reason=finish,
        usage={"prompt_tokens": len(prompt), "completion_tokens": len(ids), "total_tokens": len(prompt) + len(ids)},
        prompt_token_ids=prompt,
        token_ids=ids,
        logprobs=logprobs,
        raw_text=text,
        latency_s=latency_s,
    )
