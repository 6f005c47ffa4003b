"""The built-in Claw-style agent (`claw`): a policy driving OpenClaw-compatible tools in the sandbox.

Modules: `loop` (the agent), `prompt` (system prompt), `schemas` (tool function schemas), `paths`
(escape-proof workspace access), `tools/` (files, shell, memory, simulated).
"""

from .loop import ClawAgent

__all__ = ["ClawAgent"]
