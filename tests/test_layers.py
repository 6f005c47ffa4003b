"""The flow of the package is enforced: spec, then compile, then sandboxes and agents, then verify,
then run, then reports, then what produces and consumes tasks, then the entry points
(`tests/layers.py` says which module sits where). No import goes against it, lazy imports
included; no import cycle; no private name taken from another module."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import layers  # noqa: E402

ROOT = Path(__file__).parent.parent / "clawgym"


def _found():
    return layers.imports(ROOT), layers.modules(ROOT)


def test_every_module_has_a_layer():
    found, _ = _found()
    assert layers.unranked(found, ROOT) == [], "add the new module or package to LAYERS in tests/layers.py"


def test_no_import_goes_against_the_flow():
    found, known = _found()
    assert layers.back_edges(found, known) == []


def test_no_import_cycles():
    found, known = _found()
    assert layers.cycles(found, known) == []


def test_no_private_names_cross_modules():
    found, _ = _found()
    assert layers.private_names(found) == []


def test_the_check_fails_on_a_back_edge_a_cycle_and_a_private_name(tmp_path):
    """What the layering test reports when someone adds a violation (a copy of the package with one
    of each planted)."""
    import shutil

    pkg = tmp_path / "clawgym"
    shutil.copytree(ROOT, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "spec" / "task.py").write_text(
        (pkg / "spec" / "task.py").read_text() + "\n\ndef _late():\n    from ..run.runner import execute\n"
    )
    (pkg / "errors.py").write_text((pkg / "errors.py").read_text() + "\nfrom .registry import _load_plugins\n")
    (pkg / "registry.py").write_text((pkg / "registry.py").read_text() + "\nfrom . import errors as _e\n")
    found, known = layers.imports(pkg), layers.modules(pkg)
    back = layers.back_edges(found, known)
    assert any("clawgym.spec.task" in b and "clawgym.run.runner" in b and "spec -> run" in b for b in back), back
    assert any({"clawgym.errors", "clawgym.registry"} <= set(c) for c in layers.cycles(found, known))
    assert any("_load_plugins" in p for p in layers.private_names(found))
