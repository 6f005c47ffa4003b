"""`command`: run any agent program (real OpenClaw, another CLI agent, a script) inside the
task's sandbox, pointed at a recording proxy, so black-box runs give the same trajectories as the
built-in agent: every model request and response, the tool schemas offered, token ids when the
upstream policy gives them, plus the program's own output and version."""

from __future__ import annotations

import json
import shlex
import time
from typing import Any

from ..errors import InfraError, Problem, SpecError, key_path
from ..policy.base import PolicyError, make_policy
from ..registry import register
from ..sandbox import Sandbox
from ..sandbox.base import PRIVATE_MOUNT
from ..spec.task import Task
from ..records.trajectory import Trajectory
from .base import COMMON_AGENT_PROPS, Agent
from .binds import bind_problems
from .proxy import FORWARDER_NAME, SOCKET_NAME, RecordingProxy, model_ending

INSIDE_PORT = 18080  # on the sandbox's private loopback: no clash with the host is possible
_TAIL = 20_000


@register("agent", "command")
class CommandAgent(Agent):
    """Runs `run` in the sandbox with OPENAI_BASE_URL/OPENAI_API_KEY/OPENAI_MODEL pointing at the
    recording proxy, the instruction in $CLAWGYM_INSTRUCTION and on stdin (a multi-session task's
    later messages in $CLAWGYM_FOLLOWUPS, a JSON list of {message, new_session}). `version` is a command
    whose output is recorded as the agent's version; `ro_binds` shows the program's own install
    read-only in the sandbox."""

    type = "command"
    schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["run", "policy"],
        "properties": {
            **COMMON_AGENT_PROPS,
            "run": {"type": "string", "minLength": 1, "description": "Shell command that runs the agent."},
            "policy": {
                "type": "object",
                "required": ["type"],
                "description": "Upstream policy the proxy forwards to (openai, hf, vllm, scripted...).",
            },
            "version": {"type": "string", "description": "Shell command printing the agent's version."},
            "env": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": "Extra environment variables for the agent.",
            },
            "install": {
                "oneOf": [
                    {"type": "string", "minLength": 1},
                    {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
                ],
                "description": "The agent's own folder(s) on the host, holding its program (default: the "
                "per-machine agents cache, `~/.cache/clawgym/agents`). `ro_binds` may name only "
                "paths inside them; they may not be, hold or lie in system, home-secret, spec, "
                "task, runs, cache or work folders.",
            },
            "ro_binds": {
                "type": "array",
                "items": {},
                "default": [],
                "description": "Paths of the agent's own folders it needs, shown read-only: 'PATH' or "
                "['HOST', 'INSIDE']. No links, sockets or devices; the target may not cover "
                "the workspace.",
            },
            "model_name": {
                "type": "string",
                "default": "clawgym",
                "description": "Model name the proxy reports (OPENAI_MODEL).",
            },
        },
    }

    def __init__(self, config: dict[str, Any]):
        super().__init__(config)
        _refuse_bad_binds(config)
        self.policy = make_policy(dict(config["policy"]))

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "policy": self.policy.describe()}

    def sandbox_options(self, task: Task) -> dict[str, Any]:
        _refuse_bad_binds(self.config, mount=task.mount)
        return {"ro_binds": list(self.config.get("ro_binds") or [])}

    def run(self, task: Task, sandbox: Sandbox) -> Trajectory:
        traj = self.new_trajectory(task)
        traj.policy = self.policy.describe()
        timeout = float(task.limits.get("seconds", 600))
        if self.config.get("version"):
            result = sandbox.exec(self.config["version"], timeout=min(60.0, timeout))
            traj.agent["version"] = result.output.strip()[:200] or f"exit {result.exit_code}"
        if sandbox.private_dir is None:
            raise InfraError(
                "the command agent needs a sandbox with a private folder (create_sandbox(private_dir=...))"
            )
        proxy = RecordingProxy(
            self.policy,
            traj,
            sandbox.private_dir,
            self.config.get("model_name", "clawgym"),
            max_turns=int(task.limits.get("turns", 30)),
        )
        env = {
            **(self.config.get("env") or {}),
            "OPENAI_BASE_URL": f"http://127.0.0.1:{INSIDE_PORT}/v1",
            "OPENAI_API_KEY": "clawgym-proxy",
            "OPENAI_MODEL": self.config.get("model_name", "clawgym"),
            "CLAWGYM_INSTRUCTION": task.instruction,
        }
        if task.followups:  # a multi-session task: the agent conducts the later messages itself
            env["CLAWGYM_FOLLOWUPS"] = json.dumps([dict(f) for f in task.followups], ensure_ascii=False)
        script = (
            f"python3 {shlex.quote(PRIVATE_MOUNT + '/' + FORWARDER_NAME)} "
            f"{shlex.quote(PRIVATE_MOUNT + '/' + SOCKET_NAME)} "
            f"{INSIDE_PORT} /tmp/.proxy-ready & "
            "for i in $(seq 200); do [ -e /tmp/.proxy-ready ] && break; sleep 0.01; done; "
            f"{self.config['run']}"
        )
        started = time.monotonic()
        try:
            result = sandbox.exec(script, timeout=timeout, env=env, stdin=task.instruction)
        finally:
            proxy.stop()
        traj.add(
            "exec",
            command=self.config["run"],
            exit_code=result.exit_code,
            output=result.output[-_TAIL:],
            duration_s=round(time.monotonic() - started, 4),
            timed_out=result.timed_out,
        )
        ended = model_ending(proxy.calls)
        if ended is not None:  # the model failed, never answered, or the prompt outgrew its window
            return traj.finish(*ended)
        budget = [s for s in traj.steps if s.get("kind") == "proxy_refused" and s.get("status") == 429]
        if budget and (result.timed_out or result.exit_code != 0):
            return traj.finish("budget_exhausted", f"{budget[0].get('reason')}; the agent then stopped")
        if result.timed_out:
            return traj.finish("agent_timeout", f"the agent ran past the task's {timeout:.0f} s")
        if result.exit_code != 0:
            return traj.finish("agent_crash", f"the agent exited with code {result.exit_code}")
        return traj.finish("completed")

    def close(self) -> None:
        self.policy.close()


def _refuse_bad_binds(config: dict[str, Any], mount: str | None = None) -> None:
    problems = bind_problems(config, mount=mount)
    if problems:
        raise SpecError([Problem(what, key=key_path(("agent", *key)), hint=hint) for key, what, hint in problems])


__all__ = ["CommandAgent", "PolicyError"]
