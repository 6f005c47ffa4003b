"""How fast `clawgym import clawgym` brings in a published-format dataset.

Builds a dataset of N task folders by copying the fixture tasks in tests/fixtures/clawgym_format/
under new task ids, then imports it the way the CLI does (every grader run once on the untouched
workspace), and prints tasks per second. `--no-smoke` also times an import without grader runs.

    python benchmarks/import_speed.py --count 2000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clawgym.interop.clawgym_import import import_command  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "clawgym_format" / "good"


def build_dataset(folder: Path, count: int) -> None:
    sources = sorted(p for p in FIXTURES.iterdir() if (p / "data_entry.json").is_file())
    for i in range(count):
        src = sources[i % len(sources)]
        dst = folder / f"task_{i:05d}"
        shutil.copytree(src, dst)
        entry = json.loads((dst / "data_entry.json").read_text(encoding="utf-8"))
        entry["task_id"] = dst.name
        (dst / "data_entry.json").write_text(json.dumps(entry, indent=2, ensure_ascii=False), encoding="utf-8")


def timed_import(source: Path, out: Path, jobs: int | None, smoke: bool) -> tuple[float, dict[str, int]]:
    start = time.perf_counter()
    outcomes = import_command(source, out, jobs=jobs, quiet=True, smoke=smoke)
    elapsed = time.perf_counter() - start
    counts = {s: sum(o.status == s for o in outcomes) for s in ("imported", "warned", "rejected")}
    return elapsed, counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000, help="task folders in the dataset")
    parser.add_argument("-j", "--jobs", type=int, default=None, help="worker processes (default: cores)")
    parser.add_argument("--no-smoke", action="store_true", help="also time an import without grader runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="clawgym-import-bench-") as tmp:
        source = Path(tmp) / "dataset"
        source.mkdir()
        t0 = time.perf_counter()
        build_dataset(source, args.count)
        print(f"built {args.count} task folders in {time.perf_counter() - t0:.1f} s ({os.cpu_count()} cores)")
        runs = [("import (graders run once)", True)] + ([("import --no-smoke", False)] if args.no_smoke else [])
        for label, smoke in runs:
            elapsed, counts = timed_import(source, Path(tmp) / f"out-{smoke}", args.jobs, smoke)
            print(
                f"{label}: {args.count} tasks in {elapsed:.1f} s = {args.count / elapsed:.0f} tasks/s "
                f"({counts['imported']} imported, {counts['warned']} warned, {counts['rejected']} rejected)"
            )


if __name__ == "__main__":
    main()
