"""The dataset folder a synth run writes, and reads back to resume.

    OUT/
      synth.json           the run's settings (spec file, its sha256, count, seed, split)
      manifest.jsonl       one line per accepted task: path, route, source, persona, seed, filters...
      rejected.jsonl       one line per rejected candidate, with the filter that rejected it
      tasks/<split>/<category>/<name>.yaml   the task specs (no <split>/ level without a split)
      run.yaml             a Run spec over every task (oracle), a starting point for `clawgym run`
      personas/ skills/ workspaces/          the library the specs refer to (copied)

A task counts as accepted once its manifest line is written, after its spec file; a killed run
loses at most the tasks in flight, and `--resume` (or running again into the same folder)
continues from what is there.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Iterator

from ..errors import ClawgymError
from ..files.atomic import write_text_atomic
from ..spec.library import LIBRARY_DIRS

MANIFEST, REJECTED, SETTINGS = "manifest.jsonl", "rejected.jsonl", "synth.json"


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Complete lines only: a line torn by a kill is ignored."""
    if not path.is_file():
        return
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.endswith("\n"):
                try:
                    yield json.loads(line)
                except json.JSONDecodeError:
                    continue


class Dataset:
    """An open dataset folder: appends accepted and rejected tasks as they come."""

    def __init__(self, root: Path):
        self.root = root
        self._manifest = None
        self._rejected = None

    @classmethod
    def create(cls, root: Path, settings: dict[str, Any], library_root: Path, *, resume: bool) -> "Dataset":
        root.mkdir(parents=True, exist_ok=True)
        settings_path = root / SETTINGS
        if settings_path.is_file():
            old = json.loads(settings_path.read_text(encoding="utf-8"))
            if not resume:
                raise ClawgymError(
                    f"{root} already holds a synth dataset", hint="add --resume to continue it, or choose another --out"
                )
            changed = [k for k in ("spec_sha256", "seed", "split") if old.get(k) != settings.get(k)]
            if changed:
                raise ClawgymError(
                    f"cannot resume {root}: the synth spec changed since it was started ({', '.join(changed)})",
                    hint="use a new --out for the changed spec",
                )
        elif any(root.iterdir()):
            raise ClawgymError(
                f"{root} is not empty and is not a synth dataset", hint="choose an empty or new folder with --out"
            )
        write_text_atomic(settings_path, json.dumps(settings, indent=2) + "\n")
        dataset = cls(root)
        dataset.repair_tails()
        dataset.remove_orphans()
        for name in LIBRARY_DIRS:
            src = library_root / name
            if src.is_dir():
                shutil.copytree(
                    src, root / name, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
                )
        return dataset

    def repair_tails(self) -> None:
        """Cut a line torn by a kill off the end of the JSONL files, so appends start on a fresh line."""
        for name in (MANIFEST, REJECTED):
            path = self.root / name
            if not path.is_file():
                continue
            data = path.read_bytes()
            if data and not data.endswith(b"\n"):
                with open(path, "r+b") as fh:
                    fh.truncate(data.rfind(b"\n") + 1)

    def remove_orphans(self) -> None:
        """Delete spec files a killed run wrote without their manifest line (and half-written temp files)."""
        tasks = self.root / "tasks"
        if not tasks.is_dir():
            return
        known = {r["path"] for r in read_jsonl(self.root / MANIFEST)}
        for path in tasks.rglob("*"):
            rel = path.relative_to(self.root).as_posix()
            if path.is_file() and (path.name.startswith(".") or (path.suffix == ".yaml" and rel not in known)):
                path.unlink()

    def accepted(self) -> list[dict[str, Any]]:
        return [r for r in read_jsonl(self.root / MANIFEST) if (self.root / r["path"]).is_file()]

    def rejected(self) -> list[dict[str, Any]]:
        return list(read_jsonl(self.root / REJECTED))

    def _append(self, attr: str, name: str, record: dict[str, Any]) -> None:
        fh = getattr(self, attr)
        if fh is None:
            fh = open(self.root / name, "a", encoding="utf-8")
            setattr(self, attr, fh)
        fh.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        fh.flush()

    def accept(self, path: str, text: str, record: dict[str, Any]) -> None:
        """Write the spec file, then its manifest line (which marks it accepted)."""
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(target, text)
        self._append("_manifest", MANIFEST, {"path": path, **record})

    def reject(self, record: dict[str, Any]) -> None:
        self._append("_rejected", REJECTED, record)

    def write_run_spec(self, name: str) -> None:
        text = (
            "# yaml-language-server: $schema=https://clawgym.dev/schemas/run.v1.json\n"
            "# Every task of this dataset with the reference solution; change the agents to evaluate one.\n"
            "apiVersion: clawgym/v1\nkind: Run\n"
            f"name: {name}\n"
            "tasks:\n  - tasks/**/*.yaml\n"
            "seeds: [0]\nagents:\n  - {type: oracle}\n"
            f'out: "runs/{name}/{{{{ timestamp }}}}"\n'
        )
        write_text_atomic(self.root / "run.yaml", text)

    def close(self) -> None:
        for attr in ("_manifest", "_rejected"):
            fh = getattr(self, attr)
            if fh is not None:
                fh.flush()
                os.fsync(fh.fileno())
                fh.close()
                setattr(self, attr, None)
