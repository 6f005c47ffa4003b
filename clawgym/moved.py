"""Module paths that moved in 0.2 keep working for one release: importing an old path warns
(DeprecationWarning) and gives the module at its new path. CHANGELOG.md lists every move."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from typing import Any, Callable

MOVED: dict[str, str] = {
    "clawgym.bench.cli": "clawgym.cli.bench",
    "clawgym.bench.cli_calibrate": "clawgym.cli.bench_calibrate",
    "clawgym.bench.cli_tools": "clawgym.cli.bench_tools",
    "clawgym.cli_support": "clawgym.cli.support",
    "clawgym.compile_batch": "clawgym.compile.batch",
    "clawgym.control": "clawgym.trial_controls",
    "clawgym.docgen": "clawgym.cli.docgen",
    "clawgym.executors": "clawgym.run.executors",
    "clawgym.jsonl": "clawgym.files.atomic",
    "clawgym.judge": "clawgym.verify.judge",
    "clawgym.lint": "clawgym.run.lint",
    "clawgym.plan": "clawgym.run.plan",
    "clawgym.render_cmd": "clawgym.cli.render",
    "clawgym.report_html": "clawgym.report.html",
    "clawgym.report_stats": "clawgym.report.stats",
    "clawgym.rollout": "clawgym.run.trial",
    "clawgym.run_cmd": "clawgym.cli.run",
    "clawgym.safefs": "clawgym.files.safefs",
    "clawgym.serve": "clawgym.policy.server",
    "clawgym.synth.command": "clawgym.cli.synth",
    "clawgym.task": "clawgym.spec.task",
    "clawgym.tempdirs": "clawgym.files.tempdirs",
    "clawgym.textsafe": "clawgym.files.textsafe",
    "clawgym.trajectory": "clawgym.records.trajectory",
    "clawgym.trajectory_store": "clawgym.records.store",
    "clawgym.validate_cmd": "clawgym.cli.validate",
    "clawgym.workspace": "clawgym.compile.workspace",
}


def _warn(old: str, new: str) -> None:
    warnings.warn(f"{old} moved to {new}; the old path goes away in the next release", DeprecationWarning, stacklevel=3)


class MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old module path and loads it as an alias of its new module."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if new_path(fullname) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: Any) -> Any:
        new = new_path(spec.name)
        assert new is not None  # find_spec only answers for moved paths
        _warn(spec.name, new)
        module = importlib.import_module(new)
        sys.modules[spec.name] = module
        return module

    def exec_module(self, module: Any) -> None:
        return None


def new_path(old: str) -> str | None:
    """The new path of an old module path (a submodule of a moved package included), else None."""
    for prefix in sorted(MOVED, key=len, reverse=True):
        if old == prefix or old.startswith(prefix + "."):
            return MOVED[prefix] + old[len(prefix) :]
    return None


def install() -> None:
    if not any(isinstance(f, MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedFinder())


def forwarder(package: str, module: str, names: list[str]) -> Callable[[str], Any]:
    """A package `__getattr__` that resolves the names of the module the package replaced."""
    wanted = frozenset(names)

    def __getattr__(name: str) -> Any:
        if name not in wanted:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        _warn(f"{package}.{name}", f"{module}.{name}")
        return getattr(importlib.import_module(module), name)

    return __getattr__
