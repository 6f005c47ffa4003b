"""The RL experiment: GRPO from the SFT experiment's checkpoint on the training families, then the
same evaluation as the SFT experiment (same tasks, seeds and settings), before and after.

1. read the SFT experiment's folder (`benchmarks/sft_experiment.py`): its training and held-out
   families, evaluation seeds and the SFT model (`OUT/sft/model`);
2. `clawgym train rl` on the training families with seeds 0-999 (the evaluation seeds are 1000
   and up, so no evaluated instance is trained on), rollouts in bubblewrap sandboxes;
3. evaluate the SFT model (before) and the RL model (after) on (a) new seeds of the training
   families and (b) the held-out families. The GPU preset evaluates greedily, as the SFT experiment
   did, and reuses its SFT figures. The CPU preset evaluates (a) at the training temperature with 2
   attempts per seed: there the greedy SFT model already passes every (a) instance and fails every
   (b) instance, so a greedy evaluation could not show any change, while sampled at temperature 1
   it passes only some rollouts, and that is what GRPO on 3 steps can move;
4. print the training reward curve and pass rate / mean reward with bootstrap 95% CIs, before
   and after, and write them to OUT/results.json.

    python benchmarks/rl_experiment.py --sft runs/sft-experiment --preset gpu
    python benchmarks/rl_experiment.py --sft runs/sft-experiment --preset cpu   # 2 CPU cores

Every stage keeps its output in OUT and resumes when run again.
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
    "gpu": {"tasks_per_step": 8, "group_size": 8, "steps": 100, "lr": 1e-6, "max_turns": 10, "max_tokens": 1536,
            "concurrency": 64, "max_batch": 64, "kl_weight": 0.0, "refill_rounds": 2,
            "eval_temperature": 0.0, "eval_attempts": 1, "eval_sets": ["a_training_families_new_seeds", "b_heldout_families"]},
    # 2 CPU cores: one group of 4 per step, one refill round; a larger lr so 3 steps can move a 135M model
    "cpu": {"tasks_per_step": 1, "group_size": 4, "steps": 3, "lr": 1e-5, "max_turns": 5, "max_tokens": 900,
            "concurrency": 4, "max_batch": 4, "kl_weight": 0.0, "refill_rounds": 1,
            "eval_temperature": 1.0, "eval_attempts": 2, "eval_sets": ["a_training_families_new_seeds"]},
}


def evaluate_model(label: str, model: str, tasks: list[Path], seeds: list[int], out: Path, preset: dict,
                   sft_preset: dict) -> dict:
    """Pass rate and mean reward of `model` with the SFT experiment's turns and tokens and this
    preset's temperature, attempts and batching (cached in OUT/eval)."""
    from sft_experiment import evaluate_once

    return evaluate_once(label, model, tasks, seeds, out, sft_preset, concurrency=preset["concurrency"],
                         temperature=preset["eval_temperature"], attempts=preset["eval_attempts"],
                         max_batch=preset["max_batch"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sft", type=Path, default=Path("runs/sft-experiment"), help="the SFT experiment's folder")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="cpu")
    parser.add_argument("--out", type=Path, default=Path("runs/rl-experiment"))
    args = parser.parse_args()
    from rich.console import Console

    from clawgym.train.grpo import train_rl
    from clawgym.train.metrics import read_metrics
    from clawgym.train.rl_spec import load_rl_spec
    from sft_experiment import PRESETS as SFT_PRESETS
    from sft_experiment import split_families

    console = Console()
    sft = json.loads((args.sft / "results.json").read_text())
    sft_preset = SFT_PRESETS[sft["preset"]]
    train, held = split_families(sft_preset, 0)
    assert [p.stem for p in train] == sft["train_families"], "the SFT experiment used another split"
    preset, out = PRESETS[args.preset], args.out
    out.mkdir(parents=True, exist_ok=True)

    spec_file = out / "rl.yaml"
    spec_file.write_text(json.dumps({
        "apiVersion": "clawgym/v1", "kind": "RL", "name": "rl-experiment",
        "model": str((args.sft / "sft" / "model").resolve()), "tasks": [str(p) for p in train], "seeds": "0-999",
        "rollout": {k: preset[k] for k in ("tasks_per_step", "group_size", "max_turns", "max_tokens", "concurrency",
                                           "max_batch", "refill_rounds")} | {"temperature": 1.0},
        "loss": {"kl_weight": preset["kl_weight"], "micro_batch_tokens": 8192},
        "optim": {"lr": preset["lr"], "steps": preset["steps"]}, "precision": "fp32",
        "gradient_checkpointing": args.preset == "gpu", "checkpoint": {"every_steps": 1, "keep": 2},
        "log": {"tensorboard": False}, "out": str((out / "rl").resolve())}, indent=1))
    sets = {name: tasks for name, tasks in {"a_training_families_new_seeds": train, "b_heldout_families": held}.items()
            if name in preset["eval_sets"]}
    seeds, sft_model = sft["eval_seeds"], str((args.sft / "sft" / "model").resolve())
    greedy = preset["eval_temperature"] == 0 and preset["eval_attempts"] == 1
    before = {name: sft["after"][name] if greedy else  # the SFT experiment's own figures: same tasks, seeds, settings
              evaluate_model(f"sft-{name}", sft_model, tasks, seeds, out, preset, sft_preset)
              for name, tasks in sets.items()}
    model = train_rl(load_rl_spec(spec_file), console=console, progress=False)

    curve = [{k: r[k] for k in ("step", "reward_mean", "reward_std", "pass_rate", "groups", "dropped_groups",
                                "response_tokens", "turns", "clip_frac", "kl")} for r in read_metrics(out / "rl", "train")]
    after = {name: evaluate_model(f"rl-{name}", str(model.resolve()), tasks, seeds, out, preset, sft_preset)
             for name, tasks in sets.items()}
    (out / "results.json").write_text(json.dumps({
        "preset": args.preset, "sft": str(args.sft), "curve": curve, "before": before, "after": after,
        "eval_seeds": seeds, "eval_temperature": preset["eval_temperature"],
        "eval_attempts": preset["eval_attempts"]}, indent=1))
    console.print("step  reward mean ± std   pass rate  groups", highlight=False)
    for r in curve:
        console.print(f"{r['step']:>4}  {r['reward_mean']:.3f} ± {r['reward_std']:.3f}     {r['pass_rate']:.2f}"
                      f"       {r['groups']}", highlight=False)
    for name in sets:
        for when, res in (("SFT", before[name]), ("SFT+RL", after[name])):
            console.print(f"{name:32} {when:6} pass rate {res['pass_rate']} {res['pass_rate_ci']}  "
                          f"mean reward {res['mean_reward']} {res['mean_reward_ci']}  ({res['trials']} trials, "
                          f"temperature {preset['eval_temperature']})",
                          highlight=False)


if __name__ == "__main__":
    main()
