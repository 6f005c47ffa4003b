"""Static checks of a synth spec: its taxonomy and every family it names load and agree."""

from __future__ import annotations

from pathlib import Path

from ..errors import SpecError
from .families import family_files, load_families
from .spec import load_synth_spec
from .taxonomy import load_taxonomy


def check_synth_spec(path: str | Path) -> int:
    """Validate a synth spec with its taxonomy and families; returns the number of families."""
    spec = load_synth_spec(path)
    if not spec.taxonomy.is_file():
        raise SpecError.one(
            f"taxonomy file {spec.taxonomy.name!r} not found next to the spec",
            **spec.doc.where(("taxonomy",)),
            hint="the path is relative to the synth spec",
        )
    taxonomy = load_taxonomy(spec.taxonomy)
    paths = family_files(spec.families, spec.folder)
    if not paths:
        raise SpecError.one(
            f"no task family matches {', '.join(spec.families)}",
            **spec.doc.where(("families",)),
            hint="globs are relative to the synth spec; '**' matches any folders",
        )
    return len(load_families(paths, taxonomy))
