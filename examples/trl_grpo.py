"""GRPO with TRL's own trainer on ClawGym tasks: `GRPOTrainer(environment_factory=...)`.

    python3 examples/trl_grpo.py --out runs/trl-grpo                   # CPU: 2 steps, the embedded model
    python3 examples/trl_grpo.py --out runs/trl-grpo --model tiny       # the plumbing only: a 2-layer random model
    python3 examples/trl_grpo.py --out runs/trl-grpo --tasks bench:3 --limit 16 --steps 50
    python3 examples/trl_grpo.py --out runs/trl-grpo --vllm --vllm-url http://127.0.0.1:8000

Each rollout runs its task instance in our sandbox; the model's tool calls are the claw agent's
tools; the reward is our verifier's. Writes DIR/metrics.jsonl (one line per logged step: reward
mean and std, the ClawGym reward column, loss, tool calls and failures, completion lengths),
DIR/trials/ (every rollout's record.json, trajectory.json and workspace.diff, as `clawgym run`
writes them) and DIR/summary.json. `--vllm` generates with TRL's vLLM server mode: start the
server first with `trl vllm-serve --model MODEL` in an environment that has vllm and trl.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, type=Path, help="Folder for metrics.jsonl, trials/ and summary.json.")
    p.add_argument("--tasks", nargs="+", default=["specs/tasks"], help="Task sources (specs, a dataset, bench:3).")
    p.add_argument("--seeds", nargs="+", type=int, default=[0], help="Seeds of task specs (not of bench/datasets).")
    p.add_argument("--split", default=None, help="Keep this split of a synthesized dataset (train, val, ...).")
    p.add_argument("--limit", type=int, default=4, help="Most task instances in the dataset.")
    p.add_argument(
        "--model",
        default="embedded",
        help="A Hugging Face model folder or name; 'embedded': SmolLM2-135M; 'tiny': a random 2-layer model "
        "with the embedded tokenizer (checks the plumbing in about a minute, learns nothing).",
    )
    p.add_argument("--steps", type=int, default=2, help="GRPO steps.")
    p.add_argument("--num-generations", type=int, default=2, help="Rollouts per prompt (the GRPO group).")
    p.add_argument("--max-completion-length", type=int, default=128, help="Tokens per rollout, all turns together.")
    p.add_argument("--max-tool-calls", type=int, default=4, help="Most tool-calling rounds per rollout.")
    p.add_argument("--learning-rate", type=float, default=1e-5)
    p.add_argument("--vllm", action="store_true", help="Generate with TRL's vLLM server mode.")
    p.add_argument("--vllm-url", default="http://127.0.0.1:8000", help="The `trl vllm-serve` server.")
    return p.parse_args(argv)


def model_path(name: str, out: Path) -> str:
    """A model folder: the embedded model, a tiny random one written under `out`, or `name` itself."""
    if name not in ("embedded", "tiny"):
        return name
    from clawgym.policy.embedded import embedded_model_path

    if name == "embedded":
        return str(embedded_model_path())
    from clawgym.train.tiny import tiny_model

    return str(tiny_model(out / "tiny-model"))


class MetricsFile:
    """Appends every log TRL emits (one dict per logged step) to metrics.jsonl."""

    def __init__(self, path: Path) -> None:
        from transformers import TrainerCallback

        self.path = path
        outer = self

        class _Callback(TrainerCallback):
            def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ANN001
                if logs:
                    with outer.path.open("a", encoding="utf-8") as f:
                        f.write(json.dumps({"step": state.global_step, **logs}) + "\n")

        self.callback = _Callback()


def main(argv: list[str] | None = None) -> dict:
    import os

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from clawgym.integrations.trl import ClawGymEnvironments, load_taskset, tool_tokenizer

    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    metrics = args.out / "metrics.jsonl"
    metrics.unlink(missing_ok=True)
    taskset = load_taskset(args.tasks, seeds=args.seeds, split=args.split, limit=args.limit)
    envs = ClawGymEnvironments(taskset, out=args.out)
    path = model_path(args.model, args.out)
    tokenizer = tool_tokenizer(AutoTokenizer.from_pretrained(path))
    model = AutoModelForCausalLM.from_pretrained(path)
    config = GRPOConfig(
        output_dir=str(args.out / "checkpoints"),
        max_steps=args.steps,
        per_device_train_batch_size=args.num_generations,
        num_generations=args.num_generations,
        max_completion_length=args.max_completion_length,
        max_tool_calling_iterations=args.max_tool_calls,
        learning_rate=args.learning_rate,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=not args.vllm,
        use_vllm=args.vllm,
        vllm_mode="server",
        vllm_server_base_url=args.vllm_url if args.vllm else None,
        seed=0,
    )
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        args=config,
        train_dataset=envs.dataset(),
        environment_factory=envs,
        callbacks=[MetricsFile(metrics).callback, envs.callback()],
    )
    started = time.monotonic()
    try:
        trainer.train()
    finally:
        envs.close()
    lines = [json.loads(line) for line in metrics.read_text(encoding="utf-8").splitlines() if line]
    summary = {
        "model": args.model,
        "tasks": args.tasks,
        "instances": len(taskset),
        "steps": trainer.state.global_step,
        "rollouts": envs.counts["rollouts"],
        "infrastructure_errors": envs.counts["errors"],
        "reward_mean_per_step": [line.get("reward") for line in lines if "reward" in line],
        "seconds": round(time.monotonic() - started, 1),
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(summary, indent=2))
    return summary


if __name__ == "__main__":
    main()
