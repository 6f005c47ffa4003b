"""The `clawgym` command line. User mistakes print `file:line: key: problem (fix)` and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import click

from .support import CONSOLE, friendly
from ..errors import ClawgymError

console = CONSOLE
_friendly = friendly


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="clawgym")
def main() -> None:
    """ClawGym: write, validate, run and grade tasks for Claw-style personal agents."""


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--static", is_flag=True, help="Only check schemas, references and rendering; skip the oracle/nop lint.")
@click.option("--seeds", default="0-2", show_default=True, help="Seeds to compile and lint, e.g. '0-2' or '1,5'.")
@click.option("-j", "--jobs", default=4, show_default=True, help="Lint trials run at once.")
@_friendly
def validate(paths: tuple[str, ...], static: bool, seeds: str, jobs: int) -> None:
    """Validate spec files (folders are searched for *.yaml).

    Checks schemas, references and rendering on every seed; unless --static, also runs the
    reference solution (must score 1.0) and a do-nothing agent (must score at most 0.1).
    """
    from .validate import validate_paths

    validate_paths([Path(p) for p in paths], static=static, seeds=seeds, jobs=jobs, console=console)


@main.command()
@click.argument("spec", type=click.Path(exists=True, dir_okay=False))
@click.option("--seed", default=0, show_default=True, help="Instance seed.")
@click.option("--json", "as_json", is_flag=True, help="Print the compiled task as JSON (with file contents).")
@click.option("--files", "show_files", is_flag=True, help="Also print the content of every text file.")
@click.option("--out", type=click.Path(file_okay=False), help="Write the instance's workspace into this folder.")
@_friendly
def render(spec: str, seed: int, as_json: bool, show_files: bool, out: str | None) -> None:
    """Show one compiled instance of a task spec."""
    from ..compile.compiler import compile_task, load_task_spec
    from .render import print_task
    from ..compile.workspace import materialize

    task = compile_task(load_task_spec(spec), seed)
    if as_json:
        click.echo(json.dumps(task.to_dict(), indent=2, ensure_ascii=False))
    else:
        print_task(task, console, show_files=show_files)
    if out:
        materialize(task, Path(out))
        console.print(f"workspace written to {out}")


def _processes(value: str | None) -> int | str | None:
    """--processes: 'auto' or a whole number of at least 1."""
    if value is None or value == "auto":
        return value
    if not value.isdigit() or int(value) < 1:
        raise click.BadParameter(f"{value!r} is neither 'auto' nor a whole number of at least 1")
    return int(value)


@main.command()
@click.argument("spec", required=False, type=click.Path(exists=True, dir_okay=False))
@click.option("--agent", "agents", multiple=True, help="Agent type for a task spec (repeatable). Default: oracle.")
@click.option("--seeds", default="0", show_default=True, help="Seeds for a task spec, e.g. '0-4'.")
@click.option("--attempts", default=1, show_default=True, help="Attempts per instance and agent.")
@click.option("-j", "--jobs", type=int, help="Trials running at once (default: the run spec's concurrency, or 4).")
@click.option("--out", type=click.Path(file_okay=False), help="Results folder (default: runs/<name>).")
@click.option("--resume", "resume_dir", type=click.Path(exists=True, file_okay=False),
              help="Continue a results folder: re-run only missing and errored trials.")
@click.option("--add", is_flag=True, help="Add to a finished results folder of the same spec: new seeds or "
                                          "agents run, finished trials are kept.")
@click.option("--model", help="Model for model-driven agents (claw): 'embedded' (default, the bundled "
                              "SmolLM2-135M-Instruct), a local model folder or hub id, or with --base-url an "
                              "endpoint's model name.")
@click.option("--base-url", help="OpenAI-compatible endpoint for --model (key from $OPENAI_API_KEY).")
@click.option("--temperature", type=float, help="Sampling temperature of the agent's model.")
@click.option("--max-tokens", type=int, help="Most tokens the agent's model generates per turn.")
@click.option("--max-turns", type=int, help="Most model turns per trial (the task's limit still applies).")
@click.option("--max-sandboxes", type=click.IntRange(min=1), help="Most live sandboxes at once (default: -j).")
@click.option("--max-model-requests", type=click.IntRange(min=1),
              help="Most model requests in flight at once, agents' and judge's (default: no cap).")
@click.option("--trial-timeout", type=click.FloatRange(min=0, min_open=True),
              help="Seconds per trial before it is cancelled as `error` (default: task limit + 600).")
@click.option("--executor", type=click.Choice(["local", "ray"]),
              help="Where trials run: this machine (local) or an existing Ray cluster (ray).")
@click.option("--ray-address", help="Ray cluster address for --executor ray (default: $RAY_ADDRESS or auto).")
@click.option("--processes", callback=lambda ctx, param, v: _processes(v),
              help="Worker processes of the local executor: a number, or 'auto' (default: processes from "
                   "128 trials in flight, one per 128, at most one per core).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@_friendly
def run(spec: str | None, agents: tuple[str, ...], seeds: str, attempts: int, jobs: int | None,
        out: str | None, resume_dir: str | None, add: bool, model: str | None, base_url: str | None,
        temperature: float | None, max_tokens: int | None, max_turns: int | None,
        max_sandboxes: int | None, max_model_requests: int | None, trial_timeout: float | None,
        executor: str | None, ray_address: str | None, processes: int | str | None, quiet: bool) -> None:
    """Run a run spec (kind: Run), or one task spec with --agent/--seeds, and print the results table.

    Examples: clawgym run specs/quickstart.yaml; clawgym run TASK.yaml --agent claw --model embedded
    """
    from ..agent.configs import agent_configs
    from .run import run_command

    configs = agent_configs(list(agents), model=model, base_url=base_url, temperature=temperature,
                            max_tokens=max_tokens, max_turns=max_turns)
    if ray_address and executor not in (None, "ray"):
        raise ClawgymError("--ray-address applies to --executor ray")
    overrides = {"concurrency": jobs, "max_sandboxes": max_sandboxes, "max_model_requests": max_model_requests,
                 "trial_timeout": trial_timeout,
                 "executor": ({"type": executor or "ray", **({"address": ray_address} if ray_address else {})}
                              if executor or ray_address else None),
                 "processes": processes}
    run_command(spec, agents=configs, seeds=seeds, attempts=attempts, overrides=overrides, out=out,
                resume_dir=resume_dir, quiet=quiet, console=console, add=add)


@main.command()
@click.argument("run_dirs", metavar="RUN_DIR [RUN_DIR...]", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False))
@click.option("--html", "html_out", type=click.Path(dir_okay=False),
              help="Also write one static page (plots and a trial browser) to this file.")
@click.option("--k", "ks", default="1,5", show_default=True, help="k values for pass@k and pass^k, e.g. '1,5'.")
@click.option("--pinchbench", is_flag=True,
              help="Also print PinchBench's own run score (sum of task means / tasks run) of imported PinchBench tasks.")
@_friendly
def report(run_dirs: tuple[str, ...], html_out: str | None, ks: str, pinchbench: bool = False) -> None:
    """Print the results table of run folders (finished or partial); several folders side by side.

    Mean reward, pass rate, pass@k and pass^k by agent and category, with bootstrap 95% CIs.
    """
    from ..report.summary import compare_table, print_summary, run_labels, summarize
    from ..report.stats import parse_ks
    from ..run.runner import load_records

    try:
        k_values = parse_ks(ks)
    except ValueError:
        raise ClawgymError(f"--k {ks}: not a list of integers >= 1", hint="for example --k 1,5") from None
    runs, pb_records = [], []
    for run_dir, label in zip(run_dirs, run_labels(run_dirs)):
        records = list(load_records(Path(run_dir)).values())
        if not records:
            raise ClawgymError(f"no finished trials in {run_dir}", hint="is this a results folder of 'clawgym run'?")
        runs.append((label, summarize(records, ks=k_values)))
        pb_records.append((label, records))
    if len(runs) == 1:
        print_summary(runs[0][1], console, title=f"Results: {run_dirs[0]}")
    else:
        console.print(compare_table(runs, title=f"Comparison of {len(runs)} runs"))
    if pinchbench:
        from .pinchbench import print_pinchbench_score
        for label, records in pb_records:
            console.print(f"{label}:", highlight=False, markup=False)
            if not print_pinchbench_score(records, console):
                console.print("  no trials of imported PinchBench tasks", highlight=False, markup=False)
    if html_out:
        from ..report.html import write_html

        info = write_html([Path(d) for d in run_dirs], Path(html_out), ks=k_values)
        console.print(f"wrote {html_out} ({info['trials']} trials, {info['bytes'] / 1e6:.1f} MB)")


@main.command()
@click.option("--model", default="embedded", show_default=True,
              help="A local model folder, a hub id, or 'embedded' (the bundled SmolLM2-135M-Instruct).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, help="Port to listen on.")
@click.option("--device", default="auto", show_default=True, help="auto, cpu or cuda.")
@click.option("--dtype", default="auto", show_default=True, help="auto, float32, bfloat16 or float16.")
@click.option("--max-tokens", type=int, help="Default most tokens generated per request.")
@click.option("--temperature", type=float, help="Default sampling temperature.")
@click.option("--chat-template", help="A chat template (text or file) to use instead of the model's.")
@_friendly
def serve(model: str, host: str, port: int, device: str, dtype: str, max_tokens: int | None,
          temperature: float | None, chat_template: str | None) -> None:
    """Serve a Hugging Face model as an OpenAI-compatible chat endpoint (with tool calls)."""
    from ..policy.server import serve as run_server

    options = {"device": device, "dtype": dtype, "max_tokens": max_tokens, "temperature": temperature,
               "chat_template": chat_template}
    run_server(model, host=host, port=port, **{k: v for k, v in options.items() if v is not None})


class _DefaultToRun(click.Group):
    """A group whose first argument, when it is not a subcommand, goes to its default subcommand."""

    default_command = "run"

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)


class _DefaultToTrajectories(_DefaultToRun):
    default_command = "trajectories"


@main.group("import")
def import_() -> None:
    """Import tasks (published ClawGym folders or source rows, Harbor folders) or trajectory files."""


@import_.command("clawgym")
@click.argument("source", type=click.Path(exists=True, file_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="Folder for the imported task specs, e.g. specs/imported/NAME.")
@click.option("-j", "--jobs", type=click.IntRange(min=1),
              help="Worker processes (default: twice the cores; the cores with --no-smoke).")
@click.option("--no-smoke", is_flag=True,
              help="Do not run each grader once on the untouched workspace (faster; crashing graders go unnoticed).")
@click.option("--quiet", is_flag=True, help="Only print the summary.")
@_friendly
def import_clawgym(source: str, out: str, jobs: int | None, no_smoke: bool, quiet: bool) -> None:
    """Import task folders in the published ClawGym format (data_entry.json, input_files/, reward/)."""
    from ..interop.clawgym_import import import_command

    import_command(Path(source), Path(out), jobs=jobs, quiet=quiet, console=console, smoke=not no_smoke)


@import_.command("clawgym-hf")
@click.argument("source", type=click.Path(exists=True, dir_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Folder for the imported task specs.")
@click.option("-j", "--jobs", type=click.IntRange(min=1),
              help="Worker processes (default: twice the cores; the cores with --no-smoke).")
@click.option("--no-smoke", is_flag=True, help="Do not run each grader once on the untouched workspace.")
@click.option("--quiet", is_flag=True, help="Only print the summary.")
@_friendly
def import_clawgym_hf(source: str, out: str, jobs: int | None, no_smoke: bool, quiet: bool) -> None:
    """Import the ClawGym source rows of the Hugging Face hub (JSONL: prompt, hook_code, input_files, rule,
    origin_template)."""
    from ..interop.clawgym_hf import import_hf

    import_hf(Path(source), Path(out), jobs=jobs, smoke=not no_smoke, quiet=quiet, console=console)


@import_.command("harbor")
@click.argument("source", type=click.Path(exists=True, file_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Folder for the imported task specs.")
@click.option("--quiet", is_flag=True, help="Only print the summary.")
@_friendly
def import_harbor(source: str, out: str, quiet: bool) -> None:
    """Import Harbor task folders (instruction.md, task.toml, environment/, tests/, solution/)."""
    from ..interop.harbor_import import import_command

    import_command(Path(source), Path(out), quiet=quiet, console=console)


@import_.command("trajectories")
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="Write clawgym trajectories (JSONL) here.")
@click.option("--format", "fmt", default="auto", show_default=True,
              type=click.Choice(["auto", "clawgym", "openai", "sharegpt", "hf"]),
              help="Format of the sources (auto: detect per file or folder).")
@_friendly
def import_trajectories(sources: tuple[str, ...], out: str, fmt: str) -> None:
    """Import trajectories from OpenAI-messages or ShareGPT JSONL, or a saved Hugging Face dataset."""
    from ..interop.trajectory_formats import import_command

    import_command([Path(s) for s in sources], Path(out), fmt=fmt, console=console)


@main.group(cls=_DefaultToTrajectories)
def export() -> None:
    """Export trajectories of runs ('clawgym export RUN_DIR ...'), or tasks as ClawGym or Harbor folders."""


@export.command("trajectories")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--out", "out_jsonl", type=click.Path(dir_okay=False), help="Write trajectories as JSONL here.")
@click.option("--format", "fmt", default="clawgym", show_default=True,
              type=click.Choice(["clawgym", "openai", "sharegpt"]),
              help="JSONL flavour: clawgym trajectories, OpenAI messages + tools, or ShareGPT conversations.")
@click.option("--hf", "hf_dir", type=click.Path(file_okay=False),
              help="Also save a Hugging Face dataset (messages + tools columns) to this folder.")
@click.option("--min-reward", type=float, help="Keep trajectories with at least this reward.")
@click.option("--status", "statuses", multiple=True, type=click.Choice(["passed", "failed", "error"]),
              help="Keep only these statuses (repeatable).")
@click.option("--category", "categories", multiple=True, help="Keep only these categories (repeatable).")
@_friendly
def export_trajectories(run_dirs: tuple[str, ...], out_jsonl: str | None, fmt: str, hf_dir: str | None,
                        min_reward: float | None, statuses: tuple[str, ...], categories: tuple[str, ...]) -> None:
    """Export the trajectories of run folders (with verdicts and diffs) to JSONL and/or a dataset."""
    from ..interop.trajectory_formats import export_command

    export_command([Path(d) for d in run_dirs], out_jsonl=Path(out_jsonl) if out_jsonl else None, fmt=fmt,
                   hf_dir=Path(hf_dir) if hf_dir else None, min_reward=min_reward, statuses=statuses,
                   categories=categories, console=console)


@export.command("clawgym")
@click.argument("specs", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Dataset folder to write.")
@click.option("--seed", default=0, show_default=True, help="Seed to compile parameterised specs with.")
@_friendly
def export_clawgym(specs: tuple[str, ...], out: str, seed: int) -> None:
    """Export task specs (files or folders) as published-format ClawGym task folders."""
    from ..interop.clawgym_export import export_command

    export_command([Path(s) for s in specs], Path(out), seed=seed, console=console)


@export.command("harbor")
@click.argument("specs", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Folder for the Harbor task folders.")
@click.option("--seed", default=0, show_default=True, help="Seed to compile parameterised specs with.")
@_friendly
def export_harbor(specs: tuple[str, ...], out: str, seed: int) -> None:
    """Export task specs as Harbor task folders (instruction.md, task.toml, environment/, tests/, solution/)."""
    from ..interop.harbor_export import export_command

    export_command([Path(s) for s in specs], Path(out), seed=seed, console=console)


@main.group(cls=_DefaultToRun)
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
@_friendly
def synth_run(spec: str, count: int | None, out: str | None, seed: int | None, family: str | None,
              jobs: int | None, resume: bool, split: bool | None, quiet: bool) -> None:
    """Synthesize tasks from a synth spec (kind: Synth) into a dataset folder of task specs."""
    from .synth import synth_command

    synth_command(spec, count=count, out=out, seed=seed, family=family, jobs=jobs, resume=resume, split=split,
                  quiet=quiet, console=console)


@synth.command("stats")
@click.argument("dataset", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@click.option("--diversity", is_flag=True,
              help="How distinct the tasks are: MinHash clusters and nearest neighbours of instructions, "
                   "reference solutions and operation chains (DATASET may also be any folder of task specs).")
@click.option("--against", type=click.Path(exists=True, file_okay=False),
              help="With --diversity: each task's closest match in this other set (a dataset or spec folder).")
@click.option("--sample", type=int, default=200, show_default=True,
              help="With --diversity: tasks drawn from DATASET (0: all).")
@click.option("--seed", type=int, default=0, show_default=True, help="With --diversity: seed of the sample.")
@click.option("--targets", "targets_spec", type=click.Path(exists=True, dir_okay=False),
              help="With --diversity: the synth spec whose `diversity:` targets to report (default: the one "
                   "DATASET was made with; a spec folder such as specs/bench-v2 names none).")
@_friendly
def synth_stats(dataset: str, as_json: bool, diversity: bool, against: str | None, sample: int, seed: int,
                targets_spec: str | None) -> None:
    """Counts of a synthesized dataset by category, subcategory, persona, skill, operation, files,
    checks and expected steps, against the spec's balance targets; with --diversity, how distinct
    its tasks are (see docs/synth.md)."""
    if diversity:
        from ..synth.diversity import diversity_command

        diversity_command(Path(dataset), Path(against) if against else None, sample or None, seed, as_json, console,
                          Path(targets_spec) if targets_spec else None)
        return
    from ..synth.stats import dataset_stats, print_stats

    stats = dataset_stats(Path(dataset))
    if as_json:
        click.echo(json.dumps(stats, indent=2))
    else:
        print_stats(stats, console)


@main.group()
def train() -> None:
    """Train on trajectories: expert demonstrations from reference solutions, SFT, then GRPO."""


@train.command("sft")
@click.argument("spec", type=click.Path(exists=True, dir_okay=False))
@click.option("--out", type=click.Path(file_okay=False), help="Output folder (default: the spec's out).")
@click.option("--no-resume", is_flag=True, help="Start over even if the output folder has checkpoints.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@_friendly
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
@_friendly
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
@_friendly
def train_expert_cmd(specs: tuple[str, ...], seeds: str, out: str, jobs: int) -> None:
    """Expert trajectories: each task's reference solution as claw tool calls, kept when the replay scores 1.0."""
    from ..train.expert import expert_command

    expert_command([Path(s) for s in specs], seeds=seeds, out=Path(out), jobs=jobs, console=console)


@main.command()
@click.option("--out", type=click.Path(dir_okay=False), help="Write the reference to this file instead of stdout.")
@_friendly
def docs(out: str | None) -> None:
    """Generate the spec and check reference (markdown) from the JSON Schemas."""
    from .docgen import reference_markdown

    text = reference_markdown()
    if out:
        Path(out).write_text(text, encoding="utf-8")
        console.print(f"wrote {out}")
    else:
        click.echo(text, nl=False)


# the benchmark's commands live in their own package
from .bench import bench, diff_command

main.add_command(bench)
main.add_command(diff_command)
from .agents import agents  # noqa: E402
main.add_command(agents)
from .pinchbench import export_pinchbench, import_pinchbench  # noqa: E402
import_.add_command(import_pinchbench)
export.add_command(export_pinchbench)


if __name__ == "__main__":  # pragma: no cover
    main()
from .compare import compare_command  # noqa: E402
main.add_command(compare_command)
