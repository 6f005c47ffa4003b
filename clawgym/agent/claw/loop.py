"""The `claw` agent: drives a policy with OpenClaw-compatible tools inside the task's sandbox."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from ...errors import ClawgymError
from ...registry import register
from ...sandbox import Sandbox
from ...spec.task import Task, thaw
from ...records.trajectory import Trajectory
from ..base import COMMON_AGENT_PROPS, Agent
from . import prompt as prompt_mod
from .paths import PathError, Workspace
from .schemas import schemas_for
from .tools import ALL_TOOLS, RunState, ToolError, registry, select_tools

PREVIEW = 2000
SKIPPED = (
    "skipped: only the first tool call of a turn is run (parallel_tool_calls is off); "
    "call this tool again in its own turn"
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["policy"],
    "properties": {
        **COMMON_AGENT_PROPS,
        "policy": {
            "type": "object",
            "required": ["type"],
            "properties": {"type": {"type": "string"}},
            "description": "The model backend: {type: openai|hf|vllm|scripted, ...its settings}.",
        },
        "max_turns": {
            "type": "integer",
            "minimum": 1,
            "default": 50,
            "description": "Most model calls per trial (the task's limits.turns wins when smaller).",
        },
        "max_tokens_total": {
            "type": ["integer", "null"],
            "minimum": 1,
            "default": None,
            "description": "Budget of prompt + completion tokens summed over all turns.",
        },
        "tool_output_chars": {
            "type": "integer",
            "minimum": 100,
            "default": 200_000,
            "description": "Longest tool result given back to the model (more is cut).",
        },
        "parallel_tool_calls": {
            "type": "boolean",
            "default": True,
            "description": "Run every tool call of a turn (true) or only the first (false).",
        },
        "tools": {
            "type": "object",
            "additionalProperties": False,
            "description": "Tool overrides on top of the task's: enable/disable lists of tool names.",
            "properties": {
                "enable": {"type": "array", "items": {"enum": list(ALL_TOOLS)}},
                "disable": {"type": "array", "items": {"enum": list(ALL_TOOLS[5:])}},
            },
        },
        "system_prompt_extra": {"type": "string", "description": "Text appended to the system prompt."},
    },
}


def tool_error(name: str, message: str) -> str:
    return json.dumps({"status": "error", "tool": name, "error": message}, ensure_ascii=False)


@register("agent", "claw")
class ClawAgent(Agent):
    """A Claw-style agent: system prompt from the workspace's bootstrap files and skills, the task's
    instruction as the user message, then model turns and tool calls until the model answers
    without a tool call or a budget (turns, wall time, tokens) runs out. A task's follow-ups are the
    user's next messages, each sent when the model answers without a tool call; one with
    `new_session` starts a fresh conversation (system prompt and that message; a `new_session` step
    marks where in `messages` it begins)."""

    type = "claw"
    schema = SCHEMA

    def __init__(self, config: dict[str, Any]):
        super().__init__(config)
        if not isinstance(self.config.get("policy"), dict) or "type" not in self.config["policy"]:
            raise ClawgymError("the claw agent needs a policy: {type: openai|hf|vllm|scripted, ...}", key="policy")
        self._policy = None
        self._policy_lock = threading.Lock()

    @property
    def policy(self) -> Any:
        """The policy, built once per agent on first use (policies are thread-safe)."""
        with self._policy_lock:
            if self._policy is None:
                from ...policy import make_policy

                self._policy = make_policy(dict(self.config["policy"]))
            return self._policy

    def use_policy(self, policy: Any) -> None:
        """Drive this agent with an already-built policy instead of one made from its config."""
        with self._policy_lock:
            self._policy = policy

    def close(self) -> None:
        if self._policy is not None:
            self._policy.close()

    # ------------------------------------------------------------------ run
    def run(self, task: Task, sandbox: Sandbox) -> Trajectory:
        from ...policy import ContextOverflow, PolicyError, RequestRejected

        cfg = self.config
        traj = self.new_trajectory(task)
        policy = self.policy
        traj.policy = policy.describe()
        limits = task.limits or {}
        max_turns = min(int(cfg.get("max_turns", 50)), int(limits.get("turns", 10**9)))
        state = RunState(
            task=task,
            sandbox=sandbox,
            workspace=Workspace(sandbox.workspace, sandbox.mount),
            deadline=time.monotonic() + float(limits.get("seconds", 600)),
            max_turns=max_turns,
            max_tokens_total=cfg.get("max_tokens_total"),
            tool_output_chars=int(cfg.get("tool_output_chars", 200_000)),
            model=str(traj.policy.get("model") or traj.policy.get("type") or ""),
        )
        names = select_tools(thaw(task.tools or {}), cfg.get("tools"))
        funcs = registry()
        tools = schemas_for(names)
        traj.tools = tools
        traj.side_effects = state.side_effects
        system = prompt_mod.build_system_prompt(
            state.workspace,
            task.clock,
            names,
            cfg.get("system_prompt_extra"),
            files=getattr(sandbox, "initial_files", None),
        )
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system},
            {"role": "user", "content": task.instruction},
        ]
        traj.messages = messages  # every message of the trial, in order
        context = messages  # what the model sees: the current session's messages
        followups = [dict(f) for f in task.followups or ()]

        def say(message: dict[str, Any]) -> None:
            context.append(message)
            if context is not messages:
                messages.append(message)

        usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, "turns": 0, "tool_calls": 0}
        traj.usage = usage
        try:
            while True:
                ended = self._budget_reason(state)
                if ended:
                    return traj.finish(*ended)
                try:
                    completion = policy.complete(context, tools)
                except ContextOverflow as exc:
                    return traj.finish("context_overflow", f"turn {state.turn + 1}: {exc}")
                except RequestRejected as exc:  # the conversation the model made is refused: its doing
                    return traj.finish("agent_crash", f"the endpoint refused turn {state.turn + 1}: {exc}")
                except PolicyError as exc:
                    return traj.finish("model_error", f"policy error at turn {state.turn + 1}: {exc}")
                state.turn += 1
                used = completion.usage or {}
                for key in ("prompt_tokens", "completion_tokens"):
                    usage[key] += int(used.get(key) or 0)
                usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
                usage["turns"] = state.turn
                state.tokens_used = usage["total_tokens"]
                turn: dict[str, Any] = {
                    "index": state.turn - 1,
                    "finish_reason": completion.finish_reason,
                    "usage": dict(used),
                    "latency_s": round(completion.latency_s, 4),
                }
                for key in ("prompt_token_ids", "token_ids", "logprobs"):
                    if getattr(completion, key) is not None:
                        turn[key] = getattr(completion, key)
                traj.turns.append(turn)
                message = {"role": "assistant", "content": completion.message.get("content")}
                calls = completion.tool_calls
                if calls:
                    message["tool_calls"] = calls
                say(message)
                if not calls:
                    if followups:  # the user's next message of a multi-session task
                        nxt = followups.pop(0)
                        user = {"role": "user", "content": nxt["message"]}
                        if nxt.get("new_session"):
                            traj.add("new_session", turn=state.turn, message_index=len(messages))
                            context = [{"role": "system", "content": system}, user]
                            messages.append(user)
                        else:
                            say(user)
                        continue
                    traj.final_message = message["content"] or ""
                    return traj.finish("completed")
                for i, call in enumerate(calls):
                    if i > 0 and not cfg.get("parallel_tool_calls", True):
                        content = tool_error(_call_name(call), SKIPPED)
                        traj.add(
                            "tool",
                            turn=state.turn - 1,
                            name=_call_name(call),
                            call_id=call.get("id"),
                            arguments=_call_args(call),
                            ok=False,
                            skipped=True,
                            duration_s=0.0,
                            result=content,
                        )
                    else:
                        content = self._dispatch(call, names, funcs, state, traj)
                    usage["tool_calls"] += 1
                    say({"role": "tool", "tool_call_id": call.get("id") or f"call_{i}", "content": content})
        finally:
            if state.sessions is not None:
                state.sessions.close()

    @staticmethod
    def _budget_reason(state: RunState) -> tuple[str, str] | None:
        """(outcome, reason) when a budget is spent: turns or tokens, or the task's wall time."""
        if state.turn >= state.max_turns:
            return "budget_exhausted", f"turn budget of {state.max_turns} model turns used up"
        if state.seconds_left() <= 0:
            return "agent_timeout", f"wall-time budget of {state.task.limits.get('seconds', 600)} s used up"
        if state.max_tokens_total and state.tokens_used >= state.max_tokens_total:
            return "budget_exhausted", f"token budget of {state.max_tokens_total} used up ({state.tokens_used} tokens)"
        return None

    @staticmethod
    def _dispatch(
        call: dict[str, Any], names: list[str], funcs: dict[str, Any], state: RunState, traj: Trajectory
    ) -> str:
        """Run one tool call; every failure becomes a JSON error for the model."""
        name = _call_name(call)
        raw = _call_args(call)
        start = time.perf_counter()
        ok = False
        try:
            if name not in names:
                hint = f"{name} is not enabled for this task" if name in ALL_TOOLS else f"unknown tool {name!r}"
                raise ToolError(f"{hint}; available tools: {', '.join(names)}")
            try:
                args = json.loads(raw) if isinstance(raw, str) and raw.strip() else (raw or {})
            except json.JSONDecodeError as exc:
                raise ToolError(
                    f"the arguments are not valid JSON ({exc.msg} at position {exc.pos}); send a JSON object"
                ) from None
            if not isinstance(args, dict):
                raise ToolError("the arguments must be a JSON object")
            content = funcs[name](state, args)
            ok = True
        except (ToolError, PathError) as exc:
            content = tool_error(name, str(exc))
        except ClawgymError as exc:
            content = tool_error(name, str(exc))
        except OSError as exc:
            content = tool_error(name, f"{exc.strerror or exc}")
        if ok and len(content) > state.tool_output_chars:
            from .tools.shell import cap_output

            content = cap_output(content, state.tool_output_chars)
        traj.add(
            "tool",
            turn=state.turn - 1,
            name=name,
            call_id=call.get("id"),
            arguments=raw,
            ok=ok,
            duration_s=round(time.perf_counter() - start, 6),
            result=content[:PREVIEW],
        )
        return content


def _call_name(call: dict[str, Any]) -> str:
    return str((call.get("function") or {}).get("name") or "")


def _call_args(call: dict[str, Any]) -> Any:
    return (call.get("function") or {}).get("arguments")
