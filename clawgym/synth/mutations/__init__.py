"""Mutation gates: every declared step of a reference and every check name is real, and no format
convention is hidden. Three gates over a compiled task, its pristine workspace and the reference
solution's final workspace, each returning `Mutation` records (`records.py`): `step_mutations`
(`steps.py`), `check_name_mutations` (`names.py`) and `format_variants` (`formats.py`);
`mutations` runs all three and `mutation_problems` gives their problems as sentences.

Nothing an agent wrote is executed: the code run is the task's own reference (in a sandbox) and
the task's checks; grading is in process, as the synth filters grade doing nothing. The gates mean
something only for a task whose reference scores 1.0 (the oracle filter); they copy the folders
they are given and never change them.
"""

from __future__ import annotations

from pathlib import Path

from ...spec.task import Task
from .formats import VARIANTS, Variant, format_variants
from .names import PROMISES, TRIES, check_name_mutations, promises
from .records import EPS, OK, PROBLEM, SKIPPED, Grading, Mutation, unpassed
from .steps import Step, declared_steps, run_reference, step_mutations, without_step
from .workspace import Edits

__all__ = [
    "EPS",
    "OK",
    "PROBLEM",
    "PROMISES",
    "SKIPPED",
    "TRIES",
    "VARIANTS",
    "Edits",
    "Mutation",
    "Step",
    "Variant",
    "check_name_mutations",
    "declared_steps",
    "format_variants",
    "mutation_problems",
    "mutations",
    "promises",
    "run_reference",
    "step_mutations",
    "without_step",
]


def mutations(
    task: Task, pristine: Path, final: Path, *, trajectory: dict | None = None, sandbox: dict | None = None
) -> list[Mutation]:
    """The records of all three gates; one SKIPPED record where the reference's own output (`final`)
    does not score 1.0. The step gate runs the reference again, once per declared step."""
    base = Grading(task, Path(pristine), trajectory, sandbox).verdict(Path(final))
    if base.reward < 1 - EPS:
        return [unpassed("all", base, task.name)]
    return (
        step_mutations(task, pristine, sandbox=sandbox)
        + check_name_mutations(task, pristine, final, trajectory=trajectory, sandbox=sandbox)
        + format_variants(task, pristine, final, trajectory=trajectory, sandbox=sandbox)
    )


def mutation_problems(
    task: Task, pristine: Path, final: Path, *, trajectory: dict | None = None, sandbox: dict | None = None
) -> list[str]:
    """The problems of all three gates, as sentences (none: every declared step and every check name
    is real and no format convention is hidden). `pristine`: the task's inputs as written; `final`:
    the workspace after the reference solution ran on a copy of it, with its `trajectory` (as a
    dict; needed where checks read the actions); `sandbox`: the sandbox spec the steps run in."""
    return [m.reason for m in mutations(task, pristine, final, trajectory=trajectory, sandbox=sandbox) if m.problem]
