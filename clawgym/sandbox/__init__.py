"""Sandboxes: isolated environments over a workspace folder, as `sandbox` plugins.

`create_sandbox({"type": "local"}, workspace)` builds one; every backend must pass
`clawgym.sandbox.conformance`.
"""

from .base import DEFAULT_MOUNT, ExecResult, Sandbox, SandboxLimits, create_sandbox

# Built-in backends: importing a module registers it under its `type` name.
from . import bubblewrap as _bubblewrap  # noqa: F401,E402  (registers "local")
from . import docker as _docker  # noqa: F401,E402  ("docker": containers; the SDK is imported lazily)

__all__ = ["DEFAULT_MOUNT", "ExecResult", "Sandbox", "SandboxLimits", "create_sandbox"]
