"""Where the benchmark lives and what identifies it.

    specs/bench/
      bench.lock.json                 version + every instance's content hash (`clawgym bench lock`)
      <category>/<instance>/task.yaml        the frozen, reviewed task spec (and its files)
      <category>/<instance>/calibration.yaml what `clawgym bench calibrate` measured
      <category>/<instance>/review.yaml      human and LLM reviews (`clawgym bench review`)

An instance's identity is the content hash of its compiled task (instruction, files, checks,
rubric, limits, grading scripts): any change to what an agent sees or what is graded changes it.
The benchmark's version is derived from all of them, so any change to any instance changes the
version, and every result records the version it was produced with.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import ClawgymError

BENCH_DIR = Path("specs/bench")
LOCK_FILE = "bench.lock.json"
TASK_FILE = "task.yaml"
CALIBRATION_FILE = "calibration.yaml"
REVIEW_FILE = "review.yaml"
SERIES = "1"  # bumped by hand for changes of method (scoring, proportions), not of content


@dataclass(frozen=True)
class Instance:
    """One benchmark instance folder."""

    name: str
    category: str
    folder: Path

    @property
    def spec(self) -> Path:
        return self.folder / TASK_FILE

    @property
    def calibration(self) -> Path:
        return self.folder / CALIBRATION_FILE

    @property
    def review(self) -> Path:
        return self.folder / REVIEW_FILE


def find_instances(root: Path = BENCH_DIR) -> list[Instance]:
    """Every instance under `root` (folders holding a task.yaml), sorted by category and name."""
    if not root.is_dir():
        raise ClawgymError(f"no benchmark folder at {root}", hint="run from the repository root or pass --bench DIR")
    found = [Instance(p.parent.name, p.parent.parent.name, p.parent) for p in root.glob(f"*/*/{TASK_FILE}")]
    return sorted(found, key=lambda i: (i.category, i.name))


def instance_hash(instance: Instance) -> str:
    """The content hash of the instance's compiled task."""
    from ..batch import compile_many

    [task] = compile_many([instance.spec], [0])
    return task.hash


def version_of(hashes: dict[str, str]) -> str:
    """`SERIES.<12 hex>`: a digest of every (instance name, content hash) pair."""
    digest = hashlib.sha256(json.dumps(sorted(hashes.items())).encode()).hexdigest()[:12]
    return f"{SERIES}.{digest}"


def read_lock(root: Path = BENCH_DIR) -> dict:
    """The lock file: {"version": ..., "instances": {name: hash}} (empty when there is none)."""
    path = root / LOCK_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
