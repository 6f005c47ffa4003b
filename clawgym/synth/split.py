"""Train / validation / test splits by family, so that no family appears in two splits."""

from __future__ import annotations

import hashlib
from typing import Iterable

from .spec import SPLITS


def _order(name: str, seed: int) -> str:
    return hashlib.sha256(f"{seed}:{name}".encode()).hexdigest()


def assign_splits(groups: Iterable[tuple[str, str]], shares: dict[str, float], seed: int = 0) -> dict[str, str]:
    """{family: split} for (family, category) pairs.

    Within each category the families are shuffled by a hash of (seed, name); validation and test
    each get round(share × n) of them (at least one when their share is positive and the category
    has three families or more), train the rest. Every split thus sees every category.
    """
    by_category: dict[str, list[str]] = {}
    for name, category in groups:
        by_category.setdefault(category, []).append(name)
    total = sum(shares.values()) or 1.0
    out: dict[str, str] = {}
    for category, names in by_category.items():
        names = sorted(set(names), key=lambda n: _order(n, seed))
        n = len(names)
        sizes = {}
        for split in ("validation", "test"):
            share = shares.get(split, 0) / total
            k = round(share * n)
            if share > 0 and k == 0 and n >= 3:
                k = 1
            sizes[split] = k
        if shares.get("train", 0) > 0 and sizes["validation"] + sizes["test"] >= n:
            sizes["test"] = max(0, n - 1 - sizes["validation"])
        i = 0
        for split in ("validation", "test"):
            for name in names[i : i + sizes[split]]:
                out[name] = split
            i += sizes[split]
        for name in names[i:]:
            out[name] = "train" if shares.get("train", 0) > 0 else SPLITS[1]
    return out
