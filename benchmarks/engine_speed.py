"""Generation in process (transformers) against the vLLM engine, side by side in one run.

1. **Trials.** The embedded model drives the claw agent on N shipped tasks, the same tasks, seeds
   and settings both ways (concurrency, turns, tokens per turn, temperature). The embedded model
   answers a claw prompt without calling a tool, which would end every trial after one turn, so
   each task gets `--followups` later user messages (check your work, summarise, what is left):
   multi-turn trials whose conversation grows turn by turn, as an agent's does. The in-process path
   batches the concurrent trials' turns (`max_batch` = concurrency), the engine serves up to
   `concurrency` sequences at once with prefix caching. Figures: trials per hour (wall time of the
   trials; the engine's start is reported apart), prompt and generated tokens per second, mean
   turns and tokens per trial.
2. **Time to first token.** The first-turn prompt of every trial (recorded token ids), one token
   generated: cold (first sight of the prompt) and again (the engine's prefix cache; transformers
   has none across calls).
3. **A GRPO step, both ways** (`--grpo-steps`, default 2): the embedded model, B task instances ×
   G rollouts per step, in process against `rollout.server: {type: vllm}`; per step the split into
   generation, waiting on sandboxes and verifiers, weight sync and the update.

    python benchmarks/engine_speed.py                          # both ways, defaults (about an hour on 2 cores)
    python benchmarks/engine_speed.py --tasks 4 --grpo-steps 0 # trials only
    python benchmarks/engine_speed.py --json speed.json        # also write every figure
    python benchmarks/engine_speed.py --ways hf,vllm --tasks 0 --grpo-task tests/fixtures/rl/lowercase-word.yaml
                                                               # GRPO steps that update (and sync) only

Both ways run in this one process, one after the other, so the ratio is taken on the same machine
under the same load; run it twice to see the spread.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TASKS = [
    "specs/tasks/productivity/meeting-action-items.yaml",
    "specs/tasks/analysis/grade-statistics.yaml",
    "specs/tasks/analysis/budget-variance.yaml",
    "specs/tasks/content/glossary-build.yaml",
    "specs/tasks/planning/calendar-conflicts.yaml",
    "specs/tasks/systems/log-incident-report.yaml",
    "specs/tasks/productivity/invoice-followup.yaml",
    "specs/tasks/software/dependency-audit.yaml",
]
ENGINE = {"kv_cache_gb": 2}
FOLLOWUPS = [
    "Thanks. Check your answer against the files in the workspace and tell me what you verified.",
    "Now summarise what you did, and what you left as it was, in three sentences.",
    "Which files did you not look at? List them and say whether they matter for this task.",
    "Last: write the one thing I should double-check myself before I use this.",
]


def policy_for(way: str, args: argparse.Namespace) -> dict[str, Any]:
    sampling = {"temperature": args.temperature, "max_tokens": args.max_tokens, "seed": 0}
    if way == "hf":
        return {"type": "hf", "model": "embedded", "max_batch": args.concurrency, **sampling}
    return {"type": "vllm", "model": "embedded", "max_concurrency": args.concurrency, "engine": ENGINE, **sampling}


def run_trials(way: str, tasks: list[Path], args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """N claw trials on `way`'s policy; wall time, tokens and turns from the records."""
    from clawgym.compile.batch import compile_many
    from clawgym.engines.shared import run_scope
    from clawgym.run.plan import RunPlan
    from clawgym.run.runner import execute
    from clawgym.run.trial import Trial

    agent = {"type": "claw", "name": f"claw-{way}", "policy": policy_for(way, args), "max_turns": args.max_turns}
    later = tuple({"message": m, "new_session": False} for m in FOLLOWUPS[: args.followups])
    trials = [Trial(replace(task, followups=later), agent, 0) for task in compile_many(tasks, [args.seed])]
    plan = RunPlan(name=f"engine-speed-{way}", trials=trials, out=out, concurrency=args.concurrency, retries=0)
    start = time.monotonic()
    with run_scope([agent]):  # the engine starts here (timed apart), the trials find it running
        loaded = time.monotonic()
        if way == "hf":  # load the model before the clock starts, as the engine's start is apart
            from clawgym.policy import make_policy

            make_policy(agent["policy"]).complete([{"role": "user", "content": "hi"}])
            loaded = time.monotonic()
        records = execute(plan, resume=False)
        wall = time.monotonic() - loaded
        ttft = first_token_times(way, out, agent["policy"])
    turns = [t for p in out.rglob("trajectory.json") for t in json.loads(p.read_text())["turns"] if "error" not in t]
    prompt = sum(int((t.get("usage") or {}).get("prompt_tokens") or 0) for t in turns)
    generated = sum(int((t.get("usage") or {}).get("completion_tokens") or 0) for t in turns)
    ok = [r for r in records if r.get("status") != "error"]
    return {
        "way": way,
        "trials": len(records),
        "errored": len(records) - len(ok),
        "start_s": round(loaded - start, 1),
        "wall_s": round(wall, 1),
        "trials_per_hour": round(len(records) / wall * 3600, 1),
        "turns": len(turns),
        "turns_per_trial": round(len(turns) / max(1, len(records)), 2),
        "turns_per_hour": round(len(turns) / wall * 3600, 1),
        "outcomes": dict(Counter(str(r.get("outcome")) for r in records)),
        "prompt_tokens": prompt,
        "generated_tokens": generated,
        "prompt_tokens_per_s": round(prompt / wall, 1),
        "generated_tokens_per_s": round(generated / wall, 1),
        "mean_reward": round(statistics.mean(float(r.get("reward") or 0.0) for r in ok), 3) if ok else None,
        **ttft,
    }


def first_token_times(way: str, out: Path, policy: dict[str, Any]) -> dict[str, Any]:
    """Seconds to the first token of each trial's first-turn prompt: cold, then the same prompt again."""
    prompts = []
    for path in sorted(out.rglob("trajectory.json")):
        turns = json.loads(path.read_text())["turns"]
        if turns and turns[0].get("prompt_token_ids"):
            prompts.append(turns[0]["prompt_token_ids"])
    if not prompts:
        return {"ttft_cold_s": None, "ttft_again_s": None}
    cold, again = [], []
    if way == "hf":
        import torch

        from clawgym.policy.hf import load_model

        loaded = load_model("embedded")
        for ids in prompts:
            for bucket in (cold, again):
                t = time.monotonic()
                with torch.no_grad():
                    loaded.model.generate(
                        torch.tensor([ids], device=loaded.model.device), max_new_tokens=1, do_sample=False
                    )
                bucket.append(time.monotonic() - t)
    else:
        from clawgym.engines.shared import ensure
        from clawgym.engines.vllm import EngineSettings, http_json

        ref = ensure(EngineSettings.from_config(policy))
        # the trials already put these prompts in the prefix cache: cold is a variant never seen (one token changed up front)
        for ids in prompts:
            for bucket, prompt in ((cold, [ids[0], 198, *ids[1:]]), (again, ids)):
                body = {"model": ref.served_name, "prompt": prompt, "max_tokens": 1, "temperature": 0}
                t = time.monotonic()
                status, _ = http_json(ref.base_url + "/completions", body, timeout=600)
                bucket.append(time.monotonic() - t)
                if status != 200:
                    raise SystemExit(f"the engine refused a first-token request (HTTP {status})")
    return {
        "prompt_tokens_first_turn": round(statistics.mean(len(p) for p in prompts)),
        "ttft_cold_s": round(statistics.median(cold), 3),
        "ttft_again_s": round(statistics.median(again), 3),
    }


def grpo_steps(way: str, args: argparse.Namespace, work: Path) -> list[dict[str, Any]]:
    """`args.grpo_steps` GRPO steps of the embedded model, generating `way`; their metrics rows."""
    from clawgym.train.grpo import train_rl
    from clawgym.train.metrics import read_metrics
    from clawgym.train.rl_spec import load_rl_spec

    out = work / f"grpo-{way}"
    rollout = {
        "tasks_per_step": args.grpo_tasks,
        "group_size": args.grpo_group,
        "max_turns": args.max_turns,
        "max_tokens": args.max_tokens,
        "concurrency": args.grpo_tasks * args.grpo_group,
        "max_batch": args.grpo_tasks * args.grpo_group,
        "refill_rounds": 0,
    }
    if way == "vllm":
        rollout["server"] = {"type": "vllm", "engine": ENGINE}
    spec = {
        "apiVersion": "clawgym/v1",
        "kind": "RL",
        "name": f"engine-speed-{way}",
        "model": "embedded",
        "tasks": [str((ROOT / t).resolve()) for t in args.grpo_task or TASKS[:2]],
        "seeds": "0-999",
        "rollout": rollout,
        "optim": {"lr": 1e-6, "steps": args.grpo_steps},
        "precision": "fp32",
        "checkpoint": {"every_steps": 10_000},
        "log": {"tensorboard": False},
        "out": str(out),
    }
    (work / f"rl-{way}.yaml").write_text(json.dumps(spec))
    train_rl(load_rl_spec(work / f"rl-{way}.yaml"), resume=False, progress=False)
    keys = (
        "step",
        "step_s",
        "rollout_s",
        "generation_s",
        "sync_s",
        "train_s",
        "wait_share",
        "sampled_tokens",
        "logprob_gap",
    )
    return [{k: r.get(k) for k in keys} for r in read_metrics(out, "train")]


def split_line(way: str, row: dict[str, Any]) -> str:
    gen = row["generation_s"] or 0.0
    wait = max(0.0, row["rollout_s"] - gen)
    return (
        f"  {way:5} step {row['step']}: {row['step_s']:.1f} s = generation {gen:.1f} + waiting on sandboxes and "
        f"verifiers {wait:.1f} + update {row['train_s']:.1f} + weight sync {row['sync_s'] or 0.0:.1f} "
        f"(other {row['step_s'] - row['rollout_s'] - row['train_s'] - (row['sync_s'] or 0.0):.1f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=8, help="shipped tasks to run (at most %d)" % len(TASKS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-j", "--concurrency", type=int, default=4)
    parser.add_argument("--max-turns", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument(
        "--followups", type=int, default=3, help=f"later user messages per task (at most {len(FOLLOWUPS)})"
    )
    parser.add_argument("--ways", default="hf,vllm", help="comma-separated: hf (in process), vllm (the engine)")
    parser.add_argument("--grpo-steps", type=int, default=2, help="GRPO steps each way (0: none)")
    parser.add_argument("--grpo-tasks", type=int, default=1, help="task instances per GRPO step")
    parser.add_argument("--grpo-group", type=int, default=4, help="rollouts per instance")
    parser.add_argument(
        "--grpo-task",
        action="append",
        help="task spec for the GRPO steps (repeatable; default: two shipped tasks). The embedded model "
        "passes none of the shipped ones, so no group has a reward spread and no step updates; "
        "tests/fixtures/rl/lowercase-word.yaml, which it passes about half the time, gives updates and syncs",
    )
    parser.add_argument("--out", type=Path, default=None, help="work folder (default: a temporary one)")
    parser.add_argument("--json", type=Path, help="write every figure here")
    args = parser.parse_args()

    work = args.out or Path(tempfile.mkdtemp(prefix="engine-speed-"))
    work.mkdir(parents=True, exist_ok=True)
    tasks = [(ROOT / t).resolve() for t in TASKS[: args.tasks]]
    ways = [w.strip() for w in args.ways.split(",") if w.strip()]
    report: dict[str, Any] = {
        "settings": {k: v for k, v in vars(args).items() if k not in ("out", "json")},
        "trials": {},
        "grpo": {},
    }

    def save() -> None:
        if args.json:
            args.json.write_text(json.dumps(report, indent=1))

    for way in ways if tasks else ():
        report["trials"][way] = run_trials(way, tasks, args, work / f"trials-{way}")
        print(json.dumps(report["trials"][way]), flush=True)
        save()
    for way in ways if args.grpo_steps else ():
        report["grpo"][way] = grpo_steps(way, args, work)
        save()

    print(f"\nengine speed: the embedded model, claw agent, {len(tasks)} shipped tasks, concurrency {args.concurrency}")
    for way, r in report["trials"].items():
        print(
            f"  {way:5} {r['trials_per_hour']:7.1f} trials/h ({r['trials']} in {r['wall_s']:.0f} s, start "
            f"{r['start_s']:.0f} s apart), prompt {r['prompt_tokens_per_s']:.0f} tok/s, generated "
            f"{r['generated_tokens_per_s']:.1f} tok/s, {r['turns_per_trial']} turns/trial "
            f"({r['turns_per_hour']:.0f} turns/h; outcomes {r['outcomes']}), first token "
            f"{r['ttft_cold_s']} s cold / {r['ttft_again_s']} s again ({r.get('prompt_tokens_first_turn')} tokens)"
        )
    if {"hf", "vllm"} <= report["trials"].keys():
        hf, engine = report["trials"]["hf"], report["trials"]["vllm"]
        report["ratios"] = {
            "trials_per_hour": round(engine["trials_per_hour"] / hf["trials_per_hour"], 2),
            "turns_per_hour": round(engine["turns_per_hour"] / max(1e-9, hf["turns_per_hour"]), 2),
            "generated_tokens_per_s": round(
                engine["generated_tokens_per_s"] / max(1e-9, hf["generated_tokens_per_s"]), 2
            ),
            "prompt_tokens_per_s": round(engine["prompt_tokens_per_s"] / max(1e-9, hf["prompt_tokens_per_s"]), 2),
        }
        print(
            f"  engine / in process: {report['ratios']['trials_per_hour']}x trials per hour (target 3x), "
            f"{report['ratios']['turns_per_hour']}x turns per hour, "
            f"{report['ratios']['generated_tokens_per_s']}x generated tokens/s"
        )
    for way, rows in report["grpo"].items():
        for row in rows:
            print(split_line(way, row))
    save()


if __name__ == "__main__":
    main()
