"""`clawgym import ...` and `clawgym export ...`: tasks (ClawGym, Harbor and PinchBench folders) and
trajectory files in and out; the work is done in `interop/`."""

from __future__ import annotations

from pathlib import Path

import click

from .default_group import DefaultToTrajectories
from .pinchbench import export_pinchbench, import_pinchbench
from .support import CONSOLE as console
from .support import friendly


@click.group("import")
def import_() -> None:
    """Import tasks (published ClawGym folders or source rows, Harbor folders) or trajectory files."""


@import_.command("clawgym")
@click.argument("source", type=click.Path(exists=True, file_okay=False))
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False),
    help="Folder for the imported task specs, e.g. specs/imported/NAME.",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    help="Worker processes (default: twice the cores; the cores with --no-smoke).",
)
@click.option(
    "--no-smoke",
    is_flag=True,
    help="Do not run each grader once on the untouched workspace (faster; crashing graders go unnoticed).",
)
@click.option("--quiet", is_flag=True, help="Only print the summary.")
@friendly
def import_clawgym(source: str, out: str, jobs: int | None, no_smoke: bool, quiet: bool) -> None:
    """Import task folders in the published ClawGym format (data_entry.json, input_files/, reward/)."""
    from ..interop.clawgym_import import import_command

    import_command(Path(source), Path(out), jobs=jobs, quiet=quiet, console=console, smoke=not no_smoke)


@import_.command("clawgym-hf")
@click.argument("source", type=click.Path(exists=True, dir_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Folder for the imported task specs.")
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    help="Worker processes (default: twice the cores; the cores with --no-smoke).",
)
@click.option("--no-smoke", is_flag=True, help="Do not run each grader once on the untouched workspace.")
@click.option("--quiet", is_flag=True, help="Only print the summary.")
@friendly
def import_clawgym_hf(source: str, out: str, jobs: int | None, no_smoke: bool, quiet: bool) -> None:
    """Import the ClawGym source rows of the Hugging Face hub (JSONL: prompt, hook_code, input_files, rule,
    origin_template)."""
    from ..interop.clawgym_hf import import_hf

    import_hf(Path(source), Path(out), jobs=jobs, smoke=not no_smoke, quiet=quiet, console=console)


@import_.command("harbor")
@click.argument("source", type=click.Path(exists=True, file_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Folder for the imported task specs.")
@click.option("--quiet", is_flag=True, help="Only print the summary.")
@friendly
def import_harbor(source: str, out: str, quiet: bool) -> None:
    """Import Harbor task folders (instruction.md, task.toml, environment/, tests/, solution/)."""
    from ..interop.harbor_import import import_command

    import_command(Path(source), Path(out), quiet=quiet, console=console)


@import_.command("trajectories")
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="Write clawgym trajectories (JSONL) here.")
@click.option(
    "--format",
    "fmt",
    default="auto",
    show_default=True,
    type=click.Choice(["auto", "clawgym", "openai", "sharegpt", "hf"]),
    help="Format of the sources (auto: detect per file or folder).",
)
@friendly
def import_trajectories(sources: tuple[str, ...], out: str, fmt: str) -> None:
    """Import trajectories from OpenAI-messages or ShareGPT JSONL, or a saved Hugging Face dataset."""
    from ..interop.trajectory_formats import import_command

    import_command([Path(s) for s in sources], Path(out), fmt=fmt, console=console)


@click.group(cls=DefaultToTrajectories)
def export() -> None:
    """Export trajectories of runs ('clawgym export RUN_DIR ...'), or tasks as ClawGym or Harbor folders."""


@export.command("trajectories")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--out", "out_jsonl", type=click.Path(dir_okay=False), help="Write trajectories as JSONL here.")
@click.option(
    "--format",
    "fmt",
    default="clawgym",
    show_default=True,
    type=click.Choice(["clawgym", "openai", "sharegpt"]),
    help="JSONL flavour: clawgym trajectories, OpenAI messages + tools, or ShareGPT conversations.",
)
@click.option(
    "--hf",
    "hf_dir",
    type=click.Path(file_okay=False),
    help="Also save a Hugging Face dataset (messages + tools columns) to this folder.",
)
@click.option("--min-reward", type=float, help="Keep trajectories with at least this reward.")
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice(["passed", "failed", "error"]),
    help="Keep only these statuses (repeatable).",
)
@click.option("--category", "categories", multiple=True, help="Keep only these categories (repeatable).")
@friendly
def export_trajectories(
    run_dirs: tuple[str, ...],
    out_jsonl: str | None,
    fmt: str,
    hf_dir: str | None,
    min_reward: float | None,
    statuses: tuple[str, ...],
    categories: tuple[str, ...],
) -> None:
    """Export the trajectories of run folders (with verdicts and diffs) to JSONL and/or a dataset."""
    from ..interop.trajectory_formats import export_command

    export_command(
        [Path(d) for d in run_dirs],
        out_jsonl=Path(out_jsonl) if out_jsonl else None,
        fmt=fmt,
        hf_dir=Path(hf_dir) if hf_dir else None,
        min_reward=min_reward,
        statuses=statuses,
        categories=categories,
        console=console,
    )


@export.command("clawgym")
@click.argument("specs", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Dataset folder to write.")
@click.option("--seed", default=0, show_default=True, help="Seed to compile parameterised specs with.")
@friendly
def export_clawgym(specs: tuple[str, ...], out: str, seed: int) -> None:
    """Export task specs (files or folders) as published-format ClawGym task folders."""
    from ..interop.clawgym_export import export_command

    export_command([Path(s) for s in specs], Path(out), seed=seed, console=console)


@export.command("harbor")
@click.argument("specs", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Folder for the Harbor task folders.")
@click.option("--seed", default=0, show_default=True, help="Seed to compile parameterised specs with.")
@friendly
def export_harbor(specs: tuple[str, ...], out: str, seed: int) -> None:
    """Export task specs as Harbor task folders (instruction.md, task.toml, environment/, tests/, solution/)."""
    from ..interop.harbor_export import export_command

    export_command([Path(s) for s in specs], Path(out), seed=seed, console=console)


import_.add_command(import_pinchbench)
export.add_command(export_pinchbench)
