"""RL throughput: rollout tokens/s, trainer tokens/s, and the share of a GRPO step spent waiting on
sandboxes and verifiers (target: under 10% of step time with the local sandbox).

Runs `clawgym train rl` for a few steps on real tasks in bubblewrap sandboxes and reads the
per-step metrics it logs: `rollout_tokens_per_s` (sampled tokens / rollout phase), the trainer's
tokens/s (sequence tokens / update phase) and `wait_share` (rollout phase time when no generation
ran / step time: sandbox start, tool execution, verification, scheduling).

    python benchmarks/rl_throughput.py                                  # embedded SmolLM2-135M, CPU
    python benchmarks/rl_throughput.py --model random --steps 5 -B 8 -G 8 --max-tokens 512   # GPU: same shape, random init
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def random_model(folder: Path) -> Path:
    """SmolLM2-135M's shape and tokenizer with random weights (where only speed is measured)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from clawgym.policy.embedded import embedded_model_path

    source = embedded_model_path()
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(source)).save_pretrained(folder)
    AutoTokenizer.from_pretrained(source).save_pretrained(folder)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="embedded", help="embedded, random (same shape), or a model folder")
    parser.add_argument(
        "--tasks",
        nargs="+",
        default=["specs/tasks/productivity/meeting-action-items.yaml", "specs/tasks/analysis/grade-statistics.yaml"],
    )
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("-B", "--tasks-per-step", type=int, default=2)
    parser.add_argument("-G", "--group-size", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--max-turns", type=int, default=3)
    parser.add_argument(
        "--micro-batch-tokens",
        type=int,
        default=8192,
        help="most tokens per micro-batch; rollouts share a packed row only with flash-attention",
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    from clawgym.train.grpo import train_rl
    from clawgym.train.metrics import read_metrics
    from clawgym.train.rl_spec import load_rl_spec

    work = Path(tempfile.mkdtemp(prefix="rl-throughput-"))
    model = str(random_model(work / "model")) if args.model == "random" else args.model
    out = args.out or work / "run"
    spec = {
        "apiVersion": "clawgym/v1",
        "kind": "RL",
        "name": "rl-throughput",
        "model": model,
        "tasks": [str((ROOT / t).resolve()) for t in args.tasks],
        "seeds": "0-999",
        "rollout": {
            "tasks_per_step": args.tasks_per_step,
            "group_size": args.group_size,
            "max_turns": args.max_turns,
            "max_tokens": args.max_tokens,
            "concurrency": args.tasks_per_step * args.group_size,
            "max_batch": args.tasks_per_step * args.group_size,
            "refill_rounds": 0,
        },
        "loss": {"micro_batch_tokens": args.micro_batch_tokens},
        "optim": {"lr": 1e-6, "steps": args.steps},
        "precision": "fp32",
        "checkpoint": {"every_steps": 10_000},
        "log": {"tensorboard": False},
        "out": str(out),
    }
    (work / "rl.yaml").write_text(json.dumps(spec))
    train_rl(load_rl_spec(work / "rl.yaml"), progress=False)

    print(table(read_metrics(out, "train")))


def table(rows: list[dict]) -> str:
    """The per-step figures of a GRPO run's metrics, and their means after the first step."""
    lines = [
        f"{'step':>4} {'step s':>7} {'rollout s':>9} {'gen s':>6} {'train s':>7} {'rollout tok/s':>13} "
        f"{'trainer tok/s':>13} {'wait share':>10} {'groups':>6}"
    ]
    for r in rows:
        lines.append(
            f"{r['step']:>4} {r['step_s']:>7.1f} {r['rollout_s']:>9.1f} {r['generation_s'] or 0:>6.1f} "
            f"{r['train_s']:>7.1f} {r['rollout_tokens_per_s']:>13.1f} {r['trainer_tokens_per_s']:>13.1f} "
            f"{r['wait_share'] or 0:>10.1%} {r['groups']:>6}"
        )
    if rows:
        f = figures(rows)
        trainer = (
            f"{f['trainer_tokens_per_s']:.1f} tok/s"
            if f["trainer_tokens_per_s"] is not None
            else "not measured (no step had a group with a reward spread)"
        )
        lines.append(
            f"\nmean over steps {f['steps_averaged']}: rollout {f['rollout_tokens_per_s']:.1f} tok/s, "
            f"trainer {trainer}, waiting on sandboxes and verifiers "
            f"{f['wait_share']:.1%} of step time (target < 10%)"
        )
    return "\n".join(lines)


def figures(rows: list[dict]) -> dict:
    """Mean rollout and trainer tokens/s and wait share over the steps after the first (which also
    pays for loading and warming up; the only step when there is one). Trainer tokens/s counts
    only steps that updated."""
    later = rows[1:] or rows
    updated = [r for r in later if r.get("updated", True)] or [r for r in rows if r.get("updated", True)]
    return {
        "steps_averaged": f"{later[0]['step']}-{later[-1]['step']}",
        "rollout_tokens_per_s": statistics.mean(r["rollout_tokens_per_s"] for r in later),
        "trainer_tokens_per_s": statistics.mean(r["trainer_tokens_per_s"] for r in updated) if updated else None,
        "wait_share": statistics.mean(r["wait_share"] or 0.0 for r in later),
        "steps_updated": sum(1 for r in rows if r.get("updated", True)),
        "per_step": [
            {
                k: r.get(k)
                for k in (
                    "step",
                    "step_s",
                    "rollout_s",
                    "generation_s",
                    "train_s",
                    "rollout_tokens_per_s",
                    "trainer_tokens_per_s",
                    "wait_share",
                    "groups",
                    "reward_mean",
                    "pass_rate",
                    "sampled_tokens",
                    "updated",
                )
            }
            for r in rows
        ],
    }


if __name__ == "__main__":
    main()
