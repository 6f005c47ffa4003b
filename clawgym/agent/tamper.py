"""The tamper agent: an input-tampering attack used to check that a task's verifier cannot be gamed.

It truncates every input file to its first half (by lines), then runs the reference solution on
what is left, so its outputs are consistent with the truncated inputs. A sound task scores this
no higher than doing nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import InfraError
from ..registry import register
from ..sandbox import Sandbox
from ..spec.task import Task
from ..records.trajectory import Trajectory
from .base import COMMON_AGENT_PROPS
from .oracle import OracleAgent

NOT_INPUTS = ("AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "HEARTBEAT.md", "BOOTSTRAP.md", "USER.md", "MEMORY.md")

_TRUNCATE = r"""
import json, sys
keep = float(sys.argv[1])
for path in json.load(sys.stdin):
    with open(path, "rb") as fh:
        lines = fh.read().splitlines(keepends=True)
    with open(path, "wb") as fh:
        fh.writelines(lines[:int(len(lines) * keep)])
"""


def input_files(task: Task) -> list[str]:
    """The task's input files: everything it places in the workspace except agent machinery."""
    return sorted(p for p in task.files if p not in NOT_INPUTS and not p.startswith(("skills/", "memory/")))


def truncate_inputs(folder: Path, paths: list[str], keep: float = 0.5) -> None:
    """The same attack done directly on a workspace folder (used by the synthesis filters)."""
    for rel in paths:
        path = folder / rel
        if path.is_file() and not path.is_symlink():
            lines = path.read_bytes().splitlines(keepends=True)
            path.write_bytes(b"".join(lines[: int(len(lines) * keep)]))


@register("agent", "tamper")
class TamperAgent(OracleAgent):
    """Truncates every input file to its first `keep` share of lines, then runs the reference solution."""

    type = "tamper"
    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            **COMMON_AGENT_PROPS,
            "keep": {
                "type": "number",
                "exclusiveMinimum": 0,
                "exclusiveMaximum": 1,
                "default": 0.5,
                "description": "Share of each input file's lines kept.",
            },
        },
    }

    def run(self, task: Task, sandbox: Sandbox) -> Trajectory:
        paths = input_files(task)
        keep = float(self.config.get("keep", 0.5))
        result = sandbox.exec(["python3", "-c", _TRUNCATE, str(keep)], stdin=json.dumps(paths), timeout=60)
        if result.exit_code != 0:
            raise InfraError(f"could not truncate the inputs: {result.output.strip()[-300:]}")
        traj = super().run(task, sandbox)
        traj.steps.insert(
            0,
            {
                "kind": "exec",
                "description": f"truncated {len(paths)} input files to {keep:.0%} of their lines",
                "exit_code": 0,
            },
        )
        for i, step in enumerate(traj.steps):
            step["index"] = i
        return traj
