"""Supervised fine-tuning on trajectories, driven by accelerate. Reads top to bottom:

1. load the model and tokenizer (LoRA and gradient checkpointing if asked);
2. build the examples: select trajectories (reward, status, dedupe, cap) and tokenize them with
   the chat template and tool schemas, loss on assistant tokens only (`data.py`);
3. plan micro-batches per epoch (packing or padding, `batching.py`), the optimiser and schedule;
4. resume from the last checkpoint if there is one;
5. for each optimiser step: `grad_accum × processes` micro-batches, loss = summed token
   cross-entropy / the step's trained tokens (exact under accumulation and data parallelism),
   clip, step; log loss, learning rate and tokens/s; checkpoint and evaluate every N steps;
6. save a Hugging Face model folder (`OUT/model`) and evaluate it.

Run on CPU or one GPU with `clawgym train sft SPEC`, on several GPUs or machines with
`accelerate launch -m clawgym.cli train sft SPEC` (DDP, FSDP or DeepSpeed from the accelerate config).
"""

from __future__ import annotations

import math
import shutil
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from ..errors import ClawgymError, PrerequisiteError
from . import checkpoint
from .batching import Example, collate, plan_batches
from .checkpoint import TrainerState
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
        raise PrerequisiteError(f"training needs torch, transformers and accelerate ({exc})", hint=INSTALL_HINT) from None
    return {"torch": torch, "Accelerator": Accelerator, "set_seed": set_seed, "AutoModelForCausalLM": AutoModelForCausalLM,
            "AutoTokenizer": AutoTokenizer, "get_scheduler": get_scheduler}


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
        raise ClawgymError(f"cannot load the model {spec.model!r}: {str(exc).splitlines()[0][:300]}", key="model",
                           file=str(spec.file), hint="give a local Hugging Face model folder, a hub id, or 'embedded'") from None
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
    return get_peft_model(model, LoraConfig(r=lora["r"], lora_alpha=lora["alpha"], lora_dropout=lora["dropout"],
                                            target_modules=lora["target_modules"], task_type="CAUSAL_LM"))


def start_run(spec: Any, libs: dict[str, Any], *, resume: bool,
              also_clear: tuple[str, ...] = ()) -> tuple[Any, Path | None, MetricsLog]:
    """The Accelerator (seeded), the checkpoint to resume from (None: start over, removing earlier
    checkpoints, metrics and the `also_clear` folders of OUT) and the metrics log."""
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
    log = MetricsLog(out, enabled=accelerator.is_main_process, tensorboard=bool(spec.log["tensorboard"]),
                     after_step=checkpoint.step_of(last) if last is not None else None)
    return accelerator, last, log


def make_optimizer(libs: dict[str, Any], model: Any, optim: dict[str, Any], total_steps: int) -> tuple[Any, Any]:
    """AdamW over the trainable parameters, and the spec's learning-rate schedule after warm-up."""
    optimizer = libs["torch"].optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=optim["lr"],
                                          weight_decay=optim["weight_decay"])
    scheduler = libs["get_scheduler"]({"cosine": "cosine", "linear": "linear", "constant": "constant_with_warmup"}
                                      [optim["schedule"]], optimizer, num_warmup_steps=optim["warmup_steps"],
                                      num_training_steps=total_steps)
    return optimizer, scheduler


def build_examples(spec: TrainSpec, tokenizer: Any) -> tuple[list[Example], dict[str, Any]]:
    """Selected trajectories as tokenized examples, and counts of what was kept and dropped."""
    from .data import examples_from_sources

    return examples_from_sources(spec.sources, tokenizer, data=spec.data, chat_template=spec.chat_template,
                                 seed=spec.seed)


def _token_loss(torch: Any, model: Any, batch: dict[str, Any]) -> Any:
    """Summed cross-entropy over the batch's trained tokens (labels aligned to inputs).

    Only positions that predict a trained token get logits (`logits_to_keep`): prompts and tool
    results never go through the vocabulary projection, which saves most of its time and memory.
    """
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    targets = batch["labels"][:, 1:]
    keep = (targets != -100).any(dim=0).nonzero().flatten()
    logits = model(**inputs, use_cache=False, logits_to_keep=keep).logits
    return torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), targets[:, keep].flatten(),
                                             ignore_index=-100, reduction="sum")


def train_sft(spec: TrainSpec, *, resume: bool = True, console: Any = None, progress: bool = True,
              examples: list[Example] | None = None) -> Path:
    """Train, checkpointing and evaluating as the spec says; returns the saved model folder.

    `examples` replaces the data the spec selects (benchmarks train on synthetic tokens this way).
    """
    libs = training_libs()
    torch = libs["torch"]
    accelerator, last, log = start_run(spec, libs, resume=resume)
    out, world, rank = spec.out, accelerator.num_processes, accelerator.process_index

    # 1-2. model and data
    tokenizer, model = load_model(spec, libs)
    if examples is None:
        examples, counts = build_examples(spec, tokenizer)
    else:
        counts = {"given": len(examples)}
    if not examples:
        hint = (f"raise data.max_length ({counts['too_long']} conversation(s) do not fit even with their first turn only)"
                 if counts.get("too_long") else "lower data.min_reward, widen data.statuses or add sources")
        raise ClawgymError("no training examples after selection: " + ", ".join(f"{k} {v}" for k, v in counts.items()),
                           file=str(spec.file), key="data", hint=hint)
    if last is None:
        log.write(0, counts, kind="data")
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (tokenizer.eos_token_id or 0)

    # 3. batches, optimiser, schedule
    data, optim = spec.data, spec.optim
    lengths = [len(e.input_ids) for e in examples]

    def step_groups(epoch: int) -> list[list[list[int]]]:
        batches = plan_batches(lengths, batching=data["batching"], batch_size=data["batch_size"],
                               max_length=data["max_length"], seed=spec.seed, epoch=epoch)
        per_step = optim["grad_accum"] * world
        groups = [batches[i:i + per_step] for i in range(0, len(batches), per_step)]
        return [g for g in groups if len(g) >= world]  # every process needs a micro-batch in every step

    steps_per_epoch = len(step_groups(0))
    if steps_per_epoch == 0:
        raise ClawgymError(f"{len(examples)} example(s) make fewer micro-batches than the {world} processes need "
                           "for one step", file=str(spec.file), key="data.batch_size",
                           hint="lower data.batch_size, add data, or run on fewer processes")
    total_steps = optim["max_steps"] or max(1, math.ceil(optim["epochs"] * steps_per_epoch))
    optimizer, scheduler = make_optimizer(libs, model, optim, total_steps)
    # the scheduler is not prepared: accelerate would step it once per process; it steps once per
    # optimiser step here, and is registered so that checkpoints hold it
    model, optimizer = accelerator.prepare(model, optimizer)
    accelerator.register_for_checkpointing(scheduler)

    # 4. resume
    state = TrainerState()
    if last is not None:
        state = checkpoint.restore(accelerator, last)
        if console is not None and accelerator.is_main_process:
            console.print(f"resuming from {last} (step {state.step} of {total_steps})", highlight=False)

    # 5. the steps
    bar = progress_bar(console, progress and accelerator.is_main_process, total_steps, state.step)
    started = time.monotonic() - state.elapsed_s
    while state.step < total_steps:
        groups = step_groups(state.epoch)
        for group in groups[state.batch_in_epoch:]:
            t0 = time.monotonic()
            step_examples = [examples[i] for batch in group for i in batch]
            trained = sum(e.trained_tokens for e in step_examples)  # the same on every process
            mine = group[rank::world]
            model.train()
            loss_sum = torch.zeros((), device=accelerator.device)
            for j, batch_ids in enumerate(mine):
                batch = {k: v.to(accelerator.device) for k, v in collate(
                    [examples[i] for i in batch_ids], batching=data["batching"], pad_id=pad_id).items()}
                sync = nullcontext() if j == len(mine) - 1 else accelerator.no_sync(model)
                with sync:
                    token_loss = _token_loss(torch, model, batch)
                    accelerator.backward(token_loss * world / max(1, trained))  # DDP averages over processes
                loss_sum += token_loss.detach()
            grad_norm = (accelerator.clip_grad_norm_(model.parameters(), optim["max_grad_norm"])
                         if optim["max_grad_norm"] else None)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            total_loss = accelerator.reduce(loss_sum, reduction="sum").item()
            seen = sum(len(e.input_ids) for e in step_examples)
            state.step += 1
            state.batch_in_epoch += 1
            state.tokens += seen
            state.elapsed_s = time.monotonic() - started
            if state.step % spec.log["every_steps"] == 0 or state.step == total_steps:
                log.write(state.step, {"loss": total_loss / max(1, trained), "lr": scheduler.get_last_lr()[0],
                                       "tokens_per_s": seen / max(1e-9, time.monotonic() - t0),
                                       "trained_tokens": trained, "tokens": state.tokens, "epoch": state.epoch,
                                       "grad_norm": float(grad_norm) if grad_norm is not None else None})
            if bar is not None:
                bar[0].update(bar[1], advance=1, description=f"loss {total_loss / max(1, trained):.4f}")
            if state.step % spec.checkpoint["every_steps"] == 0 and state.step < total_steps:
                checkpoint.save(accelerator, out, state, spec.checkpoint["keep"])
            if spec.eval["every_steps"] and state.step % spec.eval["every_steps"] == 0 and state.step < total_steps:
                evaluate_during_training(spec, accelerator, model, tokenizer, out / "eval-model", state.step, log, console)
            if state.step >= total_steps:
                break
        else:
            state.epoch += 1
            state.batch_in_epoch = 0
    if bar is not None:
        bar[0].stop()

    # 6. the model, its last checkpoint and its evaluation
    checkpoint.save(accelerator, out, state, spec.checkpoint["keep"])
    folder = out / "model"
    checkpoint.save_model(accelerator, model, tokenizer, folder, chat_template=spec.chat_template)
    evaluate_during_training(spec, accelerator, model, tokenizer, folder, state.step, log, console, saved=True)
    log.close()
    return folder


def evaluate_during_training(spec: TrainSpec, accelerator: Any, model: Any, tokenizer: Any, folder: Path, step: int,
              log: MetricsLog, console: Any, saved: bool = False) -> None:
    """Evaluate on the validation tasks (main process), saving the model first unless it is saved."""
    if not spec.eval_tasks:
        return
    if not saved:
        checkpoint.save_model(accelerator, model, tokenizer, folder, chat_template=spec.chat_template)
    if accelerator.is_main_process:
        from .evaluate import evaluate

        ev = spec.eval
        result = evaluate(str(folder.resolve()), list(spec.eval_tasks), list(spec.eval_seeds),
                          spec.out / "eval" / f"step-{step}", chat_template=spec.chat_template,
                          max_turns=ev["max_turns"], max_tokens=ev["max_tokens"], concurrency=ev["concurrency"])
        log.write(step, result, kind="eval")
        if console is not None:
            console.print(f"eval at step {step}: pass rate {result['pass_rate']}, mean reward {result['mean_reward']}",
                          highlight=False)
    accelerator.wait_for_everyone()


def progress_bar(console: Any, enabled: bool, total: int, done: int) -> tuple[Any, Any] | None:
    if not enabled or console is None:
        return None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                   console=console, transient=True)
    task_id = bar.add_task("training", total=total, completed=done)
    bar.start()
    return bar, task_id
