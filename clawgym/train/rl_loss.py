"""The GRPO objective on exactly the sampled tokens: packed micro-batches, log-probabilities, loss.

Each rollout becomes one or more sequences of the ids the policy actually saw and sampled
(`render.examples_from_turns`: prompt ids, then per turn the tool results the environment
appended, unlabelled, and the sampled ids, labelled with their recorded sampling log-probability).
Nothing is re-tokenised, so the trainer's log-probabilities are of the very tokens that were
sampled; at the weights that sampled them they equal the recorded ones (the token-exactness test).

Per trained token t of a rollout with advantage A, with ratio ρ = exp(logp_new − logp_sampled):

    loss_t = max(−A·ρ, −A·clip(ρ, 1 − clip_low, 1 + clip_high)) + β·KL_t,
    KL_t   = exp(logp_ref − logp_new) − (logp_ref − logp_new) − 1     (the k3 estimator, ≥ 0)

summed over the step's trained tokens and divided by their number across all processes
(token-level averaging, as in DAPO: long and short answers weigh per token). Log-probabilities
are of the temperature-scaled distribution the policy sampled from: log_softmax(logits / T).

When another program sampled (an inference engine), its kernels give slightly different
log-probabilities than the trainer's at the same weights. With truncated importance sampling
(`tis_cap` C, as verl and TRL do it) the ratio is taken against the trainer's own log-probability
at the sampling weights, logp_behaviour, and each token's term is weighted by

    w_t = min(exp(logp_behaviour − logp_sampled), C)      (no gradient through w)

which corrects the expectation for sampling from the engine's distribution, not the trainer's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from .render import IGNORE, Example


@dataclass
class Sample:
    """One training sequence of a rollout and the rollout's advantage."""

    example: Example
    advantage: float
    ref_logprobs: list[float] | None = None  # per position, filled when a KL term is used
    behaviour_logprobs: list[float] | None = None  # per position: the trainer's, at the sampling weights (TIS)


def packs_rows(model: Any) -> bool:
    """Whether `model` can attend within a packed row without a dense mask. Only flash-attention
    (varlen) kernels can; with SDPA or eager attention, transformers turns the restarting position
    ids into a block-diagonal mask, whose memory grows with the square of the row, per head and layer
    (two 4k-token rollouts in one row of SmolLM2-135M: about 2.4 GB per layer kept for backward)."""
    return "flash" in str(getattr(getattr(model, "config", None), "_attn_implementation", "") or "")


def plan_micro_batches(samples: Sequence[Sample], max_tokens: int, *, pack: bool = True) -> list[list[int]]:
    """Sample indices per packed micro-batch of at most `max_tokens` tokens (a longer sample goes
    alone); with `pack` false, one sample per micro-batch."""
    if not pack:
        return [[i] for i in range(len(samples))]
    batches: list[list[int]] = []
    used = 0
    for i, s in enumerate(samples):
        n = len(s.example.input_ids)
        if batches and used + n <= max_tokens:
            batches[-1].append(i)
            used += n
        else:
            batches.append([i])
            used = n
    return batches


def collate(samples: Sequence[Sample], device: Any = None) -> dict[str, Any]:
    """One packed row: input_ids, position_ids (restarting per sample), labels, and per position the
    sampled log-probability, the advantage and the reference log-probability of its token."""
    import torch

    ids: list[int] = []
    labels: list[int] = []
    positions: list[int] = []
    old: list[float] = []
    adv: list[float] = []
    ref: list[float] = []
    behaviour: list[float] = []
    for s in samples:
        ex = s.example
        n = len(ex.input_ids)
        ids += ex.input_ids
        labels += [IGNORE, *ex.labels[1:]]  # the previous sample's last token predicts nothing here
        positions += range(n)
        old += ex.logprobs or [0.0] * n
        adv += [s.advantage] * n
        ref += s.ref_logprobs or [0.0] * n
        behaviour += s.behaviour_logprobs or ex.logprobs or [0.0] * n
    row = {
        "input_ids": torch.tensor([ids]),
        "position_ids": torch.tensor([positions]),
        "labels": torch.tensor([labels]),
        "old_logprobs": torch.tensor([old], dtype=torch.float32),
        "advantages": torch.tensor([adv], dtype=torch.float32),
        "ref_logprobs": torch.tensor([ref], dtype=torch.float32),
        "behaviour_logprobs": torch.tensor([behaviour], dtype=torch.float32),
    }
    return {k: v.to(device) for k, v in row.items()} if device is not None else row


def token_logprobs(model: Any, batch: dict[str, Any], temperature: float) -> tuple[Any, Any, Any]:
    """(log-probabilities of the kept labels under `model` at `temperature`, their mask, kept positions).

    Logits are computed only where a labelled token is predicted (`logits_to_keep`): prompts and
    tool results never go through the vocabulary projection.
    """
    import torch

    targets = batch["labels"][:, 1:]
    keep = (targets != IGNORE).any(dim=0).nonzero().flatten()
    logits = model(
        input_ids=batch["input_ids"], position_ids=batch["position_ids"], use_cache=False, logits_to_keep=keep
    ).logits.float()
    chosen = targets[:, keep]
    mask = chosen != IGNORE
    logp = -torch.nn.functional.cross_entropy(
        (logits / temperature).flatten(0, 1), chosen.clamp(min=0).flatten(), reduction="none"
    ).view_as(chosen)
    return logp, mask, keep


def policy_loss(
    model: Any,
    batch: dict[str, Any],
    *,
    temperature: float,
    clip_low: float,
    clip_high: float,
    kl_weight: float,
    tis_cap: float | None = None,
) -> tuple[Any, dict[str, float]]:
    """Summed loss over the batch's trained tokens, and summed statistics (tokens, clipped, KL,
    ratio, |trainer − sampled| log-probability, importance weight)."""
    import torch

    logp, mask, keep = token_logprobs(model, batch, temperature)
    index = keep + 1  # label positions of the kept logits
    sampled = batch["old_logprobs"][:, index]
    adv = batch["advantages"][:, index]
    weight = torch.ones_like(logp)
    old = sampled
    if tis_cap is not None:  # ratio against the trainer's own behaviour, weighted for the sampler's gap
        old = batch["behaviour_logprobs"][:, index]
        weight = torch.clamp(torch.exp(old - sampled), max=tis_cap)
    ratio = torch.exp(logp - old)
    unclipped = -adv * ratio
    clipped = -adv * torch.clamp(ratio, 1 - clip_low, 1 + clip_high)
    per_token = torch.maximum(unclipped, clipped) * weight
    kl = torch.zeros_like(per_token)
    if kl_weight > 0:
        delta = batch["ref_logprobs"][:, index] - logp
        kl = torch.exp(delta) - delta - 1
        per_token = per_token + kl_weight * kl
    m = mask.float()
    stats = {
        "tokens": float(m.sum()),
        "clipped": float(((clipped > unclipped).float() * m).sum()),
        "kl": float((kl.detach() * m).sum()),
        "ratio": float((ratio.detach() * m).sum()),
        "logprob_diff": float(((logp.detach() - sampled).abs() * m).sum()),
        "tis_weight": float((weight * m).sum()),
    }
    return (per_token * m).sum(), stats


def reference_logprobs(
    ref_model: Any, samples: Sequence[Sample], *, temperature: float, max_tokens: int, device: Any
) -> None:
    """Fill each sample's `ref_logprobs` with the reference model's log-probabilities of its tokens."""
    fill_logprobs(ref_model, samples, "ref_logprobs", temperature=temperature, max_tokens=max_tokens, device=device)


def fill_logprobs(
    model: Any, samples: Sequence[Sample], attr: str, *, temperature: float, max_tokens: int, device: Any
) -> None:
    """Set `attr` of each sample to `model`'s log-probabilities of its tokens (no gradient)."""
    import torch

    for batch_ids in plan_micro_batches(samples, max_tokens, pack=packs_rows(model)):
        group = [samples[i] for i in batch_ids]
        batch = collate(group, device)
        with torch.no_grad():
            logp, mask, keep = token_logprobs(model, batch, temperature)
        values = torch.zeros(batch["input_ids"].shape[1])
        values[(keep + 1).cpu()] = logp[0].float().cpu()
        offset = 0
        for s in group:
            n = len(s.example.input_ids)
            setattr(s, attr, values[offset : offset + n].tolist())
            offset += n
