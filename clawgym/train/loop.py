"""What SFT (`sft.py`) and GRPO (`grpo.py`) share: the training libraries, the model and tokenizer
(LoRA, gradient checkpointing, precision), the run folder with resume, the optimiser and
schedule, evaluation of a saved model through the runner, and the progress bar."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from ..errors import ClawgymError, PrerequisiteError
from . import checkpoint
from .metrics import MetricsLog
from .spec import TrainSpec

INSTALL_HINT = "pip install -e '.[train]' (torch, transformers, accelerate, peft)"


def training_libs() -> dict[str, Any]:
    try:
        import torch
        from accelerate import Accelerator
        from accelerate.utils import set_seed
        from transformers import AutoModelForCausalLM, AutoTokenizer, get_scheduler
    except ImportError as exc:
        raise PrerequisiteError(
            f"training needs torch, transformers and accelerate ({exc})", hint=INSTALL_HINT
        ) from None
    return {
        "torch": torch,
        "Accelerator": Accelerator,
        "set_seed": set_seed,
        "AutoModelForCausalLM": AutoModelForCausalLM,
        "AutoTokenizer": AutoTokenizer,
        "get_scheduler": get_scheduler,
    }


def _precision(spec: TrainSpec, torch: Any) -> str:
    if spec.precision == "auto":
        return "bf16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "no"
    return "no" if spec.precision == "fp32" else spec.precision


def load_model(spec: TrainSpec, libs: dict[str, Any]) -> tuple[Any, Any]:
    """The tokenizer and model to train (float32 master weights; LoRA adapters when asked)."""
    from ..policy.embedded import embedded_model_path

    path = str(embedded_model_path()) if spec.model == "embedded" else spec.model
    try:
        tokenizer = libs["AutoTokenizer"].from_pretrained(path)
        model = libs["AutoModelForCausalLM"].from_pretrained(path, dtype=libs["torch"].float32)
    except (OSError, ValueError) as exc:
        raise ClawgymError(
            f"cannot load the model {spec.model!r}: {str(exc).splitlines()[0][:300]}",
            key="model",
            file=str(spec.file),
            hint="give a local Hugging Face model folder, a hub id, or 'embedded'",
        ) from None
    model.config.use_cache = False
    if spec.gradient_checkpointing:
        model.gradient_checkpointing_enable()
    if spec.lora:
        model = apply_lora(model, spec.lora)
    return tokenizer, model


def apply_lora(model: Any, lora: dict[str, Any]) -> Any:
    """Wrap `model` with LoRA adapters (peft); only they are trained."""
    try:
        from peft import LoraConfig, get_peft_model
    except ImportError:
        raise PrerequisiteError("LoRA training needs the peft package", hint=INSTALL_HINT) from None
    return get_peft_model(
        model,
        LoraConfig(
            r=lora["r"],
            lora_alpha=lora["alpha"],
            lora_dropout=lora["dropout"],
            target_modules=lora["target_modules"],
            task_type="CAUSAL_LM",
        ),
    )


def start_run(
    spec: Any, libs: dict[str, Any], *, resume: bool, also_clear: tuple[str, ...] = ()
) -> tuple[Any, Path | None, MetricsLog]:
    """The Accelerator (seeded), the checkpoint to resume from (None: start over, removing earlier
    checkpoints, metrics and the `also_clear` folders of OUT) and the metrics log."""
    if spec.eval_tasks and spec.eval.get("policy") == "vllm":  # not installed: said now, not after training
        from ..engines.install import find

        find("vllm", (spec.eval.get("engine") or {}).get("version"))
    torch = libs["torch"]
    accelerator = libs["Accelerator"](mixed_precision=_precision(spec, torch), cpu=not torch.cuda.is_available())
    libs["set_seed"](spec.seed)
    out = spec.out
    last = checkpoint.latest(out) if resume else None
    if not resume and accelerator.is_main_process:
        (out / "metrics.jsonl").unlink(missing_ok=True)
        for name in ("checkpoints", *also_clear):
            shutil.rmtree(out / name, ignore_errors=True)
    accelerator.wait_for_everyone()
    log = MetricsLog(
        out,
        enabled=accelerator.is_main_process,
        tensorboard=bool(spec.log["tensorboard"]),
        after_step=checkpoint.step_of(last) if last is not None else None,
    )
    return accelerator, last, log


def make_optimizer(libs: dict[str, Any], model: Any, optim: dict[str, Any], total_steps: int) -> tuple[Any, Any]:
    """AdamW over the trainable parameters, and the spec's learning-rate schedule after warm-up."""
    optimizer = libs["torch"].optim.AdamW(
        [p for p in model.parameters() if p.requires_grad], lr=optim["lr"], weight_decay=optim["weight_decay"]
    )
    scheduler = libs["get_scheduler"](
        {"cosine": "cosine", "linear": "linear", "constant": "constant_with_warmup"}[optim["schedule"]],
        optimizer,
        num_warmup_steps=optim["warmup_steps"],
        num_training_steps=total_steps,
    )
    return optimizer, scheduler


def evaluate_during_training(
    spec: TrainSpec,
    accelerator: Any,
    model: Any,
    tokenizer: Any,
    folder: Path,
    step: int,
    log: MetricsLog,
    console: Any,
    saved: bool = False,
    base_url: str | None = None,
) -> None:
    """Evaluate on the validation tasks (main process), saving the model first unless it is saved;
    `base_url`: a running vLLM server that serves these weights (`eval.policy: vllm` in RL)."""
    if not spec.eval_tasks:
        return
    if not saved:
        checkpoint.save_model(accelerator, model, tokenizer, folder, chat_template=spec.chat_template)
    if accelerator.is_main_process:
        from .evaluate import evaluate

        ev = spec.eval
        result = evaluate(
            str(folder.resolve()),
            list(spec.eval_tasks),
            list(spec.eval_seeds),
            spec.out / "eval" / f"step-{step}",
            chat_template=spec.chat_template,
            max_turns=ev["max_turns"],
            max_tokens=ev["max_tokens"],
            concurrency=ev["concurrency"],
            rules=getattr(spec, "evaluation_rules", None),
            policy_type=ev.get("policy", "hf"),
            engine=ev.get("engine"),
            max_batch=ev["concurrency"] if ev.get("policy") == "vllm" else 1,
            base_url=base_url,
        )
        log.write(step, result, kind="eval")
        if console is not None:
            console.print(
                f"eval at step {step}: pass rate {result['pass_rate']}, mean reward {result['mean_reward']}",
                highlight=False,
            )
    accelerator.wait_for_everyone()


def progress_bar(console: Any, enabled: bool, total: int, done: int) -> tuple[Any, Any] | None:
    if not enabled or console is None:
        return None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )
    task_id = bar.add_task("training", total=total, completed=done)
    bar.start()
    return bar, task_id
