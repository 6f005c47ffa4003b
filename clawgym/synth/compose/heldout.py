"""The held-out region of the generator: what training synthesis never draws from, so a benchmark
drawn from it has no twin in training.

A HeldOut file (specs/synth/heldout.yaml) reserves compose domains (every task over them), operation
combinations (a composed chain holding every operation of one combination, over any domain) and
hand-written task families. A synth spec names the file under `heldout:` and says which side it
draws from with `region:` (`train`, the default, or `heldout`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import Problem, SpecError
from ...spec.load import load_file

SIDES = ("train", "heldout")


@dataclass(frozen=True)
class Region:
    domains: frozenset[str] = frozenset()
    combinations: tuple[frozenset[str], ...] = ()
    families: frozenset[str] = frozenset()
    file: str = ""

    def family_side(self, name: str, domain: str | None = None) -> str:
        """Which side a family serves: a held-out domain or family only the held-out side; a
        training domain only training (its chains that hold a reserved combination are rejected)."""
        if (domain is not None and domain in self.domains) or name in self.families:
            return "heldout"
        return "train"

    def chain_side(self, domain: str, chain: list[str]) -> str:
        if domain in self.domains:
            return "heldout"
        ops = set(chain)
        return "heldout" if any(combo <= ops for combo in self.combinations) else "train"

    def hand_family_side(self, name: str) -> str:
        return "heldout" if name in self.families else "train"


def load_region(path: Path | None) -> Region:
    """The region a HeldOut file declares (an empty one when there is none)."""
    if path is None:
        return Region()
    from ...spec.validate import validate_document

    doc = load_file(str(path))
    problems = validate_document(doc, expected_kind="HeldOut")
    if problems:
        raise SpecError(problems)
    data = doc.data
    combos = [frozenset(map(str, combo)) for combo in data.get("combinations") or []]
    return Region(
        frozenset(map(str, data.get("domains") or [])),
        tuple(combos),
        frozenset(map(str, data.get("families") or [])),
        doc.file,
    )


def check_region(region: Region, catalog: Any, families: set[str]) -> None:
    """Every name the region reserves exists (a typo would silently reserve nothing), and no
    training domain joins a held-out one (training tasks would read its data)."""
    if not region.file:
        return
    doc = load_file(region.file)
    problems = []
    operations = set(catalog.operations)
    for i, d in enumerate(doc.data.get("domains") or []):
        if d not in catalog.domains:
            problems.append(
                Problem(
                    f"held-out domain {d!r} is not in the compose catalog",
                    **doc.where(("domains", i)),
                    hint="see specs/synth/compose/domains.yaml",
                )
            )
    for dom in catalog.domains.values():
        for other in dom.relations:
            if other in region.domains and dom.name not in region.domains:
                problems.append(
                    Problem(
                        f"training domain {dom.name!r} joins held-out domain {other!r}",
                        **doc.where(("domains",)),
                        hint=f"hold out {dom.name!r} too, or keep {other!r} in training",
                    )
                )
    for combo in region.combinations:
        for op in sorted(combo - operations):
            problems.append(
                Problem(
                    f"held-out combination names unknown operation {op!r}",
                    **doc.where(("combinations",)),
                    hint="see specs/synth/compose/operations.yaml",
                )
            )
    for f in sorted(region.families - families):
        problems.append(Problem(f"held-out family {f!r} is not a task family of this spec", **doc.where(("families",))))
    if problems:
        raise SpecError(problems)
