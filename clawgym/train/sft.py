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
`accelerate launch -m clawgym.cli.main train sft SPEC` (DDP, FSDP or DeepSpeed from the accelerate config).
"""

from __future__ import annotations

import math
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from ..errors import ClawgymError
from . import checkpoint, kernels
from .batching import Example, collate, plan_batches
from .checkpoint import TrainerState
from .kernels import plain_token_loss
from .loop import (
    INSTALL_HINT,  # noqa: F401
    apply_lora,  # noqa: F401
    evaluate_during_training,
    load_model,
    make_optimizer,  # noqa: F401
    progress_bar,
    start_run,
    training_libs,
)
from .spec import TrainSpec


def build_examples(spec: TrainSpec, tokenizer: Any) -> tuple[list[Example], dict[str, Any]]:
    """Selected trajectories as tokenized examples, and counts of what was kept and dropped."""
    from .data import examples_from_sources

    return examples_from_sources(
        spec.sources, tokenizer, data=spec.data, chat_template=spec.chat_template, seed=spec.seed
    )


_token_loss = plain_token_loss  # the loss without levers (see kernels.py)


def train_sft(
    spec: TrainSpec,
    *,
    resume: bool = True,
    console: Any = None,
    progress: bool = True,
    examples: list[Example] | None = None,
) -> Path:
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
        hint = (
            f"raise data.max_length ({counts['too_long']} conversation(s) do not fit even with their first turn only)"
            if counts.get("too_long")
            else "lower data.min_reward, widen data.statuses or add sources"
        )
        raise ClawgymError(
            "no training examples after selection: " + ", ".join(f"{k} {v}" for k, v in counts.items()),
            file=str(spec.file),
            key="data",
            hint=hint,
        )
    if last is None:
        log.write(0, counts, kind="data")
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (tokenizer.eos_token_id or 0)

    # 3. batches, optimiser, schedule
    data, optim = spec.data, spec.optim
    lengths = [len(e.input_ids) for e in examples]

    def step_groups(epoch: int) -> list[list[list[int]]]:
        batches = plan_batches(
            lengths,
            batching=data["batching"],
            batch_size=data["batch_size"],
            max_length=data["max_length"],
            seed=spec.seed,
            epoch=epoch,
        )
        per_step = optim["grad_accum"] * world
        groups = [batches[i : i + per_step] for i in range(0, len(batches), per_step)]
        return [g for g in groups if len(g) >= world]  # every process needs a micro-batch in every step

    steps_per_epoch = len(step_groups(0))
    if steps_per_epoch == 0:
        raise ClawgymError(
            f"{len(examples)} example(s) make fewer micro-batches than the {world} processes need for one step",
            file=str(spec.file),
            key="data.batch_size",
            hint="lower data.batch_size, add data, or run on fewer processes",
        )
    total_steps = optim["max_steps"] or max(1, math.ceil(optim["epochs"] * steps_per_epoch))
    optimizer, scheduler = make_optimizer(libs, model, optim, total_steps)
    # the scheduler is not prepared: accelerate would step it once per process; it steps once per
    # optimiser step here, and is registered so that checkpoints hold it
    token_loss_fn, levers = kernels.choose(spec.kernels, model, accelerator.device.type, file=str(spec.file))
    if last is None:
        log.write(0, levers, kind="kernels")
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
        for group in groups[state.batch_in_epoch :]:
            t0 = time.monotonic()
            step_examples = [examples[i] for batch in group for i in batch]
            trained = sum(e.trained_tokens for e in step_examples)  # the same on every process
            mine = group[rank::world]
            model.train()
            loss_sum = torch.zeros((), device=accelerator.device)
            for j, batch_ids in enumerate(mine):
                batch = {
                    k: v.to(accelerator.device)
                    for k, v in collate(
                        [examples[i] for i in batch_ids], batching=data["batching"], pad_id=pad_id
                    ).items()
                }
                sync = nullcontext() if j == len(mine) - 1 else accelerator.no_sync(model)
                with sync:
                    token_loss = token_loss_fn(torch, model, batch)
                    accelerator.backward(token_loss * world / max(1, trained))  # DDP averages over processes
                loss_sum += token_loss.detach()
            grad_norm = (
                accelerator.clip_grad_norm_(model.parameters(), optim["max_grad_norm"])
                if optim["max_grad_norm"]
                else None
            )
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
                log.write(
                    state.step,
                    {
                        "loss": total_loss / max(1, trained),
                        "lr": scheduler.get_last_lr()[0],
                        "tokens_per_s": seen / max(1e-9, time.monotonic() - t0),
                        "trained_tokens": trained,
                        "tokens": state.tokens,
                        "epoch": state.epoch,
                        "grad_norm": float(grad_norm) if grad_norm is not None else None,
                    },
                )
            if bar is not None:
                bar[0].update(bar[1], advance=1, description=f"loss {total_loss / max(1, trained):.4f}")
            if state.step % spec.checkpoint["every_steps"] == 0 and state.step < total_steps:
                checkpoint.save(accelerator, out, state, spec.checkpoint["keep"])
            if spec.eval["every_steps"] and state.step % spec.eval["every_steps"] == 0 and state.step < total_steps:
                evaluate_during_training(
                    spec, accelerator, model, tokenizer, out / "eval-model", state.step, log, console
                )
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
