"""The rollout phase of a GRPO step: sample task instances, run G attempts of each through the
normal runner, and keep the groups worth training on (refilling from new tasks when some drop).

Rollouts are ordinary trials: each runs in its own sandbox under the run's caps, is verified by
its task's checks, and is written to `OUT/rollouts/step-NNNNNNN/rank-R/round-J/` the moment it
ends, so a step interrupted by a kill reuses what already finished when the run resumes. The
policy is the trainer's own model, served in-process by the `hf` policy (`live:` name), which
batches the next turn of all live rollouts into one generation; or the rollout engine (a `vllm`
policy on the engine `rl_engine.py` keeps in step with the trainer); or an external server.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..compile.batch import compile_many
from ..run.plan import RunPlan
from ..run.trial import Trial
from ..run.runner import execute
from ..spec.task import Task
from .advantages import Grouping, Rollout, form_groups


class TaskPool:
    """The training pool (task specs × seeds), sampled without replacement within a step,
    deterministically from (seed, step, rank, round) so that a resumed step draws the same tasks."""

    def __init__(self, paths: Sequence[Path], seeds: Sequence[int], seed: int):
        self.items = [(Path(p), int(s)) for p in paths for s in seeds]
        self.seed = seed

    def draw(self, n: int, *, step: int, rank: int, round_: int, exclude: set[tuple[Path, int]]) -> list[Task]:
        rng = random.Random(f"{self.seed}/{step}/{rank}/{round_}")
        free = [item for item in self.items if item not in exclude]
        chosen = rng.sample(free, min(n, len(free)))
        exclude.update(chosen)
        return [t for path, s in chosen for t in compile_many([path], [s])]


def rl_agent(
    live_model: str, rollout: dict[str, Any], chat_template: str | None, policy: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The agent of the rollouts (the claw harness, or OpenClaw per `rollout.harness`) sampling as
    the spec says: with `policy` (the rollout engine's) when given, else on the trainer's live model
    (batching turns), or on the external server, asking it for token ids and log-probabilities."""
    sampling = {"temperature": rollout["temperature"], "top_p": rollout["top_p"], "max_tokens": rollout["max_tokens"]}
    server = rollout.get("server")
    if policy is not None:
        policy = dict(policy)
    elif server:
        policy = {
            "type": "openai",
            "base_url": server["base_url"],
            "model": server["model"],
            "logprobs": True,
            "return_token_ids": True,
            **sampling,
        }
        if server.get("api_key_env"):
            policy["api_key_env"] = server["api_key_env"]
    else:
        policy = {"type": "hf", "model": live_model, "max_batch": rollout["max_batch"], **sampling}
        if chat_template:
            policy["chat_template"] = chat_template
    harness = dict(rollout.get("harness") or {"type": "claw"})
    kind = harness.pop("type", "claw")
    if kind == "openclaw":  # the real OpenClaw; its model calls reach `policy` through the recording proxy
        return {
            "type": "openclaw",
            "policy": policy,
            "max_turns": rollout["max_turns"],
            "max_tokens": rollout["max_tokens"],
            **harness,
        }
    return {"type": "claw", "policy": policy, "max_turns": rollout["max_turns"]}


def sync_server(server: dict[str, Any], folder: Path) -> None:
    """Ask the inference server to load the weights saved in `folder` (POST {"path": folder})."""
    import json
    import os
    import urllib.error
    import urllib.request

    from ..errors import ClawgymError

    url = server["base_url"].rstrip("/") + "/" + server["sync_path"].lstrip("/")
    headers = {"Content-Type": "application/json"}
    if server.get("api_key_env") and os.environ.get(server["api_key_env"]):
        headers["Authorization"] = f"Bearer {os.environ[server['api_key_env']]}"
    request = urllib.request.Request(
        url, data=json.dumps({"path": str(folder.resolve())}).encode(), headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=float(server["timeout"])) as response:
            response.read()
    except (urllib.error.URLError, OSError) as exc:
        detail = exc.read().decode(errors="replace")[:300] if isinstance(exc, urllib.error.HTTPError) else str(exc)
        raise ClawgymError(
            f"the inference server did not load the new weights ({url}): {detail}",
            key="rollout.server",
            hint='the server must accept POST {"path": FOLDER} at sync_path (clawgym serve does)',
        ) from None


@dataclass
class Phase:
    """What one rollout phase produced: the groups, every rollout, and timings."""

    grouping: Grouping = field(default_factory=Grouping)
    rollouts: list[Rollout] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    rounds: int = 0
    seconds: float = 0.0


def run_round(
    tasks: list[Task],
    agent: dict[str, Any],
    out: Path,
    *,
    group_size: int,
    rollout: dict[str, Any],
    pass_threshold: float,
) -> list[dict[str, Any]]:
    """G trials of each task through the runner (finished ones reused on resume); their records.

    The G rollouts of an instance start from one prepared tree of its files, copied into each
    rollout's workspace; it is also the pristine original they are graded against (its digest is
    in each record as `inputs_sha256`)."""
    trials = [Trial(task, agent, attempt=g) for task in tasks for g in range(group_size)]
    plan = RunPlan(
        name=out.name,
        trials=trials,
        out=out,
        concurrency=rollout["concurrency"],
        sandbox=rollout.get("sandbox"),
        pass_threshold=pass_threshold,
        retries=1,
        trial_timeout=rollout.get("trial_timeout"),
        source={"rl_round": str(out)},
        shared_inputs=True,
    )
    return execute(plan, resume=True)


def rollout_phase(
    pool: TaskPool,
    agent: dict[str, Any],
    out: Path,
    *,
    step: int,
    rank: int,
    n_groups: int,
    rollout: dict[str, Any],
    reward: dict[str, Any],
    rules: dict[str, str] | None = None,
) -> Phase:
    """Run rounds until `n_groups` groups are kept or the refill rounds are spent."""
    phase = Phase()
    start = time.monotonic()
    drawn: set[tuple[Path, int]] = set()
    for round_ in range(rollout["refill_rounds"] + 1):
        need = n_groups - len(phase.grouping.kept)
        if need <= 0:
            break
        tasks = pool.draw(need, step=step, rank=rank, round_=round_, exclude=drawn)
        if not tasks:
            break
        folder = out / f"round-{round_}"
        records = run_round(
            tasks,
            agent,
            folder,
            group_size=rollout["group_size"],
            rollout=rollout,
            pass_threshold=reward["pass_threshold"],
        )
        rollouts = [Rollout.from_record(r, folder / "trials") for r in records]
        grouping = form_groups(rollouts, min_valid=reward["min_valid"], normalise=reward["normalise"], rules=rules)
        phase.grouping.kept += grouping.kept[:need]
        phase.grouping.dropped_rollouts += grouping.dropped_rollouts
        phase.grouping.dropped_groups += grouping.dropped_groups
        phase.rollouts += rollouts
        phase.records += records
        phase.rounds = round_ + 1
    phase.seconds = time.monotonic() - start
    return phase
