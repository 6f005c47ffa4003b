"""Time to validate and compile 1,000 task instances (target: at most 5 s).

Usage: python benchmarks/validate_speed.py [--instances 1000] [--specs specs/tasks]

Loads and validates every task spec under --specs (schemas, references, plugin schemas) and
compiles each for enough seeds to reach --instances (params sampled, data generated, every
template rendered and checked, the result hashed), the way `clawgym validate --static` does:
in worker processes. Then the same work in one process as a baseline. Prints wall times.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=int, default=1000)
    ap.add_argument("--specs", default=str(ROOT / "specs" / "tasks"))
    ap.add_argument("--jobs", type=int, default=None, help="worker processes (default: cores, at most 8)")
    args = ap.parse_args()

    t0 = time.perf_counter()
    from clawgym.compile.batch import compile_files, default_jobs  # imports count: the CLI pays them too
    from clawgym.compile.compiler import compile_task, load_task_spec

    paths = sorted(Path(args.specs).rglob("*.yaml"))
    seeds = list(range(-(-args.instances // len(paths))))
    results = compile_files(paths, seeds, jobs=args.jobs)
    tasks = [t for r in results for t in r.tasks]
    assert not any(r.problems for r in results), [p.format() for r in results for p in r.problems]
    t_end = time.perf_counter()
    # the same work in one process, as a baseline
    t1 = time.perf_counter()
    specs = [load_task_spec(p) for p in paths]
    serial = [compile_task(s, seed) for s in specs for seed in seeds]
    t_serial = time.perf_counter() - t1
    assert [t.hash for t in serial] == [t.hash for t in tasks]  # same instances, same order
    files = sum(len(t.files) for t in tasks)
    nbytes = sum(len(b) for t in tasks for b in t.files.values())
    distinct = len({t.hash for t in tasks})
    print(f"task specs:             {len(specs)}")
    print(f"instances compiled:     {len(tasks)} ({distinct} distinct hashes, {files} files, {nbytes / 1e6:.1f} MB)")
    print(
        f"validate + compile:     {t_end - t0:.2f} s with {args.jobs or default_jobs()} processes "
        f"({1000 * (t_end - t0) / len(tasks):.2f} ms/instance; target <= 5 s for 1,000)"
    )
    print(f"same work, 1 process:   {t_serial:.2f} s ({1000 * t_serial / len(tasks):.2f} ms/instance)")


if __name__ == "__main__":
    main()
