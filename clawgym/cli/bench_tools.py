"""`clawgym bench review | run | leaderboard` and `clawgym diff`: thin click wrappers.

The work is done in `review.py` / `llm_review.py`, `runbench.py`, `leaderboard.py` and `diff.py`;
these functions only read options, call them and print.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from .support import CONSOLE, friendly
from ..errors import ClawgymError
from ..bench.layout import BENCHES, bench_folder

console = CONSOLE


def register(group: click.Group) -> None:
    """Add this module's commands to `group`."""
    group.add_command(review_command)
    group.add_command(run_command)
    group.add_command(leaderboard_command)


@click.command("review")
@click.argument("names", nargs=-1)
@click.option("--all", "every", is_flag=True, help="Review every instance of the benchmark.")
@click.option(
    "--bench",
    "bench_dir",
    default=None,
    type=click.Path(file_okay=False),
    help="The benchmark: a version series (1, 2 or 3) or a folder; default: the latest (3).",
)
@click.option("--reviewer", help="Your name (default: git config user.name).")
@click.option(
    "--decision",
    type=click.Choice(["accept", "reject", "comment"]),
    help="Record this decision without asking (scripts, CI).",
)
@click.option("--comment", default=None, help="Comment to record (needed for reject and comment).")
@click.option(
    "--policy",
    help="Also ask a model to review: 'embedded', 'hf:MODEL', 'openai:MODEL', "
    "a policy YAML file (or a run spec's judge), or inline '{type: ..., model: ...}'.",
)
@click.option("--llm-only", is_flag=True, help="With --policy: record the model's review only, ask nothing.")
@click.option(
    "--rubric",
    "rubric_items",
    multiple=True,
    help="Scores against the review rubric (docs/review-rubric.md), CRITERION=ok|minor|fail, "
    "repeated or comma-separated; every criterion once.",
)
@click.option(
    "--summary",
    is_flag=True,
    help="Record nothing: print the decisions, accept rate and failed criteria of the instances' current reviews.",
)
@friendly
def review_command(
    names: tuple[str, ...],
    every: bool,
    bench_dir: str,
    reviewer: str | None,
    decision: str | None,
    comment: str | None,
    policy: str | None,
    llm_only: bool,
    rubric_items: tuple[str, ...],
    summary: bool,
) -> None:
    """Walk through benchmark instances and record accept / reject / comment in their review.yaml.

    NAME is CATEGORY/NAME, NAME, a category, or the instance's folder. Shows the instruction, the
    workspace tree, the checks, the rubric, the calibration and earlier reviews (stale ones marked),
    then asks for a decision and, with --rubric (or when asked), the scores against the written
    review rubric. The record names the instance hash it saw. --summary prints the accept rate.
    """
    from ..bench.discover import compile_instances, discover, key_of, select
    from ..bench.llm_review import llm_review, policy_env_note, policy_option
    from ..bench.review import append_record, git_user, human_review, now, show_instance

    root = bench_folder(bench_dir)
    if bool(names) == every:
        raise ClawgymError(
            "name the instances to review, or pass --all", hint="e.g. clawgym bench review productivity/x"
        )
    if llm_only and not policy:
        raise ClawgymError("--llm-only needs --policy")
    if decision in ("reject", "comment") and not (comment or "").strip():
        raise ClawgymError(f"a '{decision}' review needs a comment saying why", hint="pass --comment TEXT")
    from ..bench.review_rubric import check_decision, parse_rubric

    rubric = parse_rubric(rubric_items)
    if decision:
        check_decision(decision, rubric)
    instances = select(discover(root), root, list(names))
    tasks = compile_instances(instances, root)
    if summary:
        _print_review_summary(instances, tasks, root)
        return
    if not llm_only:
        reviewer = reviewer or git_user(root) or (None if decision else click.prompt("your name"))
        if not reviewer:
            raise ClawgymError("who is reviewing?", hint="pass --reviewer NAME or set git config user.name")
    model = None
    if policy:
        from ..policy import make_policy

        config = {"max_tokens": 400, **policy_option(policy)}  # the answer is short; small models ramble
        console.print(f"model review by {policy_env_note(config)}", highlight=False, markup=False)
        model = make_policy(config)
    try:
        for inst in instances:
            key = key_of(inst, root)
            task = tasks[key]
            show_instance(console, key, inst.folder, task)
            if model is not None:
                from ..files.textsafe import printable

                record = llm_review(task, model, date=now())
                append_record(inst.folder, "llm_reviews", record)
                shown = (
                    f"unusable answer ({record['parse_error']}); raw text recorded"
                    if "parse_error" in record
                    else json.dumps(record["review"], ensure_ascii=False)
                )
                console.print(printable(f"model review: {shown}"), highlight=False, markup=False)
            if llm_only:
                continue
            chosen = decision or click.prompt("decision", type=click.Choice(["accept", "reject", "comment"]))
            text = comment
            if text is None and not decision:
                text = click.prompt("comment", default="" if chosen == "accept" else None, show_default=False)
            scores = rubric or (_ask_rubric() if not decision else {})
            record = human_review(chosen, reviewer or "", task, text or "", scores)
            path = append_record(inst.folder, "reviews", record)
            console.print(f"recorded {chosen} by {reviewer} in {path}", highlight=False, markup=False)
    finally:
        if model is not None:
            model.close()


def _ask_rubric() -> dict[str, str]:
    """Each criterion of the review rubric, asked in turn (Enter keeps ok)."""
    from ..bench.review_rubric import CRITERIA, VERDICTS

    return {c.key: click.prompt(f"{c.key}: {c.question}", type=click.Choice(VERDICTS), default="ok") for c in CRITERIA}


def _print_review_summary(instances: list, tasks: dict, root: Path) -> None:
    from ..bench.discover import key_of
    from ..bench.review import latest_decision
    from ..bench.review_rubric import summarize
    from rich.table import Table

    result = summarize((inst.category, latest_decision(inst.folder, tasks[key_of(inst, root)])) for inst in instances)
    table = Table(title=f"reviews of {len(instances)} instance(s)", title_justify="left")
    for col in ("category", "accept", "reject"):
        table.add_column(col, justify="right" if col != "category" else "left")
    for category, counts in result.by_category.items():
        table.add_row(category, str(counts.get("accept", 0)), str(counts.get("reject", 0)))
    console.print(table)
    failing = {k: v for k, v in result.criteria.items() if v.get("fail") or v.get("minor")}
    for key, counts in failing.items():
        console.print(f"  {key}: fail {counts.get('fail', 0)}, minor {counts.get('minor', 0)}", highlight=False)
    console.print(
        f"reviewed {result.reviewed}, accepted {result.decisions.get('accept', 0)}"
        f" ({result.accept_rate:.0%}), rejected {result.decisions.get('reject', 0)}, not reviewed {result.unreviewed}",
        highlight=False,
    )


@click.command("run")
@click.option(
    "--model",
    help="Model for the claw agent: 'embedded', a local model folder or hub id, 'vllm:MODEL' "
    "(on a vLLM engine started for the run), or with --base-url an endpoint's model name.",
)
@click.option("--base-url", help="OpenAI-compatible endpoint for --model (key from $OPENAI_API_KEY).")
@click.option(
    "--agent",
    help="Agent type (oracle, nop, claw, ...) or a YAML file with one agent config "
    "(any agent, black-box command agents included).",
)
@click.option("-k", "k", default=3, show_default=True, type=click.IntRange(min=1), help="Attempts per instance.")
@click.option(
    "--bench",
    "bench_dir",
    default=None,
    type=click.Path(file_okay=False),
    help="The benchmark: a version series (1, 2 or 3), or a folder (ours, or an imported one: task.yaml "
    "files in any subfolders); default: the latest (3).",
)
@click.option("--out", type=click.Path(file_okay=False), help="Results folder (default: runs/bench/LABEL).")
@click.option("--label", help="Name of the leaderboard row (default: the model's or agent's name).")
@click.option(
    "--leaderboard",
    "leaderboard_dir",
    default="results/leaderboard",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Folder of leaderboard rows.",
)
@click.option("-j", "--jobs", default=4, show_default=True, type=click.IntRange(min=1), help="Trials at once.")
@click.option("--only", multiple=True, help="Only these instances: CATEGORY/NAME, NAME or CATEGORY (repeatable).")
@click.option(
    "--judge",
    help="Policy scoring rubrics of hybrid instances (same forms as review --policy); "
    "without it they are graded by their code checks only.",
)
@click.option("--allow-unlocked", is_flag=True, help="Run even if bench.lock.json is stale (the row says unlocked).")
@click.option("--temperature", type=float, help="Sampling temperature of the agent's model.")
@click.option("--max-tokens", type=int, help="Most tokens the agent's model generates per turn.")
@click.option("--max-turns", type=int, help="Most model turns per trial (the task's limit still applies).")
@click.option(
    "--trial-timeout",
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds per trial before it is cancelled as `error` (default: task limit + 600).",
)
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option(
    "--pinchbench",
    is_flag=True,
    help="Also print PinchBench's own run score (sum of task means over "
    "the tasks run) for instances imported from PinchBench.",
)
@friendly
def run_command(
    model: str | None,
    base_url: str | None,
    agent: str | None,
    k: int,
    bench_dir: str,
    out: str | None,
    label: str | None,
    leaderboard_dir: str,
    jobs: int,
    only: tuple[str, ...],
    judge: str | None,
    allow_unlocked: bool,
    temperature: float | None,
    max_tokens: int | None,
    max_turns: int | None,
    trial_timeout: float | None,
    quiet: bool,
    pinchbench: bool = False,
) -> None:
    """Evaluate a model or agent on the benchmark (k attempts per instance) and write its leaderboard row.

    Rerunning the same command continues an interrupted run. Examples: clawgym bench run --model
    embedded; clawgym bench run --agent oracle -k 1; clawgym bench run --agent my-agent.yaml.
    """
    from ..bench.llm_review import policy_option
    from ..bench.runbench import agent_config, default_label, run_bench, safe_label

    config = agent_config(
        model=model, agent=agent, base_url=base_url, temperature=temperature, max_tokens=max_tokens, max_turns=max_turns
    )
    name = safe_label(label) if label else default_label(config, agent)
    judge_config = None
    if judge:
        judge_config = policy_option(judge)
    row, path = run_bench(
        bench_folder(bench_dir),
        config,
        label=name,
        k=k,
        out=Path(out) if out else None,
        leaderboard=Path(leaderboard_dir),
        jobs=jobs,
        only=list(only),
        allow_unlocked=allow_unlocked,
        judge=judge_config,
        trial_timeout=trial_timeout,
        quiet=quiet,
        console=console,
    )
    from ..report.summary import fmt_ci

    o = row["overall"]
    console.print(
        f"leaderboard row written to {path}: mean reward {fmt_ci(o['mean_reward'], o['mean_reward_ci'])}, "
        f"pass rate {fmt_ci(o['pass_rate'], o['pass_rate_ci'], True)} on benchmark "
        f"{row['benchmark']['version']}",
        highlight=False,
        markup=False,
    )
    if pinchbench:
        from ..run.runner import load_records
        from .pinchbench import print_pinchbench_score

        run_dir = Path(out) if out else Path("runs/bench") / name
        if not print_pinchbench_score(list(load_records(run_dir).values()), console):
            console.print(
                "no PinchBench task in this run (import one with 'clawgym import pinchbench')",
                highlight=False,
                markup=False,
            )


@click.command("leaderboard")
@click.option(
    "--dir",
    "rows_dir",
    default="results/leaderboard",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Folder of leaderboard rows (written by 'clawgym bench run').",
)
@click.option("--out", "md_out", type=click.Path(dir_okay=False), help="Write the markdown table to this file.")
@click.option("--html", "html_out", type=click.Path(dir_okay=False), help="Write the HTML page to this file.")
@friendly
def leaderboard_command(rows_dir: str, md_out: str | None, html_out: str | None) -> None:
    """Rank every leaderboard row by mean reward: markdown table and HTML page, versions flagged."""
    from rich.table import Table
    from rich.text import Text

    from ..spec.task import CATEGORY_LABELS
    from ..bench.leaderboard import html_page, load_rows, markdown, table
    from ..files.textsafe import printable

    rows = load_rows(Path(rows_dir))
    header, body, ref = table(rows)
    shown = Table(  # text from the row files is shown literally (see textsafe)
        title=Text(printable(f"ClawGym-Bench leaderboard (version {ref})"), style="table.title"),
        caption="in brackets: bootstrap 95% CI over task instances",
    )
    # the terminal is narrow: no category columns (they are in --out and --html) nor pass@1 (~ pass rate);
    # CIs on a second line
    keep = [i for i, col in enumerate(header) if col not in CATEGORY_LABELS.values() and col not in ("date", "pass@1")]
    for i in keep:
        shown.add_column(
            Text(header[i].replace(" ", "\n") if i > 3 else header[i]),
            justify="left" if i < 4 else "right",
            no_wrap=i != 2,
        )
    for cells in body:
        shown.add_row(*[Text(cells[i].replace(" [", "\n[", 1).replace(" ⚠ ", "\n⚠ ", 1)) for i in keep])
    console.print(shown)
    for target, text in ((md_out, markdown(rows) if md_out else ""), (html_out, html_page(rows) if html_out else "")):
        if target:
            Path(target).parent.mkdir(parents=True, exist_ok=True)
            Path(target).write_text(text, encoding="utf-8")
            console.print(f"wrote {target}", highlight=False, markup=False)


@click.command("diff")
@click.argument("base_rev")
@click.option("--paths", "paths", multiple=True, help="Spec folders or files to compare (repeatable; default: specs).")
@click.option("--bench-only", is_flag=True, help="Only the benchmarks' instances (specs/bench and specs/bench-v2).")
@click.option(
    "--seeds",
    default="0-2",
    show_default=True,
    help="Seeds compiled for specs with params (seed 0 always), e.g. '0-4'.",
)
@click.option("--stat", is_flag=True, help="Only the listing, no diffs.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown", "json"]),
    default="text",
    show_default=True,
    help="markdown: a pull-request comment; json: for scripts.",
)
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("--out", "out_path", type=click.Path(dir_okay=False), help="Write the output to this file.")
@friendly
def diff_command(
    base_rev: str,
    paths: tuple[str, ...],
    bench_only: bool,
    seeds: str,
    stat: bool,
    fmt: str,
    as_json: bool,
    out_path: str | None,
) -> None:
    """Show what changed in the task specs since BASE_REV (a git revision): each changed spec's
    own change (the YAML diff of its params, checks, files...) next to its effect on a few seeds.

    Only spec files the change can affect are compiled, on both sides (BASE_REV from 'git archive';
    your working tree is left alone); instances are matched by task name and seed and compared by
    content hash; a changed instance shows its params, input files, rendered instruction and checks.
    """
    from ..run.plan import parse_seeds
    from ..bench.diff import diff_since, repo_root
    from ..bench.diff_format import markdown, print_diff

    if bench_only and paths:
        raise ClawgymError(
            "--bench-only and --paths exclude each other", hint="--bench-only means --paths specs/bench specs/bench-v2"
        )
    try:
        extra = parse_seeds(seeds) if seeds.strip() else []
    except ValueError:
        raise ClawgymError(f"--seeds {seeds}: not a seed list", hint="e.g. '0-2' or '1,5'") from None
    top = repo_root(Path.cwd())
    chosen = [str(top / f) for f in BENCHES.values() if (top / f).is_dir()] if bench_only else list(paths or ["specs"])
    result = diff_since(base_rev, paths=chosen, seeds=extra, cwd=Path.cwd())
    fmt = "json" if as_json else fmt
    if fmt == "text":
        if not out_path:
            print_diff(result, console, full=not stat)
            return
        from rich.console import Console

        with open(out_path, "w", encoding="utf-8") as fh:
            print_diff(result, Console(file=fh, no_color=True, width=120), full=not stat)
        console.print(f"wrote {out_path}", highlight=False, markup=False)
        return
    text = json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n" if fmt == "json" else markdown(result)
    if out_path:
        Path(out_path).write_text(text, encoding="utf-8")
        console.print(f"wrote {out_path}", highlight=False, markup=False)
    else:
        click.echo(text, nl=False)
