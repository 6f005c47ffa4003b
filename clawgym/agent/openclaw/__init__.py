"""The real OpenClaw as a black-box agent (`openclaw`): `install` (pinned Node and OpenClaw in the
per-machine cache), `config` (the generated openclaw.json and its hash), `options` (the agent
config's schema), `agent` (one trial in the trial's sandbox, driven turn by turn), `launch` (where
OpenClaw sits in the sandbox, its environment and the shell line of a run), `recorder` (budgets and
context segments in the proxy), `transcript` (OpenClaw's result, session file and tool calls, read
as untrusted data)."""

from .agent import OpenClawAgent

__all__ = ["OpenClawAgent"]
