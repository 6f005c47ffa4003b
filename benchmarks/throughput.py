"""Rollouts per minute with a policy that simulates model latency, at several concurrencies.

Usage: python benchmarks/throughput.py [--latency 2] [--turns 5] [--concurrency 64,256,1024]
                                      [--processes 1,auto]

Each concurrency runs once per `--processes` value, in the same invocation: `1` is the runner's
own process with worker threads (the baseline), `auto` the local executor's own choice (worker
processes from 128 trials in flight), a number that many worker processes. The load average is
printed next to every figure (other work on the machine lowers them).

Each trial: the claw agent on a small real task (the authoring guide's), a scripted policy that
waits --latency seconds per call, --turns calls (reads of the task's input, then a final answer;
with --exec the first is a shell command instead, so every trial starts its sandbox),
the full trial machinery (materialised workspace, bubblewrap sandbox, fresh-process verifier,
records written). Ideal = concurrency × 60 / (latency × turns) rollouts per minute. CPU ms/trial
is the CPU time of this process tree per trial (sandbox processes and verifier forks included).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _cpu() -> float:
    """CPU seconds of this process and of its children that have ended (worker processes, verifier
    servers with what they forked), user and system."""
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=2.0)
    ap.add_argument("--turns", type=int, default=5)
    ap.add_argument("--concurrency", default="64,256,1024")
    ap.add_argument("--processes", default="1,auto", help="comma-separated: 1 (threads), auto, or a number")
    ap.add_argument("--rounds", type=float, default=2.0, help="trials = rounds × concurrency (at least 4)")
    ap.add_argument(
        "--exec",
        action="store_true",
        help="make the first turn a shell command (`exec`), so every trial also starts its bubblewrap sandbox",
    )
    ap.add_argument(
        "--graded",
        action="store_true",
        help="grade with a Python grading script (runs in a grading sandbox) instead of file checks",
    )
    ap.add_argument(
        "--keep",
        action="store_true",
        help="leave the results folders in place (printed) instead of removing them at the end",
    )
    args = ap.parse_args()

    from clawgym.compile.compiler import compile_task, load_task_spec
    from clawgym.run.plan import RunPlan
    from clawgym.policy.scripted import tool_call
    from clawgym.run.trial import Trial
    from clawgym.run.runner import execute

    name = "receipts-total-graded.yaml" if args.graded else "receipts-total.yaml"
    spec = load_task_spec(ROOT / "benchmarks" / "fixtures" / "light" / name)
    turns: list = [
        {"tool_calls": [tool_call("read", call_id=f"c{i}", path="input/receipts.csv")]} for i in range(args.turns - 1)
    ] + ["Done."]
    if args.exec and args.turns > 1:
        turns[0] = {"tool_calls": [tool_call("exec", call_id="c0", command="wc -l input/receipts.csv")]}
    agent = {"type": "claw", "policy": {"type": "scripted", "turns": turns, "latency_s": args.latency}}
    print(
        f"latency {args.latency:g} s × {args.turns} turns per trial; task {name}"
        + ("; first turn exec" if args.exec else "")
    )
    from clawgym.run.executors import local_processes

    print(
        f"{'concurrency':>11} {'processes':>9} {'trials':>7} {'wall s':>8} {'rollouts/min':>13} {'ideal':>8} "
        f"{'% ideal':>8} {'CPU ms/trial':>12} {'load 1m':>8}"
    )
    done: list[Path] = []
    for conc in (int(c) for c in args.concurrency.split(",")):
        n = max(4, int(conc * args.rounds))
        trials = [Trial(compile_task(spec, seed), agent) for seed in range(n)]
        for processes in args.processes.split(","):
            choice = processes if processes == "auto" else int(processes)
            out = Path(tempfile.mkdtemp(prefix="clawgym-throughput-"))
            plan = RunPlan(
                name="throughput",
                trials=trials,
                out=out / "run",
                concurrency=conc,
                retries=0,
                executor={"type": "local", "processes": choice},
            )
            used = local_processes(plan, choice)
            cpu0 = _cpu()
            t0 = time.perf_counter()
            records = execute(plan)
            wall = time.perf_counter() - t0
            cpu_ms = (_cpu() - cpu0) * 1000 / len(records)
            load = os.getloadavg()[0]
            errors = sum(r["status"] == "error" for r in records)
            rate, ideal = len(records) * 60 / wall, conc * 60 / (args.latency * args.turns)
            label = f"{used}" + (" (auto)" if processes == "auto" else "")
            print(
                f"{conc:>11} {label:>9} {n:>7} {wall:>8.1f} {rate:>13.1f} {ideal:>8.1f} {100 * rate / ideal:>7.0f}%"
                f" {cpu_ms:>12.1f} {load:>8.2f}" + (f"  ({errors} errors)" if errors else ""),
                flush=True,
            )
            done.append(out)
    # Removed at the end, not between rows: for a few minutes after many files were deleted, ext4
    # scans past the freed inodes on every create, so deleting a row's 10,000 files right before
    # the next row made every file that row created cost a scan (about 12% of the CPU at 1,024 in
    # `perf`). The same goes for a run right after another that removed its results: compare two
    # runs with --keep (or minutes apart).
    for out in done:
        if args.keep:
            print(f"kept {out}")
        else:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
