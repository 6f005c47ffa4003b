"""Cut tokenized examples into micro-batches: padding-free packing, or padding to the batch's longest.

Packing lays whole examples end to end in one row per micro-batch (up to `batch_size × max_length`
tokens) with position ids restarting at 0 for each example. Transformers reads restarting position
ids as separate sequences and builds a block-diagonal causal mask (or uses variable-length
attention kernels), so no example attends to another and no compute goes to padding. Padding puts
one example per row and pads to the longest row, with an attention mask. In both, labels are -100
wherever no loss is taken (prompts, tool results, padding, the first token of each example).
"""

from __future__ import annotations

import random
from typing import Any, Sequence

from .render import IGNORE, Example

__all__ = ["IGNORE", "Example", "collate", "plan_batches", "trained_tokens"]


def plan_batches(
    lengths: Sequence[int], *, batching: str, batch_size: int, max_length: int, seed: int, epoch: int
) -> list[list[int]]:
    """Example indices per micro-batch for one epoch (shuffled by seed and epoch, deterministic)."""
    order = list(range(len(lengths)))
    random.Random(seed * 1_000_003 + epoch).shuffle(order)
    if batching == "padding":
        return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    budget = batch_size * max_length
    batches: list[list[int]] = []
    current: list[int] = []
    used = 0
    for i in order:
        n = min(lengths[i], max_length)
        if current and used + n > budget:
            batches.append(current)
            current, used = [], 0
        current.append(i)
        used += n
    if current:
        batches.append(current)
    return batches


def collate(examples: Sequence[Example], *, batching: str, pad_id: int) -> dict[str, Any]:
    """Tensors for one micro-batch: input_ids, labels and position_ids (packing) or attention_mask."""
    import torch

    if batching == "packing":
        ids: list[int] = []
        labels: list[int] = []
        positions: list[int] = []
        for ex in examples:
            ids += ex.input_ids
            labels += [IGNORE, *ex.labels[1:]]  # the previous example's last token predicts nothing here
            positions += range(len(ex.input_ids))
        return {
            "input_ids": torch.tensor([ids]),
            "labels": torch.tensor([labels]),
            "position_ids": torch.tensor([positions]),
        }
    width = max(len(ex.input_ids) for ex in examples)
    ids_rows, label_rows, mask_rows = [], [], []
    for ex in examples:
        pad = width - len(ex.input_ids)
        ids_rows.append([*ex.input_ids, *([pad_id] * pad)])
        label_rows.append([IGNORE, *ex.labels[1:], *([IGNORE] * pad)])
        mask_rows.append([1] * len(ex.input_ids) + [0] * pad)
    return {
        "input_ids": torch.tensor(ids_rows),
        "labels": torch.tensor(label_rows),
        "attention_mask": torch.tensor(mask_rows),
    }


def trained_tokens(batch: dict[str, Any]) -> int:
    """Label tokens that count in the loss (after the model's one-token shift)."""
    return int((batch["labels"][:, 1:] != IGNORE).sum())
