"""`clawgym synth`: run a synthesis with a progress bar and print what was accepted and rejected."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from ..files.textsafe import markup_safe
from ..synth.make import Made
from ..synth.pipeline import SynthEvents, SynthSummary, synthesize
from ..synth.spec import load_synth_spec


def synth_command(
    spec_path: str,
    *,
    count: int | None,
    out: str | None,
    seed: int | None,
    family: str | None,
    jobs: int | None,
    resume: bool,
    split: bool | None,
    quiet: bool,
    console: Console,
) -> SynthSummary:
    spec = load_synth_spec(spec_path, count=count, out=out, seed=seed, split=split)
    if jobs is not None:
        spec.jobs = jobs
    progress = Progress(
        TextColumn("[bold]synth"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        disable=quiet,
    )
    state = {"rejected": 0, "task": None}

    def on_start(target: int, done: int) -> None:
        state["task"] = progress.add_task("synth", total=target, completed=done, info="")
        if done:
            console.print(f"resuming {spec.out}: {done} tasks already accepted")

    def on_result(made: Made, accepted: bool) -> None:
        if not accepted:
            state["rejected"] += 1
        progress.update(state["task"], advance=1 if accepted else 0, info=f"rejected {state['rejected']}")

    with progress:
        try:
            summary = synthesize(
                spec, resume=resume, only_family=family, events=SynthEvents(on_start=on_start, on_result=on_result)
            )
        except KeyboardInterrupt:
            console.print(
                f"[yellow]interrupted[/yellow]; every accepted task is saved in {spec.out} "
                f"(continue with the same command and --resume)"
            )
            raise SystemExit(130) from None
    rate = summary.accepted / summary.seconds if summary.seconds else 0.0
    console.print(
        f"[green]{summary.accepted}[/green] tasks accepted, {summary.rejected} rejected "
        f"({summary.duplicates} near-duplicates) in {summary.seconds:.0f} s ({rate:.1f} tasks/s); "
        f"dataset in {summary.out}"
    )
    for reason, n in sorted(summary.reasons.items(), key=lambda kv: -kv[1])[:8]:
        console.print(f"  rejected by {markup_safe(reason)}: {n}")
    if summary.exhausted:
        console.print(
            f"families with no new tasks left (their last candidates were near-duplicates): "
            f"{', '.join(summary.exhausted)}"
        )
    if summary.stopped:
        console.print(f"[red]{summary.stopped}[/red]; see {summary.out}/rejected.jsonl for the reasons")
    return summary
