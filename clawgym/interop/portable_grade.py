"""Grade a final workspace with a ClawGym task's own checks, where clawgym is not installed.

`reward/check.py` of `clawgym export clawgym` calls `grade` (with the transcript when the harness
provides one); `main` is the entry point of the `tests/test.sh` that `clawgym export harbor` writes. It runs inside
the task's container after the agent stopped, where clawgym is not installed: the exporter vendors
the clawgym package as `tests/clawgym.zip` (run as `python3 /tests/clawgym.zip`) next to
`task.json` (the compiled checks, expected values included), `original/` (the pristine workspace)
and `task_files/` (grading scripts of `python` checks). Only the standard library is needed, plus
jsonschema for `json_schema` checks (the exported image installs it then) and pyyaml for YAML
files (vendored in the zip when a check reads one).

The checks run in this process (`clawgym.verify.run_checks` + `combine`); the plugin registry is
held to the built-in checks, so nothing imports jinja2 or third-party plugins. Checks that run
commands (`command`) use the `inline` sandbox below: plain processes in a throwaway copy of the
workspace, since the container already is the isolation. Writes the reward as one float to
`reward.txt`, the reward and each check's score to `reward.json`, and every check's reason and
details to `verdict.json` (all under /logs/verifier by default).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Mapping, Sequence

LOGS = "/logs/verifier"


def _inline_sandbox() -> type:
    from ..errors import ClawgymError
    from ..checks.exec import run_process
    from ..sandbox.base import DEFAULT_MOUNT, ExecResult, Sandbox, SandboxLimits

    class InlineSandbox(Sandbox):
        """Commands as plain processes (own process group, killed at the end) in the workspace folder."""

        def __init__(
            self,
            workspace: Path | str,
            *,
            limits: SandboxLimits | None = None,
            network: bool = False,
            mount: str = DEFAULT_MOUNT,
        ) -> None:
            self.workspace, self.limits = Path(workspace).resolve(), limits or SandboxLimits()
            self.network, self.mount = network, mount

        def exec(
            self,
            command: str | Sequence[str],
            *,
            timeout: float | None = None,
            env: Mapping[str, str] | None = None,
            workdir: str | None = None,
            stdin: str | bytes | None = None,
        ) -> ExecResult:
            if stdin is not None:
                raise ClawgymError("the inline sandbox of the Harbor grader takes no stdin")
            argv, run_env = self.command_env(command, env, "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh")
            inside = os.path.relpath(self.resolve_workdir(workdir), self.mount)
            cwd = self.workspace if inside == "." or inside.startswith("..") else self.workspace / inside
            limit = self.limits.wall_seconds if timeout is None else float(timeout)
            code, out, err, timed_out = run_process(argv, cwd=cwd, env=run_env, timeout=limit)
            output = (out + err)[-self.limits.output_bytes :]
            return ExecResult(
                exit_code=None if timed_out else code,
                output=output,
                timed_out=timed_out,
                killed_reason="timeout" if timed_out else None,
            )

        def close(self) -> None:
            pass

    return InlineSandbox


def grade(tests: Path, workspace: Path | None = None, trajectory: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run the exported task's checks over `workspace` (default: the task's mount); the verdict as a dict.

    When the bundle folder lies inside the workspace (the published ClawGym format copies reward/
    there), the checks see a copy of the workspace without it.
    """
    from .. import registry

    registry._loaded = True  # built-in checks only: never load entry points or the other plugin kinds
    from ..checks.base import CheckContext
    from ..verify import combine, run_checks

    registry.register("sandbox", "inline")(_inline_sandbox())
    task = json.loads((tests / "task.json").read_text(encoding="utf-8"))
    folder = Path(workspace or task["mount"]).resolve()
    tests = tests.resolve()
    with tempfile.TemporaryDirectory(prefix="clawgym-grade-") as tmp:
        if tests.is_relative_to(folder):
            inside = tests.relative_to(folder).as_posix()
            shutil.copytree(
                folder,
                Path(tmp) / "workspace",
                symlinks=True,
                ignore=lambda d, names: [n for n in names if os.path.relpath(os.path.join(d, n), folder) == inside],
            )
            folder = Path(tmp) / "workspace"
        ctx = CheckContext(
            workspace=folder,
            original=tests / "original",
            task_dir=tests / "task_files",
            params=task.get("params") or {},
            trajectory=trajectory,
            sandbox={"type": "inline"},
        )
        results = run_checks(list(task["checks"]), ctx, check_timeout=60.0)
    verdict = combine(results)
    return {"task": task.get("id"), **verdict.to_dict()}


def write_reward(verdict: dict[str, Any], logs: Path) -> None:
    """reward.txt (one float), reward.json ({"reward", check name: score}) and verdict.json."""
    logs.mkdir(parents=True, exist_ok=True)
    reward = float(verdict["reward"])
    metrics: dict[str, float] = {"reward": reward}
    for r in verdict["results"]:
        name = r["name"] if r["name"] not in metrics else f"{r['name']} (check)"
        metrics[name] = float(r["score"])
    (logs / "reward.txt").write_text(f"{reward:.6g}\n", encoding="utf-8")
    (logs / "reward.json").write_text(json.dumps(metrics, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (logs / "verdict.json").write_text(
        json.dumps(verdict, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8"
    )


def main(argv: Sequence[str] | None = None) -> int:
    here = Path(sys.argv[0]).resolve().parent if sys.argv and sys.argv[0] else Path.cwd()
    parser = argparse.ArgumentParser(prog="clawgym.zip", description="Grade the final workspace with ClawGym checks.")
    parser.add_argument(
        "--tests", type=Path, default=here, help="The task's tests folder (default: this zip's folder)."
    )
    parser.add_argument("--workspace", type=Path, help="The final workspace (default: the task's mount).")
    parser.add_argument("--logs", type=Path, default=Path(LOGS), help=f"Where the reward goes (default: {LOGS}).")
    args = parser.parse_args(argv)
    try:
        verdict = grade(args.tests, args.workspace)
    except Exception as exc:  # noqa: BLE001 - no reward file: Harbor records the trial as an error, not a 0
        print(f"clawgym grader: cannot grade: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    write_reward(verdict, args.logs)
    for r in verdict["results"]:
        mark = "PASS" if r["passed"] else "FAIL"
        print(f"{mark} {r['score']:.3g} x{r['weight']:g} {r['name']}: {r['reason']}")
    gate = f" (gate {verdict['gate_failed']!r} failed)" if verdict.get("gate_failed") else ""
    print(f"reward {verdict['reward']:.4g}{gate}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
