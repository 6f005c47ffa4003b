"""Plugin registry: checks, generators, sandboxes, agents and policies are found by (kind, name).

Built-ins register with the `@register(kind, name)` decorator; third-party packages expose a module
under the `clawgym` entry-point group whose import registers their plugins the same way.
"""

from __future__ import annotations

import importlib
from importlib import metadata
from typing import Any, Callable, TypeVar

from .errors import ClawgymError, did_you_mean

T = TypeVar("T")
_REGISTRY: dict[str, dict[str, Any]] = {}
_loaded = False


def register(kind: str, name: str) -> Callable[[T], T]:
    """Decorator: make `obj` available as plugin `name` of `kind` (e.g. "check", "csv_rows_equal")."""

    def deco(obj: T) -> T:
        _REGISTRY.setdefault(kind, {})[name] = obj
        return obj

    return deco


def _load_plugins() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    importlib.import_module("clawgym.builtin_plugins")
    for ep in metadata.entry_points(group="clawgym"):
        if ep.value.split(":")[0] in ("clawgym.builtin_plugins", "clawgym.builtins"):  # ours, by its old name too
            continue
        ep.load()


def registered(kind: str) -> dict[str, Any]:
    """What is registered under `kind` so far (a read-only view; plugins are not loaded)."""
    from types import MappingProxyType

    return MappingProxyType(_REGISTRY.setdefault(kind, {}))  # type: ignore[return-value]


def names(kind: str) -> list[str]:
    """All registered plugin names of a kind, sorted."""
    _load_plugins()
    return sorted(_REGISTRY.get(kind, {}))


def get(kind: str, name: str) -> Any:
    """Look a plugin up; a miss lists what is installed and the closest names."""
    _load_plugins()
    table = _REGISTRY.get(kind, {})
    if name in table:
        return table[name]
    hint = did_you_mean(name, table) or f"installed: {', '.join(sorted(table)) or 'none'}"
    raise ClawgymError(f"unknown {kind} type {name!r}", hint=hint)
