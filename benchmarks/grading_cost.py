"""What one verification costs, by the kind of checks: files only, a Python grading script, a command.

Usage: python benchmarks/grading_cost.py [--n 40]

Each verification is what a trial pays after its agent stops: `clawgym.verify.verify` on a final
workspace (a fresh verifier forked from the server, the pristine copy written, the checks run,
the diff computed). Executing checks (`python`, `command`) run in a grading sandbox of their own
over a copy of the workspace. Prints p50 and p90 wall milliseconds over --n sequential runs after
one warm-up, so two versions of the code can be compared in the same run of the machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "grading"

FILES = [
    {"type": "file_exists", "path": "output/total.txt", "gate": True},
    {"type": "numeric_close", "path": "output/total.txt", "expected": 42.5, "abs": 0.01},
    {"type": "unchanged", "paths": ["input/**"]},
]
PYTHON = FILES[:1] + [{"type": "python", "script": "grade.py", "args": ["${CLAWGYM_WORKSPACE}"]}]
COMMAND = FILES[:1] + [{"type": "command", "run": 'test "$(cat output/total.txt)" = 42.5'}]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=40)
    args = ap.parse_args()
    from clawgym.verify import verify

    inputs = {"input/receipts.csv": b"date,amount\n2026-01-02,40.00\n2026-01-03,2.50\n"}
    with tempfile.TemporaryDirectory(prefix="clawgym-grading-cost-") as tmp:
        ws = Path(tmp) / "ws"
        (ws / "input").mkdir(parents=True)
        (ws / "output").mkdir()
        (ws / "input" / "receipts.csv").write_bytes(inputs["input/receipts.csv"])
        (ws / "output" / "total.txt").write_text("42.5\n")
        print(f"{'checks':>28} {'p50 ms':>8} {'p90 ms':>8} {'reward':>7}")
        for label, checks in (
            ("files only (3 checks)", FILES),
            ("python grading script", PYTHON),
            ("command", COMMAND),
        ):
            times, reward = [], None
            for i in range(args.n + 1):
                t0 = time.perf_counter()
                verdict = verify(
                    checks, workspace=ws, original_files=inputs, task_dir=FIXTURE, params={}, timeout=120, diff=True
                )
                if i:
                    times.append((time.perf_counter() - t0) * 1000)
                reward = verdict.reward
            q = statistics.quantiles(times, n=10)
            print(f"{label:>28} {statistics.median(times):>8.1f} {q[8]:>8.1f} {reward:>7.2f}", flush=True)


if __name__ == "__main__":
    main()
