"""GRPO whose rollouts sample from a vLLM engine (`rollout.server: {type: vllm}`): the engine starts
on the trainer's weights, gets the new ones after every update (paused, reloaded, probed), and the
trainer's log-probabilities of what it sampled stay within the alarm. Slow: one engine start
(about 30 s on two cores) per test."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "engines"))
from engine_tests import ENGINE, needs_engine  # noqa: E402

from test_train_rl import _rl_spec  # noqa: E402

pytestmark = [pytest.mark.slow, needs_engine]


def _save(folder: Path, model, tokenizer) -> Path:
    from clawgym.train.rl_engine import add_tied_head

    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    add_tied_head(folder, model)  # the tiny model's head is tied, as SmolLM2's is
    return folder


def test_the_engine_serves_the_weights_it_was_given_and_answers_differently_after_a_sync(tmp_path):
    torch = pytest.importorskip("torch")
    from tiny_models import tiny_with_tokenizer
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from clawgym.errors import ClawgymError
    from clawgym.train.rl_engine import RolloutEngine, probe_ids, trainer_probe

    first = tiny_with_tokenizer(tmp_path / "w0", hidden=128, heads=2)
    tokenizer = AutoTokenizer.from_pretrained(first)
    model = AutoModelForCausalLM.from_pretrained(first, dtype=torch.float32)
    serving = tmp_path / "serving"
    _save(serving, model, tokenizer)
    engine = RolloutEngine({"engine": ENGINE}, max_concurrency=2)
    engine.probe_ids = probe_ids(tokenizer)
    prompt = {"model": "policy", "prompt": engine.probe_ids[:12], "max_tokens": 8, "temperature": 0}
    from clawgym.engines.vllm import http_json

    try:
        engine.start(serving, 0)
        before = engine.probe()
        assert abs(sum(before) / len(before) - sum(trainer_probe(model, engine.probe_ids, "cpu")) / len(before)) < 1e-3
        _, answer0 = http_json(engine.base_url + "/completions", prompt, timeout=60)
        with torch.no_grad():  # an "update": the next step's weights
            for p in model.parameters():
                p.add_(torch.randn_like(p) * 0.05)
        _save(serving, model, tokenizer)
        report = engine.sync(serving, 1, trainer_probe(model, engine.probe_ids, "cpu"))
        assert report.version == 1 and report.probe_gap < 1e-3 and report.probe_shift > 0.01
        engine.check_version(1)
        with pytest.raises(ClawgymError, match="serves weight version '1'"):
            engine.check_version(2)
        _, answer1 = http_json(engine.base_url + "/completions", prompt, timeout=60)
        assert answer1["choices"][0]["text"] != answer0["choices"][0]["text"]
        # a sync the engine did not take (the folder still holds the old weights) is caught by the probe
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn_like(p) * 0.05)
        with pytest.raises(ClawgymError, match="not serving the trainer's weights"):
            engine.sync(serving, 2, trainer_probe(model, engine.probe_ids, "cpu"))
    finally:
        engine.stop()
    assert engine.process is None


def test_grpo_steps_on_the_engine_stay_on_policy_and_move_the_served_weights(tmp_path, bwrap, monkeypatch):
    """Three steps: the first keeps no group (as when every reward is equal), so it does not update
    and the engine only takes the next version number; the next two update and sync."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("accelerate")
    from tiny_models import tiny_with_tokenizer

    from engine_tests import engine_pids

    from clawgym.train import grpo
    from clawgym.train.grpo import train_rl
    from clawgym.train.metrics import read_metrics
    from clawgym.train.rl_spec import load_rl_spec
    from test_train_rl import FIXTURES

    real_phase = grpo.rollout_phase

    def flat_first_step(*args, **kwargs):
        phase = real_phase(*args, **kwargs)
        if kwargs["step"] == 1:
            phase.grouping.kept = []
        return phase

    monkeypatch.setattr(grpo, "rollout_phase", flat_first_step)

    before = engine_pids()
    start = tiny_with_tokenizer(tmp_path / "tiny", hidden=128, heads=2)
    spec = load_rl_spec(
        _rl_spec(
            tmp_path,
            str(start),
            rollout={"server": {"type": "vllm", "engine": ENGINE}, "refill_rounds": 4},
            optim={"lr": 3e-2, "steps": 3},
            # the final evaluation generates on the rollout engine (no second engine beside it)
            eval={
                "tasks": [str(FIXTURES / "lowercase-word.yaml")],
                "seeds": "100-102",
                "policy": "vllm",
                "max_turns": 1,
                "max_tokens": 6,
                "concurrency": 3,
            },
        )
    )
    train_rl(spec, progress=False)
    assert engine_pids() <= before  # the engine went with the run
    out = tmp_path / "run"
    rows = read_metrics(out, "train")
    assert [r["step"] for r in rows] == [1, 2, 3] and [r["updated"] for r in rows] == [False, True, True]
    assert rows[0]["sync_s"] is None and rows[0]["probe_shift"] is None
    for r in rows[1:]:
        # the trainer's log-probabilities of what the engine sampled, at the sampling weights
        assert r["logprob_gap"] < spec.loss["logprob_gap_alarm"] and not r["logprob_gap_alarm"]
        assert r["tis"] and 0.5 < r["tis_weight_mean"] <= 2.0
        assert r["sync_s"] > 0 and r["probe_gap"] < 1e-3
        assert r["probe_shift"] > 0  # the engine's answers moved with the weights
        assert 0 < r["generation_s"] <= r["rollout_s"] and 0 <= r["wait_share"] < 1
    # every rollout says which weights sampled it: the step's whose weights they are
    for step in (1, 2, 3):
        records = list((out / "rollouts" / f"step-{step:07d}").rglob("record.json"))
        assert records
        for path in records:
            record = json.loads(path.read_text())
            assert record["agent"]["policy_version"] == step - 1
            assert record["agent"]["policy"]["type"] == "vllm"
    [evaluation] = read_metrics(out, "eval")
    assert evaluation["trials"] == 3 and evaluation["errors"] == 0
    rollout_engine = {
        json.loads(p.read_text())["agent"]["policy"]["base_url"] for p in out.rglob("rollouts/**/record.json")
    }
    eval_engine = {
        json.loads(p.read_text())["agent"]["policy"]["base_url"] for p in (out / "eval").rglob("record.json")
    }
    assert len(rollout_engine) == 1 and eval_engine == rollout_engine
    final = out / "model" / "model.safetensors"
    from safetensors.torch import load_file

    assert any(
        not torch.equal(load_file(str(start / "model.safetensors"))[k], v) for k, v in load_file(str(final)).items()
    )


def test_a_train_spec_checks_its_evaluation_engine(tmp_path):
    from clawgym.errors import SpecError
    from clawgym.train.spec import load_train_spec

    spec = tmp_path / "train.yaml"
    (tmp_path / "data.jsonl").write_text("")
    spec.write_text(
        "apiVersion: clawgym/v1\nkind: Train\nname: t\nmodel: embedded\ndata:\n  sources: [data.jsonl]\n"
        "eval:\n  policy: vllm\n  engine: {kv_cache: 1}\n"
    )
    with pytest.raises(SpecError) as err:
        load_train_spec(spec)
    assert "train.yaml:9" in str(err.value) and "eval.engine.kv_cache" in str(err.value)
