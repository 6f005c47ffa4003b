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
    python benchmarks/sft_experiment.py --preset cpu     # a reduced configuration for 2 CPU cores (< 2 h)

Every stage keeps its output in OUT and is skipped when already done, so a killed run continues.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PRESETS = {
    # synthesized tasks, expert demonstrations kept, eval tasks per set, SFT and eval settings
    "gpu": {"synth": 4000, "train_tasks": 3000, "max_chain": 6, "eval_validation": 100, "eval_bench": 200,
            "max_length": 8192, "batch_size": 4, "grad_accum": 2, "epochs": 2, "max_steps": None, "lr": 2e-5,
            "schedule": "cosine", "warmup_steps": 20, "max_turns": 10, "max_tokens": 1536, "concurrency": 8},
    # 2 CPU cores: short composed chains (a 135M model learns those from few demonstrations soonest),
    # a few evaluation tasks per set; under 2 h in all
    "cpu": {"synth": 120, "train_tasks": 10, "max_chain": 3, "eval_validation": 4, "eval_bench": 8,
            "max_length": 6144, "batch_size": 1, "grad_accum": 1, "epochs": 2, "max_steps": None, "lr": 1e-4,
            "schedule": "constant", "warmup_steps": 2, "max_turns": 4, "max_tokens": 800, "concurrency": 2},
}


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


def evaluate_once(label: str, model: str, tasks: list[Path], out: Path, preset: dict) -> dict:
    """Pass rate and mean reward of `model` on `tasks` (seed 0: concrete specs), cached in OUT/eval."""
    from clawgym.train.evaluate import evaluate

    cached = out / "eval" / f"{label}.json"
    if cached.is_file():
        return json.loads(cached.read_text())
    result = evaluate(model, tasks, [0], out / "eval" / label, max_turns=preset["max_turns"],
                      max_tokens=preset["max_tokens"], concurrency=preset["concurrency"])
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(result))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="cpu")
    parser.add_argument("--out", type=Path, default=Path("runs/sft-experiment"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    from rich.console import Console

    from clawgym.synth.dataset import Dataset
    from clawgym.train.expert import expert_command
    from clawgym.train.sft import train_sft
    from clawgym.train.spec import load_train_spec

    console = Console()
    preset, out = PRESETS[args.preset], args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    folder = synthesize_training(preset, out, args.seed)
    records = Dataset(folder).accepted()
    train = [folder / r["path"] for r in pick(records, "train", preset["train_tasks"], preset["max_chain"], args.seed)]
    validation = [folder / r["path"] for r in pick(records, "validation", preset["eval_validation"], 6, args.seed)]
    bench = bench_instances(preset["eval_bench"], args.seed)
    console.print(f"{len(train)} training tasks, {len(validation)} validation tasks (unseen families), "
                  f"{len(bench)} benchmark v2 instances", highlight=False)

    experts = out / "experts.jsonl"
    if not experts.is_file():
        expert_command(train, seeds="0", out=experts, jobs=preset["concurrency"], console=console)

    sets = {"a_validation_unseen_families": validation, "b_benchmark_v2": bench}
    before = {name: evaluate_once(f"before-{name}", "embedded", tasks, out, preset) for name, tasks in sets.items()}

    spec_file = out / "train.yaml"
    spec_file.write_text(json.dumps({
        "apiVersion": "clawgym/v1", "kind": "Train", "name": "sft-experiment", "model": "embedded",
        "data": {"sources": ["experts.jsonl"], "max_length": preset["max_length"], "batch_size": preset["batch_size"],
                 "batching": "packing"},
        "optim": {"lr": preset["lr"], "epochs": preset["epochs"], "max_steps": preset["max_steps"],
                  "grad_accum": preset["grad_accum"], "warmup_steps": preset.get("warmup_steps", 10),
                  "schedule": preset.get("schedule", "cosine")},
        # checkpointing on CPU too: 5-6K-token trajectories of a 135M model otherwise need about 18 GiB
        "gradient_checkpointing": True, "seed": args.seed, "out": str(out / "sft")}, indent=1))
    model = train_sft(load_train_spec(spec_file), console=console)

    after = {name: evaluate_once(f"after-{name}", str(model.resolve()), tasks, out, preset)
             for name, tasks in sets.items()}
    results = {"preset": args.preset, "train_tasks": [str(p.relative_to(out)) for p in train],
               "validation_tasks": [str(p.relative_to(out)) for p in validation],
               "bench_v2_instances": [str(p.relative_to(ROOT)) for p in bench], "before": before, "after": after}
    (out / "results.json").write_text(json.dumps(results, indent=1))
    for name in sets:
        for when, res in (("before", before[name]), ("after", after[name])):
            console.print(f"{name:32} {when:6} pass rate {res['pass_rate']} {res['pass_rate_ci']}  "
                          f"mean reward {res['mean_reward']} {res['mean_reward_ci']}  ({res['trials']} trials)",
                          highlight=False)


if __name__ == "__main__":
    main()
