"""Per-turn overhead of the claw agent's harness (prompt assembly, tool dispatch, recording).

    python benchmarks/harness_overhead.py [--turns 200] [--repeat 5]

A scripted policy (no model) drives the real loop on a local sandbox. Two variants:
- `in-process`: every turn calls host-side tools only (read, write, edit, memory_search,
  memory_get, session_status), so the time measured is the harness itself;
- `exec`: every turn runs `exec` (`true`), so it includes one bubblewrap process per turn.
A turn's overhead is the time from the end of one policy call to the start of the next (tool
dispatch, recording, budget checks); the first turn also counts prompt assembly (from the start
of `run`). Median and p95 over every turn of `--repeat` runs are printed, plus the mean per turn
of whole runs. Target: in-process median < 5 ms.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

try:
    from clawgym.agent.claw import ClawAgent
except ImportError:  # run from a source checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from clawgym.agent.claw import ClawAgent
from clawgym.policy.base import Completion, Policy
from clawgym.policy.scripted import tool_call
from clawgym.registry import register
from clawgym.sandbox.bubblewrap import LocalSandbox
from clawgym.spec.task import Task
from clawgym.compile.workspace import materialize

TARGET_MS = 5.0
FILES = {
    "AGENTS.md": "# Rules\n" + "Be careful and precise.\n" * 200,
    "SOUL.md": "Friendly and brief.\n" * 50,
    "USER.md": "Ada, accountant, likes CSV.\n" * 50,
    "MEMORY.md": "\n\n".join(f"Fact {i}: the invoice {i} was paid late by client {i % 7}." for i in range(200)),
    "memory/2026-03-01.md": "\n\n".join(f"Meeting note {i} about the garden budget." for i in range(100)),
    "input/data.csv": "".join(f"{i},{i * 3}\n" for i in range(3000)),
    "skills/csv/SKILL.md": "---\nname: csv\ndescription: Work with CSV files.\n---\nbody\n",
}
IN_PROCESS = [
    ("read", {"path": "input/data.csv", "offset": 10, "limit": 50}),
    ("write", {"path": "output/out.txt", "content": "x" * 2000}),
    ("edit", {"path": "output/out.txt", "oldText": "x" * 2000, "newText": "y" * 2000}),
    ("memory_search", {"query": "invoice paid late client 3"}),
    ("memory_get", {"path": "MEMORY.md", "from": 5, "lines": 10}),
    ("session_status", {}),
]


@register("policy", "bench-replay")
class Replay(Policy):
    """Replays precomputed turns at near-zero cost and measures its own time."""

    type = "bench-replay"

    def __init__(self, config: dict) -> None:
        super().__init__(config)
        self.turns, self.i, self.enter, self.leave = config["turns"], 0, [], []

    def complete(self, messages, tools=None, **sampling) -> Completion:
        self.enter.append(time.perf_counter())
        msg = self.turns[self.i] if self.i < len(self.turns) else {"role": "assistant", "content": "done"}
        self.i += 1
        out = Completion(
            message=msg,
            finish_reason="tool_calls" if msg.get("tool_calls") else "stop",
            usage={"prompt_tokens": 10, "completion_tokens": 5},
        )
        self.leave.append(time.perf_counter())
        return out


def script(variant: str, turns: int) -> list[dict]:
    out = []
    for i in range(turns):
        name, args = IN_PROCESS[i % len(IN_PROCESS)] if variant == "in-process" else ("exec", {"command": "true"})
        out.append({"role": "assistant", "content": None, "tool_calls": [tool_call(name, call_id=f"c{i}", **args)]})
    return out


def measure(variant: str, turns: int) -> tuple[list[float], float]:
    """(per-turn overheads in ms, mean ms per turn of the whole run)."""
    task = Task(
        name="bench",
        category="productivity",
        seed=0,
        params={},
        persona="p",
        skills=(),
        workspace="w",
        instruction="Benchmark.",
        files={k: v.encode() for k, v in FILES.items()},
        executables=frozenset(),
        solution=(),
        checks=(),
        limits={"turns": turns + 5, "seconds": 600, "memory_mb": 2048, "pids": 256, "output_bytes": 1_000_000},
    )
    ws = Path(tempfile.mkdtemp(prefix="clawgym-bench-"))
    try:
        materialize(task, ws)
        agent = ClawAgent(
            {
                "type": "claw",
                "max_turns": turns + 5,
                "policy": {"type": "bench-replay", "turns": script(variant, turns)},
            }
        )
        with LocalSandbox(ws, mount=task.mount) as sb:
            t0 = time.perf_counter()
            traj = agent.run(task, sb)
            elapsed = time.perf_counter() - t0
        bad = [s for s in traj.steps if not s["ok"]]
        assert traj.outcome == "completed" and not bad, bad[:1]
        pol = agent.policy
        gaps = [pol.enter[0] - t0] + [b - a for a, b in zip(pol.leave, pol.enter[1:])]
        spent = sum(b - a for a, b in zip(pol.enter, pol.leave))
        return [g * 1000 for g in gaps], (elapsed - spent) / len(pol.enter) * 1000
    finally:
        shutil.rmtree(ws, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=5)
    opts = ap.parse_args()
    print(f"claw harness overhead per turn ({opts.turns} turns x {opts.repeat} runs), ms")
    print(f"{'variant':<12} {'median':>8} {'p95':>8} {'mean':>8}")
    for variant in ("in-process", "exec"):
        per_turn, means = [], []
        for _ in range(opts.repeat):
            gaps, mean = measure(variant, opts.turns)
            per_turn += gaps
            means.append(mean)
        per_turn.sort()
        med, p95 = statistics.median(per_turn), per_turn[int(0.95 * (len(per_turn) - 1))]
        print(f"{variant:<12} {med:8.2f} {p95:8.2f} {statistics.mean(means):8.2f}")
        if variant == "in-process":
            print(f"{'':12} target median < {TARGET_MS} ms: {'met' if med < TARGET_MS else 'NOT met'}")


if __name__ == "__main__":
    main()
