"""The SFT experiment: does training on expert trajectories help the embedded model, on new seeds of
the training families and on families it never saw?

1. split the synthesis task families (specs/synth/families/) by family: some train, some held out;
2. expert trajectories (reference solutions replayed as claw tool calls) on training seeds;
3. evaluate the embedded SmolLM2-135M-Instruct (claw agent, greedy) on (a) new seeds of the
   training families and (b) the held-out families;
4. SFT it on the expert trajectories (`clawgym train sft`);
5. evaluate the trained model on the same tasks and seeds; print pass rate and mean reward with
   bootstrap 95% CIs, before and after, and write them to OUT/results.json.

    python benchmarks/sft_experiment.py --preset gpu     # the full experiment (a GPU)
    python benchmarks/sft_experiment.py --preset cpu     # a reduced configuration that runs on 2 CPU cores

Every stage keeps its output in OUT and is skipped when already done, so a killed run continues.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PRESETS = {
    # train families per category, held-out families per category, seeds, SFT steps, eval settings
    "gpu": {"train_per_category": 4, "heldout_per_category": 2, "train_seeds": "0-19", "eval_seeds": "1000-1001",
            "max_length": 8192, "batch_size": 4, "grad_accum": 2, "epochs": 3, "max_steps": None, "lr": 2e-5,
            "max_turns": 10, "max_tokens": 1536, "concurrency": 8},
    # 2 CPU cores: one training family whose reference script barely changes between seeds (so a
    # 135M model can learn it from a few demonstrations), one held-out family
    "cpu": {"train_families": ["content/catalog-price-update"], "heldout_families": ["planning/chore-rota-balance"],
            "train_seeds": "0-5", "eval_seeds": "1000-1003", "max_length": 6144, "batch_size": 1, "grad_accum": 1,
            "epochs": 4, "max_steps": None, "lr": 1e-4, "schedule": "constant", "warmup_steps": 2, "max_turns": 5, "max_tokens": 900,
            "concurrency": 2},
}


def split_families(preset: dict, seed: int) -> tuple[list[Path], list[Path]]:
    """(training families, held-out families): the preset's own lists, or chosen per category by seed."""
    root = ROOT / "specs" / "synth" / "families"
    if "train_families" in preset:
        return ([root / f"{f}.yaml" for f in preset["train_families"]],
                [root / f"{f}.yaml" for f in preset["heldout_families"]])
    rng = random.Random(seed)
    train, held = [], []
    for category in sorted(p.name for p in root.iterdir() if p.is_dir()):
        fams = sorted((root / category).glob("*.yaml"))
        rng.shuffle(fams)
        n_train, n_held = preset["train_per_category"], preset["heldout_per_category"]
        train += fams[:n_train]
        held += fams[n_train:n_train + n_held]
    return train, held


def evaluate_once(label: str, model: str, tasks: list[Path], seeds: list[int], out: Path, preset: dict,
                  **settings: Any) -> dict:
    """Pass rate and mean reward of `model` with the preset's turns, tokens and concurrency, any of
    them (or temperature, attempts, max_batch) overridden by `settings`; cached in OUT/eval."""
    from clawgym.train.evaluate import evaluate

    cached = out / "eval" / f"{label}.json"
    if cached.is_file():
        return json.loads(cached.read_text())
    result = evaluate(model, tasks, seeds, out / "eval" / label,
                      **{"max_turns": preset["max_turns"], "max_tokens": preset["max_tokens"],
                         "concurrency": preset["concurrency"], **settings})
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

    from clawgym.plan import parse_seeds
    from clawgym.train.expert import expert_command
    from clawgym.train.sft import train_sft
    from clawgym.train.spec import load_train_spec

    console = Console()
    preset, out = PRESETS[args.preset], args.out
    out.mkdir(parents=True, exist_ok=True)
    train, held = split_families(preset, args.seed)
    console.print(f"training families: {', '.join(p.stem for p in train)}\nheld-out families: "
                  f"{', '.join(p.stem for p in held)}", highlight=False)

    experts = out / "experts.jsonl"
    if not experts.is_file():
        expert_command(train, seeds=preset["train_seeds"], out=experts, jobs=preset["concurrency"], console=console)

    eval_seeds = parse_seeds(preset["eval_seeds"])
    sets = {"a_training_families_new_seeds": train, "b_heldout_families": held}
    before = {name: evaluate_once(f"before-{name}", "embedded", tasks, eval_seeds, out, preset)
              for name, tasks in sets.items()}

    spec_file = out / "train.yaml"
    spec_file.write_text(json.dumps({
        "apiVersion": "clawgym/v1", "kind": "Train", "name": "sft-experiment", "model": "embedded",
        "data": {"sources": ["experts.jsonl"], "max_length": preset["max_length"], "batch_size": preset["batch_size"],
                 "batching": "packing"},
        "optim": {"lr": preset["lr"], "epochs": preset["epochs"], "max_steps": preset["max_steps"],
                  "grad_accum": preset["grad_accum"], "warmup_steps": preset.get("warmup_steps", 10),
                  "schedule": preset.get("schedule", "cosine")},
        "gradient_checkpointing": args.preset == "gpu", "seed": args.seed, "out": str(out / "sft")}, indent=1))
    model = train_sft(load_train_spec(spec_file), console=console)

    after = {name: evaluate_once(f"after-{name}", str(model.resolve()), tasks, eval_seeds, out, preset)
             for name, tasks in sets.items()}
    results = {"preset": args.preset, "train_families": [p.stem for p in train], "heldout_families": [p.stem for p in held],
               "eval_seeds": eval_seeds, "before": before, "after": after}
    (out / "results.json").write_text(json.dumps(results, indent=1))
    for name in sets:
        for when, res in (("before", before[name]), ("after", after[name])):
            console.print(f"{name:32} {when:6} pass rate {res['pass_rate']} {res['pass_rate_ci']}  "
                          f"mean reward {res['mean_reward']} {res['mean_reward_ci']}  ({res['trials']} trials)",
                          highlight=False)


if __name__ == "__main__":
    main()
