"""Synthetic results folders for the report tests: records, trajectories and diffs like a real run writes."""

from __future__ import annotations

import json
import random
from pathlib import Path

CATEGORIES = ["productivity", "systems", "analysis", "content", "planning", "software"]
SYSTEM_PROMPT = "You are a personal assistant agent working in the user's workspace. " * 20


def make_run(
    out: Path,
    n_trials: int,
    *,
    attempts: int = 4,
    agents: tuple[str, ...] = ("claw", "oracle"),
    seed: int = 0,
    pass_bias: float = 0.0,
) -> Path:
    """A results folder with `n_trials` trials: instances x agents x attempts, about 3% errors."""
    rand = random.Random(seed)
    trials = out / "trials"
    trials.mkdir(parents=True, exist_ok=True)
    count = 0
    inst = 0
    while count < n_trials:
        cat = CATEGORIES[inst % len(CATEGORIES)]
        name = f"{cat}-task-{inst // len(CATEGORIES) % 20}"
        task_seed = inst
        skill = rand.random()
        for agent in agents:
            for attempt in range(attempts):
                if count >= n_trials:
                    break
                count += 1
                trial_id = f"{name}.s{task_seed}.{agent}.a{attempt}"
                error = rand.random() < 0.03
                if agent == "oracle":
                    reward = 1.0
                else:
                    reward = round(min(1.0, max(0.0, skill + pass_bias + rand.uniform(-0.3, 0.3))), 3)
                status = "error" if error else ("passed" if reward >= 1.0 else "failed")
                turns = 0 if agent == "oracle" else rand.randint(1, 12)
                checks = [
                    {
                        "name": f"file_exists out/{name}.md",
                        "type": "file_exists",
                        "score": 1.0,
                        "weight": 1.0,
                        "gate": True,
                        "reason": "ok",
                        "details": {"duration_s": 0.001},
                        "passed": True,
                    },
                    {
                        "name": "totals match",
                        "type": "json_match",
                        "score": reward,
                        "weight": 2.0,
                        "gate": False,
                        "reason": "2 of 3 totals match" if reward < 1 else "all match",
                        "details": {"duration_s": 0.002},
                        "passed": reward >= 1,
                    },
                ]
                record = {
                    "format": "clawgym.trial/v1",
                    "trial_id": trial_id,
                    "task": {
                        "name": name,
                        "id": f"{name}@{task_seed}",
                        "hash": f"h{inst:06d}",
                        "seed": task_seed,
                        "category": cat,
                        "params": {"n": inst % 7},
                        "persona": "family-organizer",
                    },
                    "agent": {"type": agent, "name": agent},
                    "attempt": attempt,
                    "status": status,
                    "reward": None if error else reward,
                    "verdict": None
                    if error
                    else {
                        "reward": reward,
                        "passed": reward >= 1,
                        "gate_failed": None,
                        "error": None,
                        "results": checks,
                    },
                    "error": "InfraError: sandbox failed to start" if error else None,
                    "timings": {"setup_s": 0.01, "agent_s": 0.5 * turns, "total_s": 0.6 + 0.5 * turns},
                }
                messages = [
                    {"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": f"Please summarise the {name} inputs into out/{name}.md."},
                ]
                for t in range(turns):
                    messages.append(
                        {
                            "role": "assistant",
                            "content": "",
                            "tool_calls": [
                                {
                                    "id": f"call_{t}",
                                    "type": "function",
                                    "function": {"name": "exec", "arguments": json.dumps({"command": f"ls step{t}"})},
                                }
                            ],
                        }
                    )
                    messages.append({"role": "tool", "tool_call_id": f"call_{t}", "content": f"file{t}.csv\n"})
                steps = [
                    {
                        "index": 0,
                        "kind": "exec",
                        "description": "list inputs",
                        "exit_code": 0,
                        "output": "a.csv\nb.csv\n",
                        "duration_s": 0.01,
                        "timed_out": False,
                    }
                ]
                trajectory = {
                    "format": "clawgym.trajectory/v1",
                    "task": record["task"],
                    "agent": record["agent"],
                    "steps": steps,
                    "outcome": "completed",
                    "final_message": "Done: wrote the summary.",
                    "error": None,
                    "messages": messages if turns else [],
                    "tools": [],
                    "turns": [
                        {
                            "index": t,
                            "finish_reason": "tool_calls",
                            "usage": {
                                "prompt_tokens": 900 + 50 * t,
                                "completion_tokens": 40,
                                "total_tokens": 940 + 50 * t,
                            },
                            "latency_s": 0.4,
                            "prompt_token_ids": [1, 2, 3],
                        }
                        for t in range(turns)
                    ],
                    "usage": {
                        "prompt_tokens": sum(900 + 50 * t for t in range(turns)),
                        "completion_tokens": 40 * turns,
                        "turns": turns,
                        "tool_calls": turns,
                    },
                    "side_effects": {},
                }
                folder = trials / trial_id
                folder.mkdir()
                if not error:
                    (folder / "trajectory.json").write_text(json.dumps(trajectory), encoding="utf-8")
                    (folder / "workspace.diff").write_text(
                        f"--- a/out/{name}.md\n+++ b/out/{name}.md\n@@ -0,0 +1,2 @@\n+# Summary\n+total: {reward}\n",
                        encoding="utf-8",
                    )
                (folder / "record.json").write_text(json.dumps(record), encoding="utf-8")
        inst += 1
    return out
