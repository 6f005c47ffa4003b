"""Time to validate and compile 1,000 task instances (target: at most 5 s).

Usage: python benchmarks/validate_speed.py [--instances 1000] [--specs specs/tasks]

Loads and validates every task spec under --specs (schemas, references, plugin schemas), then
compiles instances round-robin over the specs with increasing seeds until --instances are built
(params sampled, data generated, every template rendered, the result hashed). Prints wall time.
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
    args = ap.parse_args()

    t0 = time.perf_counter()
    from clawgym.compile import compile_task, load_task_spec  # imports count: a CLI pays them too

    paths = sorted(Path(args.specs).rglob("*.yaml"))
    specs = [load_task_spec(p) for p in paths]
    t_load = time.perf_counter()
    tasks = []
    seed = 0
    while len(tasks) < args.instances:
        for spec in specs:
            if len(tasks) == args.instances:
                break
            tasks.append(compile_task(spec, seed))
        seed += 1
    t_end = time.perf_counter()
    files = sum(len(t.files) for t in tasks)
    nbytes = sum(len(b) for t in tasks for b in t.files.values())
    distinct = len({t.hash for t in tasks})
    print(f"task specs:             {len(specs)}")
    print(f"instances compiled:     {len(tasks)} ({distinct} distinct hashes, {files} files, {nbytes / 1e6:.1f} MB)")
    print(f"import + load/validate: {t_load - t0:.2f} s")
    print(f"compile:                {t_end - t_load:.2f} s ({1000 * (t_end - t_load) / len(tasks):.2f} ms/instance)")
    print(f"total:                  {t_end - t0:.2f} s (target <= 5 s)")


if __name__ == "__main__":
    main()
