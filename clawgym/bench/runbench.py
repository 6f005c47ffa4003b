"""`clawgym bench run`: any policy or agent on the benchmark, k attempts per instance, one leaderboard row.

The run goes through the normal runner (sandboxes, retries of infrastructure errors, a results
folder written trial by trial), so rerunning the same command continues where it stopped. The row
records the benchmark version it was produced with: the lock's when the instances match
`bench.lock.json`; a stale lock is refused unless `--allow-unlocked`; a benchmark without a lock
(an imported one) gets a version computed from its instances and is marked unlocked.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from .. import __version__
from ..errors import ClawgymError, SpecError
from ..run.plan import RunPlan
from ..report.summary import print_summary, summarize
from ..run.trial import Trial
from ..files.atomic import write_json_atomic
from ..run.runner import MANIFEST, RunEvents, execute, load_records
from ..records.outcomes import INFRASTRUCTURE
from ..records.trial_record import TrialRecord, as_record
from ..files.textsafe import markup_safe
from .discover import compile_instances, discover, key_of, select, stale_lock_details, version_info

ROW_FORMAT = "clawgym.leaderboard-row/v1"
LEADERBOARD_DIR = Path("results/leaderboard")
_SECRET = re.compile(r"key|secret|passw|auth|(^|_)token$", re.IGNORECASE)  # never written into a row
STAT_KEYS = ("instances", "trials", "errors", "mean_reward", "mean_reward_ci", "pass_rate", "pass_rate_ci")


# ---------------------------------------------------------------------------------------------
# What to run


def agent_config(
    *,
    model: str | None,
    agent: str | None,
    base_url: str | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    max_turns: int | None = None,
) -> dict[str, Any]:
    """The agent config for `--model` / `--agent`.

    `--model` alone runs the claw agent on that model (`embedded`, a folder, a hub id, or an
    endpoint's model with `--base-url`); `--agent` is an agent type (oracle, nop, claw, ...) or a
    YAML file holding one agent config (any type, black-box `command` agents included).
    """
    from ..agent.configs import agent_configs

    if agent and Path(agent).is_file():
        if model or base_url:
            raise ClawgymError(
                "--model and --base-url do not apply to an agent file", hint=f"set the model under 'policy:' in {agent}"
            )
        config = _agent_file(Path(agent))
        return _apply(config, temperature=temperature, max_tokens=max_tokens, max_turns=max_turns)
    if not agent and not model:
        raise ClawgymError(
            "say what to evaluate: --model MODEL or --agent AGENT",
            hint="e.g. --model embedded, --agent oracle, or --agent my-agent.yaml",
        )
    if agent and agent.endswith((".yaml", ".yml")):
        raise ClawgymError(f"agent file {agent} not found")
    [config] = agent_configs(
        [agent or "claw"],
        model=model,
        base_url=base_url,
        temperature=temperature,
        max_tokens=max_tokens,
        max_turns=max_turns,
    )
    return config


def _agent_file(path: Path) -> dict[str, Any]:
    from ..spec.load import load_file
    from ..spec.validate import validate_plugin

    doc = load_file(path)
    data = doc.data
    where: tuple = ()
    if isinstance(data, dict) and data.get("kind") == "Run":  # a run spec: its single agent
        agents = data.get("agents") or []
        if len(agents) != 1:
            raise ClawgymError(
                f"the run spec lists {len(agents)} agents; a leaderboard row is one agent",
                file=str(path),
                key="agents",
                hint="write the agent's config in its own file",
            )
        data, where = agents[0], ("agents", 0)
    problems = validate_plugin("agent", data, doc, where)
    if not problems and isinstance(data.get("policy"), dict):
        problems = validate_plugin("policy", data["policy"], doc, where + ("policy",))
    if problems:
        raise SpecError(problems)
    return dict(data)


def _apply(config: dict[str, Any], **options: Any) -> dict[str, Any]:
    """Command-line sampling options over an agent file's settings."""
    out = dict(config)
    if isinstance(out.get("policy"), dict):
        policy = dict(out["policy"])
        for key in ("temperature", "max_tokens"):
            if options.get(key) is not None:
                policy[key] = options[key]
        out["policy"] = policy
    if options.get("max_turns") is not None and out.get("type") == "claw":
        out["max_turns"] = options["max_turns"]
    return out


def portable(path: str | Path) -> str:
    """A path safe to publish: relative to the current folder when inside it, else its last part."""
    p = Path(path)
    if not p.is_absolute():
        return p.as_posix()
    try:
        return p.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return p.name


def describe_agent(config: dict[str, Any]) -> dict[str, Any]:
    """The agent config as a row records it: no secrets, no machine-specific paths."""

    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if not _SECRET.search(k)}
        if isinstance(value, list):
            return [clean(v) for v in value]
        if isinstance(value, str) and value.startswith("/") and Path(value).exists():
            return portable(value)
        return value

    return clean(config)


def model_of(config: dict[str, Any]) -> str | None:
    policy = config.get("policy") if isinstance(config.get("policy"), dict) else {}
    model = policy.get("model")
    return portable(model) if isinstance(model, str) and Path(model).exists() else model


def default_label(config: dict[str, Any], agent: str | None) -> str:
    """A file-name-safe label: the model's name, the agent file's name, or the agent type."""
    if agent and Path(agent).is_file():
        base = str(config.get("name") or Path(agent).stem)
    else:
        model = model_of(config)
        base = str(config.get("name") or (Path(model).name if model else config["type"]))
    return safe_label(base)


def safe_label(text: str) -> str:
    label = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")
    if not label:
        raise ClawgymError(f"label {text!r} has no usable characters", hint="use letters, digits, '.', '_' or '-'")
    return label


# ---------------------------------------------------------------------------------------------
# Running


def usage_of(run_dir: Path, rec: TrialRecord) -> tuple[int, int]:
    """(tokens, turns) of one trial: from its record (v2), else its trajectory file (0, 0 when absent)."""
    from ..report.html import trial_usage

    if rec.usage is not None:
        return rec.usage.total_tokens, rec.usage.model_calls
    path = run_dir / "trials" / rec.trial_id / "trajectory.json"
    try:
        traj = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return 0, 0
    return trial_usage(traj if isinstance(traj, dict) else None)


def _stats(row: dict[str, Any], usage: list[tuple[int, int]], ks: list[int]) -> dict[str, Any]:
    out = {k: row.get(k) for k in STAT_KEYS}
    for k in ks:
        for name in (f"pass@{k}", f"pass^{k}"):
            out[name] = row.get(name)
            out[f"{name}_ci"] = row.get(f"{name}_ci")
    out["mean_tokens"] = round(sum(t for t, _ in usage) / len(usage), 1) if usage else None
    out["mean_turns"] = round(sum(n for _, n in usage) / len(usage), 2) if usage else None
    return out


def leaderboard_row(
    records: list[TrialRecord], run_dir: Path, *, label: str, config: dict[str, Any], k: int, bench: dict[str, Any]
) -> dict[str, Any]:
    """The row: overall and per-category stats with CIs, tokens and turns, counts, version and date."""
    ks = sorted({1, k})
    records = [as_record(r) for r in records]
    rows = summarize(records, ks=ks)
    usage: dict[str, list[tuple[int, int]]] = {}
    for rec in records:
        if rec.is_error:
            continue
        pair = usage_of(run_dir, rec)
        usage.setdefault("all", []).append(pair)
        usage.setdefault(rec.category, []).append(pair)
    overall = next((r for r in rows if r["category"] == "all"), None)
    errors = sum(r.is_error for r in records)
    outcomes = (overall or {}).get("outcomes") or {}
    return {
        "format": ROW_FORMAT,
        "label": label,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "benchmark": bench,
        "agent": describe_agent(config),
        "model": model_of(config),
        "k": k,
        "ks": ks,
        "overall": _stats(overall or {}, usage.get("all", []), ks),
        "categories": {
            r["category"]: _stats(r, usage.get(r["category"], []), ks) for r in rows if r["category"] != "all"
        },
        "trials": len(records),
        "errors": errors,
        "outcomes": outcomes,  # share of each non-completed outcome (clawgym.records.outcomes)
        "infrastructure": round(sum(v for o, v in outcomes.items() if o in INFRASTRUCTURE), 6),
        "complete": errors == 0,
        "run_dir": portable(run_dir),
        "clawgym": __version__,
    }


def _check_resume(out: Path, config: dict[str, Any]) -> bool:
    """Whether `out` holds an earlier run of this agent to continue; another agent's run is refused."""
    manifest = out / MANIFEST
    if not manifest.is_file():
        return bool(load_records(out)) if out.is_dir() else False
    agents = json.loads(manifest.read_text(encoding="utf-8")).get("agents") or []
    if agents and agents != [config]:
        raise ClawgymError(
            f"{out} holds a run of another agent ({json.dumps(agents[0])[:120]})",
            hint="choose another --out or --label, or delete that folder to start over",
        )
    return True


def run_bench(
    root: Path,
    config: dict[str, Any],
    *,
    label: str,
    k: int = 3,
    out: Path | None = None,
    leaderboard: Path = LEADERBOARD_DIR,
    jobs: int = 4,
    only: list[str] | None = None,
    allow_unlocked: bool = False,
    judge: dict[str, Any] | None = None,
    trial_timeout: float | None = None,
    quiet: bool = False,
    console: Console | None = None,
) -> tuple[dict[str, Any], Path]:
    """Run `config` on the benchmark at `root` and write its leaderboard row; returns (row, row file)."""
    console = console or Console()
    if k < 1:
        raise ClawgymError(f"-k {k}: need at least one attempt per instance")
    instances = discover(root)
    tasks = compile_instances(instances, root)
    version = version_info(root, {key: t.hash for key, t in tasks.items()})
    if version.stale and not allow_unlocked:
        details = stale_lock_details(root, {key: t.hash for key, t in tasks.items()})
        raise ClawgymError(
            f"the benchmark's lock is stale: {len(details)} instance(s) differ from "
            f"{root / 'bench.lock.json'} ({', '.join(details[:4])}{', ...' if len(details) > 4 else ''})",
            hint="calibrate and lock again ('clawgym bench lock'), or pass --allow-unlocked "
            "(the row is then marked unlocked)",
        )
    chosen = [key_of(i, root) for i in select(instances, root, only or [])]
    out = out or Path("runs/bench") / label
    plan = RunPlan(
        name=f"bench-{label}",
        trials=[Trial(tasks[key], config, a) for key in chosen for a in range(k)],
        out=out,
        concurrency=jobs,
        judge=judge,
        trial_timeout=trial_timeout,
        source={"bench": portable(root), "version": version.version, "label": label, "k": k, "only": list(only or [])},
    )
    resume = _check_resume(out, config)
    records = _execute(plan, resume, quiet, console)
    bench = {
        "path": portable(root),
        **version.to_dict(),
        "instances": len(tasks),
        "run_instances": len(chosen),
        "only": list(only or []),
    }
    row = leaderboard_row(records, out, label=label, config=config, k=k, bench=bench)
    leaderboard.mkdir(parents=True, exist_ok=True)
    path = leaderboard / f"{label}.json"
    write_json_atomic(path, row)
    print_summary(
        summarize(records, ks=row["ks"]),
        console,
        title=f"{label} on benchmark {version.version}" + ("" if version.locked else " (unlocked)"),
    )
    if row["errors"]:
        console.print(f"[yellow]{row['errors']} trials errored[/yellow]; run the same command again to retry them")
    return row, path


def _execute(plan: RunPlan, resume: bool, quiet: bool, console: Console) -> list[dict[str, Any]]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=quiet,
    )
    bar = progress.add_task(markup_safe(plan.name), total=len(plan.trials))

    def on_start(already: int, total: int) -> None:
        progress.update(bar, completed=already)
        if already:
            console.print(f"resuming: {already} of {total} trials already finished")

    events = RunEvents(on_start=on_start, on_result=lambda rec: progress.update(bar, advance=1))
    try:
        with progress:
            return execute(plan, resume=resume, events=events)
    except KeyboardInterrupt:
        raise ClawgymError(
            f"interrupted; finished trials are saved in {plan.out}", hint="run the same command again to continue"
        ) from None
