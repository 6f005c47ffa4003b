"""Batched generation in the `hf` policy (`max_batch` > 1) and in-memory `live:` models, on a tiny
random float32 Llama built in memory (no downloads). The model's end-token row is scaled up so
that some rows end early while others run to max_tokens: the padding `generate` appends after
an early end must be dropped."""

from __future__ import annotations

import itertools
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

SIMPLE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
PROMPTS = [
    "hi",
    "read the file a.txt",
    "write hello to the file a.txt, then read it and call tools",
    "system user assistant tool you can call tools read the file a.txt and write hello",
]
_names = itertools.count()


@pytest.fixture(scope="module")
def tiny():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    corpus = ["read the file a.txt and write hello", "system user assistant tool you can call tools"] * 20
    raw.train_from_iterator(
        corpus,
        trainers.BpeTrainer(
            vocab_size=300, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
        ),
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=raw, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token="<|im_start|>"
    )
    tok.chat_template = SIMPLE
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
    )
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():
        model.lm_head.weight[tok.eos_token_id] *= 1.6  # greedy: 3 of PROMPTS end early, 1 does not
    return tok, model


def _policy(tiny, name: str | None = None, **config):
    """A policy on `tiny` attached under a fresh name (its own batch generator)."""
    from clawgym.policy.hf import HFPolicy, attach_model

    model = name or attach_model(f"t{next(_names)}", *tiny, "cpu")
    return HFPolicy({"type": "hf", "model": model, "max_tokens": 16, **config})


def _concurrently(policy, prompts: list[str], **sampling):
    """`complete` for each prompt, all from their own threads at once."""
    with ThreadPoolExecutor(len(prompts)) as pool:
        futures = [pool.submit(policy.complete, [{"role": "user", "content": p}], **sampling) for p in prompts]
        return [f.result() for f in futures]


def test_batched_greedy_equals_unbatched(tiny) -> None:
    single = _policy(tiny, temperature=0)
    batched = _policy(tiny, temperature=0, max_batch=4, batch_wait_ms=5000)  # waits for all 4
    alone = [single.complete([{"role": "user", "content": p}]) for p in PROMPTS]
    seen: list = []  # (position ids, mask) of each forward pass: RoPE barely shows a shift, so look at them
    hook = tiny[1].model.register_forward_pre_hook(
        lambda m, args, kw: seen.append((kw["position_ids"], kw["attention_mask"])), with_kwargs=True
    )
    try:
        together = _concurrently(batched, PROMPTS)
    finally:
        hook.remove()
    positions, mask = seen[0]  # the prefill; rows in arrival order
    assert sorted(mask.sum(1).tolist()) == sorted(len(c.prompt_token_ids) for c in alone)
    for row in range(len(PROMPTS)):  # each real prompt token at its unpadded position
        assert positions[row][mask[row] == 1].tolist() == list(range(int(mask[row].sum())))
    for a, b in zip(alone, together):
        assert b.prompt_token_ids == a.prompt_token_ids and b.token_ids == a.token_ids
        assert torch.allclose(torch.tensor(b.logprobs), torch.tensor(a.logprobs), atol=1e-4)
        assert (b.finish_reason, b.message, b.usage) == (a.finish_reason, a.message, a.usage)
    generator = batched._loaded._batcher
    assert (generator.batches_run, generator.rows_run) == (1, 4)  # one batch of 4 rows


def test_sampled_logprobs_match_teacher_forcing(tiny) -> None:
    policy = _policy(tiny, temperature=1.0, max_batch=4, batch_wait_ms=5000)
    model = tiny[1]
    for out in _concurrently(policy, PROMPTS):
        assert out.token_ids and len(out.token_ids) == len(out.logprobs)
        with torch.no_grad():
            logits = model(torch.tensor([out.prompt_token_ids + out.token_ids])).logits[0]
        logits = logits[len(out.prompt_token_ids) - 1 : -1].float()
        expected = torch.log_softmax(logits, dim=-1).gather(1, torch.tensor(out.token_ids)[:, None])[:, 0]
        assert torch.allclose(expected, torch.tensor(out.logprobs), atol=1e-4)
    assert policy._loaded._batcher.rows_run == 4


def test_unbatched_path_matches_a_plain_generate(tiny) -> None:
    """max_batch 1 keeps the seeded, one-prompt generate of before, with the same logprobs."""
    from transformers import GenerationConfig

    policy = _policy(tiny, temperature=0.8, seed=7)
    out = policy.complete([{"role": "user", "content": PROMPTS[1]}])
    eos = policy._eos_ids
    gen = GenerationConfig(
        max_new_tokens=16,
        do_sample=True,
        temperature=0.8,
        top_p=1.0,
        top_k=0,
        repetition_penalty=1.0,
        eos_token_id=eos,
        pad_token_id=eos[0],
        output_logits=True,
        return_dict_in_generate=True,
    )
    inputs = torch.tensor([out.prompt_token_ids])
    with torch.inference_mode():
        torch.manual_seed(7)
        ref = tiny[1].generate(input_ids=inputs, attention_mask=torch.ones_like(inputs), generation_config=gen)
    ids = ref.sequences[0, inputs.shape[1] :].tolist()
    logprobs = torch.log_softmax(torch.stack(ref.logits)[:, 0].float() / 0.8, -1).gather(1, torch.tensor(ids)[:, None])
    assert out.token_ids == ids and out.logprobs == logprobs[:, 0].tolist()
    assert policy._loaded._batcher is None


def test_error_reaches_every_caller_and_the_generator_survives(tiny, monkeypatch) -> None:
    from clawgym.policy.base import PolicyError

    policy = _policy(tiny, temperature=0, max_batch=3, batch_wait_ms=5000)
    model, real, calls = tiny[1], tiny[1].generate, []

    def failing_once(*args, **kwargs):
        calls.append(kwargs["input_ids"].shape[0])
        if len(calls) == 1:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
        return real(*args, **kwargs)

    monkeypatch.setattr(model, "generate", failing_once)
    with ThreadPoolExecutor(3) as pool:
        futures = [pool.submit(policy.complete, [{"role": "user", "content": p}]) for p in PROMPTS[:3]]
        errors = [f.exception() for f in futures]
    assert all(isinstance(e, PolicyError) and "ran out of GPU memory" in str(e) for e in errors)
    assert calls == [3]
    assert [c.token_ids for c in _concurrently(policy, PROMPTS[:3])]  # the same thread serves the next batch
    generator = policy._loaded._batcher
    assert calls == [3, 3] and (generator.batches_run, generator.rows_run) == (1, 3)
    assert generator._thread.daemon and generator._thread.is_alive()


def test_settings_split_batches(tiny) -> None:
    policy = _policy(tiny, temperature=0, max_batch=4, batch_wait_ms=5000)
    with ThreadPoolExecutor(4) as pool:
        futures = [
            pool.submit(policy.complete, [{"role": "user", "content": p}], max_tokens=4 + i % 2)
            for i, p in enumerate(PROMPTS)
        ]
        outs = [f.result() for f in futures]
    assert all(len(o.token_ids) <= 4 + i % 2 for i, o in enumerate(outs))
    assert (policy._loaded._batcher.batches_run, policy._loaded._batcher.rows_run) == (2, 4)


def test_live_models(tiny) -> None:
    from clawgym.errors import ClawgymError
    from clawgym.policy.hf import attach_model, detach_model, load_model

    name = attach_model("trainer", *tiny, "cpu")
    assert name == "live:trainer" and attach_model("trainer", *tiny, "cpu") == name
    policy = _policy(tiny, name, temperature=0, max_batch=2, batch_wait_ms=1)
    assert policy._loaded.model is tiny[1] and policy.describe()["device"] == "cpu"
    assert policy.complete([{"role": "user", "content": "hi"}]).token_ids
    generator = policy._loaded._batcher
    detach_model("trainer")
    assert generator.closed
    generator._thread.join(timeout=5)
    assert not generator._thread.is_alive()
    with pytest.raises(ClawgymError) as info:
        load_model("live:trainer")
    problem = info.value.problems[0]
    assert problem.key == "policy.model" and "attach_model" in problem.hint and "live:trainer" in str(info.value)
    assert policy.complete([{"role": "user", "content": "hi"}]).token_ids  # a policy made earlier still works
    assert not any(t.name == "hf-batch" and t is generator._thread for t in threading.enumerate())
