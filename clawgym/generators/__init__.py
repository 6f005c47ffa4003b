"""Seeded generators of realistic mock workspace files (ledgers, inboxes, calendars, logs, ...).

Importing this package registers every built-in generator under kind "generator". Use
`run_generator(name, params, seed_material)` to produce a `Generated` (bytes plus `data`).
"""

from __future__ import annotations

from .. import registry as _registry
from . import contacts, emails, ics, ledger, logs, notes, records, table  # noqa: F401  (registration)
from .base import Generated, Generator, apply_defaults, get_generator, run_generator

#: Built-in generators by name (plugins registered by other packages are not listed here).
GENERATORS: dict[str, type] = {
    name: obj
    for name, obj in sorted(_registry.registered("generator").items())
    if getattr(obj, "__module__", "").startswith(__name__ + ".")
}

__all__ = ["GENERATORS", "Generated", "Generator", "apply_defaults", "get_generator", "run_generator"]
