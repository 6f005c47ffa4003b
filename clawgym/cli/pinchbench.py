"""`clawgym import pinchbench` and `clawgym export pinchbench`: PinchBench task files in and out."""

from __future__ import annotations

from pathlib import Path

import click

from .support import CONSOLE, friendly


@click.command("pinchbench")
@click.argument("repo", type=click.Path(exists=True, file_okay=False))
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False),
    help="Folder for the imported task specs, e.g. specs/imported/pinchbench.",
)
@click.option("--quiet", is_flag=True, help="Only print the summary.")
@friendly
def import_pinchbench(repo: str, out: str, quiet: bool) -> None:
    """Import a PinchBench clone (tasks/task_*.md, tasks/manifest.yaml, assets/) as task specs."""
    from ..interop.pinchbench_import import import_repo

    import_repo(Path(repo), Path(out), console=CONSOLE, quiet=quiet)


@click.command("pinchbench")
@click.argument("specs", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False),
    help="Folder to write tasks/ and assets/ into (a PinchBench layout).",
)
@friendly
def export_pinchbench(specs: tuple[str, ...], out: str) -> None:
    """Export task specs as PinchBench task files (imported ones byte for byte)."""
    from ..interop.pinchbench_export import export_command

    export_command([Path(s) for s in specs], Path(out), console=CONSOLE)


def print_pinchbench_score(records: list, console: object = CONSOLE) -> bool:
    """Print PinchBench's run score per agent when `records` hold PinchBench trials; whether any did."""
    from ..files.textsafe import printable
    from ..report.pinchbench import pinchbench_lines

    lines = pinchbench_lines(records)
    for line in lines:
        console.print(printable(line), highlight=False, markup=False)  # type: ignore[attr-defined]
    return bool(lines)
