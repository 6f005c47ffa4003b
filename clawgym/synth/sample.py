"""The two embedded routes, as a balancing sampler of candidates.

- persona route (top-down): a persona, then a scenario (category → subcategory) for them, then a
  family serving that scenario for that persona;
- skill route (bottom-up): a primary skill, then a family that composes its operations with
  compatible supporting skills, then a persona the family fits.

Every choice takes what is furthest below its target among the counts of tasks accepted or in
flight: categories towards the spec's shares, then personas, subcategories, skills and families
evenly. Each family's seeds are handed out in order, so no two candidates share a (family, seed).
"""

from __future__ import annotations

import random
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Iterable

from .families import Family


SUBCATEGORY_WEIGHT = 8
EXHAUSTED_WINDOW = 40  # a family is exhausted when at least 95% of its last 40 candidates
EXHAUSTED_SHARE = 0.95  # were near-duplicates


@dataclass(frozen=True)
class Candidate:
    """One task to try: which family, for whom, with which seed, by which route."""

    route: str
    family: str
    persona: str
    seed: int
    category: str
    subcategory: str

    @property
    def key(self) -> tuple[str, int]:
        return (self.family, self.seed)


@dataclass
class Balancer:
    families: list[Family]
    route_shares: dict[str, float]
    category_shares: dict[str, float]
    seed: int = 0
    seed_start: int = 0  # first family seed handed out (benchmarks start far from training seeds)
    counts: dict[str, Counter] = field(default_factory=dict)
    next_seed: Counter = field(default_factory=Counter)
    used_seeds: dict[str, set[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rng = random.Random(f"synth:{self.seed}")
        self.recent: dict[str, deque] = {}  # family -> last outcomes (True: near-duplicate)
        self.exhausted: set[str] = set()
        self.by_category: dict[str, list[Family]] = {}
        for fam in self.families:
            self.by_category.setdefault(fam.category, []).append(fam)
        shares = {c: s for c, s in self.category_shares.items() if s > 0 and c in self.by_category}
        if not shares:
            shares = {c: 1.0 for c in self.by_category}
        total = sum(shares.values())
        self.category_shares = {c: s / total for c, s in shares.items()}
        routes = {r: s for r, s in self.route_shares.items() if s > 0}
        total = sum(routes.values()) or 1.0
        self.route_shares = {r: s / total for r, s in routes.items()}
        for dim in ("route", "category", "subcategory", "persona", "skill", "family"):
            self.counts.setdefault(dim, Counter())

    # -- bookkeeping ---------------------------------------------------------------------------
    def _dims(self, c: Candidate, fam: Family) -> dict[str, str]:
        return {
            "route": c.route,
            "category": c.category,
            "subcategory": f"{c.category}/{c.subcategory}",
            "persona": c.persona,
            "skill": fam.primary_skill,
            "family": c.family,
        }

    def _family(self, name: str) -> Family:
        if not hasattr(self, "_by_name"):
            self._by_name = {f.name: f for f in self.families}
        return self._by_name[name]

    def take(self, c: Candidate) -> None:
        """Count a candidate as in flight (or accepted, when restoring a dataset)."""
        for dim, value in self._dims(c, self._family(c.family)).items():
            self.counts[dim][value] += 1
        self.used_seeds.setdefault(c.family, set()).add(c.seed)

    def release(self, c: Candidate) -> None:
        """A candidate was rejected: it no longer counts towards the balance (its seed stays used)."""
        for dim, value in self._dims(c, self._family(c.family)).items():
            self.counts[dim][value] -= 1

    def outcome(self, c: Candidate, duplicate: bool) -> None:
        """Note whether a finished candidate was a near-duplicate. A family whose last
        EXHAUSTED_WINDOW candidates were nearly all duplicates has no new tasks left to give:
        it is not sampled any more (the others of its category take its share)."""
        window = self.recent.setdefault(c.family, deque(maxlen=EXHAUSTED_WINDOW))
        window.append(duplicate)
        if len(window) == EXHAUSTED_WINDOW and sum(window) >= EXHAUSTED_SHARE * EXHAUSTED_WINDOW:
            self.exhausted.add(c.family)

    def mark_used(self, family: str, seed: int) -> None:
        self.used_seeds.setdefault(family, set()).add(seed)

    # -- choosing ------------------------------------------------------------------------------
    def _least(self, dim: str, options: Iterable[str], key=lambda o: o) -> str:
        options = sorted(set(options))
        low = min(self.counts[dim][key(o)] for o in options)
        return self.rng.choice([o for o in options if self.counts[dim][key(o)] == low])

    def _furthest_below(self, dim: str, shares: dict[str, float]) -> str:
        total = sum(self.counts[dim][k] for k in shares) + 1
        gaps = {k: s - self.counts[dim][k] / total for k, s in shares.items()}
        best = max(gaps.values())
        return self.rng.choice(sorted(k for k, g in gaps.items() if g >= best - 1e-12))

    def _expected(self, dim: str) -> dict[str, float]:
        """Each persona's or primary skill's expected share: per category (its target share), the
        share of each family's weight within the category, split evenly among its personas. This is
        what `dim` is balanced towards (even shares when every family weighs the same)."""
        cache = self.__dict__.setdefault("_shares", {})
        if dim not in cache:
            share: Counter = Counter()
            for cat, target in self.category_shares.items():
                fams = self.by_category.get(cat, [])
                weight = sum(getattr(f, "weight", 1.0) for f in fams) or 1.0
                for fam in fams:
                    w = target * getattr(fam, "weight", 1.0) / weight
                    if dim == "skill":
                        share[fam.primary_skill] += w
                    else:
                        for p in fam.personas:
                            share[p] += w / len(fam.personas)
            total = sum(share.values()) or 1.0
            cache[dim] = {k: v / total for k, v in share.items()}
        return cache[dim]

    def _relative(self, dim: str, key: str, keys: int) -> float:
        """How far `key` is above its share of `dim` (0 = nothing yet)."""
        total = sum(self.counts[dim].values())
        share = self._expected(dim).get(key, 1.0 / max(keys, 1))
        return self.counts[dim][key] / (total * share + 1)

    def _pair(self, route: str, category: str, fams: list[Family]) -> tuple[Family, str]:
        """The (family, persona) pair of `category` whose subcategory, persona, primary skill and
        family are together furthest below their shares (a family's `weight`, 1 for hand-written ones,
        sets its share of the category; a subcategory's share is the weight of the families serving
        it). Subcategories weigh most (scenarios should be covered in proportion); the route's own
        dimension (persona or skill) weighs more than the other."""
        personas = {p for fs in self.by_category.values() for f in fs for p in f.personas}
        skills = {f.primary_skill for fs in self.by_category.values() for f in fs}
        subs = {f.subcategory for f in fams}
        sub_total = sum(self.counts["subcategory"][f"{category}/{s}"] for s in subs)
        weights = sum(getattr(f, "weight", 1.0) for f in fams)
        sub_weight: dict[str, float] = {}
        for f in fams:  # a subcategory's share: the weight of the families serving it
            sub_weight[f.subcategory] = sub_weight.get(f.subcategory, 0.0) + getattr(f, "weight", 1.0)
        scored = []
        for fam in fams:
            sub = self.counts["subcategory"][f"{category}/{fam.subcategory}"] / (
                sub_total * sub_weight[fam.subcategory] / weights + 1
            )
            share = getattr(fam, "weight", 1.0) / weights  # a family's share of its category
            fam_load = (self.counts["family"][fam.name] + 1) / (share * (self.counts["category"][category] + len(fams)))
            skill = self._relative("skill", fam.primary_skill, len(skills))
            for persona in fam.personas:
                who = self._relative("persona", persona, len(personas))
                score = (
                    SUBCATEGORY_WEIGHT * sub
                    + fam_load
                    + (1.5 if route == "persona" else 1) * who
                    + (1.5 if route == "skill" else 1) * skill
                )
                scored.append((round(score, 9), fam.name, persona, fam))
        low = min(s[0] for s in scored)
        choice = self.rng.choice(sorted((s for s in scored if s[0] == low), key=lambda s: (s[1], s[2])))
        return choice[3], choice[2]

    def _seed(self, family: str) -> int:
        used = self.used_seeds.setdefault(family, set())
        s = max(self.next_seed[family], self.seed_start)
        while s in used:
            s += 1
        self.next_seed[family] = s + 1
        return s

    def next(self) -> Candidate:
        """The next candidate; raises LookupError when every family is exhausted."""
        live = {cat: [f for f in fams if f.name not in self.exhausted] for cat, fams in self.by_category.items()}
        shares = {cat: s for cat, s in self.category_shares.items() if live.get(cat)}
        if not shares:
            raise LookupError("every task family is exhausted (its recent candidates were all near-duplicates)")
        total = sum(shares.values())
        route = self._furthest_below("route", self.route_shares)
        category = self._furthest_below("category", {k: v / total for k, v in shares.items()})
        fams = live[category]
        fam, persona = self._pair(route, category, fams)
        c = Candidate(route, fam.name, persona, self._seed(fam.name), category, fam.subcategory)
        self.take(c)
        return c
