"""Task synthesis speed: tasks per second for generation alone and for the whole pipeline.

Generation = compile a family instance, write the concrete spec, load and compile it back
(validity), MinHash signature. The whole pipeline adds the graded filters (reference solution,
determinism, do-nothing and tampering trials in sandboxes), dedup and writing the dataset.
Prints both rates, the filters' share, and the projected time for 13,500 tasks (target: 15 min).

    python benchmarks/synth_speed.py [--count 600] [--spec specs/synth/default.yaml] [--jobs N]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from clawgym.synth.dataset import Dataset
from clawgym.synth.compose.heldout import load_region
from clawgym.synth.compose.route import ComposeFamily, make_from_compose
from clawgym.synth.filters import FilterSettings
from clawgym.synth.make import make_from_family
from clawgym.synth.pipeline import all_families, synthesize
from clawgym.synth.sample import Balancer
from clawgym.synth.spec import load_synth_spec
from clawgym.synth.taxonomy import load_taxonomy

TARGET_TASKS, TARGET_SECONDS = 13_500, 15 * 60


def _generate(args):
    c, fam, region, side, out, dedup = args
    settings = FilterSettings(trials=False)
    if isinstance(fam, ComposeFamily):
        made = make_from_compose(c, fam, region, side, out, f"tasks/{c.category}", settings, dedup)
    else:
        made = make_from_family(c, fam.path, out, f"tasks/{c.category}", settings, dedup)
    return made.ok


def generation_rate(spec, count: int, jobs: int, out: Path) -> tuple[float, int]:
    families = all_families(spec, load_taxonomy(spec.taxonomy), None)
    region = load_region(spec.heldout)
    by_name = {f.name: f for f in families}
    balancer = Balancer(families, spec.routes, spec.category_shares, seed=spec.seed + 1)
    cands = [balancer.next() for _ in range(count)]
    Dataset.create(out, {}, spec.library_root, resume=False)
    work = [(c, by_name[c.family], region, spec.region, out.resolve(), spec.dedup) for c in cands]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        ok = sum(pool.map(_generate, work, chunksize=8))
    return count / (time.perf_counter() - t0), ok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default="specs/synth/default.yaml")
    ap.add_argument("--count", type=int, default=600)
    ap.add_argument("--jobs", type=int, default=0, help="worker processes (default: cores + 1)")
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    tmp = Path(tempfile.mkdtemp(prefix="synth-speed-"))
    try:
        spec = load_synth_spec(args.spec, count=args.count, out=str(tmp / "full"))
        spec.jobs = args.jobs
        gen_rate, ok = generation_rate(spec, args.count, args.jobs or cores, tmp / "gen")
        print(
            f"generation: {args.count} candidates ({ok} valid) at {gen_rate:.1f} tasks/s with "
            f"{args.jobs or cores} processes"
        )
        t0 = time.perf_counter()
        summary = synthesize(spec)
        seconds = time.perf_counter() - t0
        rate = summary.accepted / seconds
        per_task_filters = max(0.0, 1 / rate - 1 / gen_rate)
        print(
            f"whole pipeline: {summary.accepted} accepted, {summary.rejected} rejected "
            f"({summary.duplicates} near-duplicates) in {seconds:.1f} s = {rate:.1f} tasks/s"
        )
        print(
            f"filtering alone: {1 / per_task_filters if per_task_filters else float('inf'):.1f} tasks/s "
            f"({per_task_filters / (1 / rate):.0%} of the pipeline's time per task)"
        )
        projected = TARGET_TASKS / rate
        verdict = "met" if projected <= TARGET_SECONDS else "NOT met"
        print(
            f"projected for {TARGET_TASKS:,} tasks: {projected / 60:.1f} min on {cores} cores "
            f"(target {TARGET_SECONDS // 60} min: {verdict})"
        )
        for reason, n in sorted(summary.reasons.items(), key=lambda kv: -kv[1]):
            print(f"  rejected by {reason}: {n}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
