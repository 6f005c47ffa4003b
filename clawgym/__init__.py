"""ClawGym: declarative tasks, isolated rollouts, verification and training for Claw-style agents.

The public API is `__all__` (documented in docs/api.md). Names load on first use, so
`import clawgym` stays cheap for the processes that only need a part of it.
"""

from __future__ import annotations

import importlib
from typing import Any

from . import moved

moved.install()  # old module paths (0.1) resolve, with a warning

__version__ = "0.2.0"
API_VERSION = "clawgym/v1"

_EXPORTS = {
    # verbs
    "load_task": "clawgym.api",
    "run_task": "clawgym.api",
    "run_spec": "clawgym.api",
    "verify_task": "clawgym.verify",
    "read_records": "clawgym.api",
    "read_trajectories": "clawgym.api",
    "load_task_spec": "clawgym.compile.compiler",
    "compile_task": "clawgym.compile.compiler",
    "register": "clawgym.registry",
    # nouns
    "TaskSpec": "clawgym.compile.compiler",
    "Task": "clawgym.spec.task",
    "Trajectory": "clawgym.records.trajectory",
    "TrialRecord": "clawgym.records.trial_record",
    "VerifyRequest": "clawgym.verify",
    "Verdict": "clawgym.verify",
    "CheckResult": "clawgym.checks.base",
    # what a plugin subclasses
    "Check": "clawgym.checks.base",
    "CheckContext": "clawgym.checks.base",
    "CheckFailure": "clawgym.checks.base",
    "Agent": "clawgym.agent.base",
    "Policy": "clawgym.policy.base",
    "Completion": "clawgym.policy.base",
    "Sandbox": "clawgym.sandbox.base",
    "SandboxLimits": "clawgym.sandbox.base",
    "ExecResult": "clawgym.sandbox.base",
    # errors
    "ClawgymError": "clawgym.errors",
    "InfraError": "clawgym.errors",
    "PrerequisiteError": "clawgym.errors",
}

__all__ = ["API_VERSION", "__version__"]
__all__ += list(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'clawgym' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
