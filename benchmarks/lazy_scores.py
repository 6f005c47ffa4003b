"""How much lazy agents earn: the best lazy score of each task in a folder of specs.

Usage: python benchmarks/lazy_scores.py PATH [--sample N] [--seed S] [-j JOBS] [--variants a,b]

PATH is a folder of task specs (hand-written tasks, a benchmark's `*/*/task.yaml`) or a synth
dataset folder (its `manifest.jsonl` lists the accepted specs). Each task is compiled on seed 0,
its reference solution run in a fresh sandbox, then every lazy agent of `clawgym/agent/lazy.py`
graded against it in process, as the synthesis `lazy` filter does. Prints one row per task (the
best variant and its score, the checks that paid it) and how many tasks pass 0.1, 0.2 and 0.5.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LEVELS = (0.1, 0.2, 0.5)


def task_specs(path: Path) -> list[Path]:
    """The task specs under `path`: a synth dataset's accepted specs, or every Task spec in a folder."""
    manifest = path / "manifest.jsonl"
    if manifest.is_file():
        lines = [json.loads(line) for line in manifest.read_text(encoding="utf-8").splitlines() if line.strip()]
        return [path / r["path"] for r in lines if (path / r["path"]).is_file()]
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*.yaml") if "\nkind: Task" in "\n" + p.read_text(encoding="utf-8"))


def measure(spec: Path, variants: list[str] | None) -> dict:
    """{task, variant, score, paying, scores} for one spec, or {task, error}."""
    from clawgym.agent import lazy
    from clawgym.compile.compiler import compile_task, load_task_spec
    from clawgym.errors import ClawgymError
    from clawgym.synth.filters import FilterTrials

    name = spec.stem if spec.name != "task.yaml" else spec.parent.name
    try:
        task = compile_task(load_task_spec(spec), 0)
    except ClawgymError as exc:
        return {"task": name, "error": f"does not compile: {exc}"}
    trials = FilterTrials(task, None)
    try:
        verdict, _, final = trials.oracle()
        if verdict.reward < 1 - 1e-9:
            return {"task": name, "error": f"the reference scores {verdict.reward:.3f}"}
        outputs = lazy.output_paths(task, trials.pristine, final)
        scores = lazy.lazy_scores(
            task,
            trials.pristine,
            final,
            outputs,
            lambda ws: trials.grade_here(ws, trials.checks),
            sandbox=trials.sandbox,
            variants=variants,
        )
    finally:
        trials.close()
    top = lazy.worst(scores)
    return {
        "task": name,
        "variant": top.variant if top else "-",
        "score": top.reward if top else 0.0,
        "detail": top.describe() if top else "no variant applies",
        "scores": {s.variant: s.reward for s in scores},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", type=Path, help="a folder of task specs or a synth dataset folder")
    ap.add_argument("--sample", type=int, default=0, help="measure N specs drawn at random (default: all)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the sample")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--variants", default="", help="comma-separated variants (default: all)")
    ap.add_argument("--verbose", action="store_true", help="print the paying checks of each task")
    args = ap.parse_args()
    specs = task_specs(args.path)
    if not specs:
        sys.exit(f"no task specs under {args.path}")
    if args.sample and args.sample < len(specs):
        specs = sorted(random.Random(args.seed).sample(specs, args.sample))
    variants = [v for v in args.variants.split(",") if v] or None
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        rows = list(pool.map(measure, specs, [variants] * len(specs)))
    width = max(len(r["task"]) for r in rows)
    print(f"{'task':<{width}}  {'best variant':<20} {'score':>6}")
    for r in sorted(rows, key=lambda r: (-r.get("score", -1), r["task"])):
        if "error" in r:
            print(f"{r['task']:<{width}}  {'(not measured)':<20} {'-':>6}  {r['error']}")
            continue
        print(f"{r['task']:<{width}}  {r['variant']:<20} {r['score']:>6.3f}")
        if args.verbose:
            print(f"{'':<{width}}    {r['detail']}")
            print(f"{'':<{width}}    " + ", ".join(f"{v} {x:.3f}" for v, x in r["scores"].items()))
    measured = [r for r in rows if "error" not in r]
    print(f"\n{len(measured)} tasks measured ({len(rows) - len(measured)} not measured)")
    for level in LEVELS:
        print(f"best lazy score above {level}: {sum(r['score'] > level + 1e-9 for r in measured)}")
    by_variant: dict[str, int] = {}
    for r in measured:
        if r["score"] > LEVELS[0] + 1e-9:
            by_variant[r["variant"]] = by_variant.get(r["variant"], 0) + 1
    if by_variant:
        print("best variant of those above 0.1: " + ", ".join(f"{v} {n}" for v, n in sorted(by_variant.items())))


if __name__ == "__main__":
    main()
