"""GRPO: advantages and masks by hand, the clipped loss, token-exact log-probabilities, dropped
rollouts, a step that changes the weights, resume, and a CPU smoke run on real tasks in sandboxes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from clawgym.records.outcomes import training_rules
from clawgym.train.advantages import Rollout, advantages, form_groups
from clawgym.train.render import IGNORE, examples_from_turns

FIXTURES = Path(__file__).parent.parent / "fixtures" / "rl"


def rollout(
    i: int,
    reward: float | None,
    task: str = "t@0",
    status: str | None = None,
    error: str | None = None,
    outcome: str = "completed",
):
    status = status or ("error" if reward is None else "passed" if reward >= 1 else "failed")
    return Rollout(trial_id=f"{task}.a{i}", task_key=task, status=status, reward=reward, error=error, outcome=outcome)


def test_group_advantages_by_hand():
    # mean 0.5, population std sqrt((0.25 + 0.25 + 0 + 0) / 4) = 0.353553...
    adv = advantages([1.0, 0.0, 0.5, 0.5])
    assert adv == pytest.approx([1 / math.sqrt(0.125) * 0.5, -1 / math.sqrt(0.125) * 0.5, 0.0, 0.0], rel=1e-5)
    assert advantages([1.0, 0.0, 0.5, 0.5], "mean") == [0.5, -0.5, 0.0, 0.0]


def test_errored_rollouts_are_dropped_not_scored_and_flat_groups_go():
    rollouts = [
        rollout(0, 1.0),
        rollout(1, None, error="sandbox failed to start"),
        rollout(2, 0.0),
        rollout(0, 0.5, "u@0"),
        rollout(1, 0.5, "u@0"),  # all equal: no signal
        rollout(0, 1.0, "v@0"),
        rollout(1, None, "v@0", error="model backend timed out"),
    ]
    grouping = form_groups(rollouts, min_valid=2)
    [kept] = grouping.kept
    assert kept.task_key == "t@0" and [r.trial_id for r in kept.rollouts] == ["t@0.a0", "t@0.a2"]
    # the error is not a reward of 0: the group is (1, 0), not (1, 0, 0)
    assert [r.advantage for r in kept.rollouts] == pytest.approx([1.0, -1.0], rel=1e-5)
    assert grouping.dropped_rollouts == [
        ("t@0.a1", "sandbox_error: sandbox failed to start"),
        ("v@0.a1", "model_error: model backend timed out"),
    ]
    assert dict(grouping.dropped_groups) == {
        "u@0": "all 2 rewards equal (0.5)",
        "v@0": "1 valid rollout(s), fewer than 2",
    }


def test_each_outcome_follows_its_training_rule_and_a_spec_can_override_it():
    rollouts = [
        rollout(0, 1.0),
        rollout(1, 0.0, outcome="agent_timeout"),  # the agent's own failure: its reward is used
        rollout(2, 0.0, outcome="context_overflow"),  # masked: in the statistics, no loss
        rollout(3, None, error="the judge's endpoint refused the connection", outcome="judge_error"),
    ]
    grouping = form_groups(rollouts, min_valid=2)
    [kept] = grouping.kept
    assert [(r.trial_id, r.masked) for r in kept.rollouts] == [("t@0.a0", False), ("t@0.a1", False), ("t@0.a2", True)]
    assert kept.rewards == [1.0, 0.0, 0.0]  # the masked rollout still counts in the group's mean
    assert grouping.dropped_rollouts == [("t@0.a3", "judge_error: the judge's endpoint refused the connection")]

    fresh = [rollout(0, 1.0), rollout(1, 0.0, outcome="context_overflow"), rollout(2, None, outcome="model_error")]
    grouping = form_groups(
        fresh, min_valid=2, rules=training_rules({"context_overflow": "drop", "model_error": "reward"})
    )
    [kept] = grouping.kept
    # the overflow is dropped; the endpoint failure the spec chose to count is a reward of 0
    assert [(r.trial_id, r.reward) for r in kept.rollouts] == [("t@0.a0", 1.0), ("t@0.a2", 0.0)]
    assert [t for t, _ in grouping.dropped_rollouts] == ["t@0.a1"]
    with pytest.raises(ValueError, match="outcomes.training.model_error: unknown rule 'zero'"):
        training_rules({"model_error": "zero"})


def test_masks_and_sampled_logprobs_follow_the_recorded_turns():
    turns = [
        {"prompt_token_ids": [5, 6, 7], "token_ids": [8, 9], "logprobs": [-0.1, -0.2]},
        # the environment appended tool results 10, 11: they are context, not trained
        {"prompt_token_ids": [5, 6, 7, 8, 9, 10, 11], "token_ids": [12], "logprobs": [-0.3]},
        {"error": "backend failed"},
        # history re-rendered differently: a new sequence starts
        {"prompt_token_ids": [5, 6, 99], "token_ids": [13, 14], "logprobs": [-0.4, -0.5]},
    ]
    first, second = examples_from_turns(turns, max_length=100)
    assert first.input_ids == [5, 6, 7, 8, 9, 10, 11, 12]
    assert first.labels == [IGNORE, IGNORE, IGNORE, 8, 9, IGNORE, IGNORE, 12]
    assert first.logprobs == [0.0, 0.0, 0.0, -0.1, -0.2, 0.0, 0.0, -0.3]
    assert second.input_ids == [5, 6, 99, 13, 14] and second.labels == [IGNORE] * 3 + [13, 14]
    assert second.logprobs == [0.0, 0.0, 0.0, -0.4, -0.5]


def _tiny_lm(vocab: int = 64):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(
        vocab_size=vocab,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
    )
    torch.manual_seed(0)
    return torch, transformers.AutoModelForCausalLM.from_config(cfg).eval()


def test_clipped_loss_matches_the_formula_on_packed_samples():
    """Recorded log-probabilities set to the model's own plus a known offset give ratios exp(-offset);
    the loss, clip count and KL must follow the formula token by token, across two packed samples."""
    torch, model = _tiny_lm()
    from clawgym.train.render import Example
    from clawgym.train.rl_loss import Sample, collate, policy_loss

    T = 0.7
    seqs = [([3, 4, 5, 6, 7, 8], [IGNORE, IGNORE, 5, 6, IGNORE, 8], 1.5), ([9, 10, 11, 12], [IGNORE, 10, 11, 12], -0.5)]
    offsets = [0.5, -0.4, 0.3, 0.0, -0.4, 0.5]  # tokens 2 (A > 0, ratio 1.49) and 6 (A < 0, ratio 0.61) clip
    samples, manual, clipped, k = [], 0.0, 0, 0
    for ids, labels, adv in seqs:
        with torch.no_grad():
            logp = torch.log_softmax(model(torch.tensor([ids])).logits[0].float() / T, -1)
        old = [0.0] * len(ids)
        for t, label in enumerate(labels):
            if label == IGNORE:
                continue
            true = float(logp[t - 1, label])
            old[t] = true + offsets[k]
            ratio = math.exp(-offsets[k])
            a, b = -adv * ratio, -adv * min(max(ratio, 0.8), 1.28)
            manual += max(a, b)
            clipped += b > a
            k += 1
        samples.append(Sample(Example(input_ids=ids, labels=labels, logprobs=old), adv))
    loss, stats = policy_loss(model, collate(samples), temperature=T, clip_low=0.2, clip_high=0.28, kl_weight=0.0)
    assert stats["tokens"] == k == 6 and stats["clipped"] == clipped == 2
    assert float(loss.detach()) == pytest.approx(manual, rel=1e-4)
    # recorded log-probabilities equal to the model's own: every ratio is 1, nothing clips
    for s in samples:
        s.example.logprobs = [
            x - offsets.pop(0) if label != IGNORE else x for x, label in zip(s.example.logprobs, s.example.labels)
        ]
    _, stats = policy_loss(model, collate(samples), temperature=T, clip_low=0.2, clip_high=0.28, kl_weight=0.0)
    assert stats["clipped"] == 0 and stats["ratio"] == pytest.approx(6.0, rel=1e-5)
    assert stats["logprob_diff"] == pytest.approx(0.0, abs=1e-5)


def test_truncated_importance_sampling_weights_each_token_by_the_capped_sampler_gap():
    """With TIS the ratio is taken against the trainer's behaviour log-probabilities (here its own:
    ratio 1, nothing clips) and each token's term is -A * min(exp(behaviour - sampled), cap)."""
    torch, model = _tiny_lm()
    from clawgym.train.render import Example
    from clawgym.train.rl_loss import Sample, collate, fill_logprobs, policy_loss

    T, cap = 0.9, 2.0
    ids, labels, adv = [3, 4, 5, 6, 7], [IGNORE, 4, 5, IGNORE, 7], 0.8
    gaps = [0.3, -1.5, 0.05]  # sampler minus trainer: weights exp(-0.3), min(exp(1.5), 2) = 2, exp(-0.05)
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([ids])).logits[0].float() / T, -1)
    sampled, k = [0.0] * len(ids), 0
    for t, label in enumerate(labels):
        if label != IGNORE:
            sampled[t] = float(logp[t - 1, label]) + gaps[k]
            k += 1
    sample = Sample(Example(input_ids=ids, labels=labels, logprobs=sampled), adv)
    fill_logprobs(model, [sample], "behaviour_logprobs", temperature=T, max_tokens=64, device=None)
    loss, stats = policy_loss(
        model, collate([sample]), temperature=T, clip_low=0.2, clip_high=0.28, kl_weight=0.0, tis_cap=cap
    )
    weights = [min(math.exp(-g), cap) for g in gaps]
    assert float(loss.detach()) == pytest.approx(sum(-adv * w for w in weights), rel=1e-4)
    assert stats["clipped"] == 0 and stats["ratio"] == pytest.approx(3.0, rel=1e-5)
    assert stats["tis_weight"] == pytest.approx(sum(weights), rel=1e-4)
    assert stats["logprob_diff"] == pytest.approx(sum(abs(g) for g in gaps), rel=1e-4)
    # without TIS the same tokens are ratios against the sampler: exp(-gap), clipped where far
    loss, stats = policy_loss(model, collate([sample]), temperature=T, clip_low=0.2, clip_high=0.28, kl_weight=0.0)
    assert stats["ratio"] == pytest.approx(sum(math.exp(-g) for g in gaps), rel=1e-4) and stats["clipped"] == 1


def test_kl_term_is_zero_against_itself_and_positive_against_another_model():
    torch, model = _tiny_lm()
    from clawgym.train.render import Example
    from clawgym.train.rl_loss import Sample, collate, policy_loss, reference_logprobs

    ex = Example(input_ids=[3, 4, 5, 6], labels=[IGNORE, IGNORE, 5, 6], logprobs=[0.0] * 4)
    samples = [Sample(ex, 1.0)]
    reference_logprobs(model, samples, temperature=1.0, max_tokens=64, device="cpu")
    _, same = policy_loss(model, collate(samples), temperature=1.0, clip_low=0.2, clip_high=0.2, kl_weight=0.1)
    assert same["kl"] == pytest.approx(0.0, abs=1e-6)
    torch.manual_seed(1)
    _, other = _tiny_lm()
    for p in other.parameters():
        p.data.add_(torch.randn_like(p) * 0.5)
    reference_logprobs(other, samples, temperature=1.0, max_tokens=64, device="cpu")
    _, diff = policy_loss(model, collate(samples), temperature=1.0, clip_low=0.2, clip_high=0.2, kl_weight=0.1)
    assert diff["kl"] > 1e-4


# --- with the hf policy, the runner and sandboxes -------------------------------------------------


def test_trainer_logprobs_equal_those_recorded_at_sampling(tmp_path):
    """Token-exactness: what the live policy samples (ids and log-probabilities at temperature T)
    is what the trainer recomputes for the same weights, through the same sequence building."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from tiny_models import tiny_with_tokenizer

    from clawgym.policy.hf import HFPolicy, attach_model, detach_model
    from clawgym.train.rl_loss import Sample, collate, token_logprobs

    folder = tiny_with_tokenizer(tmp_path / "tiny")
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    live = attach_model("exactness", tokenizer, model, "cpu")
    try:
        policy = HFPolicy({"model": live, "temperature": 0.7, "max_tokens": 12, "max_batch": 4})
        first = policy.complete([{"role": "user", "content": "Name a colour."}])
        history = [
            {"role": "user", "content": "Name a colour."},
            first.message,
            {"role": "user", "content": "Another one, please."},
        ]
        second = policy.complete(history)
    finally:
        detach_model(live)
    turns = [
        {"prompt_token_ids": c.prompt_token_ids, "token_ids": c.token_ids, "logprobs": c.logprobs}
        for c in (first, second)
    ]
    examples = examples_from_turns(turns, max_length=100_000)
    recorded = [lp for ex in examples for lp, label in zip(ex.logprobs, ex.labels) if label != IGNORE]
    assert len(recorded) == len(first.token_ids) + len(second.token_ids)
    recomputed = []
    for ex in examples:
        with torch.no_grad():
            logp, mask, _ = token_logprobs(model, collate([Sample(ex, 1.0)]), 0.7)
        recomputed += logp[mask].tolist()
    assert recomputed == pytest.approx(recorded, abs=1e-4)


def _rl_spec(tmp_path: Path, model: str, **over) -> Path:
    body = {
        "apiVersion": "clawgym/v1",
        "kind": "RL",
        "name": "tiny-rl",
        "model": model,
        "tasks": [str(FIXTURES / "lowercase-word.yaml")],
        "seeds": "0-19",
        "rollout": {
            "tasks_per_step": 2,
            "group_size": 4,
            "max_turns": 1,
            "max_tokens": 6,
            "concurrency": 8,
            "max_batch": 8,
        },
        "loss": {"micro_batch_tokens": 4096},
        "optim": {"lr": 1e-2, "steps": 2},
        "checkpoint": {"every_steps": 1, "keep": 3},
        "log": {"tensorboard": False},
        "out": str(tmp_path / "run"),
    }
    for key, value in over.items():
        body[key] = {**body.get(key, {}), **value} if isinstance(value, dict) else value
    path = tmp_path / "rl.yaml"
    path.write_text(json.dumps(body))
    return path


def _weights(folder: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def test_two_steps_change_the_weights_token_exactly_and_resume(tmp_path, bwrap):
    torch = pytest.importorskip("torch")
    pytest.importorskip("accelerate")
    from click.testing import CliRunner
    from tiny_models import tiny_with_tokenizer

    from clawgym.cli.main import main
    from clawgym.train.metrics import read_metrics

    start = tiny_with_tokenizer(tmp_path / "tiny")
    spec = _rl_spec(tmp_path, str(start))
    result = CliRunner().invoke(main, ["train", "rl", str(spec), "--quiet"])
    assert result.exit_code == 0, result.output
    out = tmp_path / "run"
    rows = read_metrics(out, "train")
    assert [r["step"] for r in rows] == [1, 2]
    for r in rows:
        assert r["valid_rollouts"] == r["rollouts"] >= 8 and r["turns"] == 1.0 and r["response_tokens"] <= 6
        if r["updated"]:  # at the sampling weights, the trainer's log-probabilities are the recorded ones
            assert r["groups"] >= 1 and r["logprob_gap"] < 1e-4 and r["ratio_mean"] == pytest.approx(1.0, abs=1e-4)
    assert any(r["updated"] for r in rows)
    before, after = _weights(start), _weights(out / "model")
    assert any(not torch.equal(before[k], after[k]) for k in before)
    assert sorted(p.name for p in (out / "checkpoints").glob("step-*")) == ["step-0000001", "step-0000002"]
    # a kill after step 2's rollouts but before its checkpoint: the rerun resumes from step 1 and
    # reuses step 2's finished rollouts (sampled by the restored weights) instead of sampling anew
    import shutil

    step2 = sorted((out / "rollouts" / "step-0000002").rglob("record.json"))
    stamps = {p: p.stat().st_mtime_ns for p in step2}
    shutil.rmtree(out / "checkpoints" / "step-0000002")
    again = CliRunner().invoke(main, ["train", "rl", str(spec), "--quiet"])
    assert again.exit_code == 0 and "resuming from" in again.output, again.output
    assert [r["step"] for r in read_metrics(out, "train")] == [1, 2]
    assert stamps and {p: p.stat().st_mtime_ns for p in step2} == stamps


def test_an_errored_rollout_is_dropped_with_its_reason(tmp_path, bwrap, monkeypatch):
    pytest.importorskip("torch")
    from tiny_models import tiny_with_tokenizer

    from clawgym.train import rl_rollouts
    from clawgym.train.grpo import train_rl
    from clawgym.train.metrics import read_metrics
    from clawgym.train.rl_spec import load_rl_spec

    real = rl_rollouts.run_round

    def one_broken(*args, **kwargs):  # as if the first rollout's sandbox had failed
        records = real(*args, **kwargs)
        records[0] = {**records[0], "status": "error", "reward": None, "error": "sandbox: bwrap exited 1"}
        return records

    monkeypatch.setattr(rl_rollouts, "run_round", one_broken)
    spec = load_rl_spec(_rl_spec(tmp_path, str(tiny_with_tokenizer(tmp_path / "tiny")), optim={"steps": 1}))
    train_rl(spec, progress=False)
    [row] = read_metrics(tmp_path / "run", "train")
    dropped = read_metrics(tmp_path / "run", "dropped_rollout")
    assert (
        row["dropped_rollouts"] == len(dropped) >= 1
        and dropped[0]["reason"] == "sandbox_error: sandbox: bwrap exited 1"
    )
    assert row["valid_rollouts"] == row["rollouts"] - row["dropped_rollouts"]
    # the step's metrics give the share of each non-completed outcome
    assert row["outcomes"]["sandbox_error"] == pytest.approx(row["dropped_rollouts"] / row["rollouts"], abs=1e-6)


def test_bad_rl_specs_say_where_and_what(tmp_path):
    from clawgym.errors import SpecError
    from clawgym.train.rl_spec import load_rl_spec

    path = _rl_spec(tmp_path, "embedded", tasks=["nowhere/*.yaml"], seeds="a-b", rollout={"group_size": 1})
    with pytest.raises(SpecError) as err:
        load_rl_spec(path)
    text = str(err.value)
    assert "group_size" in text and "rl.yaml" in text
    path = _rl_spec(tmp_path, "embedded", tasks=["nowhere/*.yaml"], seeds="a-b")
    with pytest.raises(SpecError) as err:
        load_rl_spec(path)
    text = str(err.value)
    assert "no task spec matches 'nowhere/*.yaml'" in text and "cannot read seeds 'a-b'" in text
    # a server: an external one needs its base_url, the managed engine takes none, and its settings are checked
    for server, expected in (
        ({"model": "policy"}, "base_url"),
        ({"type": "vllm", "base_url": "http://127.0.0.1:1/v1"}, "rollout.server"),
        ({"type": "vllm", "engine": {"kv_cache_gib": 1}}, "rollout.server.engine"),
        ({"type": "vllm", "engine": {"dtype": "fp8"}}, "rollout.server.engine.dtype"),
    ):
        path = _rl_spec(tmp_path, "embedded", rollout={"server": server})
        with pytest.raises(SpecError) as err:
            load_rl_spec(path)
        assert expected in str(err.value) and "rl.yaml" in str(err.value), str(err.value)
    spec = load_rl_spec(
        _rl_spec(tmp_path, "embedded", rollout={"server": {"type": "vllm", "engine": {"kv_cache_gb": 1}}})
    )
    assert spec.rollout["server"]["type"] == "vllm" and spec.loss["tis"] == "auto" and spec.loss["tis_cap"] == 2.0


@pytest.mark.slow
@pytest.mark.heavy  # the tiny-model runs here and the engine run (test_train_rl_engine.py) cover the loop
def test_smoke_run_of_the_embedded_model_on_real_tasks(tmp_path, bwrap):
    """SmolLM2-135M on CPU: a GRPO step on a shipped task in bubblewrap sandboxes; a checkpoint is written."""
    pytest.importorskip("torch")
    from clawgym.train.grpo import train_rl
    from clawgym.train.metrics import read_metrics
    from clawgym.train.rl_spec import load_rl_spec

    task = Path(__file__).parents[2] / "specs" / "tasks" / "productivity" / "meeting-action-items.yaml"
    spec = load_rl_spec(
        _rl_spec(
            tmp_path,
            "embedded",
            tasks=[str(task)],
            seeds="0-9",
            rollout={"tasks_per_step": 1, "group_size": 2, "max_turns": 2, "max_tokens": 48, "refill_rounds": 0},
            optim={"lr": 1e-6, "steps": 1},
        )
    )
    folder = train_rl(spec, progress=False)
    rows = read_metrics(tmp_path / "run", "train")
    assert [r["step"] for r in rows] == [1] and all(r["rollouts"] == 2 for r in rows)
    assert (tmp_path / "run" / "checkpoints" / "step-0000001" / "trainer_state.json").is_file()
    assert (folder / "config.json").is_file()


def test_two_processes_share_the_rollouts_and_update_together(tmp_path, bwrap):
    """`accelerate launch`/torchrun with 2 CPU processes (gloo): each runs its share of the groups in
    its own sandboxes, statistics add up across processes, and one model comes out."""
    import subprocess
    import sys

    from tiny_models import tiny_with_tokenizer

    from clawgym.train.metrics import read_metrics

    spec = _rl_spec(
        tmp_path, str(tiny_with_tokenizer(tmp_path / "tiny")), optim={"steps": 1}, rollout={"refill_rounds": 4}
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node",
            "2",
            "--master_port",
            "29547",
            "-m",
            "clawgym.cli.main",
            "train",
            "rl",
            str(spec),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = tmp_path / "run"
    [row] = read_metrics(out, "train")
    ranks = sorted(p.name for p in (out / "rollouts" / "step-0000001").iterdir())
    assert ranks == ["rank-0", "rank-1"]
    per_rank = [len(list((out / "rollouts" / "step-0000001" / r).rglob("record.json"))) for r in ranks]
    assert row["rollouts"] == sum(per_rank) and all(n >= 4 for n in per_rank)
    assert row["groups"] == 2 and row["updated"]  # one group from each process
    assert (out / "model" / "config.json").is_file()


def test_an_external_server_generates_and_gets_the_new_weights_after_each_update(tmp_path, bwrap):
    """Rollouts through an OpenAI-compatible server (`clawgym serve`) that returns token ids and
    log-probabilities; after each update the trainer saves its weights and the server loads them,
    so the next step is on-policy again (the trainer's log-probabilities equal the server's)."""
    torch = pytest.importorskip("torch")
    from tiny_models import tiny_with_tokenizer

    from clawgym.policy.server import ServerThread
    from clawgym.train.grpo import train_rl
    from clawgym.train.metrics import read_metrics
    from clawgym.train.rl_spec import load_rl_spec

    start = tiny_with_tokenizer(tmp_path / "tiny")
    with ServerThread(model=str(start), served_name="policy") as server:
        spec = load_rl_spec(
            _rl_spec(tmp_path, str(start), rollout={"server": {"base_url": server.base_url}, "refill_rounds": 4})
        )
        train_rl(spec, progress=False)
        served = server.policy._loaded.model.state_dict()
    rows = read_metrics(tmp_path / "run", "train")
    assert [r["step"] for r in rows] == [1, 2] and all(r["updated"] for r in rows)
    assert all(r["logprob_gap"] < 1e-4 for r in rows)  # step 2 sampled by the synced weights
    final = _weights(tmp_path / "run" / "model")
    assert all(torch.allclose(served[k], final[k]) for k in final)
    assert any(not torch.equal(_weights(start)[k], final[k]) for k in final)


def test_a_sampler_off_the_trainers_weights_sounds_the_alarm_and_tis_weights_its_tokens(tmp_path, bwrap, monkeypatch):
    """A server whose log-probabilities sit 0.2 nats below the trainer's (as a sampler with other
    kernels, or stale weights, would): the step's logprob_gap shows it, the alarm goes off, and
    truncated importance sampling weights each token by exp(0.2)."""
    pytest.importorskip("torch")
    from tiny_models import tiny_with_tokenizer

    from clawgym.policy.openai import OpenAIPolicy
    from clawgym.policy.server import ServerThread
    from clawgym.train.grpo import train_rl
    from clawgym.train.metrics import read_metrics
    from clawgym.train.rl_spec import load_rl_spec

    answer = OpenAIPolicy._answer

    def shifted(self, *args, **kwargs):
        out = answer(self, *args, **kwargs)
        out.logprobs = [x - 0.2 for x in out.logprobs or []]
        return out

    monkeypatch.setattr(OpenAIPolicy, "_answer", shifted)
    start = tiny_with_tokenizer(tmp_path / "tiny")
    with ServerThread(model=str(start), served_name="policy") as server:
        spec = load_rl_spec(
            _rl_spec(
                tmp_path,
                str(start),
                rollout={"server": {"base_url": server.base_url}, "refill_rounds": 4},
                optim={"lr": 1e-2, "steps": 1},
            )
        )
        train_rl(spec, progress=False)
    [row] = read_metrics(tmp_path / "run", "train")
    assert row["updated"] and row["tis"]
    assert row["logprob_gap"] == pytest.approx(0.2, abs=1e-3) and row["logprob_gap_alarm"]
    assert row["tis_weight_mean"] == pytest.approx(math.exp(0.2), rel=1e-3)
    assert row["ratio_mean"] == pytest.approx(1.0, abs=1e-3)  # against the trainer's own behaviour


def test_rows_are_packed_only_where_attention_needs_no_dense_mask():
    from types import SimpleNamespace

    from clawgym.train.rl_loss import packs_rows, plan_micro_batches

    samples = [SimpleNamespace(example=SimpleNamespace(input_ids=[0] * n)) for n in (3000, 2000, 4000, 9000)]
    assert plan_micro_batches(samples, 8192) == [[0, 1], [2], [3]]
    assert plan_micro_batches(samples, 8192, pack=False) == [[0], [1], [2], [3]]
    sdpa = SimpleNamespace(config=SimpleNamespace(_attn_implementation="sdpa"))
    flash = SimpleNamespace(config=SimpleNamespace(_attn_implementation="flash_attention_2"))
    assert not packs_rows(sdpa) and packs_rows(flash)
