"""Checkpoints for resuming a training run after a kill, and the final Hugging Face model folder.

A checkpoint is `OUT/checkpoints/step-NNNNNNN/`: accelerate's saved state (model, optimiser,
scheduler, RNG states) plus `trainer_state.json` (step, epoch, micro-batches done in the epoch,
tokens seen, elapsed seconds). It is written under a temporary name and renamed when complete,
so a kill while saving leaves the previous checkpoint as the latest. The oldest are removed
beyond `keep`.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

_STEP = re.compile(r"^step-(\d+)$")


@dataclass
class TrainerState:
    """Where the loop is: what a resumed run continues from."""

    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    tokens: int = 0
    elapsed_s: float = 0.0


def latest(out: Path) -> Path | None:
    """The newest complete checkpoint under `out`, or None."""
    folder = out / "checkpoints"
    found = [
        (int(m.group(1)), p)
        for p in folder.glob("step-*")
        if (m := _STEP.match(p.name)) and (p / "trainer_state.json").is_file()
    ]
    return max(found)[1] if found else None


def step_of(checkpoint: Path) -> int:
    """The optimiser step a checkpoint was saved at."""
    m = _STEP.match(checkpoint.name)
    return int(m.group(1)) if m else 0


def save(accelerator: Any, out: Path, state: TrainerState, keep: int) -> Path:
    """Save a checkpoint of the current step (main process writes the state file) and prune old ones."""
    folder = out / "checkpoints"
    target = folder / f"step-{state.step:07d}"
    tmp = folder / f".step-{state.step:07d}.tmp"
    if accelerator.is_main_process:
        shutil.rmtree(tmp, ignore_errors=True)
    accelerator.wait_for_everyone()
    accelerator.save_state(str(tmp))
    if accelerator.is_main_process:
        (tmp / "trainer_state.json").write_text(json.dumps(asdict(state), indent=1), encoding="utf-8")
        shutil.rmtree(target, ignore_errors=True)
        tmp.rename(target)
        steps = sorted((int(m.group(1)), p) for p in folder.glob("step-*") if (m := _STEP.match(p.name)))
        for _, old in steps[:-keep]:
            shutil.rmtree(old, ignore_errors=True)
    accelerator.wait_for_everyone()
    return target


def restore(accelerator: Any, checkpoint: Path) -> TrainerState:
    """Load model, optimiser, scheduler and RNG states; the trainer state to continue from."""
    accelerator.load_state(str(checkpoint))
    return TrainerState(**json.loads((checkpoint / "trainer_state.json").read_text(encoding="utf-8")))


def save_model(accelerator: Any, model: Any, tokenizer: Any, folder: Path, *, chat_template: str | None) -> None:
    """Write a Hugging Face model folder the `hf` policy and `clawgym serve` load directly (LoRA merged)."""
    unwrapped = accelerator.unwrap_model(model)
    peft = hasattr(unwrapped, "merge_and_unload")
    state_dict = None if peft else accelerator.get_state_dict(model)  # gathers FSDP/DeepSpeed shards (all ranks)
    if accelerator.is_main_process:
        tmp = folder.with_name(f".{folder.name}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        if peft:  # the adapters folded into the weights for the save, and taken out again (training goes on)
            unwrapped.merge_adapter()
            try:
                base = unwrapped.get_base_model()
                merged = {k.replace(".base_layer.", "."): v for k, v in base.state_dict().items() if ".lora_" not in k}
                base.save_pretrained(str(tmp), state_dict=merged)
            finally:
                unwrapped.unmerge_adapter()
        else:
            unwrapped.save_pretrained(str(tmp), state_dict=state_dict)
        if chat_template:
            tokenizer.chat_template = chat_template
        tokenizer.save_pretrained(str(tmp))
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)
    accelerator.wait_for_everyone()
