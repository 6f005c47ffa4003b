"""The RL experiment: GRPO from the SFT experiment's checkpoint on its training tasks, then the
same held-out evaluation as the SFT experiment (same tasks, seed and settings), before and after.

1. read the SFT experiment's folder (`benchmarks/sft_experiment.py`): its training tasks (the
   synthesized `train` split), its held-out sets ((a) validation-split tasks of families never
   trained on, (b) benchmark v2 instances), its evaluation settings and the SFT model
   (`OUT/sft/model`);
2. `clawgym train rl` on the training tasks, rollouts in bubblewrap sandboxes, the concurrent
   rollouts' turns generated in batches;
3. print the throughput figures of every step (`rl_throughput.py`: rollout and trainer tokens/s,
   the share of step time spent waiting on sandboxes and verifiers) and the reward curve;
4. evaluate the RL model on the held-out sets with the SFT experiment's settings (greedy); the
   "before" figures are the SFT experiment's own "after" figures (same tasks, seed, settings).
   Pass rate and mean reward with bootstrap 95% CIs go to OUT/results.json.

    python benchmarks/rl_experiment.py --sft runs/sft-experiment --preset gpu
    python benchmarks/rl_experiment.py --sft runs/sft-experiment --preset suite   # about 3 minutes, one H200
    python benchmarks/rl_experiment.py --sft runs/sft-experiment --preset cpu     # 2 CPU cores
    python benchmarks/rl_experiment.py --sft runs/sft-dry --preset dry            # every stage in seconds
    python benchmarks/rl_experiment.py --sft runs/sft-experiment --policy vllm   # rollouts on the vLLM engine

Every stage keeps its output in OUT and resumes when run again; `--json FILE` also writes the
figures known so far after every stage.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

PRESETS = {
    "gpu": {
        "tasks_per_step": 8,
        "group_size": 8,
        "steps": 100,
        "lr": 1e-6,
        "max_turns": 10,
        "max_tokens": 1536,
        "concurrency": 64,
        "max_batch": 64,
        "kl_weight": 0.0,
        "refill_rounds": 2,
        "gradient_checkpointing": True,
    },
    # one H200 in about 3 minutes (the GPU suite's part c): two steps of 8 groups of 8
    "suite": {
        "tasks_per_step": 8,
        "group_size": 8,
        "steps": 2,
        "lr": 1e-6,
        "max_turns": 4,
        "max_tokens": 384,
        "concurrency": 64,
        "max_batch": 64,
        "kl_weight": 0.0,
        "refill_rounds": 0,
        "gradient_checkpointing": False,
    },
    # 2 CPU cores: one group of 4 per step, one refill round; a larger lr so 3 steps can move a 135M model
    "cpu": {
        "tasks_per_step": 1,
        "group_size": 4,
        "steps": 3,
        "lr": 1e-5,
        "max_turns": 5,
        "max_tokens": 900,
        "concurrency": 4,
        "max_batch": 4,
        "kl_weight": 0.0,
        "refill_rounds": 1,
        "gradient_checkpointing": False,
    },
    # a test of every stage (with the SFT experiment's dry preset)
    "dry": {
        "tasks_per_step": 1,
        "group_size": 2,
        "steps": 1,
        "lr": 1e-5,
        "max_turns": 2,
        "max_tokens": 8,
        "concurrency": 2,
        "max_batch": 2,
        "kl_weight": 0.0,
        "refill_rounds": 0,
        "gradient_checkpointing": False,
    },
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sft", type=Path, default=Path("runs/sft-experiment"), help="the SFT experiment's folder")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="cpu")
    parser.add_argument("--out", type=Path, default=Path("runs/rl-experiment"))
    parser.add_argument("--json", type=Path, help="write the figures known so far here after every stage")
    parser.add_argument(
        "--policy",
        choices=("hf", "vllm"),
        default="hf",
        help="what samples the rollouts: the trainer's model in-process (hf) or a vLLM engine kept in step "
        "with it (vllm); the evaluation uses what the SFT experiment's used, so before and after compare",
    )
    args = parser.parse_args()
    from rich.console import Console

    from clawgym.errors import ClawgymError
    from clawgym.train.grpo import train_rl
    from clawgym.train.metrics import read_metrics
    from clawgym.train.rl_spec import load_rl_spec
    from rl_throughput import figures, table
    from sft_experiment import PRESETS as SFT_PRESETS
    from sft_experiment import evaluate_once, write_json

    console = Console()
    sft_dir = args.sft.resolve()
    results_file = sft_dir / "results.json"
    if not results_file.is_file():
        raise SystemExit(
            str(
                ClawgymError(
                    f"no results.json in {sft_dir}",
                    file=str(results_file),
                    hint="run benchmarks/sft_experiment.py --out THAT_FOLDER first",
                )
            )
        )
    sft = json.loads(results_file.read_text())
    sft_preset = SFT_PRESETS[sft["preset"]]
    train = [sft_dir / p for p in sft["train_tasks"]]
    sets = {
        "a_validation_unseen_families": [sft_dir / p for p in sft["validation_tasks"]],
        "b_benchmark_v2": [ROOT / p for p in sft["bench_v2_instances"]],
    }
    preset, out = PRESETS[args.preset], args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    sft_model = sft_dir / "sft" / "model"

    spec_file = out / "rl.yaml"
    spec_file.write_text(
        json.dumps(
            {
                "apiVersion": "clawgym/v1",
                "kind": "RL",
                "name": "rl-experiment",
                "model": str(sft_model),
                "tasks": [str(p) for p in train],
                "seeds": "0",  # synthesized tasks are concrete specs
                "rollout": {
                    k: preset[k]
                    for k in (
                        "tasks_per_step",
                        "group_size",
                        "max_turns",
                        "max_tokens",
                        "concurrency",
                        "max_batch",
                        "refill_rounds",
                    )
                }
                | {"temperature": 1.0}
                | ({"server": {"type": "vllm"}} if args.policy == "vllm" else {}),
                "loss": {"kl_weight": preset["kl_weight"], "micro_batch_tokens": 8192},
                "optim": {"lr": preset["lr"], "steps": preset["steps"]},
                "precision": "fp32",
                "gradient_checkpointing": preset["gradient_checkpointing"],
                "checkpoint": {"every_steps": 1, "keep": 2},
                "log": {"tensorboard": False},
                "out": str(out / "rl"),
            },
            indent=1,
        )
    )
    before = {name: sft["after"][name] for name in sets}  # the SFT experiment's figures: same tasks, seed, settings
    report: dict = {"preset": args.preset, "sft": str(args.sft), "stage": "grpo", "before": before}
    write_json(args.json, report)

    model = train_rl(load_rl_spec(spec_file), console=console, progress=False)
    rows = read_metrics(out / "rl", "train")
    curve = [
        {
            k: r[k]
            for k in (
                "step",
                "reward_mean",
                "reward_std",
                "pass_rate",
                "groups",
                "dropped_groups",
                "response_tokens",
                "turns",
                "clip_frac",
                "kl",
                "updated",
            )
        }
        for r in rows
    ]
    report.update(stage="after", curve=curve, throughput=figures(rows) if rows else None)
    write_json(args.json, report)
    print(table(rows), flush=True)

    after = {}
    for name, tasks in sets.items():
        after[name] = evaluate_once(
            f"rl-{name}",
            str(model.resolve()),
            tasks,
            out,
            sft_preset | {"concurrency": sft["settings"]["concurrency"], "max_batch": sft["settings"]["max_batch"]},
            sft["settings"].get("policy", "hf"),
        )
        report.update(after=after)
        write_json(args.json, report)
    report["stage"] = "done"
    write_json(args.json, report)
    (out / "results.json").write_text(json.dumps(report, indent=1))
    console.print("step  reward mean ± std   pass rate  groups", highlight=False)
    for r in curve:
        console.print(
            f"{r['step']:>4}  {r['reward_mean']:.3f} ± {r['reward_std']:.3f}     {r['pass_rate']:.2f}"
            f"       {r['groups']}",
            highlight=False,
        )
    for name in sets:
        for when, res in (("SFT", before[name]), ("SFT+RL", after[name])):
            console.print(
                f"{name:32} {when:6} pass rate {res['pass_rate']} {res['pass_rate_ci']}  "
                f"mean reward {res['mean_reward']} {res['mean_reward_ci']}  ({res['trials']} trials)",
                highlight=False,
            )
    print(summary_line(report), flush=True)


def summary_line(report: dict) -> str:
    """One line: throughput, then held-out pass rate after SFT -> after SFT + GRPO."""
    t = report.get("throughput") or {}
    parts = []
    if t:
        trainer = f"{t['trainer_tokens_per_s']:,.0f}" if t.get("trainer_tokens_per_s") is not None else "n/a"
        parts.append(
            f"rollout {t['rollout_tokens_per_s']:,.0f} tok/s, trainer {trainer} tok/s, "
            f"wait share {t['wait_share']:.1%} ({len(t['per_step'])} steps, {t['steps_updated']} updated)"
        )
    for name, res in report.get("before", {}).items():
        after = report.get("after", {}).get(name)
        later = f" -> {after['pass_rate']} {after['pass_rate_ci']}" if after else " -> (not measured)"
        parts.append(f"{name} pass rate {res['pass_rate']} {res['pass_rate_ci']}{later}")
    return f"rl experiment ({report['preset']}): " + "; ".join(parts)


if __name__ == "__main__":
    main()
