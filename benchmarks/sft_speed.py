"""Training tokens per second: our SFT loop against TRL's SFTTrainer, same model, data and hardware.

The model has the SmolLM2-135M shape, randomly initialised (only speed is measured); the data are
random token sequences of `--seq-len` with the loss on their second half (like an assistant turn).
Both trainers run `--steps` optimiser steps of `--batch` sequences; the first `--warmup` steps are
not timed. Prints tokens/s for each, their ratio and, on a GPU, model FLOPs utilisation
(6 × parameters × tokens/s against the bf16 peak given by `--peak-tflops`, 989 for an H200).

    python benchmarks/sft_speed.py                                  # CPU: a reduced shape
    python benchmarks/sft_speed.py --seq-len 2048 --batch 16 --steps 30 --full   # on a GPU

TRL is optional: `pip install trl`; without it only our loop is measured.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SMOLLM2_135M = {"vocab_size": 49152, "hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30,
                "num_attention_heads": 9, "num_key_value_heads": 3, "max_position_embeddings": 8192,
                "tie_word_embeddings": True, "rms_norm_eps": 1e-5}
REDUCED = {**SMOLLM2_135M, "num_hidden_layers": 4}


def make_model(folder: Path, shape: dict) -> int:
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(LlamaConfig(**shape), attn_implementation="sdpa")
    model.save_pretrained(folder)
    return sum(p.numel() for p in model.parameters())


def synthetic(n: int, seq_len: int, vocab: int) -> list:
    import random

    from clawgym.train.batching import IGNORE, Example

    rng = random.Random(0)
    out = []
    for _ in range(n):
        ids = tuple(rng.randrange(3, vocab) for _ in range(seq_len))
        half = seq_len // 2
        out.append(Example(ids, tuple([IGNORE] * half) + ids[half:]))
    return out


class _NoTokenizer:
    pad_token_id, eos_token_id, chat_template = 0, 2, None

    def save_pretrained(self, folder: str) -> None:
        pass


def ours(folder: Path, out: Path, examples: list, args: argparse.Namespace) -> float:
    """Median tokens/s of our loop after warm-up (from its metrics log)."""
    from clawgym.train import sft
    from clawgym.train.metrics import read_metrics
    from clawgym.train.spec import load_train_spec

    spec_file = out / "train.yaml"
    (out / "none.jsonl").write_text("")
    spec_file.write_text(json.dumps({
        "apiVersion": "clawgym/v1", "kind": "Train", "name": "speed", "model": str(folder),
        "data": {"sources": ["none.jsonl"], "batch_size": args.batch, "batching": "padding",
                 "max_length": args.seq_len},
        "optim": {"lr": 1e-5, "max_steps": args.steps, "schedule": "constant"},
        "precision": "auto", "checkpoint": {"every_steps": 10 ** 6}, "log": {"tensorboard": False}}))
    spec = load_train_spec(spec_file, out=out / "run")
    sft.load_model = _loader(folder, sft.load_model)
    sft.checkpoint.save_model = lambda *a, **k: None  # speed only: do not write the model
    sft.checkpoint.save = lambda *a, **k: None
    sft.train_sft(spec, progress=False, examples=examples)
    rates = [r["tokens_per_s"] for r in read_metrics(out / "run", "train")][args.warmup:]
    return statistics.median(rates)


def _loader(folder: Path, real):
    def load(spec, libs):
        model = libs["AutoModelForCausalLM"].from_pretrained(folder, dtype=libs["torch"].float32,
                                                             attn_implementation="sdpa")
        model.config.use_cache = False
        return _NoTokenizer(), model
    return load


def trl(folder: Path, out: Path, examples: list, args: argparse.Namespace) -> float | None:
    """Median tokens/s of TRL's SFTTrainer with default settings, or None without TRL."""
    try:
        import torch
        from datasets import Dataset
        from transformers import AutoModelForCausalLM, TrainerCallback
        from trl import SFTConfig, SFTTrainer
    except ImportError:
        return None
    times: list[float] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, *a, **k):
            self.t0 = time.perf_counter()

        def on_step_end(self, *a, **k):
            times.append(time.perf_counter() - self.t0)

    gpu = torch.cuda.is_available()
    data = Dataset.from_dict({"input_ids": [list(e.input_ids) for e in examples],
                              "completion_mask": [[int(x != -100) for x in e.labels] for e in examples]})
    config = SFTConfig(output_dir=str(out / "trl"), per_device_train_batch_size=args.batch, max_steps=args.steps,
                       max_length=args.seq_len, bf16=gpu and torch.cuda.is_bf16_supported(), report_to=[],
                       logging_steps=10 ** 6, save_strategy="no", learning_rate=1e-5, dataset_num_proc=1,
                       use_cpu=not gpu)
    from transformers import AutoTokenizer

    from clawgym.policy.embedded import embedded_model_path

    tokenizer = AutoTokenizer.from_pretrained(embedded_model_path())  # the SmolLM2 tokenizer (ids are synthetic)
    model = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="sdpa")
    trainer = SFTTrainer(model=model, args=config, train_dataset=data, processing_class=tokenizer,
                         callbacks=[Clock()])
    trainer.train()
    return args.batch * args.seq_len / statistics.median(times[args.warmup:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq-len", type=int, default=512)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--full", action="store_true", help="all 30 layers (default on CPU: 4 layers)")
    parser.add_argument("--peak-tflops", type=float, default=989.0, help="bf16 peak of the GPU (H200: 989)")
    args = parser.parse_args()
    import torch

    shape = SMOLLM2_135M if args.full else REDUCED
    with tempfile.TemporaryDirectory(prefix="clawgym-sft-speed-") as tmp:
        folder = Path(tmp) / "model"
        params = make_model(folder, shape)
        examples = synthetic(args.batch * args.steps, args.seq_len, shape["vocab_size"])
        device = torch.cuda.get_device_name() if torch.cuda.is_available() else f"CPU ({torch.get_num_threads()} threads)"
        print(f"model: SmolLM2-135M shape, {shape['num_hidden_layers']} layers, {params / 1e6:.1f} M parameters; "
              f"seq {args.seq_len}, batch {args.batch}, {args.steps} steps ({args.warmup} warm-up); {device}")
        rates = {"clawgym": ours(folder, Path(tmp), examples, args), "trl": trl(folder, Path(tmp), examples, args)}
        for name, rate in rates.items():
            if rate is None:
                print(f"{name:8} not measured (pip install trl)")
                continue
            mfu = (f", MFU {6 * params * rate / (args.peak_tflops * 1e12):.1%}" if torch.cuda.is_available() else "")
            print(f"{name:8} {rate:,.0f} tokens/s{mfu}")
        if rates["trl"]:
            print(f"ratio clawgym / trl: {rates['clawgym'] / rates['trl']:.2f}")


if __name__ == "__main__":
    main()
