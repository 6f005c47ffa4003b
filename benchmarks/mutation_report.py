"""The mutation gates over a set of tasks: which declared steps, check names and format
conventions are not real, per task, with totals.

Usage: python benchmarks/mutation_report.py SOURCE [--sample N] [--seed S] [--all]

SOURCE is a synth dataset (a folder with manifest.jsonl: its accepted tasks) or a folder of task
specs (every *.yaml of kind Task under it, e.g. specs/tasks or specs/bench-v2). Each task is
compiled (instance 0), its reference solution runs once in a sandbox, and the three gates of
clawgym/synth/mutations/ run on it: step mutations, check-name mutations and format variants.
Prints each task's problems (`--all`: every record), then the totals per gate and per kind.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def task_files(source: Path) -> list[Path]:
    """The task specs of a dataset (from its manifest) or of a folder of specs."""
    manifest = source / "manifest.jsonl"
    if manifest.is_file():
        rows = [json.loads(line) for line in manifest.read_text(encoding="utf-8").splitlines() if line.strip()]
        return [source / r["path"] for r in rows if r.get("filters", {}).get("passed", True) and r.get("path")]
    out = []
    for path in sorted(source.rglob("*.yaml")):
        head = path.read_text(encoding="utf-8", errors="replace")[:4000]
        if re.search(r"(?m)^kind:\s*Task\s*$", head):
            out.append(path)
    return out


def kind_of(m, task: str) -> str:
    """A short label grouping like records in the totals."""
    if m.gate == "format":
        return f"format: {m.name}"
    if m.gate == "check name":
        return f"check name: {m.name.split(': ')[1]}"
    if m.gate == "all":
        return "all: the reference's own output does not score 1.0"
    if "no removable steps" in m.reason:
        return "step: " + ("composed script without step marks" if task.startswith("compose-") else "none declared")
    return "step: " + re.sub(r"^step \d+ '[^']*' ", "", m.reason)[:60]


def run_task(path: Path, sandbox: dict | None) -> tuple[str, list, str]:
    """(task name, mutation records, note) for one spec; note says why the gates did not run."""
    from clawgym.compile.compiler import compile_task, load_task_spec
    from clawgym.compile.workspace import materialize
    from clawgym.files import safefs
    from clawgym.files.tempdirs import make_temp
    from clawgym.synth import mutations

    task = compile_task(load_task_spec(path), 0)
    root = make_temp("mutation-report")
    try:
        pristine, final = root / "pristine", root / "final"
        materialize(task, pristine)
        trajectory = mutations.run_reference(task, pristine, final, sandbox).to_dict()
        if trajectory.get("error"):
            return task.name, [], f"the reference failed: {trajectory['error'].strip().splitlines()[-1][:120]}"
        return task.name, mutations.mutations(task, pristine, final, trajectory=trajectory, sandbox=sandbox), ""
    finally:
        safefs.remove_tree(root)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", type=Path, help="a synth dataset or a folder of task specs")
    ap.add_argument("--sample", type=int, default=0, help="grade this many tasks, drawn with --seed (0: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--all", action="store_true", help="print every record, not only the problems")
    ap.add_argument("--sandbox", default="local", help="sandbox type the references run in")
    args = ap.parse_args()

    files = task_files(args.source)
    if not files:
        sys.exit(f"error: no task specs in {args.source} (expected a manifest.jsonl or *.yaml files of kind Task)")
    if args.sample and args.sample < len(files):
        files = sorted(random.Random(args.seed).sample(files, args.sample))
    sandbox = {"type": args.sandbox}
    t0 = time.perf_counter()
    totals: Counter = Counter()
    kinds: Counter = Counter()
    flagged, not_run = 0, 0
    for path in files:
        name, records, note = run_task(path, sandbox)
        problems = [m for m in records if m.problem]
        flagged += bool(problems)
        print(f"{name}: " + (note if note else f"{len(problems)} problem(s)"))
        if note:
            not_run += 1
        for m in records:
            totals[(m.gate, m.verdict)] += 1
            if m.verdict != "ok":
                kinds[(kind_of(m, name), m.verdict)] += 1
            if m.problem or args.all:
                print(f"  {m.verdict:8} {m.reason}")
    elapsed = time.perf_counter() - t0
    print(f"\n{len(files)} tasks from {args.source} in {elapsed:.0f} s: {flagged} with problems, {not_run} not run")
    for gate in ("all", "step", "check name", "format"):
        counts = ", ".join(f"{totals[(gate, v)]} {v}" for v in ("ok", "problem", "skipped"))
        print(f"  {gate:11} {counts}")
    print("by kind:")
    for (kind, verdict), n in sorted(kinds.items(), key=lambda kv: (kv[0][1], -kv[1], kv[0][0])):
        print(f"  {n:4} {verdict:8} {kind}")


if __name__ == "__main__":
    main()
