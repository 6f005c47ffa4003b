"""Tiny causal LMs built from a config (no download) for training tests."""

from __future__ import annotations

from pathlib import Path

import pytest


def tiny_with_tokenizer(
    folder: Path, *, seed: int = 0, max_positions: int = 8192, hidden: int = 32, heads: int = 4
) -> Path:
    """A 2-layer Llama with the embedded model's tokenizer, saved as a Hugging Face model folder;
    `max_positions` is its context window (OpenClaw's prompts need more than 8192). vLLM's
    attention kernels want a head size of 32 or more (hidden 128, heads 2)."""
    from clawgym.train.tiny import tiny_model

    return tiny_model(folder, hidden=hidden, heads=heads, max_positions=max_positions, seed=seed)


# A tiny random Llama with a BPE tokenizer trained offline on a few lines: the hf policy's tests.
SIMPLE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    import torch

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]
    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    corpus = [
        "read the file a.txt and write hello",
        '{"name": "read", "arguments": {"path": "a"}}',
        "system user assistant tool you can call tools",
    ] * 20
    raw.train_from_iterator(
        corpus,
        trainers.BpeTrainer(
            vocab_size=400, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
        ),
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=raw, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token="<|im_start|>"
    )
    tok.chat_template = SIMPLE
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
    )
    folder = tmp_path_factory.mktemp("tiny-llama")
    LlamaForCausalLM(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


def hf_policy(folder: str, **config):
    """The hf policy on `folder` (CLAWGYM_TEST_DEVICE=cuda runs the same tests on a GPU)."""
    import os

    from clawgym.policy.hf import HFPolicy

    device = os.environ.get("CLAWGYM_TEST_DEVICE", "cpu")  # cuda: the same tests on a GPU
    return HFPolicy({"type": "hf", "model": folder, "device": device, "max_tokens": 12, **config})
