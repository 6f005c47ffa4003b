"""Conformance checks of the limits and kills: processes, a fork bomb, an output flood, a timeout
killing the whole tree, memory, file size, and close() ending everything that still runs.
"""

from __future__ import annotations

import resource
import subprocess
import threading
import time

from .base import SandboxLimits
from .conformance_support import LIMITS, MakeSandbox, expect, expect_gone, host_process_count, new_marker, temp_sandbox


def check_process_limit(make: MakeSandbox) -> None:
    code = (
        "import os, time\nn = 0\nfor _ in range(500):\n    try:\n        pid = os.fork()\n"
        "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(30)\n        os._exit(0)\n"
        "    n += 1\nprint('forked', n)"
    )
    with temp_sandbox(make) as (sb, _):
        r = sb.exec(["python3", "-c", code], timeout=30)
        words = r.output.split()
        expect("forked" in words, f"fork loop did not finish: {r}")
        n = int(words[words.index("forked") + 1])
        expect(n <= LIMITS.pids, f"forked {n} processes with pids={LIMITS.pids}")
        expect(n >= LIMITS.pids // 2, f"only {n} processes allowed with pids={LIMITS.pids}")


def check_fork_bomb(make: MakeSandbox) -> None:
    m, before, health = new_marker(), host_process_count(), {}

    def probe() -> None:
        time.sleep(1.0)
        health["procs"] = host_process_count()
        t = time.monotonic()
        subprocess.run(["true"], timeout=30)
        health["spawn_s"] = time.monotonic() - t

    with temp_sandbox(make) as (sb, _):
        t = threading.Thread(target=probe)
        t.start()
        r = sb.exec(f": {m}; :(){{ :|:& }};:; sleep 3", timeout=4)  # every bash copy carries the marker
        t.join()
        expect(r.duration_s < 15, f"fork bomb exec took {r.duration_s:.1f}s with timeout 4")
        expect(health.get("spawn_s", 99) < 5, f"host could not spawn a process during the bomb: {health}")
        expect(health["procs"] <= before + LIMITS.pids + 200, f"bomb not contained: {health['procs']} host processes")
        r = sb.exec("echo still-usable")
        expect(r.output.strip() == "still-usable", f"sandbox unusable after a fork bomb: {r}")
    expect_gone(m, "after a fork bomb", grace=3.0)
    with temp_sandbox(make) as (sb, _):
        r = sb.exec("echo next-ok")
        expect(r.output.strip() == "next-ok", f"next sandbox unusable after a fork bomb: {r}")


def check_output_flood(make: MakeSandbox) -> None:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with temp_sandbox(make) as (sb, _):
        r = sb.exec("cat /dev/zero | tr '\\0' x", timeout=60)
        expect(r.truncated, f"flood not marked truncated: {r.killed_reason}")
        expect(len(r.output) <= LIMITS.output_bytes, f"kept {len(r.output)} chars, cap {LIMITS.output_bytes}")
        expect(r.output.startswith("xxxx"), "flood output does not keep the head")
        expect(r.duration_s < 10 and not r.timed_out, f"flood not cut quickly: {r.duration_s:.1f}s")
        r = sb.exec("head -c 300000 /dev/zero | tr '\\0' y; echo")
        expect(r.truncated and len(r.output) == LIMITS.output_bytes, "output past the cap not truncated")
        r = sb.exec("echo after-flood")
        expect(r.output.strip() == "after-flood", f"sandbox unusable after a flood: {r}")
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss) / 1024
    expect(grown_mb < 200, f"host memory grew by {grown_mb:.0f} MB during the flood")


def check_timeout_kills_tree(make: MakeSandbox) -> None:
    m = new_marker()
    cmd = (
        f"(exec -a {m}-bg sleep 1000) & setsid bash -c 'exec -a {m}-setsid sleep 1000' & "
        f"nohup bash -c 'exec -a {m}-nohup sleep 1000' >/dev/null 2>&1 & sleep 1000"
    )
    with temp_sandbox(make) as (sb, _):
        r = sb.exec(cmd, timeout=1.0)
        expect(r.timed_out and r.exit_code is None and r.killed_reason == "timeout", f"not reported as timeout: {r}")
        expect(r.duration_s < 6, f"timeout of 1s took {r.duration_s:.1f}s")
        expect_gone(m, "after a timeout")
        r = sb.exec("echo alive")
        expect(r.output.strip() == "alive", f"sandbox unusable after a timeout: {r}")


def check_memory_limit(make: MakeSandbox) -> None:
    limits = SandboxLimits(wall_seconds=30, memory_mb=256, pids=64, output_bytes=100_000)
    with temp_sandbox(make, limits=limits) as (sb, _):
        r = sb.exec(["python3", "-c", "b = bytearray(32 << 20); b[-1] = 1; print('small-ok')"])
        expect("small-ok" in r.output, f"a 32 MB allocation failed under memory_mb=256: {r.output.strip()}")
        r = sb.exec(["python3", "-c", "b = bytearray(2 << 30); print('big-ok')"])
        expect("big-ok" not in r.output and r.exit_code != 0, "allocated 2 GB under memory_mb=256")


def check_file_size_limit(make: MakeSandbox) -> None:
    with temp_sandbox(make) as (sb, ws):
        r = sb.exec(f"head -c {(LIMITS.file_size_mb + 4) << 20} /dev/zero > big.bin")
        expect(r.exit_code != 0, "writing past file_size_mb did not fail")
        size = (ws / "big.bin").stat().st_size if (ws / "big.bin").exists() else 0
        expect(size <= LIMITS.file_size_mb << 20, f"wrote a {size}-byte file with file_size_mb={LIMITS.file_size_mb}")


def check_close_kills_everything(make: MakeSandbox) -> None:
    m = new_marker()
    with temp_sandbox(make) as (sb, _):
        sb.exec(f"setsid nohup bash -c 'exec -a {m}-daemon sleep 1000' >/dev/null 2>&1 & echo started")
        box: dict = {}
        worker = threading.Thread(target=lambda: box.setdefault("r", sb.exec(f"exec -a {m}-busy sleep 1000")))
        worker.start()
        time.sleep(0.5)
        t = time.monotonic()
        sb.close()
        worker.join(15)
        expect(not worker.is_alive(), "an exec running during close() did not return")
        expect(time.monotonic() - t < 10, "close() took more than 10 s")
        expect(box["r"].exit_code is None, f"exec interrupted by close() reported an exit code: {box['r']}")
        sb.close()  # idempotent
    expect_gone(m, "after close()")
