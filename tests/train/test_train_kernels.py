"""The SFT loop's speed levers (clawgym/train/kernels.py): the fused-loss path gives the plain
loss and gradients exactly (checked with a torch stand-in for Liger's kernel, which needs a CUDA
GPU), `auto` falls back with a reason, `liger` where it cannot run is a clear error, and compile
wraps each decoder layer."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from clawgym.errors import ClawgymError, SpecError  # noqa: E402
from clawgym.train import kernels  # noqa: E402
from clawgym.train.spec import load_train_spec  # noqa: E402


def tiny_model():
    cfg = transformers.LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
    )
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(cfg)


def batch():
    ids = torch.tensor([[5, 6, 7, 8, 9, 10, 11, 12], [13, 14, 15, 16, 17, 18, 19, 1]])
    labels = ids.clone()
    labels[:, :4] = -100
    labels[1, 6] = -100
    return {"input_ids": ids, "labels": labels, "attention_mask": torch.ones_like(ids)}


def reference_kernel(weight, hidden, targets, bias=None):
    """What Liger's fused kernel computes, written plainly: summed CE of hidden @ weight.T."""
    logits = torch.nn.functional.linear(hidden, weight, bias)
    return torch.nn.functional.cross_entropy(logits.float(), targets, ignore_index=-100, reduction="sum")


def test_fused_path_equals_plain_loss_and_gradients():
    model = tiny_model()
    plain = kernels.plain_token_loss(torch, model, batch())
    plain.backward()
    expected = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()
    fused = kernels.FusedTokenLoss(model, loss=reference_kernel)
    got = fused(torch, model, batch())
    got.backward()
    assert torch.allclose(got, plain, rtol=1e-6)
    for name, p in model.named_parameters():
        assert torch.allclose(p.grad, expected[name], atol=1e-6), name
    fused.close()  # the hook is gone: the model computes logits again
    assert model(input_ids=batch()["input_ids"]).logits.shape[1] == 8


def test_auto_falls_back_with_a_reason_and_liger_is_an_error_where_it_cannot_run():
    model = tiny_model()
    loss, status = kernels.choose({"fused_loss": "auto", "compile": False}, model, "cpu")
    assert loss is kernels.plain_token_loss
    assert status["fused_loss"].startswith("off (") and "cpu" in status["fused_loss"]
    with pytest.raises(ClawgymError) as err:
        kernels.choose({"fused_loss": "liger"}, model, "cpu", file="train.yaml")
    assert str(err.value).startswith("train.yaml: kernels.fused_loss: Liger's fused loss was asked for, but")
    assert "set kernels.fused_loss: auto" in str(err.value)


def test_compile_wraps_each_decoder_layer():
    model = tiny_model()
    _, status = kernels.choose({"fused_loss": "none", "compile": True}, model, "cpu")
    assert status == {"fused_loss": "off", "compile": "2 decoder layers"}
    assert all(layer._compiled_call_impl is not None for layer in model.model.layers)


def test_spec_defaults_and_bad_value(tmp_path):
    (tmp_path / "d.jsonl").write_text("")
    base = {"apiVersion": "clawgym/v1", "kind": "Train", "name": "k", "model": "m", "data": {"sources": ["d.jsonl"]}}
    (tmp_path / "a.yaml").write_text(json.dumps(base))
    assert load_train_spec(tmp_path / "a.yaml").kernels == {"fused_loss": "none", "compile": False}
    (tmp_path / "b.yaml").write_text(json.dumps({**base, "kernels": {"fused_loss": "triton"}}))
    with pytest.raises(SpecError) as err:
        load_train_spec(tmp_path / "b.yaml")
    assert "kernels" in str(err.value) and "triton" in str(err.value)
