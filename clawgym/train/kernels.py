"""Speed levers for the SFT loop, taken from well-kept libraries rather than written here:

- a fused linear cross-entropy (Liger's Triton kernel): the vocabulary projection and the loss are
  computed chunk by chunk, so the (trained tokens × vocabulary) logits are never held in memory
  and the projection's output never goes through a separate softmax pass;
- `torch.compile` of each decoder layer (regional compilation: the layers share one compiled
  graph, so compiling costs one layer's time, not the whole model's).

Both are chosen in the Train spec's `kernels` section. `auto` takes a lever where it can run (a
CUDA GPU with the library installed) and otherwise keeps the plain path; the status of each lever
and the reason for skipping it are returned for the metrics log, so a run says what it used.
"""

from __future__ import annotations

from typing import Any, Callable

from ..errors import ClawgymError

LossFn = Callable[[Any, Any, dict[str, Any]], Any]  # (torch, model, batch) -> summed token loss


def liger_available(device_type: str) -> tuple[bool, str]:
    """Whether Liger's fused linear cross-entropy can run here, and why not."""
    if device_type != "cuda":
        return False, f"Liger's kernels are Triton GPU kernels; this run is on {device_type}"
    try:
        from liger_kernel.transformers import LigerFusedLinearCrossEntropyLoss  # noqa: F401
    except ImportError as exc:
        return False, f"liger-kernel cannot be imported ({exc}); pip install liger-kernel"
    return True, ""


def plain_token_loss(torch: Any, model: Any, batch: dict[str, Any]) -> Any:
    """Summed cross-entropy over the batch's trained tokens (labels aligned to inputs).

    Only positions that predict a trained token get logits (`logits_to_keep`): prompts and tool
    results never go through the vocabulary projection, which saves most of its time and memory.
    """
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    targets = batch["labels"][:, 1:]
    keep = (targets != -100).any(dim=0).nonzero().flatten()
    logits = model(**inputs, use_cache=False, logits_to_keep=keep).logits
    return torch.nn.functional.cross_entropy(
        logits.flatten(0, 1).float(), targets[:, keep].flatten(), ignore_index=-100, reduction="sum"
    )


class FusedTokenLoss:
    """The same summed loss as `plain_token_loss` through Liger's fused linear cross-entropy.

    The model still runs its own forward (through any DDP or accelerate wrapper, so gradients
    synchronise as usual); a pre-hook on the output projection takes the hidden states of the
    kept positions and hands the projection an empty slice, so no logits are computed. The loss
    is then Liger's kernel over those hidden states and the projection's weight.
    """

    def __init__(self, model: Any, loss: Callable[..., Any] | None = None):
        """`loss(weight, hidden, targets, bias)` -> summed loss; Liger's kernel by default."""
        self.head = model.get_output_embeddings()
        if self.head is None or not hasattr(self.head, "weight"):
            raise ClawgymError(
                f"{type(model).__name__} has no output projection the fused loss can use",
                key="kernels.fused_loss",
                hint="set kernels.fused_loss: none for this model",
            )
        if loss is None:
            import torch
            from liger_kernel.transformers import LigerFusedLinearCrossEntropyLoss

            loss = LigerFusedLinearCrossEntropyLoss(ignore_index=-100, reduction="sum", accum_dtype=torch.float32)
        self.loss = loss
        self._hidden: Any = None
        self._handle = self.head.register_forward_pre_hook(self._capture)

    def _capture(self, _module: Any, args: tuple) -> tuple:
        hidden = args[0]
        self._hidden = hidden
        return (hidden[:, :0], *args[1:])

    def __call__(self, torch: Any, model: Any, batch: dict[str, Any]) -> Any:
        inputs = {k: v for k, v in batch.items() if k != "labels"}
        targets = batch["labels"][:, 1:]
        keep = (targets != -100).any(dim=0).nonzero().flatten()
        model(**inputs, use_cache=False, logits_to_keep=keep)
        hidden, self._hidden = self._hidden, None
        if hidden is None:
            raise ClawgymError(
                "the fused loss saw no call of the model's output projection",
                key="kernels.fused_loss",
                hint="set kernels.fused_loss: none for this model",
            )
        return self.loss(self.head.weight, hidden.flatten(0, 1), targets[:, keep].flatten(), self.head.bias)

    def close(self) -> None:
        self._handle.remove()


def decoder_layers(model: Any) -> list[Any]:
    """The repeated decoder blocks of a causal LM (under a LoRA wrapper too), or []."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    inner = getattr(base, "model", None)
    layers = getattr(inner, "layers", None)
    return list(layers) if layers is not None else []


def choose(kernels: dict[str, Any], model: Any, device_type: str, *, file: str | None = None) -> tuple[LossFn, dict]:
    """Apply the spec's levers to `model` (unwrapped, before accelerate prepares it); returns the
    loss function to use and what was chosen, with reasons, for the metrics log."""
    status: dict[str, Any] = {}
    want = kernels.get("fused_loss", "none")
    loss: LossFn = plain_token_loss
    if want == "none":
        status["fused_loss"] = "off"
    else:
        ok, why = liger_available(device_type)
        if ok:
            loss = FusedTokenLoss(model)
            status["fused_loss"] = "liger"
        elif want == "liger":
            raise ClawgymError(
                f"Liger's fused loss was asked for, but {why}",
                file=file,
                key="kernels.fused_loss",
                hint="install liger-kernel on a CUDA machine, or set kernels.fused_loss: auto",
            )
        else:
            status["fused_loss"] = f"off ({why})"
    if kernels.get("compile"):
        layers = decoder_layers(model)
        if layers:
            for layer in layers:
                layer.compile()
            status["compile"] = f"{len(layers)} decoder layers"
        else:
            model.compile()
            status["compile"] = "whole model (no decoder layers found)"
    else:
        status["compile"] = "off"
    return loss, status
