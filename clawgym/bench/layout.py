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
# The benchmark's versions by series (the digit before the dot of a version): 1 is the first
# benchmark (instances of the training families at far seeds), 2 is drawn from the generator's
# held-out region (specs/synth/heldout.yaml) and has no twin in training, 3 is drawn from the same
# region by the generator whose tasks pass the lazy-agent, mutation and wording gates, and every
# instance of it is reviewed against the written rubric (docs/review-rubric.md). All stay runnable.
BENCHES = {"1": Path("specs/bench"), "2": Path("specs/bench-v2"), "3": Path("specs/bench-v3")}
LATEST = "3"
LOCK_FILE = "bench.lock.json"
TASK_FILE = "task.yaml"
CALIBRATION_FILE = "calibration.yaml"
REVIEW_FILE = "review.yaml"
SERIES = "1"  # the series of a benchmark folder that is none of BENCHES and has no lock yet


def bench_folder(value: str | None) -> Path:
    """The folder `--bench` names: a series ("1", "v2") or a path; by default the latest series."""
    if value is None:
        return BENCHES[LATEST] if BENCHES[LATEST].is_dir() else BENCH_DIR
    key = value[1:] if value[:1] in ("v", "V") and value[1:].isdigit() else value
    return BENCHES.get(key, Path(value))


def series_of(root: Path) -> str:
    """The series of the benchmark under `root`: its place in BENCHES, else its lock's, else SERIES."""
    for key, folder in BENCHES.items():
        if folder.resolve() == root.resolve() or root.resolve().as_posix().endswith("/" + folder.as_posix()):
            return key
    version = str(read_lock(root).get("version") or "")
    return version.split(".", 1)[0] if "." in version else SERIES


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
    from ..compile.batch import compile_many

    [task] = compile_many([instance.spec], [0])
    return task.hash


def version_of(hashes: dict[str, str], series: str = SERIES) -> str:
    """`<series>.<12 hex>`: a digest of every (instance name, content hash) pair."""
    digest = hashlib.sha256(json.dumps(sorted(hashes.items())).encode()).hexdigest()[:12]
    return f"{series}.{digest}"


def read_lock(root: Path = BENCH_DIR) -> dict:
    """The lock file: {"version": ..., "instances": {name: hash}} (empty when there is none)."""
    path = root / LOCK_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
