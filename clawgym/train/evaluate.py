"""The evaluation hook: run a model folder on validation tasks through the normal runner.

The claw agent drives the `hf` policy (greedy unless a temperature is given), or with `policy:
vllm` a vLLM engine started on the model folder for the evaluation, over every validation task ×
seed (× attempt) in its own sandbox, exactly as `clawgym run` would, and the results folder is kept
under `OUT/eval/<label>/`. What comes back is pass rate and mean reward with bootstrap 95% confidence
intervals over task instances, logged next to the loss.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..records.outcomes import evaluation_rules
from ..compile.batch import compile_many
from ..run.plan import RunPlan
from ..report.summary import summarize
from ..run.trial import Trial
from ..run.runner import execute


def agent_for(
    model: str,
    *,
    chat_template: str | None,
    max_turns: int,
    max_tokens: int,
    temperature: float = 0.0,
    max_batch: int = 1,
    policy_type: str = "hf",
    engine: dict[str, Any] | None = None,
    base_url: str | None = None,
) -> dict[str, Any]:
    """The claw agent as the evaluation runs it (greedy by default): on the `hf` policy (with
    `max_batch` > 1 the concurrent trials' turns are generated in one batch), or on the `vllm`
    policy (an engine for the run, generating up to `max_batch` sequences at once)."""
    policy: dict[str, Any] = {"type": policy_type, "model": model, "temperature": temperature, "max_tokens": max_tokens}
    if policy_type == "vllm":
        policy["max_concurrency"] = max(1, max_batch)
        if base_url:  # an engine that already serves these weights
            policy["base_url"] = base_url
        elif engine:
            policy["engine"] = dict(engine)
    elif max_batch > 1:
        policy["max_batch"] = max_batch
    if chat_template:
        policy["chat_template"] = chat_template
    return {"type": "claw", "policy": policy, "max_turns": max_turns}


def evaluate(
    model: str,
    tasks: list[Path],
    seeds: list[int],
    out: Path,
    *,
    chat_template: str | None = None,
    max_turns: int = 12,
    max_tokens: int = 512,
    concurrency: int = 4,
    temperature: float = 0.0,
    attempts: int = 1,
    max_batch: int = 1,
    rules: dict[str, str] | None = None,
    policy_type: str = "hf",
    engine: dict[str, Any] | None = None,
    base_url: str | None = None,
) -> dict[str, Any]:
    """Pass rate and mean reward (with 95% CIs over task instances) of `model` on `tasks` × `seeds`,
    `attempts` trials each, counted as the evaluation `rules` say (outcome -> score | exclude |
    retry; the defaults when None), with the share of each non-completed outcome; results kept in `out`."""
    agent = agent_for(
        model,
        chat_template=chat_template,
        max_turns=max_turns,
        max_tokens=max_tokens,
        temperature=temperature,
        max_batch=max_batch,
        policy_type=policy_type,
        engine=engine,
        base_url=base_url,
    )
    trials = [Trial(task, agent, a) for task in compile_many(tasks, seeds) for a in range(attempts)]
    plan = RunPlan(
        name="eval",
        trials=trials,
        out=out,
        concurrency=concurrency,
        source={
            "model": model,
            "seeds": seeds,
            "tasks": [str(t) for t in tasks],
            "temperature": temperature,
            "attempts": attempts,
            "policy": policy_type,
        },
        outcome_rules=evaluation_rules(rules),
    )
    records = execute(plan, resume=out.exists())
    row = next(r for r in summarize(records, ks=(1,), rules=plan.outcome_rules) if r["category"] == "all")
    return {
        "trials": row["trials"],
        "errors": row["errors"],
        "pass_rate": row["pass_rate"],
        "pass_rate_ci": row.get("pass_rate_ci"),
        "mean_reward": row["mean_reward"],
        "mean_reward_ci": row.get("mean_reward_ci"),
        "outcomes": row.get("outcomes") or {},
    }
