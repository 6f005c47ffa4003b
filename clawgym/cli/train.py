"""`clawgym train sft | rl | expert`: train on trajectories; the work is done in `train/`."""

from __future__ import annotations

from pathlib import Path

import click

from .support import CONSOLE as console
from .support import friendly


@click.group()
def train() -> None:
    """Train on trajectories: expert demonstrations from reference solutions, SFT, then GRPO."""


@train.command("sft")
@click.argument("spec", type=click.Path(exists=True, dir_okay=False))
@click.option("--out", type=click.Path(file_okay=False), help="Output folder (default: the spec's out).")
@click.option("--no-resume", is_flag=True, help="Start over even if the output folder has checkpoints.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@friendly
def train_sft_cmd(spec: str, out: str | None, no_resume: bool, quiet: bool) -> None:
    """Supervised fine-tuning from a Train spec (kind: Train); resumes from the last checkpoint."""
    from ..train.sft import train_sft
    from ..train.spec import load_train_spec

    folder = train_sft(load_train_spec(spec, out=out), resume=not no_resume, console=console, progress=not quiet)
    console.print(f"model saved to {folder}; metrics in {folder.parent / 'metrics.jsonl'}", highlight=False)


@train.command("rl")
@click.argument("spec", type=click.Path(exists=True, dir_okay=False))
@click.option("--out", type=click.Path(file_okay=False), help="Output folder (default: the spec's out).")
@click.option("--no-resume", is_flag=True, help="Start over even if the output folder has checkpoints.")
@click.option("--quiet", is_flag=True, help="No progress bar; one line per step.")
@friendly
def train_rl_cmd(spec: str, out: str | None, no_resume: bool, quiet: bool) -> None:
    """GRPO from an RL spec (kind: RL): rollouts in per-task sandboxes; resumes from the last checkpoint."""
    from ..train.grpo import train_rl
    from ..train.rl_spec import load_rl_spec

    folder = train_rl(load_rl_spec(spec, out=out), resume=not no_resume, console=console, progress=not quiet)
    console.print(f"model saved to {folder}; metrics in {folder.parent / 'metrics.jsonl'}", highlight=False)


@train.command("expert")
@click.argument("specs", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--seeds", default="0", show_default=True, help="Seeds of each task, e.g. '0-9'.")
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="Trajectory JSONL to write.")
@click.option("-j", "--jobs", default=4, show_default=True, help="Trials at once.")
@friendly
def train_expert_cmd(specs: tuple[str, ...], seeds: str, out: str, jobs: int) -> None:
    """Expert trajectories: each task's reference solution as claw tool calls, kept when the replay scores 1.0."""
    from ..train.expert import expert_command

    expert_command([Path(s) for s in specs], seeds=seeds, out=Path(out), jobs=jobs, console=console)
