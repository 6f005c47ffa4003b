"""Generator protocol, result type and `run_generator`.

A generator turns a seeded `random.Random` and a params dict into file bytes plus a JSON-serialisable
`data` view of exactly what it wrote (same values, same rounding), which task templates use to
compute expected answers. Generators never read the clock, the environment or hash order, so the
same seed material and params give the same bytes on every machine and Python run.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Protocol

from .. import registry


@dataclass(frozen=True)
class Generated:
    """Output of one generator call: `content` (one file) or `files` (a folder), plus `data`."""

    content: bytes | None = None
    files: dict[str, bytes] | None = None
    data: Any = None


class Generator(Protocol):
    """A registered generator (built-ins register their class; `generate` is a staticmethod)."""

    name: str
    schema: dict

    def generate(self, rng: random.Random, params: dict) -> Generated: ...


def _copy(value: Any) -> Any:
    """Deep copy of JSON-like data (faster than copy.deepcopy)."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def apply_defaults(schema: dict, params: dict | None) -> dict:
    """Copy of `params` with every missing property filled from the schema's `default`.

    Recurses into nested objects and into arrays of objects (e.g. column specs).
    """
    out = dict(params or {})
    for key, sub in schema.get("properties", {}).items():
        if key not in out:
            if "default" not in sub:
                continue
            out[key] = _copy(sub["default"])
        value = out[key]
        if isinstance(value, dict) and "properties" in sub:
            out[key] = apply_defaults(sub, value)
        elif isinstance(value, list) and isinstance(sub.get("items"), dict) and "properties" in sub["items"]:
            out[key] = [apply_defaults(sub["items"], v) if isinstance(v, dict) else v for v in value]
    return out


def get_generator(name: str) -> Any:
    """The generator registered under `name` (built-ins first, then installed plugins)."""
    table = registry.registered("generator")
    if name in table:
        return table[name]
    return registry.get("generator", name)


def run_generator(name: str, params: dict, seed_material: str) -> Generated:
    """Run generator `name` with `params` (defaults applied) and `random.Random(seed_material)`.

    String seeding hashes the text with SHA-512, so it does not depend on PYTHONHASHSEED.
    """
    gen = get_generator(name)
    if isinstance(gen, type):
        gen = gen()
    full = apply_defaults(getattr(gen, "schema", {}) or {}, params)
    full.pop("type", None)
    return gen.generate(random.Random(str(seed_material)), full)
