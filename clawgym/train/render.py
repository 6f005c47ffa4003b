"""Training examples with exact assistant-only loss masks, from messages or from sampled token ids.

**From messages** (`tokenize_example`): the conversation is rendered with
`clawgym.policy.chat_format.render_chat`, the very function the `hf` policy prompts with. Each
assistant message i gets a character span: it starts where the generation prompt ends,
`render(messages[:i], add_generation_prompt=True)`, and ends where
`render(messages[:i+1], add_generation_prompt=False)` ends, less trailing whitespace. The span so
holds the turn's text, its tool calls as the template writes them (native blocks, or our Hermes
`<tool_call>` text) and the end-of-turn token(s) right after them (`<|im_end|>`, `<|eot_id|>`,
`</s>`), so the model learns to stop; not the newline some templates write after that token, nor
the next role header, which the model never generates. Both renders must be prefixes of the whole
conversation's render: a template that re-renders history (drops earlier reasoning, moves the
system message to the last user turn) raises `ChatTemplateError`, since no exact mask exists for
it. Tokens then follow what the policy does at each turn: the prompt of turn i is
`tokenizer(render(messages[:i], add_generation_prompt=True))`, exactly the ids the `hf` policy
generates from, and the turn's ids are those that tokenising through the end of the turn adds
after them; only these are labelled. The example grows turn by turn, each turn's prompt ids
extending the ids so far, so for the usual template (turns closed by a special token) it equals
the whole conversation tokenised at once. Where tokenisation merges across a boundary (SmolLM2's
byte-level BPE reads `"\n\n" + "Let"` as `"\n", "\n", "Let"` but a prompt ending in `"\n\n"` as
one token; a template whose prompt ends with a space), the example is cut at that boundary
instead, as generation cuts it: the turn is tokenised on its own, as the model emits it after
that prompt, and the text since the previous turn likewise; `Example.split_boundaries` counts
these. Masks are so exact by construction: no token is half prompt, half turn.

**From token ids** (`examples_from_turns`): when a trajectory recorded each model call's
`prompt_token_ids` and sampled `token_ids`, those ids are used as they are (no re-tokenising):
while each call's prompt starts with the previous call's prompt + sampled ids, the calls extend
one example, labelled only on the sampled ids; a call whose prompt does not (the history was
re-tokenised differently, or edited) starts a new example. One example per consistent segment.

**Truncation** to `max_length` tokens never cuts a turn: `turns` (the default) keeps the
conversation's beginning (system prompt, task) and the leading assistant turns that fit whole,
dropping the later ones; an example whose first assistant turn does not fit is dropped. `drop`
drops every example longer than `max_length`. Cutting from the left instead would train on
contexts that lack the task, which the model never sees when it runs. Examples always end at the
end of their last trained turn: what follows (a trailing tool result) has no loss.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..errors import ClawgymError
from ..policy.chat_format import render_chat, tools_supported
from ..records.trajectory import Trajectory

IGNORE = -100
Truncation = Literal["turns", "drop"]


class ChatTemplateError(ClawgymError):
    """The chat template cannot give exact assistant masks (it does not render incrementally)."""


@dataclass
class Example:
    """One training sequence: `labels` is IGNORE (-100) except on trained assistant tokens."""

    input_ids: list[int]
    labels: list[int]
    turns: int = 0  # assistant turns (model calls) trained
    dropped_turns: int = 0  # assistant turns cut by truncation
    from_token_ids: bool = False
    split_boundaries: int = 0  # prompt/turn boundaries tokenised apart (module docstring)
    source: str = ""
    logprobs: list[float] | None = None  # from token ids: the sampling log-probability of each
    #                                      labelled token (0.0 elsewhere), for RL

    @property
    def trained_tokens(self) -> int:
        return sum(1 for x in self.labels[1:] if x != IGNORE)  # the first label is never predicted


def _divergence(a: str, b: str) -> str:
    """Where two renders first differ, shown briefly."""
    i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"at character {i}: {a[max(0, i - 30) : i + 30]!r} versus {b[max(0, i - 30) : i + 30]!r}"


def _rerenders(n: int, shorter: str, longer: str) -> ChatTemplateError:
    return ChatTemplateError(
        f"the chat template re-renders history: a conversation's text is not a prefix of its text once more "
        f"messages follow (messages[:{n}], {_divergence(shorter, longer)}), so no exact loss mask exists "
        "(templates that drop earlier reasoning or move the system prompt to the last user turn do this)",
        hint="train with a template that renders each message the same whatever follows (chat_template:)",
    )


def assistant_spans(
    tokenizer: Any,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    *,
    chat_template: str | None = None,
) -> tuple[str, list[tuple[int, int]]]:
    """The whole rendered conversation and the character span of each assistant message in it."""
    native = tools_supported(tokenizer, tools, chat_template=chat_template)

    def render(msgs: list[dict[str, Any]], generation: bool, what: str) -> str:
        try:
            return render_chat(
                tokenizer,
                msgs,
                tools,
                chat_template=chat_template,
                add_generation_prompt=generation,
                tools_native=native,
            )
        except Exception as exc:  # noqa: BLE001 - Jinja errors of any kind
            raise ChatTemplateError(f"the chat template cannot render {what}: {type(exc).__name__}: {exc}") from None

    full = render(messages, False, "the conversation")
    spans = []
    for i, m in enumerate(messages):
        if m.get("role") != "assistant":
            continue
        before = render(messages[:i], True, f"messages[:{i}] with a generation prompt")
        after = render(messages[: i + 1], False, f"messages[:{i + 1}]")
        if not after.startswith(before):
            history = render(messages[:i], False, f"messages[:{i}]")
            if after.startswith(history):  # the history agrees: the generation prompt is what differs
                raise ChatTemplateError(
                    f"the chat template does not open assistant message {i} with its generation prompt: rendering "
                    f"messages[:{i}] with add_generation_prompt=True is not a prefix of rendering messages[:{i + 1}] "
                    f"({_divergence(before, after)})",
                    hint="use a template whose generation prompt is exactly how it opens an assistant turn",
                )
            raise _rerenders(i + 1, history, after)
        if not full.startswith(after):
            raise _rerenders(len(messages), after, full)
        spans.append((len(before), max(len(before), len(after.rstrip()))))
    return full, spans


def _truncate(ends: list[int], max_length: int, truncation: Truncation) -> tuple[int, int] | None:
    """(tokens kept, turns kept) for turns ending at token indices `ends`; None to drop the example."""
    if truncation not in ("turns", "drop"):
        raise ClawgymError(f"unknown truncation {truncation!r}", hint="use turns or drop")
    if not ends:
        return None
    if ends[-1] <= max_length:
        return ends[-1], len(ends)
    if truncation == "drop":
        return None
    fit = [e for e in ends if e <= max_length]
    return (fit[-1], len(fit)) if fit else None


def _ids(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"]) if text else []


def tokenize_example(
    tokenizer: Any,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    *,
    chat_template: str | None = None,
    max_length: int,
    truncation: Truncation = "turns",
) -> Example | None:
    """Token ids and assistant-only labels of a conversation; None when it has no assistant message
    or does not fit `max_length` (see the module docstring for tokens and truncation)."""
    full, spans = assistant_spans(tokenizer, messages, tools, chat_template=chat_template)
    if not spans:
        return None
    # every turn's prompt and the text through its end, tokenised in one (parallel) batch
    pieces = tokenizer([full[:k] for span in spans for k in span], add_special_tokens=False)["input_ids"]
    ids: list[int] = []
    labels: list[int] = []
    ends: list[int] = []  # per turn: the number of ids through its end
    split, done = 0, 0
    for n, (start, end) in enumerate(spans):
        prompt, through = list(pieces[2 * n]), list(pieces[2 * n + 1])
        if prompt[: len(ids)] == ids:
            context = prompt[len(ids) :]
        else:  # the history tokenises differently in one piece: keep ours, add the text since the last turn
            context, split = _ids(tokenizer, full[done:start]), split + 1
        if through[: len(prompt)] == prompt:
            turn = through[len(prompt) :]
        else:  # the turn's first token merges with the prompt's last: tokenise it as the model emits it
            turn, split = _ids(tokenizer, full[start:end]), split + 1
        ids += context + turn
        labels += [IGNORE] * len(context) + turn
        ends.append(len(ids))
        done = end
    cut = _truncate(ends, max_length, truncation)
    if cut is None:
        return None
    n, kept = cut
    return Example(
        input_ids=ids[:n], labels=labels[:n], turns=kept, dropped_turns=len(spans) - kept, split_boundaries=split
    )


def has_token_ids(t: Trajectory) -> bool:
    """Whether every model call of `t` recorded its prompt and sampled token ids (failed calls aside)."""
    calls = [turn for turn in t.turns if "error" not in turn]
    return bool(calls) and all(
        turn.get("prompt_token_ids") and isinstance(turn.get("token_ids"), list) for turn in calls
    )


def examples_from_turns(
    turns: list[dict[str, Any]], *, max_length: int, truncation: Truncation = "turns"
) -> list[Example]:
    """Examples from recorded token ids, one per prefix-consistent run of model calls (module docstring)."""
    segments: list[tuple[list[int], list[int], list[float], list[int]]] = []  # ids, labels, logprobs, turn ends
    for turn in turns:
        if "error" in turn:
            continue
        prompt, sampled = list(turn["prompt_token_ids"]), list(turn["token_ids"])
        recorded = turn.get("logprobs")
        sampled_lp = (
            [float(x) for x in recorded]
            if isinstance(recorded, list) and len(recorded) == len(sampled)
            else [0.0] * len(sampled)
        )
        if segments and prompt[: len(segments[-1][0])] == segments[-1][0]:
            ids, labels, logprobs, ends = segments[-1]
            extra = prompt[len(ids) :]
            ids += extra + sampled
            labels += [IGNORE] * len(extra) + sampled
            logprobs += [0.0] * len(extra) + sampled_lp
            ends.append(len(ids))
        else:
            segments.append(
                (
                    prompt + sampled,
                    [IGNORE] * len(prompt) + sampled,
                    [0.0] * len(prompt) + sampled_lp,
                    [len(prompt) + len(sampled)],
                )
            )
    out = []
    for ids, labels, logprobs, ends in segments:
        cut = _truncate(ends, max_length, truncation)
        if cut is not None:
            n, kept = cut
            out.append(
                Example(
                    input_ids=ids[:n],
                    labels=labels[:n],
                    turns=kept,
                    dropped_turns=len(ends) - kept,
                    from_token_ids=True,
                    logprobs=logprobs[:n],
                )
            )
    return out


def trajectory_examples(
    tokenizer: Any,
    t: Trajectory,
    *,
    chat_template: str | None = None,
    max_length: int,
    truncation: Truncation = "turns",
    use_token_ids: bool = True,
) -> list[Example]:
    """The examples of one trajectory: from its token ids when it has them (and `use_token_ids`),
    else from its messages. Token ids outside the tokenizer's vocabulary raise: they were sampled
    by another model, and only re-tokenising (use_token_ids=False) can train on them."""
    source = str((t.task or {}).get("id") or (t.task or {}).get("name") or "")
    if use_token_ids and has_token_ids(t):
        examples = examples_from_turns(t.turns, max_length=max_length, truncation=truncation)
        vocab = len(tokenizer)
        if any(i < 0 or i >= vocab for ex in examples for i in ex.input_ids):
            raise ClawgymError(
                f"trajectory of {source or 'a task'} holds token ids outside this tokenizer's "
                f"vocabulary ({vocab} tokens): they come from another model",
                hint="re-tokenise its messages instead (use_token_ids=False)",
            )
    else:
        example = tokenize_example(
            tokenizer,
            t.messages,
            t.tools or None,
            chat_template=chat_template,
            max_length=max_length,
            truncation=truncation,
        )
        examples = [example] if example else []
    for ex in examples:
        ex.source = source
    return examples
