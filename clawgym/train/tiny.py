"""A tiny random model with the embedded model's tokenizer: for plumbing checks on CPU (tests, the
experiments' smoke presets, the TRL example's `--model tiny`); it learns nothing worth measuring."""

from __future__ import annotations

from pathlib import Path


def tiny_model(
    folder: Path,
    *,
    hidden: int = 32,
    heads: int = 4,
    max_positions: int = 8192,
    seed: int = 0,
    special_ids: bool = False,
) -> Path:
    """Write a randomly initialised 2-layer Llama (tied head) and the embedded tokenizer to
    `folder` as a Hugging Face model folder; `special_ids` also sets its BOS and EOS token ids."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig

    from ..policy.embedded import embedded_model_path

    tokenizer = AutoTokenizer.from_pretrained(embedded_model_path())
    ids = {"bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id} if special_ids else {}
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=2,
        num_attention_heads=heads,
        num_key_value_heads=max(1, heads // 2),
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        **ids,
    )
    torch.manual_seed(seed)
    AutoModelForCausalLM.from_config(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return Path(folder)
