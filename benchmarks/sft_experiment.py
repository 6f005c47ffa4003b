"""The SFT experiment: does training on expert trajectories of the synthesized training data help
the embedded model on tasks it never saw, and on benchmark v2 (drawn from the generator's held-out
region, so no instance has a twin in training)?

1. synthesize training data with the training spec (specs/synth/default.yaml: region train, split
   by family) into OUT/synth;
2. expert trajectories (reference solutions replayed as claw tool calls) on tasks of its `train`
   split;
3. evaluate the embedded SmolLM2-135M-Instruct (claw agent, greedy) on (a) tasks of the synthesis'
   validation split (families never trained on) and (b) instances of benchmark v2 (specs/bench-v2,
   stratified by category);
4. SFT it on the expert trajectories (`clawgym train sft`);
5. evaluate the trained model on the same tasks; print pass rate and mean reward with bootstrap
   95% CIs, before and after, and write them to OUT/results.json.

    python benchmarks/sft_experiment.py --preset gpu     # the full experiment (a GPU)
    python benchmarks/sft_experiment.py --preset suite   # GPU scale in about 5 minutes (benchmarks/gpu_suite.sh)
    python benchmarks/sft_experiment.py --preset cpu     # a reduced configuration for 2 CPU cores (< 2 h)
    python benchmarks/sft_experiment.py --preset dry --model tiny   # every stage in seconds (a test)
    python benchmarks/sft_experiment.py --preset cpu --policy vllm  # evaluations on the vLLM engine

Every stage keeps its output in OUT and is skipped when already done, so a killed run continues.
`--json FILE` also writes the figures known so far after every stage (a run cut short keeps the
"before" figures); the evaluation generates the concurrent trials' turns in batches (`max_batch`).
`--model tiny` starts from a randomly initialised 2-layer model with the embedded tokenizer, for
checking the pipeline, not for figures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PRESETS = {
    # synthesized tasks, expert demonstrations kept, eval tasks per set, SFT and eval settings
    "gpu": {
        "synth": 4000,
        "train_tasks": 3000,
        "max_chain": 6,
        "eval_validation": 100,
        "eval_bench": 200,
        "max_length": 8192,
        "batch_size": 4,
        "grad_accum": 2,
        "epochs": 2,
        "max_steps": None,
        "lr": 2e-5,
        "schedule": "cosine",
        "warmup_steps": 20,
        "max_turns": 10,
        "max_tokens": 1536,
        "concurrency": 8,
        "max_batch": 8,
    },
    # one H200 and 16 cores in about 5 minutes (the GPU suite's part b): a few hundred demonstrations,
    # every evaluation trial in one batched wave
    "suite": {
        "synth": 900,
        "train_tasks": 600,
        "max_chain": 6,
        "eval_validation": 32,
        "eval_bench": 64,
        "max_length": 4096,
        "batch_size": 4,
        "grad_accum": 1,
        "epochs": 2,
        "max_steps": None,
        "lr": 5e-5,
        "schedule": "cosine",
        "warmup_steps": 10,
        "max_turns": 6,
        "max_tokens": 512,
        "concurrency": 96,
        "max_batch": 96,
        "gradient_checkpointing": False,
    },
    # a test of every stage on CPU in seconds (with --model tiny)
    "dry": {
        "synth": 10,
        "train_tasks": 2,
        "max_chain": 3,
        "eval_validation": 1,
        "eval_bench": 2,
        "max_length": 8192,
        "batch_size": 1,
        "grad_accum": 1,
        "epochs": 1,
        "max_steps": 2,
        "lr": 1e-4,
        "schedule": "constant",
        "warmup_steps": 0,
        "max_turns": 2,
        "max_tokens": 8,
        "concurrency": 3,
        "max_batch": 3,
    },
    # 2 CPU cores: short composed chains (a 135M model learns those from few demonstrations soonest),
    # a few evaluation tasks per set; under 2 h in all
    "cpu": {
        "synth": 120,
        "train_tasks": 10,
        "max_chain": 3,
        "eval_validation": 4,
        "eval_bench": 8,
        "max_length": 6144,
        "batch_size": 1,
        "grad_accum": 1,
        "epochs": 2,
        "max_steps": None,
        "lr": 1e-4,
        "schedule": "constant",
        "warmup_steps": 2,
        "max_turns": 4,
        "max_tokens": 800,
        "concurrency": 2,
    },
}


def tiny_model(folder: Path) -> Path:
    """A randomly initialised 2-layer Llama with the embedded model's tokenizer and chat template."""
    if (folder / "config.json").is_file():
        return folder
    from clawgym.train.tiny import tiny_model

    return tiny_model(folder, hidden=64, special_ids=True)


def write_json(path: Path | None, results: dict) -> None:
    """The figures known so far (written after every stage)."""
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(results, indent=1))
        tmp.replace(path)


def synthesize_training(preset: dict, out: Path, seed: int) -> Path:
    """The training spec's tasks in OUT/synth (resumed when a run was cut short)."""
    from clawgym.synth.pipeline import synthesize
    from clawgym.synth.spec import load_synth_spec

    folder = out / "synth"
    spec = load_synth_spec(ROOT / "specs" / "synth" / "default.yaml", count=preset["synth"], out=str(folder), seed=seed)
    done = folder / "manifest.jsonl"
    if not done.is_file() or sum(1 for _ in done.open()) < preset["synth"]:
        synthesize(spec, resume=done.is_file())
    return folder


def pick(records: list[dict], split: str, n: int, max_chain: int, seed: int) -> list[dict]:
    """`n` tasks of `split`, spread over categories, composed chains of at most `max_chain` first."""
    rng = random.Random(f"{split}:{seed}")
    pool = [r for r in records if r.get("split") == split]
    short = [r for r in pool if r.get("chain") and len(r["chain"]) <= max_chain]
    chosen = short if len(short) >= n else pool
    by_cat: dict[str, list[dict]] = defaultdict(list)
    for r in sorted(chosen, key=lambda r: r["name"]):
        by_cat[r["category"]].append(r)
    for tasks in by_cat.values():
        rng.shuffle(tasks)
    out: list[dict] = []
    while len(out) < n and any(by_cat.values()):
        for cat in sorted(by_cat):
            if by_cat[cat] and len(out) < n:
                out.append(by_cat[cat].pop())
    return out


def bench_instances(n: int, seed: int) -> list[Path]:
    """`n` instances of benchmark v2, in its category proportions (all of them when n >= 200)."""
    from clawgym.bench.layout import BENCHES, find_instances

    instances = find_instances(ROOT / BENCHES["2"])
    if n >= len(instances):
        return [i.spec for i in instances]
    rng = random.Random(f"bench:{seed}")
    by_cat: dict[str, list] = defaultdict(list)
    for inst in instances:
        by_cat[inst.category].append(inst)
    quota = {c: max(1, round(n * len(v) / len(instances))) for c, v in by_cat.items()}
    while sum(quota.values()) > n:
        quota[max(quota, key=quota.get)] -= 1
    return [i.spec for c, v in sorted(by_cat.items()) for i in rng.sample(v, quota[c])]


class Stopwatch:
    """Seconds per stage, in order."""

    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._last = time.monotonic()

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.laps[name] = round(now - self._last, 1)
        self._last = now


def sft_figures(run: Path) -> dict:
    """What the SFT run logged: data counts, levers, steps, first and last loss, median tokens/s."""
    import statistics

    from clawgym.train.metrics import read_metrics

    rows = read_metrics(run, "train")
    data = next(iter(read_metrics(run, "data")), {})
    levers = next(iter(read_metrics(run, "kernels")), {})
    if not rows:
        return {"data": data, "kernels": levers}
    return {
        "data": {k: v for k, v in data.items() if k not in ("kind", "step")},
        "kernels": {k: v for k, v in levers.items() if k not in ("kind", "step")},
        "steps": rows[-1]["step"],
        "loss_first": rows[0]["loss"],
        "loss_last": rows[-1]["loss"],
        "tokens": rows[-1]["tokens"],
        "tokens_per_s": statistics.median(r["tokens_per_s"] for r in rows),
    }


def evaluate_once(label: str, model: str, tasks: list[Path], out: Path, preset: dict, policy: str = "hf") -> dict:
    """Pass rate and mean reward of `model` on `tasks` (seed 0: concrete specs), generated by
    `policy` (hf: in-process transformers; vllm: an engine for the evaluation), cached in OUT/eval."""
    from clawgym.train.evaluate import evaluate

    label = label if policy == "hf" else f"{label}-{policy}"
    cached = out / "eval" / f"{label}.json"
    if cached.is_file():
        return json.loads(cached.read_text())
    result = evaluate(
        model,
        tasks,
        [0],
        out / "eval" / label,
        max_turns=preset["max_turns"],
        max_tokens=preset["max_tokens"],
        concurrency=preset["concurrency"],
        max_batch=preset.get("max_batch", 1),
        policy_type=policy,
    )
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(result))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="cpu")
    parser.add_argument("--out", type=Path, default=Path("runs/sft-experiment"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default="embedded", help="embedded (default), tiny (a test), or a model folder")
    parser.add_argument("--json", type=Path, help="write the figures known so far here after every stage")
    parser.add_argument(
        "--policy",
        choices=("hf", "vllm"),
        default="hf",
        help="what generates in the evaluations: transformers in-process (hf) or the vLLM engine (vllm)",
    )
    args = parser.parse_args()
    from rich.console import Console

    from clawgym.synth.dataset import Dataset
    from clawgym.train.expert import expert_command
    from clawgym.train.sft import train_sft
    from clawgym.train.spec import load_train_spec

    console = Console()
    preset, out = PRESETS[args.preset], args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    start = model_name = args.model
    if args.model == "tiny":
        start = model_name = str(tiny_model(out / "tiny-model"))
    clock = Stopwatch()
    report: dict = {"preset": args.preset, "model": args.model, "stage": "synth", "seconds": clock.laps}
    folder = synthesize_training(preset, out, args.seed)
    clock.lap("synth")
    records = Dataset(folder).accepted()
    train = [folder / r["path"] for r in pick(records, "train", preset["train_tasks"], preset["max_chain"], args.seed)]
    validation = [folder / r["path"] for r in pick(records, "validation", preset["eval_validation"], 6, args.seed)]
    bench = bench_instances(preset["eval_bench"], args.seed)
    console.print(
        f"{len(train)} training tasks, {len(validation)} validation tasks (unseen families), "
        f"{len(bench)} benchmark v2 instances",
        highlight=False,
    )

    report.update(train_tasks=len(train), validation_tasks=len(validation), bench_v2_instances=len(bench))
    experts = out / "experts.jsonl"
    if not experts.is_file():
        jobs = min(preset["concurrency"], (os.cpu_count() or 2) * 2)
        expert_command(train, seeds="0", out=experts, jobs=jobs, console=console)
    report["expert_trajectories"] = sum(1 for line in experts.open() if line.strip())
    clock.lap("experts")
    report["stage"] = "before"
    write_json(args.json, report)

    sets = {"a_validation_unseen_families": validation, "b_benchmark_v2": bench}
    before = {}
    for name, tasks in sets.items():
        before[name] = evaluate_once(f"before-{name}", start, tasks, out, preset, args.policy)
        clock.lap(f"before-{name}")
        report.update(stage="sft", before=before)
        write_json(args.json, report)

    spec_file = out / "train.yaml"
    spec_file.write_text(
        json.dumps(
            {
                "apiVersion": "clawgym/v1",
                "kind": "Train",
                "name": "sft-experiment",
                "model": model_name,
                "data": {
                    "sources": ["experts.jsonl"],
                    "max_length": preset["max_length"],
                    "batch_size": preset["batch_size"],
                    "batching": "packing",
                },
                "optim": {
                    "lr": preset["lr"],
                    "epochs": preset["epochs"],
                    "max_steps": preset["max_steps"],
                    "grad_accum": preset["grad_accum"],
                    "warmup_steps": preset.get("warmup_steps", 10),
                    "schedule": preset.get("schedule", "cosine"),
                },
                "kernels": {"fused_loss": "auto"},
                "log": {"tensorboard": False},
                # checkpointing on CPU too: 5-6K-token trajectories of a 135M model otherwise need about 18 GiB
                "gradient_checkpointing": preset.get("gradient_checkpointing", True),
                "seed": args.seed,
                "out": str(out / "sft"),
            },
            indent=1,
        )
    )
    model = train_sft(load_train_spec(spec_file), console=console, progress=False)
    clock.lap("sft")
    report.update(stage="after", sft=sft_figures(out / "sft"))
    write_json(args.json, report)

    after = {}
    for name, tasks in sets.items():
        after[name] = evaluate_once(f"after-{name}", str(model.resolve()), tasks, out, preset, args.policy)
        clock.lap(f"after-{name}")
        report.update(after=after)
        write_json(args.json, report)
    results = {
        "preset": args.preset,
        "model": args.model,
        "train_tasks": [str(p.relative_to(out)) for p in train],
        "validation_tasks": [str(p.relative_to(out)) for p in validation],
        "bench_v2_instances": [str(p.relative_to(ROOT)) for p in bench],
        "before": before,
        "after": after,
        "sft": report["sft"],
        "seconds": clock.laps,
        "settings": {k: preset[k] for k in ("max_turns", "max_tokens", "concurrency", "max_batch")}
        | {"policy": args.policy},
    }
    (out / "results.json").write_text(json.dumps(results, indent=1))
    report["stage"] = "done"
    write_json(args.json, report)
    for name in sets:
        for when, res in (("before", before[name]), ("after", after[name])):
            console.print(
                f"{name:32} {when:6} pass rate {res['pass_rate']} {res['pass_rate_ci']}  "
                f"mean reward {res['mean_reward']} {res['mean_reward_ci']}  ({res['trials']} trials)",
                highlight=False,
            )
    print(summary_line(report), flush=True)


def summary_line(report: dict) -> str:
    """One line: pass rate before -> after on each set, with 95% CIs."""
    parts = []
    for name, res in report.get("before", {}).items():
        after = report.get("after", {}).get(name)
        later = f" -> {after['pass_rate']} {after['pass_rate_ci']}" if after else " -> (not measured)"
        parts.append(f"{name} pass rate {res['pass_rate']} {res['pass_rate_ci']}{later} ({res['trials']} trials)")
    sft = report.get("sft", {})
    train = (
        (
            f"; SFT {sft['steps']} steps on {report.get('expert_trajectories')} demonstrations, loss "
            f"{sft['loss_first']:.3f} -> {sft['loss_last']:.3f}, {sft['tokens_per_s']:,.0f} tok/s"
        )
        if "steps" in sft
        else ""
    )
    return f"sft experiment ({report['preset']}, {report['model']}): " + "; ".join(parts) + train


if __name__ == "__main__":
    main()
