"""Run many trials and check that nothing is left behind: sandbox processes, work folders,
cgroups, containers, open files, threads, child processes.

Usage: python benchmarks/leak_check.py [--trials 1000] [--concurrency 32] [--docker N] [--processes 1,2]

The trials mix what leaks in practice: agents that pass, agents that do nothing, claw agents
that start background processes and never stop them, commands that time out, trials cancelled by
the run's per-trial timeout, and (with --docker N) N trials in Docker containers. Prints one line
per resource (before / after) and exits 1 if anything leaked. The trials run once per
`--processes` value (threads of this process, then worker processes), all counted together.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def sandbox_processes() -> list[int]:
    """This run's bubblewrap processes (their command line names this run's private work folder;
    other runs on the machine are not counted) and every process running as one of their uids."""
    from clawgym.sandbox.bubblewrap import UID_BASE, UID_COUNT

    mine = os.fsencode(os.environ.get("CLAWGYM_WORKDIR", ""))
    procs: dict[int, tuple[int, bytes]] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            procs[int(proc.name)] = (proc.stat().st_uid, (proc / "cmdline").read_bytes())
        except OSError:
            continue
    ours = {pid for pid, (_, cmd) in procs.items() if cmd.split(b"\0")[0].endswith(b"bwrap") and mine in cmd}
    uids = {procs[pid][0] for pid in ours if UID_BASE <= procs[pid][0] < UID_BASE + UID_COUNT}
    return sorted(ours | {pid for pid, (uid, _) in procs.items() if uid in uids})


def child_processes() -> list[int]:
    """Live children of this process (a verifier server, a stray helper...)."""
    me, out = str(os.getpid()), []
    for proc in Path("/proc").iterdir():
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[1] == me and fields[0] != "Z":
            out.append(int(proc.name))
    return out


def work_folders() -> list[str]:
    """Everything in this run's private work folder (the runner's, its workers' and verifiers')."""
    from clawgym.files.tempdirs import work_root

    return sorted(p.name for p in work_root().iterdir())


def cgroups() -> list[str]:
    from clawgym.sandbox.host import _cgroup_parent

    try:
        found = _cgroup_parent()
    except OSError:
        return []
    return sorted(p.name for p in found[0].glob("clawgym-sandbox-*")) if found else []


def containers() -> list[str]:
    try:
        import docker
        from clawgym.sandbox.docker import LABEL

        client = docker.from_env()
        return [c.short_id for c in client.containers.list(all=True, filters={"label": LABEL})]
    except Exception:  # noqa: BLE001 - no daemon: nothing to leak
        return []


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def census() -> dict[str, object]:
    return {
        "sandbox processes": sandbox_processes(),
        "child processes": child_processes(),
        "work folders": work_folders(),
        "cgroups": cgroups(),
        "containers": containers(),
        "open files": open_fds(),
        "threads": threading.active_count(),
    }


def leak_plan(out: Path, trials: int, concurrency: int):
    """A run of `trials` mixed trials (see the module docstring) into `out`."""
    from clawgym.compile.compiler import compile_task, load_task_spec
    from clawgym.run.plan import RunPlan
    from clawgym.policy.scripted import tool_call
    from clawgym.run.trial import Trial

    spec = load_task_spec(ROOT / "benchmarks" / "fixtures" / "light" / "receipts-total.yaml")
    daemon = {
        "type": "claw",
        "name": "daemon",
        "policy": {
            "type": "scripted",
            "turns": [
                {"tool_calls": [tool_call("exec", call_id="a", command="sleep 600 & sleep 600", background=True)]},
                {"tool_calls": [tool_call("exec", call_id="b", command="sleep 30", timeout=1)]},
                "I left things running.",
            ],
        },
    }
    stuck = {"type": "claw", "name": "stuck", "policy": {"type": "scripted", "latency_s": 600, "turns": ["late"]}}
    agents = [{"type": "oracle"}, {"type": "nop"}, daemon, stuck]
    tasks = [compile_task(spec, seed) for seed in range(max(1, trials // len(agents) + 1))]
    plan_trials = [Trial(t, a) for t in tasks for a in agents][:trials]
    # the stuck agent waits 600 s per model call: the per-trial timeout must cancel it
    return RunPlan(name="leaks", trials=plan_trials, out=out, concurrency=concurrency, retries=0, trial_timeout=3.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--docker", type=int, default=0, help="also run N oracle trials in Docker containers")
    ap.add_argument(
        "--processes",
        default="1,2",
        help="run the trials once per value: 1 = threads of this process, N = N worker processes",
    )
    args = ap.parse_args()

    from clawgym.run.runner import execute

    tmp = Path(tempfile.mkdtemp(prefix="leak-check-"))
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    work = Path(tempfile.mkdtemp(prefix="clawgym-leak-check-", dir=shm))
    work.chmod(0o711)  # as the default work folder: sandbox uids walk through it to their workspace
    os.environ["CLAWGYM_WORKDIR"] = str(work)  # this run's alone: other runs are not counted
    before = census()
    t0 = time.monotonic()
    records = []
    for processes in args.processes.split(","):
        plan = leak_plan(tmp / f"run-{processes}", args.trials, args.concurrency)
        plan.executor = {"type": "local", "processes": int(processes)}
        records += execute(plan)
    if args.docker:
        dplan = leak_plan(tmp / "docker", args.docker * 4, min(args.concurrency, 8))
        dplan.trials = [t for t in dplan.trials if t.agent["type"] == "oracle"][: args.docker]
        dplan.sandbox, dplan.trial_timeout = {"type": "docker"}, 120
        records += execute(dplan)
    wall = time.monotonic() - t0
    time.sleep(1.0)  # let the kernel reap what was killed last
    after = census()
    statuses = {s: sum(r["status"] == s for r in records) for s in ("passed", "failed", "error")}
    print(f"{len(records)} trials in {wall:.0f} s: {json.dumps(statuses)}")
    leaked = False
    for key in before:
        b, a = before[key], after[key]
        if isinstance(b, list):
            extra = sorted(set(a) - set(b))
            leaked |= bool(extra)
            print(f"{key:>18}: before {len(b):>4}  after {len(a):>4}" + (f"  LEAKED {extra[:5]}" if extra else ""))
        else:
            grew = a - b
            leaked |= grew > 0
            print(f"{key:>18}: before {b:>4}  after {a:>4}" + ("  LEAKED" if grew > 0 else ""))
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    print("leak-free" if not leaked else "LEAKS FOUND")
    sys.exit(1 if leaked else 0)


if __name__ == "__main__":
    main()
