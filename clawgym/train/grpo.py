"""GRPO with rollouts across per-task sandboxes, token-exact, on accelerate. Reads top to bottom:

1. load the policy (LoRA and gradient checkpointing if asked), a frozen reference model when the
   KL weight is above 0, the optimiser and schedule; resume from the last checkpoint;
2. serve the policy's own weights to the `hf` policy under a `live:` name: the next turn of every
   live rollout is generated in one batch in this process, with token ids and log-probabilities;
   or start a vLLM engine on them (`rollout.server: {type: vllm}`, `rl_engine.py`), or use an
   external server;
3. each step: draw B task instances (per process), run G rollouts of each through the normal
   runner (own sandbox, verifier, resume), drop errored rollouts and groups whose rewards are all
   equal, refill from new tasks (`rl_rollouts.py`), and set group-normalised advantages
   (`advantages.py`);
4. turn each kept rollout into the exact token sequences it sampled (tool results as untrained
   tokens) and update the policy with the clipped objective (`rl_loss.py`), loss summed over
   trained tokens / the step's trained tokens across processes (with truncated importance sampling
   when a server sampled); give the server the new weights (the engine: paused, reloaded, probed);
5. log reward mean and spread, pass rate, response length, turns, clip fraction, KL, tokens/s and
   the share of the step spent waiting on sandboxes and verifiers; checkpoint and evaluate every N
   steps; save a Hugging Face model folder (`OUT/model`) at the end.

Run on CPU or one GPU with `clawgym train rl SPEC`; on several GPUs with
`accelerate launch -m clawgym.cli.main train rl SPEC` (each process runs its share of the rollouts).
"""

from __future__ import annotations

import json
import shutil
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from ..errors import ClawgymError
from . import checkpoint
from .checkpoint import TrainerState
from ..records.outcomes import OUTCOMES
from ..records.trajectory import Trajectory
from .render import examples_from_turns, has_token_ids
from .rl_engine import RolloutEngine, add_tied_head, probe_ids, trainer_probe
from .rl_loss import Sample, collate, fill_logprobs, packs_rows, plan_micro_batches, policy_loss, reference_logprobs
from .rl_rollouts import Phase, TaskPool, rl_agent, rollout_phase, sync_server
from .rl_spec import RLSpec
from .loop import evaluate_during_training, load_model, make_optimizer, progress_bar, start_run, training_libs

ROLLOUTS = "rollouts"


def rollout_samples(phase: Phase, *, max_length: int) -> tuple[list[Sample], dict[str, float]]:
    """Training samples of the kept rollouts (their recorded token ids), and the sampled tokens,
    turns and response length over every valid rollout of the phase."""
    kept = {r.trial_id for g in phase.grouping.kept for r in g.rollouts if not r.masked}
    samples: list[Sample] = []
    lengths, turns = [], []
    for r in phase.rollouts:
        if r.status == "error" or r.trajectory_path is None or not r.trajectory_path.is_file():
            continue
        traj = json.loads(r.trajectory_path.read_text(encoding="utf-8"))
        calls = [t for t in traj.get("turns", []) if "error" not in t]
        lengths.append(sum(len(t.get("token_ids") or []) for t in calls))
        turns.append(len(calls))
        if r.trial_id not in kept or not has_token_ids(Trajectory.from_dict(traj)):
            continue
        for ex in examples_from_turns(calls, max_length=max_length):
            samples.append(Sample(ex, r.advantage))
    return samples, {
        "sampled_tokens": float(sum(lengths)),
        "traced_rollouts": float(len(lengths)),
        "turns_sum": float(sum(turns)),
    }


SUMMED = (
    "valid_rollouts",
    "reward_sum",
    "reward_sq",
    "passed",
    "rollouts",
    "groups",
    "dropped_rollouts",
    "dropped_groups",
    "sampled_tokens",
    "traced_rollouts",
    "turns_sum",
    "masked_rollouts",
    *(f"outcome_{name}" for name in OUTCOMES),
)


def phase_sums(phase: Phase, pass_threshold: float, shape: dict[str, float]) -> list[float]:
    """This process's rollout statistics as sums (in `SUMMED` order), to add up across processes."""
    rewards = [float(r.reward) for r in phase.rollouts if r.status != "error" and r.reward is not None]
    local = {
        "valid_rollouts": len(rewards),
        "reward_sum": sum(rewards),
        "reward_sq": sum(x * x for x in rewards),
        "passed": sum(x >= pass_threshold for x in rewards),
        "rollouts": len(phase.rollouts),
        "groups": len(phase.grouping.kept),
        "dropped_rollouts": len(phase.grouping.dropped_rollouts),
        "dropped_groups": len(phase.grouping.dropped_groups),
        "masked_rollouts": sum(r.masked for g in phase.grouping.kept for r in g.rollouts),
        **{f"outcome_{name}": sum(r.outcome == name for r in phase.rollouts) for name in OUTCOMES},
        **shape,
    }
    return [float(local[k]) for k in SUMMED]


def step_stats(sums: list[float]) -> dict[str, Any]:
    """Reward mean and spread, pass rate, response length and turns of the step (all processes)."""
    t = dict(zip(SUMMED, sums))
    n, traced = max(1.0, t["valid_rollouts"]), max(1.0, t["traced_rollouts"])
    mean = t["reward_sum"] / n
    return {
        "reward_mean": mean,
        "reward_std": max(0.0, t["reward_sq"] / n - mean * mean) ** 0.5,
        "pass_rate": t["passed"] / n,
        "response_tokens": t["sampled_tokens"] / traced,
        "turns": t["turns_sum"] / traced,
        **{
            k: int(t[k])
            for k in ("rollouts", "valid_rollouts", "groups", "dropped_rollouts", "dropped_groups", "masked_rollouts")
        },
        "sampled_tokens": int(t["sampled_tokens"]),
        # the share of each non-completed outcome among the step's rollouts (clawgym.records.outcomes)
        "outcomes": {
            name: round(t[f"outcome_{name}"] / t["rollouts"], 6)
            for name in OUTCOMES
            if name != "completed" and t["rollouts"] and t[f"outcome_{name}"]
        },
    }


def train_rl(spec: RLSpec, *, resume: bool = True, console: Any = None, progress: bool = True) -> Path:
    """Train as the spec says (checkpointing, evaluating, resuming); returns the saved model folder."""
    from ..policy.hf import attach_model, detach_model

    check_ready(spec)
    from accelerate.utils import gather_object

    libs = training_libs()
    torch = libs["torch"]
    accelerator, last, log = start_run(spec, libs, resume=resume, also_clear=(ROLLOUTS,))
    out, world, rank = spec.out, accelerator.num_processes, accelerator.process_index

    # 1. policy, reference, optimiser, schedule, resume
    tokenizer, model = load_model(spec, libs)  # type: ignore[arg-type]
    ref_model = None
    if spec.loss["kl_weight"] > 0:
        _, ref_model = load_model(_without_lora(spec), libs)  # type: ignore[arg-type]
        ref_model.requires_grad_(False).eval().to(accelerator.device)
    optim, loss_cfg, rollout_cfg = spec.optim, spec.loss, spec.rollout
    optimizer, scheduler = make_optimizer(libs, model, optim, optim["steps"] * loss_cfg["epochs"])
    model, optimizer = accelerator.prepare(model, optimizer)
    accelerator.register_for_checkpointing(scheduler)
    state = TrainerState()
    if last is not None:
        state = checkpoint.restore(accelerator, last)
        _forget_later_rollouts(out, state.step, accelerator)
        if console is not None and accelerator.is_main_process:
            console.print(f"resuming from {last} (step {state.step} of {optim['steps']})", highlight=False)

    # 2. the live policy, or the engine or server that samples for it
    policy_model = accelerator.unwrap_model(model)
    live = attach_model(f"rl-{spec.name}-{rank}", tokenizer, policy_model, str(accelerator.device))
    server = rollout_cfg.get("server")
    engine: RolloutEngine | None = None
    if server and server.get("type") == "vllm":  # started on the trainer's weights, as of now
        engine = _start_engine(accelerator, model, tokenizer, out, spec, server, state.step)
    elif server and server["sync"] == "load_weights":  # the server starts from the trainer's weights
        _push_weights(accelerator, model, tokenizer, out, spec, server)
    engine_policy = _engine_policy(accelerator, engine, rollout_cfg, spec)
    agent = rl_agent(live, rollout_cfg, spec.chat_template, policy=engine_policy)
    tis_cap = float(loss_cfg["tis_cap"]) if loss_cfg["tis"] == "on" or (loss_cfg["tis"] == "auto" and server) else None
    pool = TaskPool(spec.tasks, spec.seeds, spec.seed)
    per_rank = -(-rollout_cfg["tasks_per_step"] // world)
    temperature = float(rollout_cfg["temperature"])
    max_length = int(getattr(policy_model.config, "max_position_embeddings", 8192) or 8192)

    bar = progress_bar(console, progress and accelerator.is_main_process, optim["steps"], state.step)
    started = time.monotonic() - state.elapsed_s
    try:
        while state.step < optim["steps"]:
            step = state.step + 1
            t0 = time.monotonic()
            if engine is not None:
                engine.check_version(state.step)  # it serves the weights this step samples from

            # 3. rollouts, groups, advantages
            policy_model.eval()
            busy0 = _generation_s(live, engine_policy)
            phase = rollout_phase(
                pool,
                {**agent, "policy_version": state.step},  # the step whose weights sample (0: the starting ones)
                out / ROLLOUTS / f"step-{step:07d}" / f"rank-{rank}",
                step=step,
                rank=rank,
                n_groups=per_rank,
                rollout=rollout_cfg,
                reward=spec.reward,
                rules=spec.training_rules,
            )
            generating = _generation_s(live, engine_policy) - busy0
            samples, shape = rollout_samples(phase, max_length=max_length)
            if tis_cap is not None:  # the trainer's own log-probabilities at the sampling weights
                fill_logprobs(
                    policy_model,
                    samples,
                    "behaviour_logprobs",
                    temperature=temperature,
                    max_tokens=loss_cfg["micro_batch_tokens"],
                    device=accelerator.device,
                )
            if ref_model is not None:
                reference_logprobs(
                    ref_model,
                    samples,
                    temperature=temperature,
                    max_tokens=loss_cfg["micro_batch_tokens"],
                    device=accelerator.device,
                )

            # 4. the update: every process runs the same number of micro-batches (DDP syncs on the last)
            t_train = time.monotonic()
            policy_model.train()
            local_tokens = sum(sum(1 for x in s.example.labels[1:] if x != -100) for s in samples)
            sums = accelerator.reduce(
                torch.tensor(
                    [float(local_tokens), *phase_sums(phase, spec.reward["pass_threshold"], shape)],
                    device=accelerator.device,
                    dtype=torch.float64,
                ),
                reduction="sum",
            )
            total_tokens, rollouts_row = float(sums[0]), step_stats(sums[1:].tolist())
            stats = {"tokens": 0.0, "clipped": 0.0, "kl": 0.0, "ratio": 0.0, "tis_weight": 0.0}
            gap = [0.0, 0.0]  # |trainer − sampled| summed over the first epoch's tokens (before any update), tokens
            loss_sum, grad_norm, updated = 0.0, None, total_tokens > 0
            for epoch in range(loss_cfg["epochs"] if updated else 0):
                batches = plan_micro_batches(samples, loss_cfg["micro_batch_tokens"], pack=packs_rows(policy_model))
                n_micro = int(accelerator.gather(torch.tensor([len(batches)], device=accelerator.device)).max())
                for j in range(n_micro):
                    sync = nullcontext() if j == n_micro - 1 else accelerator.no_sync(model)
                    with sync:
                        if j < len(batches):
                            batch = collate([samples[i] for i in batches[j]], accelerator.device)
                            loss, s = policy_loss(
                                model,
                                batch,
                                temperature=temperature,
                                clip_low=loss_cfg["clip_low"],
                                clip_high=loss_cfg["clip_high"],
                                kl_weight=loss_cfg["kl_weight"],
                                tis_cap=tis_cap,
                            )
                            for k in stats:
                                stats[k] += s[k]
                            if epoch == 0:
                                gap[0] += s["logprob_diff"]
                                gap[1] += s["tokens"]
                        else:  # nothing left here: a zero loss keeps this process in step with the others
                            loss = sum(p.sum() for p in model.parameters() if p.requires_grad) * 0.0
                        accelerator.backward(loss * world / total_tokens)  # DDP averages over processes
                        loss_sum += float(loss.detach())
                if optim["max_grad_norm"]:
                    grad_norm = float(accelerator.clip_grad_norm_(model.parameters(), optim["max_grad_norm"]))
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
            train_s = time.monotonic() - t_train
            t_sync = time.monotonic()
            synced = None
            if updated and server and server.get("type") == "vllm":
                synced = _sync_engine(accelerator, engine, model, tokenizer, out, spec, step)
            elif engine is not None:  # no update (no group had a reward spread): same weights, next version
                engine.stamp_version(step)
            elif updated and server and server["sync"] == "load_weights":
                _push_weights(accelerator, model, tokenizer, out, spec, server)
            sync_s = time.monotonic() - t_sync if updated and server else None

            # 5. log, checkpoint, evaluate
            state.step = step
            step_s = time.monotonic() - t0
            trained = sum(len(s.example.input_ids) for s in samples) * loss_cfg["epochs"]
            state.tokens += trained
            state.elapsed_s = time.monotonic() - started
            row = {
                **rollouts_row,
                "rounds": phase.rounds,
                "updated": updated,
                "loss": loss_sum / max(1.0, total_tokens / world),
                "clip_frac": stats["clipped"] / max(1.0, stats["tokens"]),
                "kl": stats["kl"] / max(1.0, stats["tokens"]),
                "ratio_mean": stats["ratio"] / max(1.0, stats["tokens"]),
                "logprob_gap": gap[0] / max(1.0, gap[1]),
                "tis": tis_cap is not None,
                "tis_weight_mean": stats["tis_weight"] / max(1.0, stats["tokens"]) if tis_cap else None,
                "policy_version": step - 1,
                "lr": scheduler.get_last_lr()[0],
                "grad_norm": grad_norm,
                "rollout_s": phase.seconds,
                "train_s": train_s,
                "sync_s": sync_s,
                "probe_gap": synced.probe_gap if synced else None,
                "probe_shift": synced.probe_shift if synced else None,
                "step_s": step_s,
                "rollout_tokens_per_s": rollouts_row["sampled_tokens"] / max(1e-9, phase.seconds),
                "trainer_tokens_per_s": trained / max(1e-9, train_s),
                # time with a generation running (in-process, or a request open to the engine); an
                # external server's busy time is not seen here
                "generation_s": None if server and not engine_policy else generating,
                "wait_share": None
                if server and not engine_policy
                else max(0.0, phase.seconds - generating) / max(1e-9, step_s),
            }
            alarm = updated and row["logprob_gap"] > loss_cfg["logprob_gap_alarm"]
            row["logprob_gap_alarm"] = alarm
            if alarm and console is not None and accelerator.is_main_process:
                console.print(
                    f"[yellow]step {step}: the trainer's log-probabilities of the sampled tokens differ from "
                    f"the sampler's by {row['logprob_gap']:.4f} per token (alarm at "
                    f"{loss_cfg['logprob_gap_alarm']}): the sampler may not serve the trainer's weights, chat "
                    "template or temperature[/yellow]"
                )
            dropped = (
                gather_object(list(phase.grouping.dropped_rollouts)) if world > 1 else phase.grouping.dropped_rollouts
            )
            if step % spec.log["every_steps"] == 0 or step == optim["steps"]:
                log.write(step, row)
                for trial_id, reason in dropped:
                    log.write(step, {"trial": trial_id, "reason": reason}, kind="dropped_rollout")
            if console is not None and accelerator.is_main_process and not progress:
                console.print(
                    f"step {step}: reward {row['reward_mean']:.3f} ± {row['reward_std']:.3f}, "
                    f"pass {row['pass_rate']:.2f}, groups {row['groups']}",
                    highlight=False,
                )
            if bar is not None:
                bar[0].update(bar[1], advance=1, description=f"reward {row['reward_mean']:.3f}")
            if step % spec.checkpoint["every_steps"] == 0 and step < optim["steps"]:
                checkpoint.save(accelerator, out, state, spec.checkpoint["keep"])
            if spec.eval["every_steps"] and step % spec.eval["every_steps"] == 0 and step < optim["steps"]:
                evaluate_during_training(
                    spec,  # type: ignore[arg-type]
                    accelerator,
                    model,
                    tokenizer,
                    out / "eval-model",
                    step,
                    log,
                    console,
                    base_url=_eval_engine(engine, spec),
                )
        checkpoint.save(accelerator, out, state, spec.checkpoint["keep"])
        folder = out / "model"
        checkpoint.save_model(accelerator, model, tokenizer, folder, chat_template=spec.chat_template)
        evaluate_during_training(
            spec,  # type: ignore[arg-type]
            accelerator,
            model,
            tokenizer,
            folder,
            state.step,
            log,
            console,
            saved=True,
            base_url=_eval_engine(engine, spec),  # the final evaluation may still use the engine
        )
    finally:
        detach_model(live.removeprefix("live:"))
        if bar is not None:
            bar[0].stop()
        if engine is not None:
            engine.stop()
    log.close()
    return folder


def _eval_engine(engine: RolloutEngine | None, spec: RLSpec) -> str | None:
    """With `eval.policy: vllm`, the evaluation generates on the rollout engine (it serves the
    trainer's current weights), rather than starting a second engine beside it."""
    return engine.base_url if engine is not None and spec.eval.get("policy") == "vllm" else None


def _save_server_weights(accelerator: Any, model: Any, tokenizer: Any, out: Path, spec: RLSpec) -> Path:
    """The current weights as the model folder a server loads (`OUT/server-weights`); a tied output
    head written out too (see `rl_engine.add_tied_head`)."""
    folder = out / "server-weights"
    checkpoint.save_model(accelerator, model, tokenizer, folder, chat_template=spec.chat_template)
    if accelerator.is_main_process:
        add_tied_head(folder, accelerator.unwrap_model(model))
    return folder


def _push_weights(accelerator: Any, model: Any, tokenizer: Any, out: Path, spec: RLSpec, server: dict) -> None:
    """Save the current weights as a model folder and have the inference server load them."""
    folder = _save_server_weights(accelerator, model, tokenizer, out, spec)
    if accelerator.is_main_process:
        sync_server(server, folder)
    accelerator.wait_for_everyone()


def _generation_s(live: str, engine_policy: dict | None) -> float:
    """Seconds generated so far in this process: by the live model, or waiting on the engine."""
    from ..policy.busy import busy_s
    from ..policy.hf import generation_busy_s

    return busy_s(engine_policy["base_url"]) if engine_policy else generation_busy_s(live)


def _start_engine(
    accelerator: Any, model: Any, tokenizer: Any, out: Path, spec: RLSpec, server: dict, version: int
) -> RolloutEngine | None:
    """The main process starts the rollout engine on the trainer's current weights (saved to
    `OUT/server-weights`); every process samples from it."""
    folder = _save_server_weights(accelerator, model, tokenizer, out, spec)
    if not accelerator.is_main_process:
        return None
    engine = RolloutEngine(server, max_concurrency=spec.rollout["concurrency"])
    engine.probe_ids = probe_ids(tokenizer)
    try:
        engine.start(folder, version)
        engine.probe()
    except BaseException:
        engine.stop()
        raise
    return engine


def _engine_policy(accelerator: Any, engine: RolloutEngine | None, rollout: dict, spec: RLSpec) -> dict | None:
    """The `vllm` policy config of the engine (made by the main process, sent to the others)."""
    if (rollout.get("server") or {}).get("type") != "vllm":
        return None
    sampling = {"temperature": rollout["temperature"], "top_p": rollout["top_p"], "max_tokens": rollout["max_tokens"]}
    policy = [engine.policy(sampling, spec.chat_template) if engine is not None else None]
    if accelerator.num_processes > 1:
        from accelerate.utils import broadcast_object_list

        broadcast_object_list(policy)
    return policy[0]


def _sync_engine(
    accelerator: Any, engine: RolloutEngine | None, model: Any, tokenizer: Any, out: Path, spec: RLSpec, step: int
) -> Any:
    """Save the updated weights and have the engine load them (checked with the probe)."""
    folder = _save_server_weights(accelerator, model, tokenizer, out, spec)
    report = None
    if engine is not None:  # the main process
        probe = trainer_probe(accelerator.unwrap_model(model), engine.probe_ids, accelerator.device)
        report = engine.sync(folder, step, probe)
    accelerator.wait_for_everyone()
    return report


def _without_lora(spec: RLSpec) -> Any:
    """The spec as `load_model` reads it, minus LoRA and checkpointing: the frozen reference model."""
    from dataclasses import replace

    return replace(spec, lora=None, gradient_checkpointing=False)


def _forget_later_rollouts(out: Path, step: int, accelerator: Any) -> None:
    """After restoring step `step`, rollouts of steps after `step + 1` came from weights that no
    longer exist and are removed; those of `step + 1` were sampled by the restored weights and
    are reused."""
    if accelerator.is_main_process:
        for folder in (out / ROLLOUTS).glob("step-*"):
            try:
                n = int(folder.name.removeprefix("step-"))
            except ValueError:
                continue
            if n > step + 1:
                shutil.rmtree(folder, ignore_errors=True)
    accelerator.wait_for_everyone()


def check_ready(spec: RLSpec) -> None:
    """Problems that would only surface mid-run, raised before anything loads."""
    if spec.rollout["top_p"] < 1.0:
        raise ClawgymError(
            "rollout.top_p below 1 makes the recorded log-probabilities those of the untruncated "
            "distribution, not of what was sampled",
            file=str(spec.file),
            key="rollout.top_p",
            hint="set rollout.top_p: 1 for exact policy-gradient ratios",
        )
    server = spec.rollout.get("server") or {}
    if server.get("type") == "vllm":  # the engine is installed (else: the install command, before any loading)
        from ..engines.install import find

        find("vllm", (server.get("engine") or {}).get("version"))
