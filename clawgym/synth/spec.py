"""The Synth spec: what to synthesize, how to balance and filter it, where it goes."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import SpecError
from ..spec.library import find_root
from ..spec.load import Document, load_file
from ..spec.validate import validate_document
from .dedup import DedupSettings
from .filters import FilterSettings

SPLITS = ("train", "validation", "test")


@dataclass
class SynthSpec:
    doc: Document
    count: int
    seed: int
    taxonomy: Path
    families: list[str]
    routes: dict[str, float]
    category_shares: dict[str, float]
    filters: FilterSettings
    dedup: DedupSettings
    dedup_against: list[str | dict[str, Any]]
    llm: dict[str, Any] | None
    split: dict[str, float] | None
    out: Path
    jobs: int
    sha256: str
    seed_start: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    compose: dict[str, Any] | None = None  # {"catalog": Path, "weight": float}
    heldout: Path | None = None  # the HeldOut file
    region: str = "train"  # the side of it this spec draws from

    @property
    def folder(self) -> Path:
        return Path(self.doc.file).resolve().parent

    @property
    def library_root(self) -> Path:
        return find_root(self.folder)


def load_synth_spec(
    path: str | Path,
    *,
    count: int | None = None,
    out: str | None = None,
    seed: int | None = None,
    split: bool | None = None,
) -> SynthSpec:
    """Load and validate a Synth spec; command-line values override the spec's."""
    doc = load_file(path)
    problems = validate_document(doc, expected_kind="Synth")
    if problems:
        raise SpecError(problems)
    data = doc.data
    folder = Path(doc.file).resolve().parent
    filters = data.get("filters") or {}
    dedup = filters.get("dedup") or {}
    split_spec = data.get("split")
    if split is True and split_spec is None:
        split_spec = {}
    if split is False:
        split_spec = None
    shares = None
    if split_spec is not None:
        shares = {s: float(split_spec.get(s, d)) for s, d in zip(SPLITS, (0.8, 0.1, 0.1))}
    return SynthSpec(
        doc=doc,
        count=int(count or data.get("count", 100)),
        seed=int(data.get("seed", 0) if seed is None else seed),
        taxonomy=folder / data["taxonomy"],
        families=list(data["families"]),
        routes={"persona": 0.5, "skill": 0.5, **(data.get("routes") or {})},
        category_shares=dict((data.get("balance") or {}).get("category") or {}),
        filters=FilterSettings.from_spec(filters),
        dedup=DedupSettings.from_spec(dedup),
        dedup_against=list(dedup.get("against", [])),
        llm=data.get("llm"),
        split=shares,
        out=Path(out or data.get("out") or f"datasets/{data['name']}"),
        jobs=int(data.get("jobs", 0)),
        sha256=hashlib.sha256(Path(doc.file).read_bytes()).hexdigest(),
        seed_start=int(data.get("seed_start", 0)),
        compose=_compose(data.get("compose"), folder),
        heldout=folder / data["heldout"] if data.get("heldout") else None,
        region=str(data.get("region", "train")),
    )


def _compose(block: dict[str, Any] | None, folder: Path) -> dict[str, Any] | None:
    if not block:
        return None
    return {"catalog": folder / str(block.get("catalog", "compose")), "weight": float(block.get("weight", 1.0))}
