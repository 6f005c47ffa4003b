"""Per-trial cost of running the real OpenClaw against our claw harness, in the same run.

    python benchmarks/openclaw_overhead.py                  # claw, OpenClaw 2026.4.1 and 2026.9.6 (those installed)
    python benchmarks/openclaw_overhead.py --trials 5 --versions 2026.4.1

Each trial runs the same scripted model (an `exec` that solves the task, a `read`, a final answer;
answers are instant, so what is measured is the harness) on one task in a fresh bubblewrap sandbox.
Printed per agent: start-up (from the sandbox's first exec until the first model request reaches
the model), the whole agent time, and the peak memory of the sandbox's process tree (the sandbox's
memory cgroup's `memory.peak` or v1 `memory.max_usage_in_bytes`, as root; the claw harness itself runs in this process, so its tree is
only its tools). Medians and ranges over the trials.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from clawgym.agent import make_agent  # noqa: E402
from clawgym.compile.compiler import compile_task, load_task_spec  # noqa: E402
from clawgym.compile.workspace import materialize  # noqa: E402
from clawgym.files import safefs  # noqa: E402
from clawgym.files.tempdirs import make_temp  # noqa: E402
from clawgym.policy.base import Completion, Policy  # noqa: E402
from clawgym.policy.scripted import tool_call  # noqa: E402
from clawgym.run.trial import sandbox_limits  # noqa: E402
from clawgym.sandbox import create_sandbox  # noqa: E402
from hostile import Arena  # noqa: E402

SOLVE = (
    "mkdir -p tools output && printf '%s\\n' 'import csv' "
    '\'print(sum(int(r["amount"]) for r in csv.DictReader(open("input/sales.csv"))))\' > tools/summarize.py '
    "&& python3 tools/summarize.py > output/total.txt"
)
TURNS = [
    {"content": None, "tool_calls": [tool_call("exec", command=SOLVE)]},
    {"content": None, "tool_calls": [tool_call("read", path="output/total.txt")]},
    "The total is 49.",
]


class Timed(Policy):
    """Wraps the agent's policy: notes when the first request arrives."""

    type = "timed"

    def __init__(self, inner: Policy):
        super().__init__({"type": "timed"})
        self.inner, self.first = inner, None

    def complete(self, messages, tools=None, **sampling) -> Completion:
        self.first = self.first or time.monotonic()
        return self.inner.complete(messages, tools=tools, **sampling)


def one_trial(agent_config: dict, task) -> dict:
    agent = make_agent(agent_config)
    timed = Timed(agent.policy)
    if hasattr(agent, "_policy"):
        agent._policy = timed  # claw builds its policy lazily
    else:
        agent.policy = timed
    tmp = make_temp("bench")
    os.chmod(tmp, 0o711)
    try:
        workspace, private = tmp / "workspace", tmp / "private"
        materialize(task, workspace)
        private.mkdir(mode=0o755)
        extra = agent.sandbox_options(task)
        with create_sandbox(
            {"type": "local", **extra}, workspace, limits=sandbox_limits(task), mount=task.mount, private_dir=private
        ) as sandbox:
            start = time.monotonic()
            traj = agent.run(task, sandbox)
            wall = time.monotonic() - start
            cgroup = getattr(sandbox, "_cgroup", None)
            peak = None
            for name in ("memory.peak", "memory.max_usage_in_bytes"):  # cgroup v2, v1
                if cgroup is not None and (cgroup / name).exists():
                    peak = int((cgroup / name).read_text()) / 2**20
                    break
        ok = (workspace / "output" / "total.txt").exists() and traj.outcome == "completed"
        return {
            "startup_s": (timed.first or start) - start,
            "wall_s": wall,
            "peak_mb": peak,
            "ok": ok,
            "turns": len(traj.turns),
        }
    finally:
        safefs.remove_tree(tmp)


def _fmt(values: list[float], unit: str) -> str:
    if not values:
        return "n/a"
    return f"{statistics.median(values):.2f} {unit} ({min(values):.2f}-{max(values):.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=3, help="trials per agent (default 3)")
    parser.add_argument("--versions", default="2026.4.1,2026.9.6", help="OpenClaw versions (those installed)")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    from clawgym.agent.openclaw.install import find
    from clawgym.errors import PrerequisiteError

    agents = [("claw", {"type": "claw", "policy": {"type": "scripted", "turns": TURNS}})]
    for version in args.versions.split(","):
        try:
            find(version)
        except PrerequisiteError as exc:
            print(f"openclaw {version}: skipped ({exc})")
            continue
        agents.append(
            (
                f"openclaw {version}",
                {"type": "openclaw", "version": version, "policy": {"type": "scripted", "turns": TURNS}},
            )
        )
    with tempfile.TemporaryDirectory(prefix="openclaw-overhead-") as tmp:
        os.chmod(tmp, 0o755)
        arena = Arena(Path(tmp), ROOT / "tests" / "fixtures" / "lib")
        task = compile_task(load_task_spec(arena.task("overhead", False)), 0)
        results: dict[str, list[dict]] = {name: [] for name, _ in agents}
        for i in range(args.trials):  # interleaved, so machine load falls on every agent alike
            for name, config in agents:
                results[name].append(one_trial(config, task))
    load = os.getloadavg()[0]
    print(f"{'agent':20} {'start-up':24} {'agent wall time':24} {'peak memory (sandbox tree)':28} ok")
    for name, rows in results.items():
        peaks = [r["peak_mb"] for r in rows if r["peak_mb"] is not None]
        print(
            f"{name:20} {_fmt([r['startup_s'] for r in rows], 's'):24} {_fmt([r['wall_s'] for r in rows], 's'):24} "
            f"{_fmt(peaks, 'MB'):28} {sum(r['ok'] for r in rows)}/{len(rows)}"
        )
    print(
        f"({args.trials} trials each, interleaved; 1-minute load average at the end: {load:.1f} on {os.cpu_count()} cores)"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
