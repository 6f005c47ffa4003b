"""Statistics for reports: pass@k, pass^k and bootstrap confidence intervals over task instances.

- pass@k (the unbiased estimator of Chen et al., 2021, "Evaluating Large Language Models Trained on
  Code"): for a task instance with n graded attempts of which c passed, the probability that at least
  one of k attempts drawn without replacement passes: 1 - C(n-c, k) / C(n, k).
- pass^k: the probability that k attempts drawn without replacement all pass: C(c, k) / C(n, k).
- Both are averaged over the instances that have at least k graded attempts; an instance with fewer
  attempts says nothing about k and is left out (a group with none gives None).
- Confidence intervals resample task instances (not trials: attempts of one instance are correlated)
  with replacement, with a fixed seed, and take the 2.5th and 97.5th percentiles. numpy is used when
  installed (fast at 10,000 trials); otherwise the standard library does the same resampling.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from math import comb
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..records.trial_record import TrialRecord, as_record

DEFAULT_BOOT = 1000
DEFAULT_SEED = 0
DEFAULT_KS = (1, 5)


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """1 - C(n-c, k)/C(n, k); None when n < k (not enough attempts to say)."""
    if k < 1 or c < 0 or c > n:
        raise ValueError(f"pass@k needs 0 <= c <= n and k >= 1 (n={n}, c={c}, k={k})")
    if n < k:
        return None
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float | None:
    """C(c, k)/C(n, k): the probability that k attempts all pass; None when n < k."""
    if k < 1 or c < 0 or c > n:
        raise ValueError(f"pass^k needs 0 <= c <= n and k >= 1 (n={n}, c={c}, k={k})")
    if n < k:
        return None
    return comb(c, k) / comb(n, k)


def parse_ks(text: str | Iterable[int] | None) -> tuple[int, ...]:
    """'1,5' -> (1, 5); sorted, unique, each at least 1."""
    if text is None:
        return DEFAULT_KS
    items = [int(p) for p in text.replace(" ", "").split(",") if p] if isinstance(text, str) else [int(k) for k in text]
    if not items or any(k < 1 for k in items):
        raise ValueError(f"k values must be integers >= 1, got {text!r}")
    return tuple(sorted(set(items)))


@dataclass
class Instance:
    """The graded attempts of one task instance (errors are not attempts: they have no reward)."""

    n: int = 0
    passed: int = 0
    reward_sum: float = 0.0
    rewards: list[float] = field(default_factory=list)


def instances_of(
    records: Iterable[TrialRecord | Mapping[str, Any]], rules: Mapping[str, str] | None = None
) -> dict[str, Instance]:
    """Group the records evaluation counts by task instance (the task hash, else name@seed).

    `rules` (outcome -> score | exclude | retry, see `clawgym.records.outcomes`) say which outcomes
    count; by default infrastructure outcomes are left out and every graded trial counts."""
    out: dict[str, Instance] = {}
    for rec in map(as_record, records):
        counted = rec.counted(rules)
        if counted is None:
            continue
        key = rec.task_hash or f"{rec.task_name}@{rec.seed}"
        inst = out.setdefault(key, Instance())
        reward, passed = counted
        inst.n += 1
        inst.passed += passed
        inst.reward_sum += reward
        inst.rewards.append(reward)
    return out


def _ratio_stat(num: Sequence[float], den: Sequence[float]) -> Callable[[Sequence[int]], float | None]:
    def stat(idx: Sequence[int]) -> float | None:
        d = sum(den[i] for i in idx)
        return sum(num[i] for i in idx) / d if d else None

    return stat


def _percentile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), on a sorted list."""
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def bootstrap_ratio_ci(
    num: Sequence[float],
    den: Sequence[float],
    *,
    n_boot: int = DEFAULT_BOOT,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
    use_numpy: bool | None = None,
) -> tuple[float, float] | None:
    """CI of sum(num)/sum(den) when the units (task instances) are resampled with replacement.

    A mean over trials is num = per-instance reward sums, den = per-instance attempt counts; a mean
    over instances is den = 1 for each. Deterministic for a given seed; None without data.
    """
    m = len(num)
    if m == 0 or sum(den) == 0:
        return None
    if use_numpy is None:
        use_numpy = _has_numpy()
    alpha = (1.0 - level) / 2
    if use_numpy:
        import numpy as np

        rng = np.random.default_rng(seed)
        a, b = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
        stats: list[Any] = []
        chunk = max(1, min(n_boot, 2_000_000 // m))  # bounded memory at any size
        done = 0
        while done < n_boot:
            size = min(chunk, n_boot - done)
            idx = rng.integers(0, m, size=(size, m))
            d = b[idx].sum(axis=1)
            s = a[idx].sum(axis=1)
            ok = d > 0
            stats.append(s[ok] / d[ok])
            done += size
        values = np.concatenate(stats)
        if values.size == 0:
            return None
        lo, hi = np.quantile(values, [alpha, 1 - alpha])
        return float(lo), float(hi)
    rand = random.Random(seed)
    stat = _ratio_stat(num, den)
    population = range(m)
    samples = [v for v in (stat(rand.choices(population, k=m)) for _ in range(n_boot)) if v is not None]
    if not samples:
        return None
    samples.sort()
    return _percentile(samples, alpha), _percentile(samples, 1 - alpha)


def _has_numpy() -> bool:
    try:
        import numpy  # noqa: F401
    except ImportError:  # pragma: no cover - numpy comes with the model stack
        return False
    return True


def group_stats(
    records: Iterable[dict[str, Any]],
    *,
    ks: Sequence[int] = DEFAULT_KS,
    n_boot: int = DEFAULT_BOOT,
    seed: int = DEFAULT_SEED,
    use_numpy: bool | None = None,
    rules: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Mean reward, pass rate, pass@k and pass^k of a group of records, each with a 95% CI
    (the trials counted as `rules` say: see `instances_of`).

    Keys: instances, mean_reward(_ci), pass_rate(_ci), and for each k `pass@k`, `pass@k_ci`,
    `pass^k`, `pass^k_ci`, `pass@k_instances` (instances with at least k graded attempts).
    A CI is [low, high] or None.
    """
    insts = list(instances_of(records, rules).values())
    out: dict[str, Any] = {"instances": len(insts)}
    opts = {"n_boot": n_boot, "seed": seed, "use_numpy": use_numpy}

    def ci(num: list[float], den: list[float]) -> list[float] | None:
        r = bootstrap_ratio_ci(num, den, **opts)  # type: ignore[arg-type]
        return [round(r[0], 6), round(r[1], 6)] if r else None

    counts = [float(i.n) for i in insts]
    out["mean_reward_ci"] = ci([i.reward_sum for i in insts], counts)
    out["pass_rate_ci"] = ci([float(i.passed) for i in insts], counts)
    for k in ks:
        usable = [i for i in insts if i.n >= k]
        at = [pass_at_k(i.n, i.passed, k) or 0.0 for i in usable]
        hat = [pass_hat_k(i.n, i.passed, k) or 0.0 for i in usable]
        ones = [1.0] * len(usable)
        out[f"pass@{k}_instances"] = len(usable)
        out[f"pass@{k}"] = sum(at) / len(at) if at else None
        out[f"pass@{k}_ci"] = ci(at, ones) if at else None
        out[f"pass^{k}"] = sum(hat) / len(hat) if hat else None
        out[f"pass^{k}_ci"] = ci(hat, ones) if hat else None
    return out
