"""The `clawgym` command line: the root group and the small commands (validate, render, run,
report, serve, docs); the command groups live in their own modules and are added here.
User mistakes print `file:line: key: problem (fix)` and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import click

from .agents import agents
from .bench import bench, diff_command
from .compare import compare_command
from .engines import engines
from .import_export import export, import_
from .support import CONSOLE, friendly
from .synth_group import synth
from .train import train
from ..errors import ClawgymError
from ..files.textsafe import printable

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
@click.option(
    "--resume",
    "resume_dir",
    type=click.Path(exists=True, file_okay=False),
    help="Continue a results folder: re-run only missing and errored trials.",
)
@click.option(
    "--add",
    is_flag=True,
    help="Add to a finished results folder of the same spec: new seeds or agents run, finished trials are kept.",
)
@click.option(
    "--model",
    help="Model for model-driven agents (claw): 'embedded' (default, the bundled "
    "SmolLM2-135M-Instruct), a local model folder or hub id, 'vllm:MODEL' (any of those on a vLLM "
    "engine started for the run; with --base-url, a running vLLM server), or with --base-url an "
    "endpoint's model name.",
)
@click.option("--base-url", help="OpenAI-compatible endpoint for --model (key from $OPENAI_API_KEY).")
@click.option("--temperature", type=float, help="Sampling temperature of the agent's model.")
@click.option("--max-tokens", type=int, help="Most tokens the agent's model generates per turn.")
@click.option("--max-turns", type=int, help="Most model turns per trial (the task's limit still applies).")
@click.option("--max-sandboxes", type=click.IntRange(min=1), help="Most live sandboxes at once (default: -j).")
@click.option(
    "--max-model-requests",
    type=click.IntRange(min=1),
    help="Most model requests in flight at once, agents' and judge's (default: no cap).",
)
@click.option(
    "--trial-timeout",
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds per trial before it is cancelled as `error` (default: task limit + 600).",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "ray"]),
    help="Where trials run: this machine (local) or an existing Ray cluster (ray).",
)
@click.option("--ray-address", help="Ray cluster address for --executor ray (default: $RAY_ADDRESS or auto).")
@click.option(
    "--processes",
    callback=lambda ctx, param, v: _processes(v),
    help="Worker processes of the local executor: a number, or 'auto' (default: processes from "
    "128 trials in flight, one per 128, at most one per core).",
)
@click.option("--quiet", is_flag=True, help="No progress bar.")
@_friendly
def run(
    spec: str | None,
    agents: tuple[str, ...],
    seeds: str,
    attempts: int,
    jobs: int | None,
    out: str | None,
    resume_dir: str | None,
    add: bool,
    model: str | None,
    base_url: str | None,
    temperature: float | None,
    max_tokens: int | None,
    max_turns: int | None,
    max_sandboxes: int | None,
    max_model_requests: int | None,
    trial_timeout: float | None,
    executor: str | None,
    ray_address: str | None,
    processes: int | str | None,
    quiet: bool,
) -> None:
    """Run a run spec (kind: Run), or one task spec with --agent/--seeds, and print the results table.

    Examples: clawgym run specs/quickstart.yaml; clawgym run TASK.yaml --agent claw --model embedded
    """
    from ..agent.configs import agent_configs
    from .run import run_command

    configs = agent_configs(
        list(agents),
        model=model,
        base_url=base_url,
        temperature=temperature,
        max_tokens=max_tokens,
        max_turns=max_turns,
    )
    if ray_address and executor not in (None, "ray"):
        raise ClawgymError("--ray-address applies to --executor ray")
    overrides = {
        "concurrency": jobs,
        "max_sandboxes": max_sandboxes,
        "max_model_requests": max_model_requests,
        "trial_timeout": trial_timeout,
        "executor": (
            {"type": executor or "ray", **({"address": ray_address} if ray_address else {})}
            if executor or ray_address
            else None
        ),
        "processes": processes,
    }
    run_command(
        spec,
        agents=configs,
        seeds=seeds,
        attempts=attempts,
        overrides=overrides,
        out=out,
        resume_dir=resume_dir,
        quiet=quiet,
        console=console,
        add=add,
    )


@main.command()
@click.argument(
    "run_dirs", metavar="RUN_DIR [RUN_DIR...]", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False)
)
@click.option(
    "--html",
    "html_out",
    type=click.Path(dir_okay=False),
    help="Also write one static page (plots and a trial browser) to this file.",
)
@click.option("--k", "ks", default="1,5", show_default=True, help="k values for pass@k and pass^k, e.g. '1,5'.")
@click.option(
    "--pinchbench",
    is_flag=True,
    help="Also print PinchBench's own run score (sum of task means / tasks run) of imported PinchBench tasks.",
)
@_friendly
def report(run_dirs: tuple[str, ...], html_out: str | None, ks: str, pinchbench: bool = False) -> None:
    """Print the results table of run folders (finished or partial); several folders side by side.

    Mean reward, pass rate, pass@k and pass^k by agent and category, with bootstrap 95% CIs.
    """
    from ..report.summary import compare_table, print_summary, run_labels, summarize
    from ..report.stats import parse_ks
    from ..run.runner import load_records, run_rules

    try:
        k_values = parse_ks(ks)
    except ValueError:
        raise ClawgymError(f"--k {ks}: not a list of integers >= 1", hint="for example --k 1,5") from None
    runs, pb_records = [], []
    for run_dir, label in zip(run_dirs, run_labels(run_dirs)):
        records = list(load_records(Path(run_dir)).values())
        if not records:
            raise ClawgymError(f"no finished trials in {run_dir}", hint="is this a results folder of 'clawgym run'?")
        runs.append((label, summarize(records, ks=k_values, rules=run_rules(Path(run_dir)))))
        pb_records.append((label, records))
    if len(runs) == 1:
        print_summary(runs[0][1], console, title=f"Results: {run_dirs[0]}")
    else:
        console.print(compare_table(runs, title=f"Comparison of {len(runs)} runs"))
    if pinchbench:
        from .pinchbench import print_pinchbench_score

        for label, records in pb_records:
            console.print(printable(f"{label}:"), highlight=False, markup=False)
            if not print_pinchbench_score(records, console):
                console.print("  no trials of imported PinchBench tasks", highlight=False, markup=False)
    if html_out:
        from ..report.html import write_html

        info = write_html([Path(d) for d in run_dirs], Path(html_out), ks=k_values)
        console.print(f"wrote {html_out} ({info['trials']} trials, {info['bytes'] / 1e6:.1f} MB)")


@main.command()
@click.option(
    "--model",
    default="embedded",
    show_default=True,
    help="A local model folder, a hub id, or 'embedded' (the bundled SmolLM2-135M-Instruct).",
)
@click.option(
    "--engine",
    type=click.Choice(["transformers", "vllm"]),
    default="transformers",
    show_default=True,
    help="transformers: the model in this process (tool calls in our format); vllm: the vLLM OpenAI "
    "server from `clawgym engines install vllm`, as a process of its own.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, help="Port to listen on.")
@click.option("--device", default="auto", show_default=True, help="transformers: auto, cpu or cuda.")
@click.option("--dtype", default="auto", show_default=True, help="auto, float32, bfloat16 or float16.")
@click.option("--max-tokens", type=int, help="transformers: default most tokens generated per request.")
@click.option("--temperature", type=float, help="transformers: default sampling temperature.")
@click.option("--chat-template", help="A chat template (text or file) to use instead of the model's.")
@click.option(
    "--max-concurrency", type=click.IntRange(min=1), help="vllm: most sequences generated at once (default 8)."
)
@click.option("--kv-cache-gb", type=click.IntRange(min=1), help="vllm on CPU: GiB of KV cache (default 2).")
@click.option("--max-model-len", type=click.IntRange(min=16), help="vllm: most tokens per sequence.")
@click.option("--engine-arg", "engine_args", multiple=True, help="vllm: one more `vllm serve` argument (repeatable).")
@click.option(
    "--log",
    type=click.Path(dir_okay=False),
    help="vllm: the engine's log file (default: a new file in the engine install's logs/ folder).",
)
@_friendly
def serve(
    model: str,
    engine: str,
    host: str,
    port: int,
    device: str,
    dtype: str,
    max_tokens: int | None,
    temperature: float | None,
    chat_template: str | None,
    max_concurrency: int | None,
    kv_cache_gb: int | None,
    max_model_len: int | None,
    engine_args: tuple[str, ...],
    log: str | None,
) -> None:
    """Serve a Hugging Face model as an OpenAI-compatible chat endpoint (with tool calls).

    With --engine vllm the vLLM server runs as a process of its own (started, health-checked,
    logged, and stopped with everything it started on exit, on Ctrl-C and if this process dies)."""
    if engine == "vllm":
        given = {"--device": device != "auto", "--max-tokens": max_tokens, "--temperature": temperature}
        wrong = [name for name, value in given.items() if value not in (None, False)]
        if wrong:
            raise ClawgymError(f"{wrong[0]} applies to --engine transformers", hint="requests set their own sampling")
        from .engines import serve_engine

        serve_engine(
            model,
            host=host,
            port=port,
            dtype=dtype,
            max_concurrency=max_concurrency,
            kv_cache_gb=kv_cache_gb,
            max_model_len=max_model_len,
            chat_template=chat_template,
            engine_args=engine_args,
            log=log,
        )
        return
    given = {"--max-concurrency": max_concurrency, "--kv-cache-gb": kv_cache_gb, "--max-model-len": max_model_len}
    wrong = [name for name, value in {**given, "--engine-arg": engine_args, "--log": log}.items() if value]
    if wrong:
        raise ClawgymError(f"{wrong[0]} applies to --engine vllm")
    from ..policy.server import serve as run_server

    options = {
        "device": device,
        "dtype": dtype,
        "max_tokens": max_tokens,
        "temperature": temperature,
        "chat_template": chat_template,
    }
    run_server(model, host=host, port=port, **{k: v for k, v in options.items() if v is not None})


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


# the command groups and the larger commands live in their own modules
main.add_command(import_)
main.add_command(export)
main.add_command(synth)
main.add_command(train)
main.add_command(bench)
main.add_command(diff_command)
main.add_command(agents)
main.add_command(engines)
main.add_command(compare_command)


if __name__ == "__main__":  # pragma: no cover
    main()
