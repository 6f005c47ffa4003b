"""Warm an install's shared V8 compile cache once, so every trial starts faster.

Trials see the compile cache read-only (a trial could otherwise plant bytecode that the next trial
runs). It is filled here instead, by one trusted headless run: a fresh empty workspace, a scripted
model that calls `exec`, `write` and `read`, and the cache shown writable. Run by
`clawgym agents install` after installing; safe to run again (it only adds to the cache).
"""

from __future__ import annotations

import time
from ...files import safefs
from ...files.tempdirs import make_temp
from ...policy.scripted import tool_call
from ...spec.task import Task
from ...sandbox import SandboxLimits, create_sandbox
from .agent import ADDRESS_SPACE_MB, OPT, OpenClawAgent
from .install import Install


def _task(instruction: str) -> Task:
    return Task(
        name="openclaw-warm-up",
        category="warm-up",
        seed=0,
        params={},
        persona="",
        skills=(),
        workspace="",
        instruction=instruction,
        files={},
        executables=frozenset(),
        solution=(),
        checks=(),
        limits={"turns": 10, "seconds": 300},
    )


def warm_compile_cache(inst: Install, timeout: float = 300.0) -> float:
    """One headless OpenClaw run with the compile cache writable; returns the seconds it took."""
    turns = [
        {"content": None, "tool_calls": [tool_call("exec", command="echo warm > warm.txt")]},
        {"content": None, "tool_calls": [tool_call("write", path="notes.md", content="warm\n")]},
        {"content": None, "tool_calls": [tool_call("read", path="warm.txt")]},
        "done",
    ]
    agent = OpenClawAgent({"type": "openclaw", "version": inst.version, "policy": {"type": "scripted", "turns": turns}})
    tmp = make_temp("openclaw-warm")
    try:
        workspace, private = tmp / "workspace", tmp / "private"
        workspace.mkdir()
        private.mkdir(mode=0o755)
        tmp.chmod(0o711)
        task = _task("Write warm.txt, then notes.md, then read warm.txt.")
        options = agent.sandbox_options(task)
        options["ro_binds"] = [b for b in options["ro_binds"] if not b[1].endswith("compile-cache")]
        options["rw_binds"] = [*options["rw_binds"], [str(inst.compile_cache), f"{OPT}/compile-cache"]]
        started = time.monotonic()
        limits = SandboxLimits(wall_seconds=timeout, memory_mb=4096)
        with create_sandbox(
            {"type": "local", **options, "address_space_mb": ADDRESS_SPACE_MB},
            workspace,
            limits=limits,
            private_dir=private,
        ) as sandbox:
            traj = agent.run(task, sandbox)
        if traj.outcome not in ("completed",):
            raise RuntimeError(f"the warm-up run ended {traj.outcome}: {traj.error}")
        return time.monotonic() - started
    finally:
        agent.close()
        safefs.remove_tree(tmp)
