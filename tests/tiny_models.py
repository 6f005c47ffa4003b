"""Tiny causal LMs built from a config (no download) for training tests."""

from __future__ import annotations

from pathlib import Path


def tiny_with_tokenizer(folder: Path, *, seed: int = 0) -> Path:
    """A 2-layer Llama with the embedded model's tokenizer, saved as a Hugging Face model folder."""
    import torch
    import transformers

    from clawgym.policy.embedded import embedded_model_path

    tokenizer = transformers.AutoTokenizer.from_pretrained(embedded_model_path())
    cfg = transformers.LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                   max_position_embeddings=8192, tie_word_embeddings=True)
    torch.manual_seed(seed)
    transformers.AutoModelForCausalLM.from_config(cfg).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
