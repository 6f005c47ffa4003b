"""Expert demonstrations without an API: a task's reference solution replayed as `claw` tool calls.

`expert_turns(task)` turns the solution steps into the assistant turns a good agent would produce
(look at the inputs, do the work through `exec` / `write` / `message` / `cron`, answer with a short
summary). `expert_trajectories` replays them with the real `claw` agent and a scripted policy
through the normal trial runner, so each trajectory carries the real system prompt, the real tool
results and the verifier's verdict. `expert_command` keeps the replays that score and writes them
as `clawgym.trajectory/v1` JSONL, ready for SFT.
"""

from __future__ import annotations

import json
import re
import shlex
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from ..files.textsafe import printable
from ..spec.task import Task

MAX_READS = 4
MAX_READ_BYTES = 50 * 1024  # the read tool's own cap: bigger files would come back cut
_PATH_TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-/]*")
_NOT_OUTPUTS = ("unchanged", "file_absent", "command", "python", "script")


# ------------------------------------------------------------------------------ turns
def _call(turn: int, k: int, name: str, **arguments: Any) -> dict[str, Any]:
    """One OpenAI tool call with a stable id `call_<turn>_<k>`."""
    return {
        "id": f"call_{turn}_{k}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
    }


def _readable(data: bytes) -> bool:
    return len(data) <= MAX_READ_BYTES and b"\0" not in data[:8192]


def _resolve(token: str, files: Mapping[str, bytes]) -> str | None:
    """The file a token names: itself, or the one file ending in `/token` (a name given inside a folder)."""
    if token in files:
        return token
    hits = [p for p in files if p.endswith("/" + token)]
    return hits[0] if len(hits) == 1 else None


def named_inputs(task: Task, limit: int = MAX_READS) -> tuple[list[str], list[str]]:
    """Files worth reading and folders worth listing that the instruction names, in order of mention.

    Files named outright come first; folders named (e.g. "inbox/") fill the remaining slots with
    their own files, README first. Binary files and files over the read tool's cap are skipped.
    """
    files = task.files
    named: list[str] = []
    folders: list[str] = []
    for match in _PATH_TOKEN.finditer(task.instruction):
        token = match.group().rstrip(".,:;").removeprefix("./")
        folder = token.rstrip("/")
        if "/" in token and any(p.startswith(folder + "/") for p in files):
            if folder not in folders:
                folders.append(folder)
            continue
        path = _resolve(token, files) if "." in token else None
        if path and path not in named and _readable(files[path]):
            named.append(path)
    reads = named[:limit]
    for folder in folders:
        inside = sorted(
            (p for p in files if p.rpartition("/")[0] == folder),
            key=lambda p: (not p.rpartition("/")[2].upper().startswith("README"), p),
        )
        reads += [p for p in inside if p not in reads and _readable(files[p])][: limit - len(reads)]
    return reads, folders[:3]


def _delimiter(source: str, base: str) -> str:
    """A heredoc delimiter that occurs nowhere in `source`."""
    word, n = base, 0
    while word in source:
        n += 1
        word = f"{base}_{n}"
    return word


def _heredoc(program: str, source: str, base: str) -> str:
    end = _delimiter(source, base)
    body = source if source.endswith("\n") else source + "\n"
    return f"{program} <<'{end}'\n{body}{end}"


def _first_line(text: str, width: int = 70) -> str:
    line = next((s.strip() for s in str(text).splitlines() if s.strip()), "")
    return line if len(line) <= width else line[: width - 1] + "…"


def step_turn(step: Mapping[str, Any], turn: int) -> dict[str, Any]:
    """The assistant turn doing one solution step with the claw tools."""
    label = f" ({step['name']})" if step.get("name") else ""
    timeout = {"timeout": float(step["timeout"])} if step.get("timeout") else {}
    if "exec" in step:
        content = f"Running `{_first_line(step['exec'])}`{label}."
        call = _call(turn, 0, "exec", command=str(step["exec"]), **timeout)
    elif "python" in step:
        content = f"I'll do this{label} with a short Python script."
        call = _call(turn, 0, "exec", command=_heredoc("python3 -", str(step["python"]), "PY"), **timeout)
    elif "script" in step:
        python = step.get("interpreter") == "python3"
        content = f"Running my {'Python' if python else 'shell'} script{label}."
        command = _heredoc("python3 -" if python else "bash -s", str(step["source"]), "PY" if python else "SH")
        call = _call(turn, 0, "exec", command=command, **timeout)
    elif "write" in step:
        path = str(step["write"]["path"])
        content = f"Writing {path}{label}."
        call = _call(turn, 0, "write", path=path, content=str(step["write"]["content"]))
    elif "message" in step:
        msg = step["message"]
        target = msg.get("target") or "user"
        content = f"Sending the message to {target}{label}."
        args = {
            "action": "send",
            **({"channel": msg["channel"]} if msg.get("channel") else {}),
            "target": target,
            "message": msg["message"],
        }
        call = _call(turn, 0, "message", **args)
    elif "cron" in step:
        job = step["cron"]
        content = f"Scheduling {job['name']} ({job['schedule']}){label}."
        call = _call(
            turn,
            0,
            "cron",
            action="add",
            job={"name": job["name"], "schedule": job["schedule"], "text": job.get("text") or job["name"]},
        )
    else:
        raise ValueError(f"unknown solution step kind: {sorted(step)}")
    return {"content": content, "tool_calls": [call]}


def output_paths(task: Task) -> list[str]:
    """Files the solution writes or the checks grade, in order of first mention (no globs)."""
    seen: list[str] = []
    candidates = [s["write"]["path"] for s in task.solution if "write" in s]
    candidates += [
        c["path"] for c in task.checks if c.get("type") not in _NOT_OUTPUTS and isinstance(c.get("path"), str)
    ]
    for path in candidates:
        if path not in seen and not any(ch in path for ch in "*?["):
            seen.append(path)
    return seen


def summary_text(task: Task) -> str:
    """The final answer: a short list of what was created, updated, sent and scheduled."""
    done = [f"- {'updated' if p in task.files else 'created'} {p}" for p in output_paths(task)]
    for step in task.solution:
        if "message" in step:
            msg = step["message"]
            channel = f" on {msg['channel']}" if msg.get("channel") else ""
            done.append(f"- sent a message to {msg.get('target') or 'you'}{channel}")
        elif "cron" in step:
            done.append(f"- scheduled {step['cron']['name']} ({step['cron']['schedule']})")
    if not done:
        return "Done: everything you asked for is in place."
    return "Done. Here is what I did:\n" + "\n".join(done)


def expert_turns(task: Task) -> list[dict[str, Any]]:
    """Assistant turns (OpenAI message dicts) doing what the reference solution does.

    Turn 0 reads the inputs the instruction names (or lists the workspace when it names none),
    then one turn per solution step, then a plain-text summary. Deterministic for a task.
    """
    reads, folders = named_inputs(task)
    calls = [_call(0, 0, "exec", command="ls " + " ".join(shlex.quote(f + "/") for f in folders))] if folders else []
    calls += [_call(0, len(calls) + k, "read", path=p) for k, p in enumerate(reads)]
    if not calls:
        calls = [_call(0, 0, "exec", command="ls -R")]
    first = {"content": "I'll look at the inputs first.", "tool_calls": calls}
    turns = [first]
    for step in task.solution:
        turns.append(step_turn(step, len(turns)))
    turns.append({"content": summary_text(task)})
    return turns


# ------------------------------------------------------------------------------ replay
def expert_agent(task: Task) -> dict[str, Any]:
    """The agent config replaying `task`'s expert turns with the built-in claw agent."""
    return {"type": "claw", "policy": {"type": "scripted", "turns": expert_turns(task)}}


def _replay(task: Task, sandbox: dict | None) -> dict[str, Any]:
    from ..run.trial import Trial, run_trial  # the runner behind execute_trial, keeping the trajectory

    outcome = run_trial(Trial(task, expert_agent(task)), sandbox_spec=sandbox)
    return {**outcome.record.to_dict(), "trajectory": outcome.trajectory, "diff": outcome.diff}


def expert_trajectories(
    tasks: Iterable[Task], *, jobs: int = 4, sandbox: dict | None = None
) -> Iterator[tuple[Task, dict[str, Any]]]:
    """Replay every task's expert turns (in `jobs` threads); yields (task, record) in input order.

    The record is the trial record (status, reward, verdict, error) plus `trajectory` (the
    recorded trajectory as a dict, None when the trial failed before the agent ran) and `diff`.
    """
    tasks = list(tasks)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        yield from zip(tasks, pool.map(lambda t: _replay(t, sandbox), tasks))


def failure_reason(record: Mapping[str, Any], most: int = 3) -> str:
    """Why a replay did not score: the infrastructure error, or the failing checks' reasons."""
    if record.get("status") == "error":
        return str(record.get("error") or "error")
    results = (record.get("verdict") or {}).get("results") or []
    bad = [f"{r['name']}: {r.get('reason') or 'failed'}" for r in results if r.get("score", 0) < 1 - 1e-9]
    text = "; ".join(bad[:most]) + (f"; and {len(bad) - most} more" if len(bad) > most else "")
    note = record.get("note")
    return "; ".join(x for x in (text, f"agent: {note}" if note else "") if x) or "reward below the threshold"


def to_trajectory(record: Mapping[str, Any]) -> Any:
    """The record's trajectory with its verdict, status and reward attached (as `collect_run` does)."""
    from ..records.trajectory import Trajectory

    from ..records.store import attach_outcome

    t = attach_outcome(Trajectory.from_dict(dict(record["trajectory"])), record)
    t.diff = record.get("diff")
    return t


# ------------------------------------------------------------------------------ command
def expert_command(
    specs: list[Path],
    *,
    seeds: str,
    out: Path,
    jobs: int = 4,
    min_reward: float = 1.0,
    console: Any = None,
    sandbox: dict | None = None,
) -> dict[str, Any]:
    """`clawgym train expert SPECS --seeds 0-9 --out experts.jsonl -j N`.

    Compiles every task spec (folders are searched for *.yaml; other kinds are skipped) on every
    seed, replays the expert turns, keeps trajectories whose reward reaches `min_reward` and
    writes them to `out`. Returns {"tasks", "kept", "failed": [{"task", "reward", "reason"}], "out"}.
    """
    from ..compile.batch import compile_many
    from ..run.plan import expand_task_paths, parse_seeds
    from ..records.store import write_jsonl

    tasks = compile_many(expand_task_paths([str(p) for p in specs], Path.cwd()), parse_seeds(seeds), jobs=jobs)
    kept: list[Any] = []
    failed: list[dict[str, Any]] = []
    for task, rec in expert_trajectories(tasks, jobs=jobs, sandbox=sandbox):
        reward = rec.get("reward")
        if reward is not None and reward >= min_reward - 1e-9 and rec.get("trajectory") is not None:
            kept.append(to_trajectory(rec))
        else:
            failed.append({"task": task.id, "reward": reward, "reason": failure_reason(rec)})
    write_jsonl(Path(out), kept)
    if console is None:
        return {"tasks": len(tasks), "kept": len(kept), "failed": failed, "out": str(out)}
    console.print(
        f"expert trajectories: {len(tasks)} task instance(s), {len(kept)} kept, {len(failed)} failed "
        f"(min reward {min_reward:g}) -> {out}",
        markup=False,
        highlight=False,
    )
    for f in failed:
        score = "error" if f["reward"] is None else f"reward {f['reward']:.3f}"
        console.print(f"  failed {f['task']} ({score}): {printable(str(f['reason']))}", markup=False, highlight=False)
    return {"tasks": len(tasks), "kept": len(kept), "failed": failed, "out": str(out)}


__all__ = [
    "expert_agent",
    "expert_command",
    "expert_trajectories",
    "expert_turns",
    "failure_reason",
    "named_inputs",
    "output_paths",
    "step_turn",
    "summary_text",
    "to_trajectory",
]
