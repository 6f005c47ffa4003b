"""SFT data: sources, selection, and exact assistant-only loss masks for several chat templates.

The tokenizer is the embedded model's (SmolLM2-135M-Instruct), loaded offline; other model families
are imitated with realistic chat templates of our own (ChatML, Qwen2.5 with native tools, Llama 3.1
with header tokens, Mistral with [INST] and [TOOL_CALLS]), their control tokens added as special
tokens. The expected trained text of every assistant turn is written out by hand for each
template, independently of the masking code.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="SFT data needs transformers (pip install 'clawgym[train]')")

from clawgym.policy.chat_format import render_chat  # noqa: E402
from clawgym.records.store import write_jsonl  # noqa: E402
from clawgym.records.trajectory import Trajectory  # noqa: E402
from clawgym.train.data import (
    IGNORE,
    ChatTemplateError,
    build_examples,
    examples_from_sources,  # noqa: E402
    load_trajectories,
    sampled_by,
    select,
    tokenize_example,
    trajectory_examples,
)
from clawgym.train.render import examples_from_turns  # noqa: E402
from tiny_models import tiny_model  # noqa: E402, F401  (fixture: a tiny random Llama built offline)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "stat",
            "description": "Size of a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "write",
            "description": "Write a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}},
        },
    },
]


def _call(cid: str, name: str, args: dict) -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


CONV = [
    {"role": "system", "content": "You work in the user's files."},
    {"role": "user", "content": "Copy a.txt to b.txt, then tell me its size."},
    {
        "role": "assistant",
        "content": "Let me read the file first.",
        "tool_calls": [_call("call00001", "read", {"path": "a.txt"}), _call("call00002", "stat", {"path": "a.txt"})],
    },
    {"role": "tool", "tool_call_id": "call00001", "content": "héllo wörld"},
    {"role": "tool", "tool_call_id": "call00002", "content": "13 bytes"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [_call("call00003", "write", {"path": "b.txt", "content": "héllo wörld"})],
    },
    {"role": "tool", "tool_call_id": "call00003", "content": "wrote 13 bytes"},
    {"role": "assistant", "content": "Done: b.txt holds the same 13 bytes."},
    {"role": "user", "content": "Thanks. Anything else?"},
    {"role": "assistant", "content": "No, that is all."},
]
ASSISTANT = [m for m in CONV if m["role"] == "assistant"]

# ---- templates ---------------------------------------------------------------------------------

CHATML = (
    r"{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>' + '\n' }}"
    r"{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

QWEN25 = r"""{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] }}
    {%- else %}{{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}{%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}{{- "\n" }}{{- tool | tojson }}{%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}{{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}{%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}{{- '\n' + message.content }}{%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}{{- tool_call.name }}{{- '", "arguments": ' }}{{- tool_call.arguments | tojson }}{{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}{{- '<|im_start|>user' }}{%- endif %}
        {{- '\n<tool_response>\n' }}{{- message.content }}{{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}{{- '<|im_end|>\n' }}{%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}
"""

LLAMA3 = r"""{{- bos_token }}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content'] | trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{%- if tools %}{{- "Environment: ipython\n" }}{%- endif %}
{{- "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n" }}
{%- if tools %}
    {{- "You have access to the following functions. To call a function, please respond with JSON for a function call. " }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}. ' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}{{- t | tojson(indent=4) }}{{- "\n\n" }}{%- endfor %}
{%- endif %}
{{- system_message }}
{{- "<|eot_id|>" }}
{%- for message in messages %}
    {%- if message.role == 'assistant' and message.tool_calls %}
        {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
        {%- if message.content %}{{- message.content | trim }}{{- '\n' }}{%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- set f = tool_call.function %}
            {{- '{"name": "' + f.name + '", "parameters": ' }}{{- f.arguments | tojson }}{{- '}' }}
            {%- if not loop.last %}{{- '\n' }}{%- endif %}
        {%- endfor %}
        {{- '<|eot_id|>' }}
    {%- elif message.role == 'tool' %}
        {{- '<|start_header_id|>ipython<|end_header_id|>\n\n' }}{{- message.content }}{{- '<|eot_id|>' }}
    {%- else %}
        {{- '<|start_header_id|>' + message.role + '<|end_header_id|>\n\n' + message.content | trim + '<|eot_id|>' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{%- endif %}
"""

MISTRAL = r"""{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content'] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}
{{- bos_token }}
{%- for message in loop_messages %}
    {%- if message['role'] == 'user' %}
        {%- if loop.first and tools %}
            {{- '[AVAILABLE_TOOLS] [' }}
            {%- for tool in tools %}{{- tool | tojson }}{%- if not loop.last %}{{- ', ' }}{%- endif %}{%- endfor %}
            {{- '][/AVAILABLE_TOOLS]' }}
        {%- endif %}
        {%- if loop.first and system_message is defined %}
            {{- '[INST] ' + system_message + '\n\n' + message['content'] + '[/INST]' }}
        {%- else %}
            {{- '[INST] ' + message['content'] + '[/INST]' }}
        {%- endif %}
    {%- elif message['role'] == 'assistant' %}
        {%- if message['content'] %}{{- ' ' + message['content'] | trim }}{%- endif %}
        {%- if message['tool_calls'] %}
            {{- '[TOOL_CALLS] [' }}
            {%- for tool_call in message['tool_calls'] %}
                {{- '{"name": "' + tool_call['function']['name'] + '", "arguments": ' }}
                {{- tool_call['function']['arguments'] | tojson }}
                {{- ', "id": "' + tool_call['id'] + '"}' }}
                {%- if not loop.last %}{{- ', ' }}{%- endif %}
            {%- endfor %}
            {{- ']' }}
        {%- endif %}
        {{- eos_token }}
    {%- elif message['role'] == 'tool' %}
        {{- '[TOOL_RESULTS] {"content": ' + message['content'] | tojson + ', "call_id": "' + message['tool_call_id'] + '"}[/TOOL_RESULTS]' }}
    {%- endif %}
{%- endfor %}
"""

# Qwen3-style: the reasoning of assistant turns before the last user query is dropped.
QWEN3_THINK = r"""{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if message.role == "assistant" %}
        {%- set content = message.content or '' %}
        {%- set reasoning_content = '' %}
        {%- if '</think>' in content %}
            {%- set reasoning_content = content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}
            {%- set content = content.split('</think>')[-1].lstrip('\n') %}
        {%- endif %}
        {%- if loop.index0 > ns.last_query_index %}
            {{- '<|im_start|>assistant\n<think>\n' + reasoning_content.strip('\n') + '\n</think>\n\n' + content + '<|im_end|>\n' }}
        {%- else %}
            {{- '<|im_start|>assistant\n' + content + '<|im_end|>\n' }}
        {%- endif %}
    {%- else %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}
"""

# Mistral v3-style: the system prompt goes into the *last* user message only.
MISTRAL_V3_SYSTEM = r"""{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content'] %}{%- set loop_messages = messages[1:] %}
{%- else %}{%- set loop_messages = messages %}{%- endif %}
{{- bos_token }}
{%- for message in loop_messages %}
    {%- if message['role'] == 'user' %}
        {%- if loop.last and system_message is defined %}{{- '[INST] ' + system_message + '\n\n' + message['content'] + '[/INST]' }}
        {%- else %}{{- '[INST] ' + message['content'] + '[/INST]' }}{%- endif %}
    {%- elif message['role'] == 'assistant' %}{{- ' ' + message['content'] + eos_token }}
    {%- endif %}
{%- endfor %}
"""

# DeepSeek-R1-style: the generation prompt opens a <think> block the rendered history does not have.
FORCED_THINK = (
    r"{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}"
    r"{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n<think>\n' }}{% endif %}"
)

# ---- expected assistant turns, written out per template ------------------------------------------


def _args(call: dict) -> dict:
    return json.loads(call["function"]["arguments"])


def _hermes(m: dict, ascii_json: bool) -> str:
    blocks = [
        "<tool_call>\n"
        + json.dumps({"name": c["function"]["name"], "arguments": _args(c)}, ensure_ascii=ascii_json)
        + "\n</tool_call>"
        for c in m.get("tool_calls") or []
    ]
    return "\n".join(([m["content"]] if m.get("content") else []) + blocks) + "<|im_end|>"


def _llama(m: dict) -> str:
    calls = [
        '{"name": "' + c["function"]["name"] + '", "parameters": ' + json.dumps(_args(c), ensure_ascii=False) + "}"
        for c in m.get("tool_calls") or []
    ]
    if not calls:
        return m["content"].strip() + "<|eot_id|>"
    return (m["content"].strip() + "\n" if m.get("content") else "") + "\n".join(calls) + "<|eot_id|>"


def _mistral(m: dict) -> str:
    text = " " + m["content"].strip() if m.get("content") else ""
    if m.get("tool_calls"):
        text += (
            "[TOOL_CALLS] ["
            + ", ".join(
                '{"name": "'
                + c["function"]["name"]
                + '", "arguments": '
                + json.dumps(_args(c), ensure_ascii=False)
                + ', "id": "'
                + c["id"]
                + '"}'
                for c in m["tool_calls"]
            )
            + "]"
        )
    return text + "</s>"


LLAMA_TOKENS = {
    "bos_token": "<|begin_of_text|>",
    "additional_special_tokens": ["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|eom_id|>"],
}
MISTRAL_TOKENS = {
    "bos_token": "<s>",
    "eos_token": "</s>",
    "additional_special_tokens": [
        "[INST]",
        "[/INST]",
        "[TOOL_CALLS]",
        "[AVAILABLE_TOOLS]",
        "[/AVAILABLE_TOOLS]",
        "[TOOL_RESULTS]",
        "[/TOOL_RESULTS]",
    ],
}

# name: (chat_template for the tokenizer or None for none, extra special tokens, expected turn text)
TEMPLATES = {
    "smollm2-own (Hermes fallback)": ("own", None, lambda m: _hermes(m, True)),
    "no template (ChatML default, Hermes fallback)": (None, None, lambda m: _hermes(m, True)),
    "chatml": (CHATML, None, lambda m: _hermes(m, True)),
    "qwen2.5 (native tools)": (QWEN25, None, lambda m: _hermes(m, False)),
    "llama3.1 (header tokens)": (LLAMA3, LLAMA_TOKENS, _llama),
    "mistral ([INST], [TOOL_CALLS])": (MISTRAL, MISTRAL_TOKENS, _mistral),
}


@pytest.fixture(scope="module")
def model_path() -> str:
    from clawgym.errors import PrerequisiteError
    from clawgym.policy.embedded import embedded_model_path

    try:
        return str(embedded_model_path())
    except PrerequisiteError as exc:
        pytest.skip(f"the embedded model's tokenizer is not available: {exc}")


def _tokenizer(path: str, template: str | None, specials: dict | None = None):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    if specials:
        tok.add_special_tokens(specials)
    if template != "own":
        tok.chat_template = template
    return tok


def _runs(ex) -> list[tuple[int, int]]:
    """(start, end) token index ranges of consecutive trained labels."""
    runs, start = [], None
    for i, label in enumerate([*ex.labels, IGNORE]):
        if label != IGNORE and start is None:
            start = i
        elif label == IGNORE and start is not None:
            runs.append((start, i))
            start = None
    return runs


def _decode(tok, ids) -> str:
    return tok.decode(list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False)


@pytest.mark.parametrize("name", list(TEMPLATES))
@pytest.mark.parametrize("tools", [TOOLS, None], ids=["tools", "no-tools"])
def test_mask_is_exactly_the_assistant_turns(model_path, name, tools) -> None:
    template, specials, expected = TEMPLATES[name]
    tok = _tokenizer(model_path, template, specials)
    conv = CONV if tools else [m for m in CONV if m["role"] != "tool" and not m.get("tool_calls")]
    turns = [m for m in conv if m["role"] == "assistant"]
    ex = tokenize_example(tok, conv, tools, max_length=100_000)
    assert ex is not None and ex.turns == len(turns) and ex.dropped_turns == 0
    assert all(label in (IGNORE, i) for label, i in zip(ex.labels, ex.input_ids))
    runs = _runs(ex)
    assert [_decode(tok, ex.input_ids[a:b]) for a, b in runs] == [expected(m) for m in turns]
    # each turn's context is the text the hf policy prompts that turn with, ending in the same tokens;
    # token for token the same prompt unless the tokenizer merges across a turn boundary
    positions = [i for i, m in enumerate(conv) if m["role"] == "assistant"]
    for (a, b), i in zip(runs, positions):
        prompt = render_chat(tok, conv[:i], tools, add_generation_prompt=True)
        prompt_ids = tok(prompt, add_special_tokens=False)["input_ids"]
        assert _decode(tok, ex.input_ids[:a]) == prompt
        if ex.split_boundaries == 0:
            assert ex.input_ids[:a] == prompt_ids
        else:
            assert ex.input_ids[a - 1] == prompt_ids[-1]
            assert ex.input_ids[a:b] == tok(expected(conv[i]), add_special_tokens=False)["input_ids"]
    # byte-level BPE splits "\n\n" before a word: the Llama header's boundaries are tokenised apart
    assert (ex.split_boundaries > 0) == ("llama" in name)
    # the example ends with the last turn's end token: the newline or header after it is not trained
    end = "<|eot_id|>" if "llama" in name else "</s>" if "mistral" in name else "<|im_end|>"
    assert ex.input_ids[-1] == tok.convert_tokens_to_ids(end) and len(ex.input_ids) == runs[-1][1]


VICUNA = (
    r"{% for m in messages %}{% if m['role'] == 'system' %}{{ m['content'] + '\n\n' }}"
    r"{% elif m['role'] == 'user' %}{{ 'USER: ' + m['content'] + '\n' }}"
    r"{% else %}{{ 'ASSISTANT: ' + m['content'] + eos_token + '\n' }}{% endif %}{% endfor %}"
    r"{% if add_generation_prompt %}{{ 'ASSISTANT: ' }}{% endif %}"
)


def test_prompt_ending_in_a_space_trains_the_first_word_as_generated(model_path) -> None:
    tok = _tokenizer(model_path, VICUNA)  # eos is <|im_end|>
    conv = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello there."},
        {"role": "user", "content": "Bye"},
        {"role": "assistant", "content": "Goodbye."},
    ]
    ex = tokenize_example(tok, conv, None, max_length=1000)
    runs = _runs(ex)
    assert [_decode(tok, ex.input_ids[a:b]) for a, b in runs] == ["Hello there.<|im_end|>", "Goodbye.<|im_end|>"]
    space = tok(" ", add_special_tokens=False)["input_ids"]
    for a, b in runs:  # the prompt ends with the space token, as at inference; the turn starts a word
        assert ex.input_ids[a - 1 : a] == space
    assert ex.input_ids[runs[0][0] : runs[0][1]] == tok("Hello there.<|im_end|>", add_special_tokens=False)["input_ids"]
    assert ex.split_boundaries >= 2


@pytest.mark.parametrize("template", [None, QWEN25], ids=["fallback", "native-tools"])
def test_contexts_are_the_hf_policys_prompts(tiny_model, template) -> None:  # noqa: F811
    from tiny_models import hf_policy as _hf

    policy = _hf(tiny_model, chat_template=template)
    ex = tokenize_example(policy.tokenizer, CONV, TOOLS, chat_template=template, max_length=100_000)
    positions = [i for i, m in enumerate(CONV) if m["role"] == "assistant"]
    assert ex.split_boundaries == 0
    for (a, _), i in zip(_runs(ex), positions):
        assert ex.input_ids[:a] == policy.prompt_ids(CONV[:i], TOOLS)


def test_native_tool_templates_get_arguments_as_objects(model_path) -> None:
    tok = _tokenizer(model_path, QWEN25)
    text = render_chat(tok, CONV[:3], TOOLS, add_generation_prompt=False)
    assert '{"name": "read", "arguments": {"path": "a.txt"}}' in text and '\\"path\\"' not in text


def test_fallback_puts_tool_instructions_in_the_system_message(model_path) -> None:
    tok = _tokenizer(model_path, "own")
    ex = tokenize_example(tok, CONV, TOOLS, max_length=100_000)
    text = _decode(tok, ex.input_ids)
    assert text.startswith("<|im_start|>system\nYou can call tools.")
    assert "without any tool call.\n\nYou work in the user's files.<|im_end|>" in text
    assert "<|im_start|>user\n<tool_response>\nhéllo wörld\n</tool_response>\n<tool_response>\n13 bytes" in text


@pytest.mark.parametrize(
    "template, conv, problem",
    [
        (
            QWEN3_THINK,
            [
                {"role": "user", "content": "Size of a.txt?"},
                {"role": "assistant", "content": "<think>\nI should check.\n</think>\n\nChecking."},
                {"role": "user", "content": "And b.txt?"},
                {"role": "assistant", "content": "<think>\nAgain.\n</think>\n\nSame."},
            ],
            "re-renders history",
        ),
        (
            MISTRAL_V3_SYSTEM,
            CONV[:2]
            + [
                {"role": "assistant", "content": "Sure."},
                {"role": "user", "content": "Go on."},
                {"role": "assistant", "content": "Done."},
            ],
            "re-renders history",
        ),
        (FORCED_THINK, CONV[:2] + [{"role": "assistant", "content": "Sure."}], "generation prompt"),
    ],
    ids=["qwen3-drops-reasoning", "mistral-v3-moves-system", "forced-thinking-prompt"],
)
def test_templates_that_break_the_prefix_property_raise(model_path, template, conv, problem) -> None:
    tok = _tokenizer(model_path, template, MISTRAL_TOKENS if template is MISTRAL_V3_SYSTEM else None)
    with pytest.raises(ChatTemplateError, match=problem):
        tokenize_example(tok, conv, None, max_length=100_000)
    t = Trajectory(task={"id": "t@1"}, agent={}, messages=conv)
    with pytest.raises(ChatTemplateError, match=r"task t@1: .*" + problem):
        build_examples([t], tok, max_length=100_000)


def test_truncation_keeps_whole_leading_turns(model_path) -> None:
    tok = _tokenizer(model_path, QWEN25)
    full = tokenize_example(tok, CONV, TOOLS, max_length=100_000)
    runs = _runs(full)
    limit = runs[2][1] + 3  # the third turn fits, the fourth does not
    ex = tokenize_example(tok, CONV, TOOLS, max_length=limit)
    assert ex.turns == 3 and ex.dropped_turns == 1 and len(ex.input_ids) == runs[2][1] <= limit
    assert ex.input_ids == full.input_ids[: runs[2][1]] and ex.labels == full.labels[: runs[2][1]]
    assert [_decode(tok, ex.input_ids[a:b]) for a, b in _runs(ex)] == [_hermes(m, False) for m in ASSISTANT[:3]]
    assert tokenize_example(tok, CONV, TOOLS, max_length=limit, truncation="drop") is None
    assert tokenize_example(tok, CONV, TOOLS, max_length=runs[0][1] - 1) is None  # not even one turn fits
    assert tokenize_example(tok, CONV, TOOLS, max_length=len(full.input_ids), truncation="drop") == full


def test_conversation_without_assistant_gives_nothing(model_path) -> None:
    tok = _tokenizer(model_path, "own")
    assert tokenize_example(tok, CONV[:2], TOOLS, max_length=1000) is None


# ---- recorded token ids ------------------------------------------------------------------------


def _turn(prompt: list[int], sampled: list[int]) -> dict:
    return {"prompt_token_ids": prompt, "token_ids": sampled, "logprobs": [-0.1] * len(sampled)}


def test_consistent_turns_make_one_example_labelled_on_sampled_ids() -> None:
    turns = [
        _turn([1, 2, 3], [4, 5]),
        {"index": 1, "error": "timeout"},
        _turn([1, 2, 3, 4, 5, 6, 7], [8, 9]),
        _turn([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], [11]),
    ]
    (ex,) = examples_from_turns(turns, max_length=100)
    assert ex.input_ids == list(range(1, 12)) and ex.from_token_ids and ex.turns == 3
    assert ex.labels == [IGNORE] * 3 + [4, 5] + [IGNORE] * 2 + [8, 9] + [IGNORE] + [11]


def test_inconsistent_turns_split_into_segments() -> None:
    turns = [
        _turn([1, 2, 3], [4, 5]),
        _turn([1, 2, 3, 4, 5, 6], [7]),
        _turn([1, 2, 3, 4, 99, 6, 7, 8], [9, 10]),  # the history was re-tokenised differently
        _turn([1, 2, 3, 4, 99, 6, 7, 8, 9, 10, 11], [12]),
    ]
    first, second = examples_from_turns(turns, max_length=100)
    assert first.input_ids == [1, 2, 3, 4, 5, 6, 7] and first.labels == [IGNORE] * 3 + [4, 5, IGNORE, 7]
    assert second.input_ids == [1, 2, 3, 4, 99, 6, 7, 8, 9, 10, 11, 12]
    assert second.labels == [IGNORE] * 8 + [9, 10, IGNORE, 12] and second.turns == 2


def test_token_id_truncation_keeps_whole_turns() -> None:
    turns = [_turn([1, 2, 3], [4, 5]), _turn([1, 2, 3, 4, 5, 6], [7, 8, 9])]
    (ex,) = examples_from_turns(turns, max_length=8)
    assert ex.input_ids == [1, 2, 3, 4, 5] and ex.turns == 1 and ex.dropped_turns == 1
    assert examples_from_turns(turns, max_length=8, truncation="drop") == []
    assert examples_from_turns(turns, max_length=4) == []


def test_trajectory_uses_its_token_ids_when_it_has_them(model_path) -> None:
    tok = _tokenizer(model_path, "own")
    prompt = tok(render_chat(tok, CONV[:2], TOOLS), add_special_tokens=False)["input_ids"]
    sampled = tok("Let me read the file first.<|im_end|>", add_special_tokens=False)["input_ids"]
    t = Trajectory(task={"id": "copy@1"}, agent={}, messages=CONV[:3], tools=TOOLS, turns=[_turn(prompt, sampled)])
    (ex,) = trajectory_examples(tok, t, max_length=10_000)
    assert ex.from_token_ids and ex.source == "copy@1" and ex.input_ids == prompt + sampled
    assert [x for x in ex.labels if x != IGNORE] == sampled
    (re,) = trajectory_examples(tok, t, max_length=10_000, use_token_ids=False)
    assert not re.from_token_ids
    t.turns[0]["token_ids"] = [len(tok) + 5]
    with pytest.raises(Exception, match="outside this tokenizer's vocabulary"):
        trajectory_examples(tok, t, max_length=10_000)
    t.turns[0].pop("prompt_token_ids")  # a call without ids: the messages are re-tokenised
    assert not trajectory_examples(tok, t, max_length=10_000)[0].from_token_ids


def test_build_examples_counts(model_path) -> None:
    tok = _tokenizer(model_path, "own")
    trajs = [
        Trajectory(task={"id": "a"}, agent={}, messages=CONV, tools=TOOLS),
        Trajectory(task={"id": "b"}, agent={}, messages=CONV[:2], tools=TOOLS),
        Trajectory(task={"id": "c"}, agent={}, turns=[_turn([1, 2], [3])]),
    ]
    examples, counts = build_examples(trajs, tok, max_length=100_000)
    assert len(examples) == counts.examples == 2 and counts.no_assistant == 1 and counts.from_token_ids == 1
    assert counts.trained_tokens == sum(e.trained_tokens for e in examples) and "2 examples" in counts.summary()
    _, counts = build_examples(trajs[:1], tok, max_length=10)
    assert counts.too_long == 1 and counts.examples == 0


# ---- selection ---------------------------------------------------------------------------------


def _traj(
    task: str,
    status: str | None,
    reward: float | None,
    answer: str = "done",
    *,
    messages: bool = True,
    call_id: str = "c1",
) -> Trajectory:
    msgs = (
        [
            {"role": "user", "content": f"do {task}"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": call_id, "type": "function", "function": {"name": "read", "arguments": '{"path": "a"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": call_id, "content": "x"},
            {"role": "assistant", "content": answer},
        ]
        if messages
        else []
    )
    t = Trajectory(task={"id": f"{task}@0", "hash": f"h-{task}"}, agent={"type": "claw"}, messages=msgs)
    t.verdict = {"status": status, "reward": reward}
    return t


def test_select_threshold_status_dedupe_and_counts() -> None:
    trajs = [
        _traj("a", "passed", 1.0),
        _traj("a", "passed", 1.0, call_id="other-id"),  # duplicate (ids differ)
        _traj("b", "passed", 0.5),
        _traj("c", "failed", 1.0),
        _traj("d", "error", None),
        _traj("e", "passed", 1.0, messages=False),
        _traj("f", "passed", 1.0, "other answer"),
    ]
    kept = select(trajs)
    assert [t.task["id"] for t in kept] == ["a@0", "f@0"]
    c = kept.counts
    assert (c.seen, c.kept, c.no_messages, c.status, c.reward, c.duplicate, c.over_cap) == (7, 2, 1, 2, 1, 1, 0)
    assert c.dropped() == {"no_messages": 1, "status": 2, "reward": 1, "duplicate": 1}
    assert c.summary().startswith("kept 2 of 7 trajectories (dropped: no messages 1, status 2")
    assert len(select(trajs, dedupe=False)) == 3
    assert len(select(trajs, min_reward=0.5)) == 3
    assert len(select(trajs, statuses=("passed", "failed"))) == 3
    assert len(select(trajs, min_reward=None, statuses=None)) == 5


def test_select_caps_per_task_deterministically() -> None:
    trajs = [_traj("a", "passed", 1.0, f"answer {i}") for i in range(6)] + [_traj("b", "passed", 1.0)]
    kept = select(trajs, max_per_task=2, seed=3)
    assert kept.counts.over_cap == 4 and len(kept) == 3
    again = select(list(reversed(trajs)), max_per_task=2, seed=3)
    assert {t.final_message or t.messages[-1]["content"] for t in kept} == {
        t.final_message or t.messages[-1]["content"] for t in again
    }
    answers = {frozenset(t.messages[-1]["content"] for t in select(trajs, max_per_task=2, seed=s)) for s in range(8)}
    assert len(answers) > 1  # the seed chooses
    assert [t.task["id"] for t in kept][-1] == "b@0"  # input order kept


# ---- sources -----------------------------------------------------------------------------------


def test_load_trajectories_from_runs_and_files(tmp_path) -> None:
    from clawgym.interop.sharegpt import to_sharegpt_row
    from clawgym.interop.trajectory_formats import to_openai_row

    run = tmp_path / "run"
    for i, (status, reward) in enumerate([("passed", 1.0), ("failed", 0.0)]):
        trial = run / "trials" / f"t{i}"
        trial.mkdir(parents=True)
        t = _traj(f"r{i}", None, None)
        (trial / "trajectory.json").write_text(json.dumps(t.to_dict()))
        (trial / "record.json").write_text(
            json.dumps({"task": t.task, "trial_id": f"t{i}", "status": status, "reward": reward})
        )
    ours = tmp_path / "ours.jsonl"
    write_jsonl(ours, [_traj("j", "passed", 1.0)])
    openai = tmp_path / "openai.jsonl"
    openai.write_text(json.dumps(to_openai_row(_traj("o", "passed", 1.0))) + "\n")
    sharegpt = tmp_path / "sharegpt.jsonl"
    sharegpt.write_text(json.dumps(to_sharegpt_row(_traj("s", "passed", 1.0))) + "\n")
    sources: list[Path | str] = [run, str(ours), openai, sharegpt]
    try:
        from clawgym.records.store import to_hf_dataset

        to_hf_dataset([_traj("h", "passed", 1.0)]).save_to_disk(str(tmp_path / "ds"))
        sources.append(tmp_path / "ds")
    except ImportError:
        pass
    trajs = list(load_trajectories(sources))
    assert [t.task["id"] for t in trajs] == ["r0@0", "r1@0", "j@0", "o@0", "s@0", "h@0"][: len(sources) + 1]
    assert [(t.verdict or {}).get("status") for t in trajs] == ["passed", "failed"] + ["passed"] * (len(trajs) - 2)
    assert [t.messages[-1]["content"] for t in trajs] == ["done"] * len(trajs)
    assert len(select(trajs)) == len(trajs) - 1
    with pytest.raises(Exception, match="no such file or folder"):
        list(load_trajectories([tmp_path / "missing"]))


def test_examples_from_sources_for_a_train_spec(model_path, tmp_path) -> None:
    tok = _tokenizer(model_path, "own")
    prompt = tok(render_chat(tok, CONV[:2], TOOLS), add_special_tokens=False)["input_ids"]
    sampled = tok("Let me read the file first.<|im_end|>", add_special_tokens=False)["input_ids"]
    mine = _traj("m", "passed", 1.0)
    mine.messages, mine.tools, mine.turns = CONV[:3], TOOLS, [_turn(prompt, sampled)]
    mine.policy = {"type": "hf", "model": "embedded"}
    other = _traj("o", "passed", 1.0)
    other.turns, other.policy = [_turn([1, 2], [3])], {"type": "openai", "model": "some/other-model"}
    source = tmp_path / "trajs.jsonl"
    write_jsonl(source, [mine, other, _traj("f", "failed", 0.0)])
    assert sampled_by(mine, tok) and not sampled_by(other, tok)
    examples, counts = examples_from_sources([source], tok, data={"min_reward": 1.0, "max_length": 4096})
    assert counts["trajectories"] == 3 and counts["selected"] == 2 and counts["dropped_status"] == 1
    assert counts["examples"] == 2 and counts["from_token_ids"] == 1  # the other model's ids are re-tokenised
    assert examples[0].input_ids == prompt + sampled and not examples[1].from_token_ids
