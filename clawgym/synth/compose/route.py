"""The compose route of `clawgym synth`: each (domain, scenario) pair of the catalog is a family
the balancer samples like any hand-written one, and a worker turns a candidate into a composed,
filtered task spec.

A synth spec turns it on with a `compose:` block (the catalog folder and the weight of a composed
family against a hand-written one); `heldout:` names the region reserved for evaluation (see
heldout.py): training specs never draw from it, and a spec with `region: heldout` draws only from it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...spec.write import dump_spec, literal
from ..dedup import DedupSettings
from ..filters import FilterSettings
from ..make import Made, finish
from ..sample import Candidate
from .build import compose
from .catalog import Catalog, load_catalog
from .heldout import Region
from .wording import Vocabulary, check_spec

ATTEMPTS = 12  # seeds a worker tries for one candidate before giving up on it


@dataclass(frozen=True)
class ComposeFamily:
    """One (domain, scenario) pair: what the balancer needs of a family."""

    domain: str
    category: str
    subcategory: str
    personas: tuple[str, ...]
    primary_skill: str
    catalog: str  # the catalog folder
    weight: float = 1.0
    name: str = ""

    def __post_init__(self) -> None:
        slug = "".join(ch if ch.isalnum() else "-" for ch in self.subcategory.lower()).strip("-")
        object.__setattr__(self, "name", f"compose-{self.domain.replace('_', '-')}-{slug}")

    @property
    def path(self) -> str:
        return str(Path(self.catalog) / "domains.yaml")

    @property
    def skills(self) -> tuple[str, ...]:
        return (self.primary_skill,)


def compose_families(
    folder: Path, weight: float, region: Region, side: str, taxonomy: Any = None
) -> list[ComposeFamily]:
    """The families of a catalog on one side of the held-out region ("train" or "heldout")."""
    from ...errors import SpecError

    catalog = load_catalog(str(folder))
    out, problems = [], []
    for dom in catalog.domains.values():
        for cat, sub in dom.scenarios:
            if taxonomy is not None:
                problems += taxonomy.subcategory_problems(cat, sub, {"file": str(folder / "domains.yaml"), "line": 1})
            fam = ComposeFamily(dom.name, cat, sub, dom.personas, _skill_of(dom.formats[0]), str(folder), weight)
            if region.family_side(fam.name, dom.name) in (side, "both"):
                out.append(fam)
    if problems:
        raise SpecError(problems)
    return out


def _skill_of(fmt: str) -> str:
    from .formats import FORMATS

    return FORMATS[fmt].skill.split(".")[0]


def make_from_compose(
    c: Candidate,
    fam: ComposeFamily,
    region: Region,
    side: str,
    out: Path,
    rel_dir: str,
    settings: FilterSettings,
    dedup: DedupSettings,
    sandbox: dict | None = None,
) -> Made:
    """The whole pipeline for one compose candidate: compose (trying a few sub-seeds until the
    chain fits and lies on this spec's side of the held-out region), write, then `finish`."""
    base = fam.name if len(fam.name) <= 55 else f"{fam.name[:50]}-{hashlib.sha1(fam.name.encode()).hexdigest()[:4]}"
    name = f"{base}-{c.seed:05d}"
    made = Made(c, name, f"{rel_dir}/{name}.yaml")
    catalog: Catalog = load_catalog(fam.catalog)
    library = _library_root(Path(fam.catalog))
    vocab = Vocabulary.of(catalog, fam.domain)
    why = "no chain fits"
    reworded: list[str] = []  # why earlier draws' requests were turned away (wording.py)
    rescoped: list[str] = []  # chains whose scenario promised other work (scenarios.py)
    for attempt in range(ATTEMPTS):
        try:
            composed = compose(
                catalog,
                fam.domain,
                (fam.category, fam.subcategory),
                c.persona,
                c.seed * ATTEMPTS + attempt,
                library,
                name,
            )
        except ValueError as exc:
            why = str(exc)
            if why.startswith("scenario: "):  # the chain does not do what the scenario promises: drawn again
                rescoped.append(why.removeprefix("scenario: ") + ": drawn again")
            continue
        if region.chain_side(fam.domain, composed.chain) != side:
            why = "every chain tried lies in the other side of the held-out region"
            continue
        hits = check_spec(composed.spec, vocab)
        if hits:  # a request that does not read right is drawn again
            why = f"the request's wording ({hits[0]})"
            reworded.append(str(hits[0]))
            continue
        if composed.rescoped:
            rescoped.append(composed.rescoped)
        break
    else:
        worded = f"; {len(reworded)} drawn again for their wording, e.g. {reworded[0]}" if reworded else ""
        made.error = f"compose: {why} (after {ATTEMPTS} tries{worded})"
        return made
    spec = composed.spec
    for key in ("files", "instruction", "solution", "checks"):
        spec[key] = literal(spec[key])
    sha = hashlib.sha256(Path(fam.path).read_bytes()).hexdigest()
    comment = (
        f"Composed by clawgym synth (compose route) from domain {fam.domain} ({composed.fmt} input),\n"
        f"operations {' -> '.join(composed.chain)}; catalog sha256 {sha[:16]}, persona {c.persona}, "
        f"seed {c.seed}, try {attempt}."
    )
    made.text = dump_spec(spec, comment)
    made.meta = {
        "category": fam.category,
        "subcategory": spec["subcategory"],  # what the chain does (scenarios.py), maybe not the drawn one
        "persona": c.persona,
        "skills": composed.skills,
        "operations": list(spec["operations"]),
        "chain": composed.chain,
        "files": len(spec["files"]),
        "checks": len(spec["checks"]),
        "difficulty": spec["difficulty"],
        "expected_steps": len(composed.chain),
        "source": {
            "family": fam.name,
            "compose": fam.domain,
            "format": composed.fmt,
            "try": attempt,
            "catalog_sha256": sha,
            **({"reworded": reworded} if reworded else {}),
            **({"rescoped": rescoped} if rescoped else {}),
        },
    }
    return finish(made, spec, None, out, settings, dedup, sandbox)


def _library_root(folder: Path) -> Path:
    from ...spec.library import find_root

    return find_root(folder)


def describe(families: list[ComposeFamily]) -> str:
    return json.dumps(sorted({f.domain for f in families}))
