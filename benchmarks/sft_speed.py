"""Training tokens per second: our SFT loop against TRL's SFTTrainer, same model, data and hardware.

The model has the SmolLM2-135M shape, randomly initialised (only speed is measured); the data are
random token sequences of `--seq-len` with the loss on their second half (like an assistant turn).
Every trainer runs `--steps` optimiser steps of `--batch` sequences; the first `--warmup` steps are
not timed (they also pay for compiling). Four variants, each in its own process with its own time
limit, so one that fails or runs over costs only its own figure:

- `clawgym`: the `clawgym train sft` loop as it ships (SDPA attention, logits only where a trained
  token is predicted);
- `clawgym+levers`: the same loop with the Train spec's `kernels` levers: Liger's fused linear
  cross-entropy (no logits held; CUDA only) and torch.compile of each decoder layer;
- `trl`: TRL's SFTTrainer with default settings;
- `trl+levers`: TRL with `use_liger_kernel` (CUDA only) and `torch_compile`.

Prints tokens/s for each, the ratios against TRL with defaults and, on a GPU, model FLOPs
utilisation: (6 N + 12 L d s) × tokens/s against the bf16 peak (`--peak-tflops`, 989 for an H200),
with N the parameters, L layers, d the hidden size and s the sequence length (the PaLM count, with
attention). `--json FILE` writes the figures after every variant, so a run cut short keeps what
it measured.

    python benchmarks/sft_speed.py                                  # CPU: a reduced shape
    python benchmarks/sft_speed.py --full --seq-len 2048 --batch 16 --steps 30 --json speed.json  # a GPU

TRL is optional (`pip install trl`), Liger too (`pip install liger-kernel`, a CUDA GPU); a variant
that cannot run says why.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SMOLLM2_135M = {
    "vocab_size": 49152,
    "hidden_size": 576,
    "intermediate_size": 1536,
    "num_hidden_layers": 30,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "max_position_embeddings": 8192,
    "tie_word_embeddings": True,
    "rms_norm_eps": 1e-5,
}
REDUCED = {**SMOLLM2_135M, "num_hidden_layers": 4}
TINY = {
    **SMOLLM2_135M,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
}
SHAPES = {"full": SMOLLM2_135M, "reduced": REDUCED, "tiny": TINY}
VARIANTS = ("clawgym", "clawgym+levers", "trl", "trl+levers")


def make_model(folder: Path, shape: dict) -> int:
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(LlamaConfig(**shape), attn_implementation="sdpa")
    model.save_pretrained(folder)
    return sum(p.numel() for p in model.parameters())


def flops_per_token(params: int, shape: dict, seq_len: int) -> float:
    """Training FLOPs per token: 6 N for the weights, 12 L d s for attention (PaLM's count)."""
    return 6 * params + 12 * shape["num_hidden_layers"] * shape["hidden_size"] * seq_len


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


def plain_tokenizer():
    """A three-token tokenizer: the data are token ids already, TRL only needs pad and end tokens."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<unk>": 1, "<eos>": 2}
    return PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(WordLevel(vocab, unk_token="<unk>")),
        pad_token="<pad>",
        unk_token="<unk>",
        eos_token="<eos>",
    )


def ours(folder: Path, out: Path, examples: list, args: argparse.Namespace, levers: bool) -> dict:
    """Median tokens/s of our loop after warm-up (from its metrics log), and the levers it used."""
    from clawgym.train import sft
    from clawgym.train.metrics import read_metrics
    from clawgym.train.spec import load_train_spec

    spec_file = out / "train.yaml"
    (out / "none.jsonl").write_text("")
    kernels = {"fused_loss": "auto", "compile": not args.no_compile} if levers else {}
    spec_file.write_text(
        json.dumps(
            {
                "apiVersion": "clawgym/v1",
                "kind": "Train",
                "name": "speed",
                "model": str(folder),
                "data": {
                    "sources": ["none.jsonl"],
                    "batch_size": args.batch,
                    "batching": "padding",
                    "max_length": args.seq_len,
                },
                "optim": {"lr": 1e-5, "max_steps": args.steps, "schedule": "constant"},
                "kernels": kernels,
                "precision": "auto",
                "checkpoint": {"every_steps": 10**6},
                "log": {"tensorboard": False},
            }
        )
    )
    spec = load_train_spec(spec_file, out=out / "run")
    sft.load_model = _loader(folder)
    sft.checkpoint.save_model = lambda *a, **k: None  # speed only: do not write the model
    sft.checkpoint.save = lambda *a, **k: None
    sft.train_sft(spec, progress=False, examples=examples)
    rates = [r["tokens_per_s"] for r in read_metrics(out / "run", "train")][args.warmup :]
    used = next(iter(read_metrics(out / "run", "kernels")), {})
    notes = {k: used[k] for k in ("fused_loss", "compile") if k in used}
    if levers and args.no_compile:
        notes["compile"] = "off (--no-compile)"
    return {"tokens_per_s": statistics.median(rates), "levers": notes}


def _loader(folder: Path):
    def load(spec, libs):
        model = libs["AutoModelForCausalLM"].from_pretrained(
            folder, dtype=libs["torch"].float32, attn_implementation="sdpa"
        )
        model.config.use_cache = False
        return _NoTokenizer(), model

    return load


def trl(folder: Path, out: Path, examples: list, args: argparse.Namespace, levers: bool) -> dict:
    """Median tokens/s of TRL's SFTTrainer (defaults, or with its own levers)."""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, TrainerCallback
    from trl import SFTConfig, SFTTrainer

    from clawgym.train.kernels import liger_available

    ends: list[float] = []
    gpu = torch.cuda.is_available()

    class Clock(TrainerCallback):  # the time between step ends, the GPU's work included
        def on_step_end(self, *a, **k):
            if gpu:
                torch.cuda.synchronize()
            ends.append(time.perf_counter())

    notes: dict[str, str] = {}
    extra: dict = {}
    if levers:
        ok, why = liger_available("cuda" if gpu else "cpu")
        extra["use_liger_kernel"] = ok
        notes["liger"] = "on" if ok else f"off ({why})"
        extra["torch_compile"] = not args.no_compile
        notes["compile"] = "whole model" if extra["torch_compile"] else "off (--no-compile)"
    data = Dataset.from_dict(
        {
            "input_ids": [list(e.input_ids) for e in examples],
            "completion_mask": [[int(x != -100) for x in e.labels] for e in examples],
        }
    )
    config = SFTConfig(
        output_dir=str(out / "trl"),
        per_device_train_batch_size=args.batch,
        max_steps=args.steps,
        max_length=args.seq_len,
        bf16=gpu and torch.cuda.is_bf16_supported(),
        report_to=[],
        logging_steps=10**6,
        save_strategy="no",
        learning_rate=1e-5,
        dataset_num_proc=1,
        use_cpu=not gpu,
        **extra,
    )
    model = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="sdpa")
    trainer = SFTTrainer(
        model=model, args=config, train_dataset=data, processing_class=plain_tokenizer(), callbacks=[Clock()]
    )
    trainer.train()
    steps = [b - a for a, b in zip(ends, ends[1:])][max(0, args.warmup - 1) :]
    return {"tokens_per_s": args.batch * args.seq_len / statistics.median(steps), "levers": notes}


def child(args: argparse.Namespace) -> None:
    """One variant in this process; its figures go to `--child-out` as JSON."""
    folder, out = Path(args.model_dir), Path(args.child_out)
    shape = json.loads((folder / "config.json").read_text())
    examples = synthetic(args.batch * args.steps, args.seq_len, shape["vocab_size"])
    work = Path(tempfile.mkdtemp(prefix="clawgym-sft-speed-", dir=folder.parent))
    run = ours if args.child.startswith("clawgym") else trl
    result = run(folder, work, examples, args, levers=args.child.endswith("+levers"))
    out.write_text(json.dumps(result))


def run_variant(name: str, folder: Path, args: argparse.Namespace) -> dict:
    """Run one variant in a subprocess within `--variant-timeout` seconds; its figures or why not."""
    result_file = folder.parent / f"{name.replace('+', '_')}.json"
    if name.startswith("trl"):
        try:
            import trl  # noqa: F401
        except ImportError as exc:
            return {"status": "skipped", "reason": f"TRL is not installed ({exc}); pip install trl"}
    cmd = [
        sys.executable,
        __file__,
        "--child",
        name,
        "--model-dir",
        str(folder),
        "--child-out",
        str(result_file),
        "--seq-len",
        str(args.seq_len),
        "--batch",
        str(args.batch),
        "--steps",
        str(args.steps),
        "--warmup",
        str(args.warmup),
    ] + (["--no-compile"] if args.no_compile else [])
    start = time.monotonic()
    try:
        proc = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=args.variant_timeout,
            env={**os.environ, "TOKENIZERS_PARALLELISM": "false"},
        )
    except subprocess.TimeoutExpired:
        return {
            "status": "timeout",
            "reason": f"not done within {args.variant_timeout:.0f} s",
            "seconds": args.variant_timeout,
        }
    seconds = round(time.monotonic() - start, 1)
    if proc.returncode != 0 or not result_file.is_file():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {
            "status": "failed",
            "reason": " | ".join(tail)[-600:] or f"exit code {proc.returncode}",
            "seconds": seconds,
        }
    return {"status": "ok", "seconds": seconds, **json.loads(result_file.read_text())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq-len", type=int, default=512)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--full", action="store_true", help="all 30 layers (default on CPU: 4 layers)")
    parser.add_argument("--shape", choices=sorted(SHAPES), help="model shape (overrides --full)")
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, of {', '.join(VARIANTS)}")
    parser.add_argument("--variant-timeout", type=float, default=600.0, help="seconds each variant may take")
    parser.add_argument("--no-compile", action="store_true", help="leave torch.compile out of the levers")
    parser.add_argument("--peak-tflops", type=float, default=989.0, help="bf16 peak of the GPU (H200: 989)")
    parser.add_argument("--json", type=Path, help="write the figures here after every variant")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--model-dir", help=argparse.SUPPRESS)
    parser.add_argument("--child-out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variant(s) {', '.join(unknown)}; choose from {', '.join(VARIANTS)}")
    import torch

    shape_name = args.shape or ("full" if args.full else "reduced")
    shape = SHAPES[shape_name]
    gpu = torch.cuda.is_available()
    with tempfile.TemporaryDirectory(prefix="clawgym-sft-speed-") as tmp:
        folder = Path(tmp) / "model"
        params = make_model(folder, shape)
        device = torch.cuda.get_device_name() if gpu else f"CPU ({torch.get_num_threads()} threads)"
        per_token = flops_per_token(params, shape, args.seq_len)
        report = {
            "shape": shape_name,
            "layers": shape["num_hidden_layers"],
            "parameters": params,
            "seq_len": args.seq_len,
            "batch": args.batch,
            "steps": args.steps,
            "warmup": args.warmup,
            "device": device,
            "precision": "bf16 autocast" if gpu else "fp32",
            "torch": torch.__version__,
            "flops_per_token": per_token,
            "peak_tflops": args.peak_tflops,
            "variants": {},
        }
        print(
            f"model: SmolLM2-135M shape ({shape_name}), {shape['num_hidden_layers']} layers, "
            f"{params / 1e6:.1f} M parameters; seq {args.seq_len}, batch {args.batch}, {args.steps} steps "
            f"({args.warmup} warm-up); {device}",
            flush=True,
        )
        for name in variants:
            result = run_variant(name, folder, args)
            if result["status"] == "ok" and gpu:
                result["mfu"] = per_token * result["tokens_per_s"] / (args.peak_tflops * 1e12)
            report["variants"][name] = result
            report["ratios"] = ratios(report["variants"])
            if args.json:
                args.json.write_text(json.dumps(report, indent=1))
            print(describe(name, result), flush=True)
        for key, value in report.get("ratios", {}).items():
            print(f"ratio {key}: {value:.2f}")
        print(summary_line(report), flush=True)


def describe(name: str, result: dict) -> str:
    if result["status"] != "ok":
        return f"{name:15} {result['status']}: {result['reason']}"
    mfu = f", MFU {result['mfu']:.1%}" if "mfu" in result else ""
    levers = ", ".join(f"{k} {v}" for k, v in result.get("levers", {}).items())
    return f"{name:15} {result['tokens_per_s']:,.0f} tokens/s{mfu}" + (f"  [{levers}]" if levers else "")


def ratios(variants: dict) -> dict:
    """Each of our variants against TRL with defaults (and against TRL with its levers)."""
    rate = {k: v["tokens_per_s"] for k, v in variants.items() if v.get("status") == "ok"}
    out = {}
    for ours_name in ("clawgym", "clawgym+levers"):
        for base in ("trl", "trl+levers"):
            if ours_name in rate and base in rate:
                out[f"{ours_name} / {base}"] = rate[ours_name] / rate[base]
    return out


def summary_line(report: dict) -> str:
    """One line: the best of our variants, TRL, the ratio and the MFU."""
    rate = {k: v for k, v in report["variants"].items() if v.get("status") == "ok"}
    best = max((k for k in rate if k.startswith("clawgym")), key=lambda k: rate[k]["tokens_per_s"], default=None)
    parts = [f"sft speed ({report['shape']}, seq {report['seq_len']}, batch {report['batch']}, {report['device']}):"]
    if best:
        mfu = f", MFU {rate[best]['mfu']:.1%}" if "mfu" in rate[best] else ""
        parts.append(f"{best} {rate[best]['tokens_per_s']:,.0f} tok/s{mfu}")
    if "trl" in rate:
        parts.append(f"trl {rate['trl']['tokens_per_s']:,.0f} tok/s")
    if best and "trl" in rate:
        parts.append(f"ratio {rate[best]['tokens_per_s'] / rate['trl']['tokens_per_s']:.2f}")
    missing = [k for k, v in report["variants"].items() if v.get("status") != "ok"]
    if missing:
        parts.append("not measured: " + ", ".join(f"{k} ({report['variants'][k]['status']})" for k in missing))
    return " ".join(parts)


if __name__ == "__main__":
    main()
