"""`clawgym bench add | calibrate | lock | version`: build, calibrate and version the benchmark."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import click

from ..files.textsafe import markup_safe
from .support import CONSOLE, friendly
from ..errors import ClawgymError
from ..bench.layout import LOCK_FILE, bench_folder, find_instances, read_lock

_BENCH = click.option(
    "--bench",
    "bench_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="The benchmark: a version series (1, 2 or 3) or a folder; default: the latest (3, specs/bench-v3).",
)


def _judge(value: str | None) -> dict[str, Any] | None:
    """A judge config: a YAML file (a `judge:` mapping, or a Run spec holding one) or inline YAML."""
    if not value:
        return None
    import yaml

    inline = value.lstrip().startswith("{")
    try:
        data = yaml.safe_load(value if inline else Path(value).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ClawgymError(
            f"cannot read the judge config {value}: {exc.strerror}",
            key="--judge",
            hint="a YAML file, or an inline mapping such as '{type: openai, model: ...}'",
        ) from None
    except yaml.YAMLError as exc:
        raise ClawgymError(f"--judge is neither a readable file nor a YAML mapping: {exc}", key="--judge") from None
    if isinstance(data, dict) and isinstance(data.get("judge"), dict):
        data = data["judge"]
    if not isinstance(data, dict) or "type" not in data:
        raise ClawgymError(
            "a judge needs a policy config with a `type`",
            key="--judge",
            hint="as in a Run spec's judge: e.g. '{type: openai, model: gpt-4o-mini, base_url: ...}'",
        )
    return data


def _report(summary: Any, root: Path) -> None:
    for rec in summary.failed:
        CONSOLE.print(
            f"[red]FAIL[/red] {markup_safe(rec['category'])}/{markup_safe(rec['instance'])}",
            highlight=False,
            soft_wrap=True,
        )
        for reason in rec["failures"]:
            CONSOLE.print(f"  - {markup_safe(reason)}", highlight=False, soft_wrap=True)
    unreviewed = [r for r in summary.records if any(w.startswith("review:") for w in r["warnings"])]
    other = [r for r in summary.records if any(not w.startswith("review:") for w in r["warnings"])]
    for rec in other:
        for w in (w for w in rec["warnings"] if not w.startswith("review:")):
            CONSOLE.print(
                f"[yellow]warning[/yellow] {markup_safe(rec['instance'])}: {markup_safe(w)}",
                highlight=False,
                soft_wrap=True,
            )
    if unreviewed:
        names = ", ".join(markup_safe(r["instance"]) for r in unreviewed[:5]) + (" ..." if len(unreviewed) > 5 else "")
        CONSOLE.print(
            f"[yellow]warning[/yellow] {len(unreviewed)} instance(s) without an accepted review: {names}"
            f" (clawgym bench review NAME)",
            highlight=False,
            soft_wrap=True,
        )
    n, bad = len(summary.records), len(summary.failed)
    levels = Counter((r.get("difficulty") or {}).get("level", "-") for r in summary.records)
    CONSOLE.print(
        f"{n} instance(s) calibrated in {summary.seconds:.0f} s: {n - bad} passed, {bad} failed; "
        f"difficulty {', '.join(f'{k} {v}' for k, v in sorted(levels.items()))}",
        highlight=False,
        soft_wrap=True,
    )
    if summary.lock.stale:
        tag = "[red]error[/red]" if summary.lock_is_failure else "[yellow]note[/yellow]"
        for line in summary.lock.lines():
            CONSOLE.print(f"{tag} {root / LOCK_FILE} is stale: {line}", highlight=False, soft_wrap=True)
        CONSOLE.print(
            "  fix: check the changes (calibrate, review), then run `clawgym bench lock` to record the new version",
            highlight=False,
            soft_wrap=True,
        )


def register(group: click.Group) -> None:
    """Add this module's commands to `group`."""

    @group.command("add")
    @click.argument("sources", nargs=-1, required=True)
    @_BENCH
    @click.option("--no-rubric", is_flag=True, help="Add every instance code-only (no generated rubric).")
    @click.option(
        "--hybrid",
        type=click.IntRange(min=0),
        metavar="N",
        help="At most N hybrid instances in the benchmark (the published set has 44 of 200); the "
        "eligible ones are taken in turn from each category, the others added code-only.",
    )
    @friendly
    def add_command(sources: tuple[str, ...], bench_dir: str, no_rubric: bool, hybrid: int | None) -> None:
        """Copy concrete task specs into the benchmark as <category>/<family>-<n>/task.yaml.

        SOURCES are synth dataset folders (e.g. from specs/synth/bench.yaml) or concrete task spec
        files. Instances of families with a rubric template get a generated rubric (hybrid).
        """
        from ..bench.importer import add, sources as find_sources

        added = add(find_sources(list(sources)), bench_folder(bench_dir), rubrics=not no_rubric, hybrid=hybrid)
        for a in added:
            what = f"skipped ({a.skipped})" if a.skipped else ("added, hybrid" if a.hybrid else "added")
            CONSOLE.print(f"{a.category}/{a.name}: {what}", highlight=False, soft_wrap=True)
        new = [a for a in added if not a.skipped]
        CONSOLE.print(
            f"{len(new)} instance(s) added ({sum(a.hybrid for a in new)} hybrid), "
            f"{len(added) - len(new)} skipped. Next: clawgym bench calibrate --only NAME, "
            f"clawgym bench review NAME, clawgym bench lock",
            highlight=False,
            soft_wrap=True,
        )

    @group.command("calibrate")
    @_BENCH
    @click.option("--only", multiple=True, metavar="NAME", help="Calibrate only these instances (repeatable).")
    @click.option("-j", "--jobs", type=int, default=0, help="Instances calibrated at once (default: one per core).")
    @click.option(
        "--agents",
        multiple=True,
        metavar="[LABEL=]DIR",
        help="Results folder of a run of some agent on the benchmark (repeatable): per-instance reward "
        "and pass rate per agent label, used for the difficulty estimate.",
    )
    @click.option(
        "--judge",
        default=None,
        metavar="FILE|YAML",
        help="Judge policy config (as in a Run spec) to score rubrics on the reference's work.",
    )
    @friendly
    def calibrate_command(
        bench_dir: str, only: tuple[str, ...], jobs: int, agents: tuple[str, ...], judge: str | None
    ) -> None:
        """Re-run every automated calibration; write calibration.yaml beside each instance.

        Fails (exit 1) listing every instance that breaks a rule: reference 1.0, doing nothing
        <= 0.1, tampering <= doing nothing, 3 regradings equal, every graded path named in the
        instruction, partial work scoring below complete work; and when the lock is stale.
        """
        from ..bench.calibrate_all import calibrate_all

        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        root = bench_folder(bench_dir)
        config = _judge(judge)
        progress = Progress(
            TextColumn("[bold]calibrate"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[info]}"),
            TimeElapsedColumn(),
            console=CONSOLE,
            transient=True,
            disable=not CONSOLE.is_terminal,
        )
        state = {"failed": 0}

        def done(record: dict[str, Any]) -> None:
            state["failed"] += bool(record["failures"])
            progress.update(bar, advance=1, info=f"failed {state['failed']}")

        with progress:
            bar = progress.add_task("calibrate", total=None, info="")
            summary = calibrate_all(
                root,
                only=list(only),
                jobs=jobs,
                agents=list(agents),
                judge=config,
                on_start=lambda n: progress.update(bar, total=n),
                on_done=done,
            )
        _report(summary, root)
        if not summary.ok:
            sys.exit(1)

    @group.command("lock")
    @_BENCH
    @friendly
    def lock_command(bench_dir: str) -> None:
        """Record every instance's content hash and the benchmark version in bench.lock.json."""
        from ..bench.lock import current_hashes, staleness, write_lock

        root = bench_folder(bench_dir)
        instances = find_instances(root)
        if not instances:
            raise ClawgymError(f"no instances under {root}", hint="add some with 'clawgym bench add'")
        hashes = current_hashes(instances)
        before = read_lock(root).get("version")
        changes = staleness(root, hashes)
        lock = write_lock(root, hashes)
        for line in [] if changes.missing_lock else changes.lines():
            CONSOLE.print(line, highlight=False, soft_wrap=True)
        moved = f" (was {before})" if before and before != lock["version"] else (" (unchanged)" if before else "")
        CONSOLE.print(
            f"benchmark version {lock['version']}{moved}: {len(hashes)} instances", highlight=False, soft_wrap=True
        )

    @group.command("version")
    @_BENCH
    @click.option("--check", is_flag=True, help="Also compare the lock with the instances; exit 1 if stale.")
    @click.option("--json", "as_json", is_flag=True, help="Print the lock file as JSON.")
    @friendly
    def version_command(bench_dir: str, check: bool, as_json: bool) -> None:
        """Print the benchmark version recorded in bench.lock.json."""
        root = bench_folder(bench_dir)
        lock = read_lock(root)
        if not lock:
            raise ClawgymError(f"no {LOCK_FILE} in {root}", hint="run 'clawgym bench lock'")
        if as_json:
            click.echo(json.dumps(lock, indent=1))
        else:
            counts = Counter(i.category for i in find_instances(root) if i.name in lock["instances"])
            click.echo(
                f"{lock['version']}  ({len(lock['instances'])} instances: "
                f"{', '.join(f'{c} {n}' for c, n in counts.most_common())})"
            )
        if check:
            from ..bench.lock import current_hashes, staleness

            state = staleness(root, current_hashes(find_instances(root)))
            for line in state.lines():
                click.echo(f"stale: {line}", err=True)
            if state.stale:
                sys.exit(1)
