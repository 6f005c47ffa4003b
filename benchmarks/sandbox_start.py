"""Sandbox start-up cost: create + 10-file workspace + one command + teardown, vs plain subprocess.

    python benchmarks/sandbox_start.py [--n 200] [--docker-n 20]

Prints p50/p95 in milliseconds for the local (bubblewrap) sandbox and for an unisolated
`subprocess.run` baseline doing the same work, and, where a Docker daemon and the base image
(scripts/build-image.sh) are available, for the docker backend with its ratio to local.
Target: local sandbox p50 <= 50 ms.
"""

from __future__ import annotations

import argparse
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
except ImportError:  # run from a source checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from clawgym.sandbox import create_sandbox
    from clawgym.sandbox.bubblewrap import LocalSandbox

TARGET_P50_MS = 50.0


def _workspace() -> Path:
    ws = Path(tempfile.mkdtemp(prefix="clawgym-bench-"))
    for i in range(10):
        (ws / f"file_{i}.txt").write_text(f"file {i}\n" + "x" * 200 + "\n")
    return ws


def sandbox_once(backend: str = "local") -> None:
    ws = _workspace()
    try:
        with (LocalSandbox(ws) if backend == "local" else create_sandbox({"type": backend}, ws)) as sb:
            res = sb.exec(["cat", "file_3.txt"])
        if res.exit_code != 0 or not res.output.startswith("file 3"):
            raise RuntimeError(f"unexpected result: {res}")
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


def measure(fn: Callable[[], None], n: int, warmup: int = 3) -> list[float]:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return times


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200, help="iterations per variant (default 200)")
    ap.add_argument("--docker-n", type=int, default=20, help="iterations for docker (0 skips it)")
    args = ap.parse_args(argv)
    rows = [("sandbox (local/bwrap)", measure(sandbox_once, args.n)),
            ("subprocess baseline", measure(subprocess_once, args.n))]
    docker_note = ""
    if args.docker_n:
        try:
            rows.append(("sandbox (docker)", measure(lambda: sandbox_once("docker"), args.docker_n, warmup=1)))
        except Exception as exc:  # noqa: BLE001 - no daemon or no image: say why and go on
            docker_note = f"docker backend not measured: {str(exc).splitlines()[0][:200]}"
    print(f"{'variant':<24}{'n':>6}{'p50 ms':>10}{'p95 ms':>10}{'mean ms':>10}")
    for name, times in rows:
        print(f"{name:<24}{len(times):>6}{pct(times, .5):>10.1f}{pct(times, .95):>10.1f}"
              f"{statistics.fmean(times):>10.1f}")
    p50 = pct(rows[0][1], .5)
    verdict = "meets" if p50 <= TARGET_P50_MS else "MISSES"
    print(f"sandbox overhead at p50: {p50 - pct(rows[1][1], .5):.1f} ms; "
          f"{verdict} the {TARGET_P50_MS:.0f} ms p50 target")
    if len(rows) > 2:
        print(f"docker / local at p50: {pct(rows[2][1], .5) / p50:.0f}x")
    elif docker_note:
        print(docker_note)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
