"""`clawgym run`: plan, execute with a progress bar, print and save the summary."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from ..errors import ClawgymError
from ..run.plan import RunPlan, parse_seeds, plan_for_task, plan_from_run_spec
from ..report.summary import print_summary, summarize
from ..files.atomic import write_json_atomic
from ..run.runner import MANIFEST, RunEvents, execute, load_records, manifest
from ..spec.load import load_file
from ..files.textsafe import markup_safe


def build_plan(
    spec: str | None,
    *,
    agents: list[dict],
    seeds: str,
    attempts: int,
    out: str | None,
    resume_dir: str | None,
    overrides: dict | None = None,
    add: bool = False,
) -> tuple[RunPlan, bool]:
    """The plan to run and whether it resumes an existing folder.

    `overrides` (command-line options such as concurrency or executor; None values ignored)
    replace the spec's settings, also when resuming. With `add`, a finished results folder of the
    same spec is extended: its seeds and agents plus the ones given, only the missing trials run.
    """
    plan, resume = _plan(
        spec,
        agents=agents,
        seeds=seeds,
        attempts=attempts,
        out=out,
        resume_dir=resume_dir,
        concurrency=(overrides or {}).get("concurrency"),
    )
    if add:
        plan, resume = _extended(plan, spec, attempts=attempts), True
    elif not resume and plan.out.is_dir() and load_records(plan.out):
        done = len(load_records(plan.out))
        raise ClawgymError(
            f"results folder {plan.out} already holds {done} finished trials",
            hint="to add these seeds or agents to it, run the same command with --add; "
            f"'clawgym run --resume {plan.out}' only finishes the trials it was started with; "
            "or choose another --out",
        )
    for key, value in (overrides or {}).items():
        if value is not None and key == "processes":  # --processes: one setting of the executor
            plan.executor = {**(plan.executor or {"type": "local"}), "processes": value}
        elif value is not None:
            setattr(plan, key, value)
    return plan, resume


def _extended(plan: RunPlan, spec: str | None, *, attempts: int) -> RunPlan:
    """`plan` widened to everything its results folder already planned (seeds, agents), so the
    folder's manifest lists both and a later --resume or report sees one run."""
    manifest_path = plan.out / MANIFEST
    if not manifest_path.is_file():
        return plan  # a new folder: --add changes nothing
    source = json.loads(manifest_path.read_text(encoding="utf-8"))["source"]
    if spec is None or Path(source.get("spec_file", "")).resolve() != Path(spec).resolve():
        raise ClawgymError(
            f"--add: {plan.out} holds a run of {source.get('spec_file')}, not of {spec}",
            hint="add to a folder made by the same spec, or choose another --out",
        )
    doc = load_file(spec)
    if doc.data.get("kind") == "Task":
        seeds = sorted({*map(int, source.get("seeds", [])), *(t.seed for t in plan.tasks)})
        agents = list(
            {
                json.dumps(a, sort_keys=True): a for a in [*source.get("agents", []), *plan.source.get("agents", [])]
            }.values()
        )
        wider = plan_for_task(
            doc,
            agents=agents,
            seeds=seeds,
            attempts=max(attempts, int(source.get("attempts", 1))),
            concurrency=plan.concurrency,
            out=str(plan.out),
        )
        wider.source["attempts"] = max(attempts, int(source.get("attempts", 1)))
        plan = wider
    write_json_atomic(manifest_path, manifest(plan))
    return plan


def _plan(
    spec: str | None,
    *,
    agents: list[dict],
    seeds: str,
    attempts: int,
    out: str | None,
    resume_dir: str | None,
    concurrency: int | None,
) -> tuple[RunPlan, bool]:
    if resume_dir:
        manifest_path = Path(resume_dir) / MANIFEST
        if not manifest_path.is_file():
            raise ClawgymError(f"{resume_dir} has no {MANIFEST}", hint="pass the folder a 'clawgym run' created")
        source = json.loads(manifest_path.read_text(encoding="utf-8"))["source"]
        spec_file = source["spec_file"]
        if not Path(spec_file).is_file():
            raise ClawgymError(
                f"the run's spec {spec_file} no longer exists", hint="run from the folder the run was started in"
            )
        doc = load_file(spec_file)
        if doc.data.get("kind") == "Run":
            plan = plan_from_run_spec(doc, out=resume_dir)
        else:
            plan = plan_for_task(
                doc,
                agents=source["agents"],
                seeds=source["seeds"],
                attempts=int(source.get("attempts", 1)),
                out=resume_dir,
            )
        return plan, True
    if not spec:
        raise ClawgymError(
            "give a spec file to run, or --resume RUN_DIR", hint="for example: clawgym run specs/quickstart.yaml"
        )
    doc = load_file(spec)
    if isinstance(doc.data, dict) and doc.data.get("kind") == "Task":
        plan = plan_for_task(
            doc,
            agents=agents or [{"type": "oracle"}],
            seeds=parse_seeds(seeds),
            attempts=attempts,
            concurrency=concurrency or 4,
            out=out,
        )
        plan.source["attempts"] = attempts
    else:
        if agents:
            raise ClawgymError(
                "--agent applies to a task spec; a run spec lists its agents under 'agents:'",
                file=spec,
                hint="edit the run spec's agents, or run a task spec",
            )
        plan = plan_from_run_spec(doc, out=out)
    return plan, False


def run_command(
    spec: str | None,
    *,
    agents: list[dict],
    seeds: str,
    attempts: int,
    out: str | None,
    resume_dir: str | None,
    quiet: bool,
    console: Console,
    overrides: dict | None = None,
    add: bool = False,
) -> None:
    plan, resume = build_plan(
        spec,
        agents=agents,
        seeds=seeds,
        attempts=attempts,
        out=out,
        resume_dir=resume_dir,
        overrides=overrides,
        add=add,
    )
    stats = {"done": 0, "passed": 0, "errors": 0, "running": 0}
    waiting_retry: set[str] = set()
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        disable=quiet,
        transient=False,
    )
    bar = progress.add_task(markup_safe(plan.name), total=len(plan.trials), info="")

    def show() -> None:
        graded = stats["done"] - stats["errors"]
        rate = f"{stats['passed'] / graded:.0%}" if graded else "-"
        retry = f" retry-wait {len(waiting_retry)}" if waiting_retry else ""
        progress.update(bar, info=f"running {stats['running']} pass {rate} errors {stats['errors']}{retry}")

    def on_start(already: int, total: int) -> None:
        progress.update(bar, completed=already)
        if already:
            console.print(f"resuming: {already} of {total} trials already finished")

    def on_trial_start(trial_id: str) -> None:
        stats["running"] += 1
        waiting_retry.discard(trial_id)
        show()

    def on_retry(record: dict, delay: float) -> None:
        stats["running"] -= 1
        waiting_retry.add(record["trial_id"])
        show()

    def on_result(record: dict) -> None:
        stats["running"] -= 1
        stats["done"] += 1
        stats["passed"] += record["status"] == "passed"
        stats["errors"] += record["status"] == "error"
        progress.update(bar, advance=1)
        show()

    events = RunEvents(on_start=on_start, on_trial_start=on_trial_start, on_result=on_result, on_retry=on_retry)
    try:
        with progress:
            records = execute(plan, resume=resume, events=events)
    except KeyboardInterrupt:
        saved = len(load_records(plan.out)) if plan.out.exists() else 0
        raise ClawgymError(
            f"interrupted; the {saved} finished trials are saved in {plan.out}",
            hint=f"continue with 'clawgym run --resume {plan.out}'",
        ) from None
    rows = summarize(records, rules=getattr(plan, "outcome_rules", None))
    write_json_atomic(plan.out / "summary.json", {"name": plan.name, "rows": rows, "trials": len(records)})
    print_summary(rows, console, title=f"{plan.name}: {len(records)} trials")
    errors = [r for r in records if r["status"] == "error"]
    for rec in errors[:5]:
        console.print(f"[red]error[/red] {markup_safe(rec['trial_id'])}: {markup_safe(rec['error'])}", highlight=False)
    out = markup_safe(plan.out)
    if errors:
        console.print(f"{len(errors)} trials errored; re-run them with 'clawgym run --resume {out}'", highlight=False)
    console.print(f"results: {out}", highlight=False)
