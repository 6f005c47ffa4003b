"""Declarative checks that grade an agent's final workspace.

Importing this package registers every built-in check type. `check_class`, `check_schema` and
`check_types` look types up in the registry table without loading third-party plugins unless a
type is not built in.
"""

from __future__ import annotations

from ..errors import ClawgymError, did_you_mean
from ..registry import registered
from . import effects as _effects  # noqa: F401
from . import exec as _exec  # noqa: F401
from . import script as _script  # noqa: F401
from . import files as _files  # noqa: F401
from . import harbor as _harbor  # noqa: F401
from . import pinchbench as _pinchbench  # noqa: F401
from . import structured as _structured  # noqa: F401
from . import tabular as _tabular  # noqa: F401
from . import text as _text  # noqa: F401
from .base import Check, CheckContext, CheckFailure, CheckResult

__all__ = [
    "Check",
    "CheckContext",
    "CheckFailure",
    "CheckResult",
    "check_class",
    "check_schema",
    "check_types",
    "existence_only",
    "reads_only",
    "reads_trajectory",
    "weight_of",
]


def check_class(type_name: str) -> type[Check]:
    """The Check subclass registered as `type_name`; plugins are loaded only on a miss."""
    table = registered("check")
    if type_name in table:
        return table[type_name]
    from .. import registry

    try:
        return registry.get("check", type_name)
    except ClawgymError:
        raise
    except Exception as e:  # noqa: BLE001 - a broken plugin must not hide the real problem
        hint = did_you_mean(type_name, table) or f"built-in: {', '.join(sorted(table))}"
        raise ClawgymError(
            f"unknown check type {type_name!r} ({type(e).__name__} loading plugins)", hint=hint
        ) from None


def check_schema(type_name: str) -> dict:
    """The full JSON Schema (draft 2020-12) of a check type, common keys included."""
    return check_class(type_name).schema


def check_types() -> list[str]:
    """Every check type registered so far (all built-ins, plus plugins once loaded), sorted."""
    return sorted(registered("check"))


def _classes(configs: "list | tuple") -> list[type[Check] | None]:
    """The registered class of each check config (None: an unknown type or a malformed config)."""
    table = registered("check")
    return [table.get(str(c.get("type"))) if isinstance(c, dict) else None for c in configs]


def reads_only(configs: "list | tuple") -> bool:
    """True when every check in `configs` is of a built-in or loaded type that only reads files
    (`Check.reads_only`); an unknown or malformed one counts as running code."""
    return all(cls is not None and cls.reads_only for cls in _classes(configs))


def reads_trajectory(configs: "list | tuple") -> bool:
    """False when no check in `configs` looks at the trajectory (`Check.reads_trajectory`); an
    unknown or malformed one counts as reading it."""
    return any(cls is None or cls.reads_trajectory for cls in _classes(configs))


def weight_of(config: object) -> float:
    """The weight a check config carries: its own `weight`, else its type's default (0 for the
    checks that only test whether files exist, 1 for the rest and for unknown types)."""
    if not isinstance(config, dict):
        return 1.0
    if config.get("weight") is not None:
        try:
            return float(config["weight"])
        except (TypeError, ValueError):
            return 1.0
    cls = registered("check").get(str(config.get("type")))
    return 1.0 if cls is None else float(cls.implied_weight(config))


def existence_only(type_name: str) -> bool:
    """True for check types that only test whether files exist (`default_weight` 0): their
    results earn no credit on their own, even where every check of a task weighs 0."""
    cls = registered("check").get(type_name)
    return cls is not None and cls.default_weight == 0
