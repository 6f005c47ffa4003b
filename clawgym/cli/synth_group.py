"""`clawgym synth` (`synth run`, the default) and `clawgym synth stats`: the synth group's options;
`synth.py` drives a synthesis, `synth/stats.py` and `synth/diversity.py` count a dataset."""

from __future__ import annotations

import json
from pathlib import Path

import click

from .default_group import DefaultToRun
from .support import CONSOLE as console
from .support import friendly


@click.group(cls=DefaultToRun)
def synth() -> None:
    """Synthesize verified tasks: 'clawgym synth SPEC' runs a synth spec; see also 'synth stats'."""


@synth.command("run")
@click.argument("spec", type=click.Path(exists=True, dir_okay=False))
@click.option("--count", type=click.IntRange(min=1), help="Tasks to produce (default: the spec's count).")
@click.option("--out", type=click.Path(file_okay=False), help="Dataset folder (default: the spec's out).")
@click.option("--seed", type=int, help="Sampling seed (default: the spec's).")
@click.option("--family", help="Only this task family (to check a family while writing it).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), help="Worker processes (default: cores + 1).")
@click.option("--resume", is_flag=True, help="Continue the dataset folder of an interrupted run.")
@click.option("--split/--no-split", default=None, help="Split train/validation/test by family (default: the spec's).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@friendly
def synth_run(
    spec: str,
    count: int | None,
    out: str | None,
    seed: int | None,
    family: str | None,
    jobs: int | None,
    resume: bool,
    split: bool | None,
    quiet: bool,
) -> None:
    """Synthesize tasks from a synth spec (kind: Synth) into a dataset folder of task specs."""
    from .synth import synth_command

    synth_command(
        spec,
        count=count,
        out=out,
        seed=seed,
        family=family,
        jobs=jobs,
        resume=resume,
        split=split,
        quiet=quiet,
        console=console,
    )


@synth.command("stats")
@click.argument("dataset", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@click.option(
    "--diversity",
    is_flag=True,
    help="How distinct the tasks are: MinHash clusters and nearest neighbours of instructions, "
    "reference solutions and operation chains (DATASET may also be any folder of task specs).",
)
@click.option(
    "--against",
    type=click.Path(exists=True, file_okay=False),
    help="With --diversity: each task's closest match in this other set (a dataset or spec folder).",
)
@click.option(
    "--sample", type=int, default=200, show_default=True, help="With --diversity: tasks drawn from DATASET (0: all)."
)
@click.option("--seed", type=int, default=0, show_default=True, help="With --diversity: seed of the sample.")
@click.option(
    "--targets",
    "targets_spec",
    type=click.Path(exists=True, dir_okay=False),
    help="With --diversity: the synth spec whose `diversity:` targets to report (default: the one "
    "DATASET was made with; a spec folder such as specs/bench-v2 names none).",
)
@friendly
def synth_stats(
    dataset: str, as_json: bool, diversity: bool, against: str | None, sample: int, seed: int, targets_spec: str | None
) -> None:
    """Counts of a synthesized dataset by category, subcategory, persona, skill, operation, files,
    checks and expected steps, against the spec's balance targets; with --diversity, how distinct
    its tasks are (see docs/synth.md)."""
    if diversity:
        from ..synth.diversity import diversity_command

        diversity_command(
            Path(dataset),
            Path(against) if against else None,
            sample or None,
            seed,
            as_json,
            console,
            Path(targets_spec) if targets_spec else None,
        )
        return
    from ..synth.stats import dataset_stats, print_stats

    stats = dataset_stats(Path(dataset))
    if as_json:
        click.echo(json.dumps(stats, indent=2))
    else:
        print_stats(stats, console)
