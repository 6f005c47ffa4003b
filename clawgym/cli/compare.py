"""`clawgym compare`: the same tasks under several harnesses, side by side (report/harnesses.py)."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from ..errors import ClawgymError
from .support import CONSOLE as console
from .support import friendly


@click.command("compare")
@click.argument(
    "run_dirs", metavar="RUN_DIR [RUN_DIR...]", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False)
)
@click.option(
    "--ref", "reference", help="The harness the others are compared with (default: the first found, alphabetically)."
)
@click.option(
    "--by",
    "by",
    type=click.Choice(["overall", "category", "task"]),
    multiple=True,
    help="Which tables to print (default: overall and category).",
)
@click.option("--html", "html_out", type=click.Path(dir_okay=False), help="Also write the tables as one static page.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False), help="Also write every figure as JSON.")
@friendly
def compare_command(
    run_dirs: tuple[str, ...], reference: str | None, by: tuple[str, ...], html_out: str | None, json_out: str | None
) -> None:
    """Compare harnesses (claw, openclaw@VERSION, command agents) on the same tasks: reward, pass rate,
    turns, tokens, wall time and errors with 95% CIs, overall, per category and per task.

    RUN_DIRs are results folders: one run with several agents, or one run per harness.
    """
    from ..report.harnesses import COLUMNS, compare_harnesses, html_page, mark_reference, table_rows
    from ..report.summary import plain
    from ..run.runner import load_records, run_rules

    records = []
    rules = [run_rules(Path(d)) for d in run_dirs]
    if any(r != rules[0] for r in rules[1:]):
        console.print(
            f"note: these runs count outcomes differently; the rules of {run_dirs[0]} are used for all",
            highlight=False,
            markup=False,
        )
    for run_dir in run_dirs:
        found = list(load_records(Path(run_dir)).values())
        if not found:
            raise ClawgymError(f"no finished trials in {run_dir}", hint="is this a results folder of 'clawgym run'?")
        records += found
    result = compare_harnesses(records, order=[reference] if reference else None, rules=rules[0])
    if reference and result["reference"] != reference:
        raise ClawgymError(
            f"--ref {reference}: no trials of that harness", hint=f"harnesses found: {', '.join(result['harnesses'])}"
        )
    mark_reference(result)
    titles = {"overall": ("overall", None), "category": ("categories", "category"), "task": ("tasks", "task")}
    for choice in by or ("overall", "category"):
        key, first = titles[choice]
        title = plain(f"Harnesses {'by ' + choice if first else 'overall'} (reference: {result['reference']})")
        title.stylize("table.title")
        table = Table(title=title)
        for col in ((first,) if first else ()) + COLUMNS:
            table.add_column(col, overflow="fold", no_wrap=col in ("harness", "task", "category"))
        for g, cells in zip(result[key], table_rows(result[key])):
            table.add_row(*(plain(c) for c in ([g["slice"]] if first else []) + cells))  # names shown literally
        console.print(table)
    console.print(
        "means over trials, bootstrap 95% CIs over task instances; Δ reward paired by instance; excluded: "
        "trials left out of the means by their outcome (* infrastructure, see docs/outcomes.md)",
        highlight=False,
        markup=False,
    )
    if html_out:
        Path(html_out).write_text(html_page(result), encoding="utf-8")
        console.print(f"wrote {html_out}", highlight=False, markup=False)
    if json_out:
        Path(json_out).write_text(json.dumps(result, indent=1), encoding="utf-8")
        console.print(f"wrote {json_out}", highlight=False, markup=False)
