"""What a grader exported with a task carries: the clawgym package, the compiled checks, pristine inputs.

Both exports (Harbor folders, published ClawGym folders) grade the final workspace with the task's
own checks in an environment where clawgym is not installed. `write_bundle` writes, into the folder
the harness copies in only after the agent stopped (Harbor's tests/, ClawGym's reward/):
`clawgym.zip` (the clawgym package, runnable; pyyaml's pure-Python modules when a check reads
YAML), `task.json` (the compiled checks with their expected values), `original/` (the pristine
workspace) and `task_files/` (grading scripts of `python` checks). `portable_grade.py` runs them.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import shutil
import zipfile
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from ..errors import ClawgymError
from ..spec.task import Task, thaw

JSONSCHEMA_PIN = "jsonschema==4.23.0"
TRAJECTORY_CHECKS = ("message_sent", "cron_job")
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


class Refused(Exception):
    """This task cannot be exported in the requested format; the message says why."""


def grading_refusals(task: Task, *, payload_ok: bool) -> list[str]:
    """Reasons the exported grader cannot grade `task` (empty: it can). `payload_ok`: the target
    harness gives graders the agent's final message (the published ClawGym format does)."""
    from ..checks import check_class

    reasons = []
    for i, check in enumerate(task.checks):
        ctype, name = str(check.get("type")), str(check.get("name") or f"{check.get('type')} #{i + 1}")
        if ctype in TRAJECTORY_CHECKS:
            reasons.append(
                f"check {name!r} ({ctype}) grades the agent's recorded tool calls, which Harbor does not record"
            )
        elif ctype == "python" and check.get("payload") is not None and not payload_ok:
            reasons.append(
                f"check {name!r} grades the agent's final message (python check with a payload), "
                "which Harbor does not record"
            )
        elif ctype == "harbor_tests":
            reasons.append(
                f"check {name!r} already runs Harbor tests (harbor_tests): export the original Harbor folder instead"
            )
        else:
            try:
                module = check_class(ctype).__module__
            except ClawgymError:
                module = ""
            if not module.startswith("clawgym."):
                reasons.append(
                    f"check {name!r} has the plugin type {ctype!r}, which the exported grader "
                    "cannot carry (only built-in checks are vendored)"
                )
    return reasons


def _paths_in(value: Any) -> Iterable[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            if k in ("path", "paths") or isinstance(v, (dict, list)):
                yield from _paths_in(v)
    elif isinstance(value, list):
        for v in value:
            yield from _paths_in(v)
    elif isinstance(value, str):
        yield value


def grader_needs(checks: list[dict]) -> tuple[bool, bool]:
    """(needs pyyaml, needs jsonschema) for the grader."""
    yaml_ext = (".yaml", ".yml")
    needs_yaml = any(
        c.get("type") == "yaml_field_equals"
        or any(p.lower().endswith(yaml_ext) for p in _paths_in({k: v for k, v in c.items() if k in ("path", "paths")}))
        for c in checks
    )
    return needs_yaml, any(c.get("type") == "json_schema" for c in checks)


@lru_cache(maxsize=2)
def grader_zip(with_yaml: bool) -> bytes:
    """The clawgym package (Python sources and data files) as a runnable zip; pyyaml's pure-Python
    modules too when a check reads YAML. Same bytes every time, so exports are reproducible."""
    root = Path(__file__).resolve().parents[1]
    entries: list[tuple[str, bytes]] = [
        ("__main__.py", b"import sys\nfrom clawgym.interop.portable_grade import main\nsys.exit(main())\n")
    ]
    trees = [(root, "clawgym")]
    if with_yaml:
        spec = importlib.util.find_spec("yaml")
        if spec and spec.origin:
            trees.append((Path(spec.origin).parent, "yaml"))
    for base, prefix in trees:
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
            for name in sorted(filenames):
                if name.endswith((".pyc", ".so", ".pyd", "~")) or name.startswith("."):
                    continue
                path = Path(dirpath) / name
                entries.append((f"{prefix}/{path.relative_to(base).as_posix()}", path.read_bytes()))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for arcname, data in entries:
            info = zipfile.ZipInfo(arcname, _ZIP_DATE)
            info.external_attr, info.compress_type = 0o644 << 16, zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return buf.getvalue()


def copy_scripts(task: Task, dest: Path) -> None:
    """Grading scripts of the checks (with their folder, for helper modules) into tests/task_files/."""
    if not task.task_dir:
        return
    root = Path(task.task_dir).resolve()
    for check in task.checks:
        script = check.get("script")
        if not isinstance(script, str):
            continue
        src = (root / script).resolve()
        if not src.is_file() or not src.is_relative_to(root):
            raise Refused(
                f"grading script {script!r} of check {check.get('name') or check.get('type')!r} "
                "was not found in the task folder"
            )
        rel = src.relative_to(root)
        if len(rel.parts) > 1:  # its own folder: take the folder (helpers, data files)
            top = rel.parts[0]
            if not (dest / top).exists():
                shutil.copytree(root / top, dest / top, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def write_bundle(task: Task, dest: Path) -> None:
    """Write the grader bundle of `task` into `dest` (clawgym.zip, task.json, original/, task_files/)."""
    from ..compile.workspace import write_files

    checks = [thaw(c) for c in task.checks]
    needs_yaml, _ = grader_needs(checks)
    write_files(task.files, task.executables, dest / "original")
    (dest / "task_files").mkdir(parents=True, exist_ok=True)
    copy_scripts(task, dest / "task_files")
    (dest / "task.json").write_text(
        json.dumps(
            {
                "format": "clawgym.portable-grade/v1",
                "id": task.id,
                "name": task.name,
                "seed": task.seed,
                "hash": task.hash,
                "mount": task.mount,
                "params": thaw(task.params),
                "checks": checks,
            },
            indent=1,
            ensure_ascii=False,
            default=str,
        )
        + "\n",
        encoding="utf-8",
    )
    (dest / "clawgym.zip").write_bytes(grader_zip(needs_yaml))


def find_specs(paths: Iterable[Path]) -> list[Path]:
    """Task spec files among `paths` (folders are searched for *.yaml files of kind Task)."""
    from ..spec.load import load_file

    found: list[Path] = []
    for path in paths:
        if path.is_file():
            found.append(path)
            continue
        for candidate in sorted([*path.rglob("*.yaml"), *path.rglob("*.yml")]):
            try:
                doc = load_file(candidate)
            except ClawgymError:
                found.append(candidate)  # reported as refused with its syntax error
                continue
            if isinstance(doc.data, dict) and doc.data.get("kind") == "Task":
                found.append(candidate)
    return list(dict.fromkeys(found))
