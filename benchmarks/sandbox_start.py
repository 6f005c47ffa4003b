"""Sandbox start-up cost: create + 10-file workspace + one command + teardown, vs plain subprocess.

    python benchmarks/sandbox_start.py [--n 200] [--docker-n 20]

Prints p50/p95 in milliseconds, all in one run (the sandbox variants and the baseline measured in
turn, one iteration of each per round, so that drift weighs on all alike): the local (bubblewrap) sandbox with a fresh bwrap
per exec (how every exec ran before) and with its namespaces kept across execs (the default), a
sandbox taken from a pool of pre-started ones, an unisolated `subprocess.run` baseline doing the
same work, and the cost of one more exec in a live sandbox (fresh bwrap vs kept namespaces vs a
plain subprocess); where a Docker daemon and the base image (scripts/build-image.sh) are
available, the docker backend with its ratio to local. The load average is printed with the figures.
Target: local sandbox p50 <= 10 ms and <= 5x the subprocess baseline.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

try:
    from clawgym.sandbox import create_sandbox
    from clawgym.sandbox.bubblewrap import LocalSandbox
    from clawgym.sandbox.pool import SandboxPool
except ImportError:  # run from a source checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from clawgym.sandbox import create_sandbox
    from clawgym.sandbox.bubblewrap import LocalSandbox
    from clawgym.sandbox.pool import SandboxPool

TARGET_P50_MS = 10.0
TARGET_RATIO = 5.0


def _workspace() -> Path:
    ws = Path(tempfile.mkdtemp(prefix="clawgym-bench-"))
    for i in range(10):
        (ws / f"file_{i}.txt").write_text(f"file {i}\n" + "x" * 200 + "\n")
    return ws


def sandbox_once(backend: str = "local", keep: bool = True) -> None:
    ws = _workspace()
    try:
        with (
            LocalSandbox(ws, keep_namespaces=keep) if backend == "local" else create_sandbox({"type": backend}, ws)
        ) as sb:
            res = sb.exec(["cat", "file_3.txt"])
        if res.exit_code != 0 or not res.output.startswith("file 3"):
            raise RuntimeError(f"unexpected result: {res}")
    finally:
        shutil.rmtree(ws)


def pooled_once(pool: "SandboxPool") -> None:
    sb = pool.take()
    try:
        for i in range(10):
            (sb.workspace / f"file_{i}.txt").write_text(f"file {i}\n" + "x" * 200 + "\n")
        sb.adopt()
        res = sb.exec(["cat", "file_3.txt"])
        if res.exit_code != 0 or not res.output.startswith("file 3"):
            raise RuntimeError(f"unexpected result: {res}")
    finally:
        sb.close()


def more_execs(keep: bool | None, n: int) -> list[float]:
    """Milliseconds of one more command in a live sandbox (None: a plain subprocess)."""
    ws = _workspace()
    try:
        sb = LocalSandbox(ws, keep_namespaces=keep) if keep is not None else None

        def one() -> None:
            if sb is None:
                subprocess.run(["cat", "file_3.txt"], cwd=ws, capture_output=True, check=True)
            elif not sb.exec(["cat", "file_3.txt"]).output.startswith("file 3"):
                raise RuntimeError("unexpected output")

        try:
            return measure(one, n)
        finally:
            if sb is not None:
                sb.close()
    finally:
        shutil.rmtree(ws)


def subprocess_once() -> None:
    ws = _workspace()
    try:
        res = subprocess.run(["cat", "file_3.txt"], cwd=ws, capture_output=True, check=True)
        if not res.stdout.startswith(b"file 3"):
            raise RuntimeError(f"unexpected output: {res.stdout[:40]!r}")
    finally:
        shutil.rmtree(ws)


def measure(fn: Callable[[], None], n: int, warmup: int = 3, before: Callable[[], object] | None = None) -> list[float]:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(n):
        if before is not None:
            before()  # untimed: e.g. let the pool refill, as it does while a trial runs
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return times


def interleaved(variants: list[tuple[Callable[[], None], Callable[[], object] | None]], n: int) -> list[list[float]]:
    """Milliseconds of each variant (fn, untimed step after it), `n` rounds of one iteration of
    each in turn: whatever drifts during the run (the load, the file system's state after
    thousands of deletions) weighs on every variant alike, so their ratios hold. The step after
    lets background work a variant started (a pool refilling, a tear-down) finish untimed, as it
    does while a trial runs, rather than during the next variant."""
    times: list[list[float]] = [[] for _ in variants]
    for i in range(n + 3):  # the first three rounds warm up
        for (fn, after), out in zip(variants, times):
            t = time.perf_counter()
            fn()
            if i >= 3:
                out.append((time.perf_counter() - t) * 1000)
            if after is not None:
                after()
    return times


def settle(pool: "SandboxPool | None" = None) -> None:
    """Until the pool (if any) is full again and every tear-down queued in the background is done
    (a kept sandbox reaps its bwrap and frees its cgroup and uid there, off the caller's time)."""
    from clawgym.sandbox.host import drain_later

    if pool is not None:
        pool.wait_ready(count=pool.size)
    drain_later()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200, help="iterations per variant (default 200)")
    ap.add_argument("--pool", type=int, default=4, help="sandboxes the pool keeps ready (default 4)")
    ap.add_argument("--docker-n", type=int, default=20, help="iterations for docker (0 skips it)")
    args = ap.parse_args(argv)
    names = ["sandbox, fresh bwrap/exec", "sandbox, kept namespaces", "subprocess baseline"]
    variants = [(lambda: sandbox_once(keep=False), settle), (sandbox_once, settle), (subprocess_once, None)]
    rows = list(zip(names, interleaved(variants, args.n)))
    with SandboxPool(args.pool) as pool:  # on its own: its refills and tear-downs would slow the others
        rows.append(
            ("sandbox from a pool", interleaved([(lambda: pooled_once(pool), lambda: settle(pool))], args.n)[0])
        )
    load = os.getloadavg()[0]
    docker_note = ""
    if args.docker_n:
        try:
            rows.append(("sandbox (docker)", measure(lambda: sandbox_once("docker"), args.docker_n, warmup=1)))
        except Exception as exc:  # noqa: BLE001 - no daemon or no image: say why and go on
            docker_note = f"docker backend not measured: {str(exc).splitlines()[0][:200]}"
    print(f"create + 10 files + 1 command + teardown (load average {load:.2f})")
    print(f"{'variant':<28}{'n':>6}{'p50 ms':>10}{'p95 ms':>10}{'mean ms':>10}")
    for name, times in rows:
        print(
            f"{name:<28}{len(times):>6}{pct(times, 0.5):>10.1f}{pct(times, 0.95):>10.1f}"
            f"{statistics.fmean(times):>10.1f}"
        )
    base = pct(rows[2][1], 0.5)
    for name, times in [*rows[:2], rows[3]]:
        p50 = pct(times, 0.5)
        verdict = "meets" if p50 <= TARGET_P50_MS and p50 <= TARGET_RATIO * base else "MISSES"
        print(
            f"{name}: {p50 / base:.1f}x the subprocess at p50; {verdict} the {TARGET_P50_MS:.0f} ms and "
            f"{TARGET_RATIO:.0f}x targets"
        )
    if len(rows) > 4:
        print(f"docker / local at p50: {pct(rows[4][1], 0.5) / pct(rows[1][1], 0.5):.0f}x")
    elif docker_note:
        print(docker_note)
    more = [
        (name, more_execs(keep, args.n))
        for name, keep in (("fresh bwrap per exec", False), ("kept namespaces", True), ("plain subprocess", None))
    ]
    print(f"\none more command in a live sandbox (load average {os.getloadavg()[0]:.2f})")
    print(f"{'variant':<28}{'n':>6}{'p50 ms':>10}{'p95 ms':>10}")
    for name, times in more:
        print(f"{name:<28}{len(times):>6}{pct(times, 0.5):>10.1f}{pct(times, 0.95):>10.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
