"""The SFT loop on a tiny model built from a config (no download): weights move, the loss is
normalised exactly, packing equals padding, and a run resumes from its last checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")

from clawgym.train import sft as sft_module  # noqa: E402
from clawgym.train.batching import IGNORE, Example  # noqa: E402
from clawgym.train.metrics import read_metrics  # noqa: E402
from clawgym.train.spec import load_train_spec  # noqa: E402
from tiny_models import tiny_with_tokenizer  # noqa: E402

VOCAB = 64


class TinyTokenizer:
    """Just enough of a tokenizer for the loop (the data side has its own tests)."""

    pad_token_id = 0
    eos_token_id = 1
    chat_template = None

    def save_pretrained(self, folder: str) -> None:
        (Path(folder) / "tokenizer_marker.json").write_text("{}")


def tiny_model_folder(root: Path) -> Path:
    cfg = transformers.LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
    )
    torch.manual_seed(0)
    folder = root / "tiny"
    transformers.AutoModelForCausalLM.from_config(cfg).save_pretrained(folder)
    return folder


def examples(n: int = 12, length: int = 16) -> list[Example]:
    """Sequences of one length (so packing 4 rows of 16 tokens holds exactly 4), prompts of 5-8 tokens."""
    out = []
    for i in range(n):
        prompt = [2 + (i + k) % 20 for k in range(5 + i % 4)]
        answer = [30 + (i * 3 + k) % 30 for k in range(length - len(prompt) - 1)] + [1]
        out.append(Example(tuple(prompt + answer), tuple([IGNORE] * len(prompt) + answer)))
    return out


@pytest.fixture
def setup(tmp_path, monkeypatch):
    folder = tiny_model_folder(tmp_path)
    monkeypatch.setattr(sft_module, "build_examples", lambda spec, tok: (examples(), {"kept": 12}))

    def load(spec, libs):
        model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
        model.config.use_cache = False
        return TinyTokenizer(), model

    monkeypatch.setattr(sft_module, "load_model", load)
    (tmp_path / "data.jsonl").write_text("")

    def spec(**over) -> object:
        body = {
            "apiVersion": "clawgym/v1",
            "kind": "Train",
            "name": "tiny",
            "model": str(folder),
            "data": {"sources": ["data.jsonl"], "batch_size": 2, "batching": "padding", "max_length": 64},
            "optim": {"lr": 1e-2, "max_steps": 2, "schedule": "constant"},
            "checkpoint": {"every_steps": 1, "keep": 2},
            "log": {"tensorboard": False},
        }
        for key, value in over.items():
            body[key] = {**body.get(key, {}), **value} if isinstance(value, dict) else value
        path = tmp_path / f"train-{len(list(tmp_path.glob('train-*.yaml')))}.yaml"
        path.write_text(json.dumps(body))
        return load_train_spec(path, out=tmp_path / body.get("name", "tiny"))

    return {"folder": folder, "spec": spec, "tmp": tmp_path}


def weights(folder: Path) -> dict:
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    return {k: v.clone() for k, v in model.state_dict().items()}


def test_two_steps_change_the_weights_and_save_a_loadable_model(setup):
    spec = setup["spec"]()
    folder = sft_module.train_sft(spec, progress=False)
    before, after = weights(setup["folder"]), weights(folder)
    assert any(not torch.equal(before[k], after[k]) for k in before)
    rows = read_metrics(spec.out, "train")
    assert [r["step"] for r in rows] == [1, 2]
    assert all(r["loss"] > 0 and r["tokens_per_s"] > 0 and r["lr"] == pytest.approx(1e-2) for r in rows)
    assert read_metrics(spec.out, "data") == [{"kind": "data", "step": 0, "kept": 12}]


def test_accumulation_and_packing_give_the_same_update(setup, monkeypatch):
    """One step over the same 4 examples: 2 micro-batches of 2, 1 of 4, or packed — the same weights,
    because the loss is summed over tokens and divided by the step's trained tokens. (Plain SGD here:
    Adam's first step is about lr × sign(gradient), which float noise flips where a gradient is ~0.)"""
    monkeypatch.setattr(torch.optim, "AdamW", lambda params, lr, weight_decay: torch.optim.SGD(params, lr=lr))
    base = {"optim": {"max_steps": 1}, "data": {"batch_size": 4}}
    results = []
    for name, over in (
        ("whole", base),
        ("accum", {"optim": {"max_steps": 1, "grad_accum": 2}, "data": {"batch_size": 2}}),
        ("packed", {"optim": {"max_steps": 1}, "data": {"batch_size": 4, "batching": "packing", "max_length": 16}}),
    ):
        spec = setup["spec"](name=name, **over)
        results.append(weights(sft_module.train_sft(spec, progress=False)))
    # the same 4 examples in each step: a padded batch of 4, two of 2, one packed row of 4 × 16 tokens
    for other in results[1:]:
        for k in results[0]:
            assert torch.allclose(results[0][k], other[k], atol=1e-7), k
    assert any(not torch.equal(results[0][k], weights(setup["folder"])[k]) for k in results[0])


def test_resume_continues_from_the_saved_step(setup):
    straight = setup["spec"](name="straight", optim={"max_steps": 4})
    expected = weights(sft_module.train_sft(straight, progress=False))
    first = setup["spec"](name="interrupted", optim={"max_steps": 2})
    sft_module.train_sft(first, progress=False)
    resumed = setup["spec"](name="interrupted", optim={"max_steps": 4})
    got = weights(sft_module.train_sft(resumed, progress=False))
    for k in expected:
        assert torch.allclose(expected[k], got[k], atol=1e-6), k
    assert [r["step"] for r in read_metrics(resumed.out, "train")] == [1, 2, 3, 4]
    assert sorted(p.name for p in (resumed.out / "checkpoints").iterdir()) == ["step-0000003", "step-0000004"]


ROOT = Path(__file__).resolve().parents[2]


def _experts(tmp_path: Path) -> Path:
    from clawgym.train.expert import expert_command

    out = tmp_path / "experts.jsonl"
    expert_command([ROOT / "specs/tasks/analysis/grade-statistics.yaml"], seeds="0", out=out, jobs=1, console=None)
    return out


def _train_spec(tmp_path: Path, model: str, **data) -> Path:
    spec = tmp_path / "sft.yaml"
    spec.write_text(
        json.dumps(
            {
                "apiVersion": "clawgym/v1",
                "kind": "Train",
                "name": "cli-sft",
                "model": model,
                "data": {"sources": ["experts.jsonl"], "batch_size": 1, "max_length": 8192, **data},
                "optim": {"lr": 1e-3, "max_steps": 2},
                "log": {"tensorboard": False},
                "eval": {
                    "tasks": [str(ROOT / "specs/tasks/analysis/grade-statistics.yaml")],
                    "seeds": "7",
                    "max_turns": 2,
                    "max_tokens": 16,
                    "concurrency": 1,
                },
                "out": str(tmp_path / "run"),
            }
        )
    )
    return spec


def _tiny_with_tokenizer(tmp_path: Path) -> Path:
    return tiny_with_tokenizer(tmp_path / "tiny-tok")


def test_cli_trains_on_expert_trajectories_evaluates_and_the_hf_policy_loads_it(tmp_path, bwrap):
    from click.testing import CliRunner

    from clawgym.cli.main import main
    from clawgym.policy.hf import HFPolicy

    _experts(tmp_path)
    spec = _train_spec(tmp_path, str(_tiny_with_tokenizer(tmp_path)))
    result = CliRunner().invoke(main, ["train", "sft", str(spec), "--quiet"])
    assert result.exit_code == 0, result.output
    out = tmp_path / "run"
    data = read_metrics(out, "data")[0]
    assert data["selected"] == 1 and data["examples"] == 1 and data["trained_tokens"] > 500
    assert [r["step"] for r in read_metrics(out, "train")] == [1, 2]
    [ev] = read_metrics(out, "eval")
    assert ev["step"] == 2 and ev["trials"] == 1 and ev["errors"] == 0 and ev["pass_rate"] == 0.0
    policy = HFPolicy({"model": str(out / "model"), "max_tokens": 4, "temperature": 0})
    assert policy.complete([{"role": "user", "content": "hi"}]).usage["completion_tokens"] <= 4
    # a second run resumes at its end: nothing left to train
    again = CliRunner().invoke(main, ["train", "sft", str(spec), "--quiet"])
    assert again.exit_code == 0 and "resuming from" in again.output
    assert [r["step"] for r in read_metrics(out, "train")] == [1, 2]


@pytest.mark.slow
@pytest.mark.heavy
def test_sft_of_the_embedded_model_for_a_few_steps(tmp_path, bwrap):
    """The real SmolLM2-135M on CPU: two steps on one expert trajectory, then the hf policy loads it."""
    from clawgym.policy.hf import HFPolicy
    from clawgym.train.sft import train_sft

    _experts(tmp_path)
    spec = load_train_spec(_train_spec(tmp_path, "embedded", max_length=4096))
    folder = train_sft(spec.__class__(**{**spec.__dict__, "eval_tasks": ()}), progress=False)
    rows = read_metrics(tmp_path / "run", "train")
    assert [r["step"] for r in rows] == [1, 2] and all(r["loss"] > 0 for r in rows)
    policy = HFPolicy({"model": str(folder), "max_tokens": 8, "temperature": 0})
    assert policy.complete([{"role": "user", "content": "Say hello."}]).message["role"] == "assistant"


def test_lora_trains_adapters_and_saves_a_merged_model(setup, monkeypatch):
    pytest.importorskip("peft", reason="LoRA needs peft (pip install -e '.[train]')")
    folder = setup["folder"]

    def load(spec, libs):  # the real loader's LoRA path on the tiny model
        model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
        model.config.use_cache = False
        return TinyTokenizer(), sft_module.apply_lora(model, spec.lora)

    monkeypatch.setattr(sft_module, "load_model", load)
    spec = setup["spec"](name="lora", lora={"r": 4, "alpha": 8, "target_modules": ["q_proj", "v_proj"]})
    saved = sft_module.train_sft(spec, progress=False)
    before, after = weights(folder), weights(saved)
    assert set(before) == set(after)  # a plain model folder: adapters merged, no peft keys
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed and all("q_proj" in k or "v_proj" in k for k in changed)


def test_a_lora_model_saved_mid_run_keeps_its_adapters_and_saves_their_merge(setup, tmp_path):
    """An RL run saves its LoRA policy after every update (for the rollout engine) and goes on
    training: the save folds the adapters into a plain model folder without taking them away."""
    pytest.importorskip("peft", reason="LoRA needs peft (pip install -e '.[train]')")
    from accelerate import Accelerator

    from clawgym.train import checkpoint
    from clawgym.train.loop import apply_lora

    model = transformers.AutoModelForCausalLM.from_pretrained(setup["folder"], dtype=torch.float32)
    model = apply_lora(model, {"r": 4, "alpha": 8, "target_modules": ["q_proj", "v_proj"], "dropout": 0.0})
    with torch.no_grad():  # adapters that do something (lora_B starts at zero)
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)
    ids = torch.tensor([[1, 5, 9, 13, 17, 21]])
    before = model(input_ids=ids).logits
    checkpoint.save_model(Accelerator(cpu=True), model, TinyTokenizer(), tmp_path / "saved", chat_template=None)
    assert any("lora_B" in n and p.requires_grad for n, p in model.named_parameters())
    assert torch.allclose(model(input_ids=ids).logits, before, atol=1e-5)
    saved = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "saved", dtype=torch.float32)
    assert not any("lora" in n for n, _ in saved.named_parameters())
    assert torch.allclose(saved(input_ids=ids).logits, before, atol=1e-4)


def test_loss_on_kept_logits_equals_the_loss_on_all_logits(setup):
    from clawgym.train.batching import collate

    model = transformers.AutoModelForCausalLM.from_pretrained(setup["folder"], dtype=torch.float32)
    for batching in ("padding", "packing"):
        batch = collate(examples()[:3], batching=batching, pad_id=0)
        inputs = {k: v for k, v in batch.items() if k != "labels"}
        full = model(**inputs, use_cache=False).logits[:, :-1]
        expected = torch.nn.functional.cross_entropy(
            full.flatten(0, 1), batch["labels"][:, 1:].flatten(), ignore_index=IGNORE, reduction="sum"
        )
        assert torch.allclose(sft_module._token_loss(torch, model, batch), expected, rtol=1e-5)


def test_bad_train_specs_say_where_and_how_to_fix(tmp_path):
    from click.testing import CliRunner

    from clawgym.cli.main import main

    spec = tmp_path / "bad.yaml"
    spec.write_text(
        "apiVersion: clawgym/v1\nkind: Train\nname: bad\nmodel: embedded\n"
        "data:\n  sources: [missing.jsonl]\n  batching: stacking\noptim:\n  lr: -1\n"
    )
    result = CliRunner().invoke(main, ["train", "sft", str(spec)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"{spec}:7: data.batching:" in result.output and "'stacking'" in result.output
    assert f"{spec}:9: optim.lr:" in result.output
    spec.write_text(
        "apiVersion: clawgym/v1\nkind: Train\nname: bad\nmodel: embedded\ndata:\n  sources: [missing.jsonl]\n"
    )
    result = CliRunner().invoke(main, ["train", "sft", str(spec)])
    assert result.exit_code == 2
    assert (
        f"{spec}:6: data.sources[0]: no such file or folder: missing.jsonl (sources are relative to the spec file)"
    ) in result.output


DDP_SCRIPT = """
import json, sys
from pathlib import Path
import torch, transformers
sys.path.insert(0, sys.argv[4]); sys.path.insert(0, str(Path(sys.argv[4]).parent))  # the tests and their helpers
from clawgym.train import sft
from clawgym.train.spec import load_train_spec
from test_train_sft import TinyTokenizer, examples

folder, out, accum = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])

def load(spec, libs):
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    model.config.use_cache = False
    return TinyTokenizer(), model

sft.load_model = load
torch.optim.AdamW = lambda params, lr, weight_decay: torch.optim.SGD(params, lr=lr)  # see the accumulation test
spec = out.parent / (out.name + ".yaml")
(out.parent / "none.jsonl").write_text("")
spec.write_text(json.dumps({"apiVersion": "clawgym/v1", "kind": "Train", "name": "ddp", "model": str(folder),
    "data": {"sources": ["none.jsonl"], "batch_size": 2, "batching": "padding", "max_length": 64},
    "optim": {"lr": 1e-2, "max_steps": 2, "schedule": "linear", "warmup_steps": 1, "grad_accum": accum},
    "log": {"tensorboard": False}}))
sft.train_sft(load_train_spec(spec, out=out), progress=False, examples=examples())
"""


def _reference_run(setup) -> tuple[Path, str]:
    """One process accumulating 2 micro-batches per step, into tmp/one; returns (script, tests path)."""
    import subprocess
    import sys

    script = setup["tmp"] / "ddp.py"
    script.write_text(DDP_SCRIPT)
    tests = str(Path(__file__).parent)
    one = subprocess.run(
        [sys.executable, str(script), str(setup["folder"]), str(setup["tmp"] / "one"), "2", tests],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert one.returncode == 0, one.stderr[-2000:]
    return script, tests


def test_two_processes_train_exactly_like_one_with_accumulation(setup):
    """Data parallelism (2 CPU processes, gloo, launched like `accelerate launch`/torchrun) gives the
    same weights as one process accumulating the same micro-batches."""
    import subprocess
    import sys

    tmp = setup["tmp"]
    script, tests = _reference_run(setup)
    two = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node",
            "2",
            "--master_port",
            "29531",
            str(script),
            str(setup["folder"]),
            str(tmp / "two"),
            "1",
            tests,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert two.returncode == 0, two.stderr[-2000:]
    a, b = weights(tmp / "one" / "model"), weights(tmp / "two" / "model")
    assert all(torch.allclose(a[k], b[k], atol=1e-7) for k in a)
    for key in ("trained_tokens", "lr"):  # the same data per step, the schedule stepped once per step
        assert [r[key] for r in read_metrics(tmp / "two", "train")] == [
            r[key] for r in read_metrics(tmp / "one", "train")
        ]


def test_fsdp_from_the_shipped_config_trains_exactly_like_one_process(setup):
    """`accelerate launch` with specs/train/accelerate/fsdp.yaml (FSDP2, sharded per decoder layer),
    made to run on 2 CPU processes, gives the same weights as one process accumulating the same
    micro-batches, and the saved model is gathered from the shards."""
    import subprocess
    import sys

    import yaml

    tmp = setup["tmp"]
    config = yaml.safe_load((Path(__file__).parents[2] / "specs" / "train" / "accelerate" / "fsdp.yaml").read_text())
    assert config["distributed_type"] == "FSDP"
    config.update(num_processes=2, use_cpu=True, mixed_precision="no", main_process_port=29533)
    config.pop("gpu_ids", None)
    (tmp / "fsdp-cpu.yaml").write_text(yaml.safe_dump(config))
    script, tests = _reference_run(setup)
    two = subprocess.run(
        [
            sys.executable,
            "-m",
            "accelerate.commands.launch",
            "--config_file",
            str(tmp / "fsdp-cpu.yaml"),
            str(script),
            str(setup["folder"]),
            str(tmp / "two"),
            "1",
            tests,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert two.returncode == 0, two.stderr[-2000:]
    a, b = weights(tmp / "one" / "model"), weights(tmp / "two" / "model")
    assert set(a) == set(b) and all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


def test_evaluation_samples_several_attempts_per_instance_in_one_batch(tmp_path, bwrap):
    from clawgym.train.evaluate import evaluate

    model = _tiny_with_tokenizer(tmp_path)
    out = tmp_path / "eval"
    result = evaluate(
        str(model),
        [ROOT / "specs/tasks/analysis/grade-statistics.yaml"],
        [7, 8],
        out,
        max_turns=1,
        max_tokens=8,
        concurrency=4,
        temperature=1.0,
        attempts=2,
        max_batch=4,
    )
    assert result["trials"] == 4 and result["errors"] == 0
    records = [json.loads(p.read_text()) for p in sorted(out.glob("trials/*/record.json"))]
    assert sorted((r["task"]["seed"], r["attempt"]) for r in records) == [(7, 0), (7, 1), (8, 0), (8, 1)]
    policy = records[0]["agent"]["policy"]
    assert policy["temperature"] == 1.0 and policy["max_batch"] == 4
    # kept results are read back, not run again
    written = {p: p.stat().st_mtime_ns for p in out.glob("trials/*/record.json")}
    assert (
        evaluate(
            str(model),
            [ROOT / "specs/tasks/analysis/grade-statistics.yaml"],
            [7, 8],
            out,
            max_turns=1,
            max_tokens=8,
            concurrency=4,
            temperature=1.0,
            attempts=2,
            max_batch=4,
        )
        == result
    )
    assert {p: p.stat().st_mtime_ns for p in out.glob("trials/*/record.json")} == written
