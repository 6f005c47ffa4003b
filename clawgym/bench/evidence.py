"""What calibration reads besides its own trials: results of real agents, reviews, and the
difficulty estimate drawn from both.

Agent results are the trial records of any `clawgym run` or `clawgym bench run` folder (for
example the embedded model before and after SFT and RL). A record counts for an instance only if
it was produced on exactly this version of it (same content hash); records of an older version are
counted as stale and ignored.

Difficulty (recorded with its inputs, so it can be recomputed):
    components = [1 - partial_credit] + [1 - mean_reward(agent) for every agent with results]
    partial_credit = mean reward of the 25%, 50% and 75% partial agents
    score = mean(components);  level = easy (< 0.4), medium (< 0.7) or hard
Without agent results the score rests on the partial agents alone: all-or-nothing grading reads
as harder. Each agent run added moves it towards what models actually achieve.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from ..errors import ClawgymError
from .layout import Instance
from ..records.trial_record import TrialRecord

LEVELS = ((0.4, "easy"), (0.7, "medium"), (1.01, "hard"))
ACCEPT = ("accept", "accepted")


def _records(folder: Path) -> list[TrialRecord]:
    import json

    out = []
    for path in sorted(folder.rglob("record.json")):
        if path.parent.parent.name != "trials":
            continue
        try:
            out.append(TrialRecord.from_dict(json.loads(path.read_text(encoding="utf-8")), where=str(path)))
        except (OSError, ValueError):
            continue
    return out


def load_agent_results(specs: list[str]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """{task hash or name: {agent label: [record, ...]}} from `DIR` or `LABEL=DIR` arguments."""
    found: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for spec in specs:
        label, _, where = spec.rpartition("=") if "=" in spec else ("", "", spec)
        folder = Path(where)
        if not folder.is_dir():
            raise ClawgymError(
                f"no results folder at {folder}",
                hint="--agents takes a folder written by 'clawgym run' or 'clawgym bench run', optionally as LABEL=DIR",
            )
        records = _records(folder)
        if not records:
            raise ClawgymError(
                f"{folder} holds no trial records (trials/*/record.json)",
                hint="point --agents at a finished run's results folder",
            )
        for rec in records:
            agent = label or rec.agent_name
            found[rec.task_hash][agent].append(rec)
            found["name:" + rec.task_name][agent].append(rec)
    return {k: dict(v) for k, v in found.items()}


def agent_summary(results: dict[str, dict[str, list]], name: str, task_hash: str) -> tuple[dict, list[str]]:
    """Per agent label: trials, mean reward and pass rate of this version; warnings for stale ones."""
    current = results.get(task_hash, {})
    by_name = results.get("name:" + name, {})
    out, warnings = {}, []
    for label in sorted(set(current) | set(by_name)):
        recs = current.get(label, [])
        graded = [r for r in recs if r.get("status") != "error" and r.get("reward") is not None]
        stale = len([r for r in by_name.get(label, []) if r.get("task", {}).get("hash") != task_hash])
        if stale:
            warnings.append(f"agents: {stale} result(s) of {label} are for another version of this instance, ignored")
        if not graded:
            continue
        rewards = [float(r["reward"]) for r in graded]
        out[label] = {
            "trials": len(graded),
            "errors": len(recs) - len(graded),
            "mean_reward": round(sum(rewards) / len(rewards), 6),
            "pass_rate": round(sum(r.get("status") == "passed" for r in graded) / len(graded), 6),
        }
    return out, warnings


def difficulty(partial_rewards: dict[str, float] | None, agents: dict[str, dict]) -> dict[str, Any] | None:
    """The difficulty estimate (see the module docstring for the formula)."""
    components: dict[str, float] = {}
    if partial_rewards:
        credit = sum(partial_rewards[k] for k in ("25%", "50%", "75%")) / 3
        components["partial"] = round(1 - credit, 6)
    for label, row in agents.items():
        components[f"agent:{label}"] = round(1 - row["mean_reward"], 6)
    if not components:
        return None
    score = sum(components.values()) / len(components)
    level = next(name for bound, name in LEVELS if score < bound)
    return {
        "score": round(score, 4),
        "level": level,
        "components": components,
        "basis": "partial agents only"
        if len(components) == 1 and "partial" in components
        else f"{len(components)} components",
    }


def review_summary(instance: Instance, task_hash: str | None) -> tuple[dict[str, Any], str | None]:
    """A pointer to the instance's review file (written by `clawgym bench review`) with its latest
    human decision on this version; a warning unless that decision is an acceptance."""
    from .review import read_reviews

    pointer: dict[str, Any] = {"file": instance.review.name, "status": "none"}
    hint = f"(clawgym bench review {instance.name})"
    try:
        data = read_reviews(instance.folder)
    except ClawgymError as exc:
        return {**pointer, "status": "unreadable"}, f"review: {exc.format()}"
    pointer["llm_reviews"] = len(data["llm_reviews"])
    decided = [r for r in data["reviews"] if isinstance(r, dict) and r.get("decision") in ("accept", "reject")]
    if not decided:
        return pointer, f"review: no accept or reject yet {hint}"
    current = [r for r in decided if r.get("hash") == task_hash]
    last = (current or decided)[-1]
    pointer.update(
        status=str(last["decision"]) if current else "stale",
        reviewer=last.get("reviewer"),
        date=str(last.get("date")) if last.get("date") else None,
    )
    if not current:
        return (
            pointer,
            f"review: the last decision is about an earlier version of this instance; review it again {hint}",
        )
    if last["decision"] not in ACCEPT:
        return pointer, f"review: rejected by {last.get('reviewer', '?')}: {last.get('comment', '')}".rstrip(": ")
    return pointer, None
