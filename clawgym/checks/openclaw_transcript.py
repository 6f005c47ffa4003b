"""Our trajectory as an OpenClaw session transcript: the JSONL lines graders written for OpenClaw read.

OpenClaw writes one JSON object a line to `sessions/<session id>.jsonl`: a `session` header, a
`model_change`, then `message` events whose `message` has a `role` (`user`, `assistant`,
`toolResult`) and a `content` list of parts: `{"type": "text", "text"}` and, in assistant
messages, `{"type": "toolCall", "id", "name", "arguments": {...}}`; assistant messages carry
`usage`, tool results `toolCallId`, `toolName` and `isError`. PinchBench graders receive these
lines parsed (a line that fails to parse becomes `{"raw", "parse_error"}`).

The builder takes any trajectory of ours, so every harness gives graders the same shape: a
model-driven one (`messages` in OpenAI chat format: the claw agent, a command agent through the
recording proxy) becomes its conversation; one without a conversation (oracle, nop, scripted
steps) becomes the user's prompt, one `exec` tool call per command step, and the final message.
Timestamps count from the task's clock, one second per event.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable

DEFAULT_CLOCK = "2026-03-02T09:00:00Z"
SESSION_VERSION = 3
MAX_TEXT = 200_000  # what OpenClaw's exec keeps of one output


def parse_clock(clock: str | None) -> datetime:
    """The task's clock as an aware UTC datetime (ISO 8601, `Z` allowed); ValueError when unreadable."""
    text = (clock or DEFAULT_CLOCK).strip()
    value = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


class _Events:
    """Appends events with ids chained by parentId and timestamps one second apart."""

    def __init__(self, session_id: str, start: datetime) -> None:
        self.session_id, self.start, self.out = session_id, start, []
        self.parent: str | None = None

    def at(self) -> datetime:
        return self.start + timedelta(seconds=len(self.out))

    def add(self, kind: str, **fields: Any) -> dict[str, Any]:
        when = self.at()
        ident = hashlib.sha256(f"{self.session_id}:{len(self.out)}".encode()).hexdigest()[:8]
        event = {
            "type": kind,
            "id": ident,
            "parentId": self.parent,
            "timestamp": when.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            **fields,
        }
        self.out.append(event)
        self.parent = ident
        return event

    def message(self, role: str, content: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        ms = int(self.at().timestamp() * 1000)
        return self.add("message", message={"role": role, "content": content, **extra, "timestamp": ms})


def _text_parts(content: Any) -> list[dict[str, Any]]:
    """OpenAI message content (a string or a list of parts) as OpenClaw text parts."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content[:MAX_TEXT]}] if content else []
    parts = []
    for part in content if isinstance(content, list) else [content]:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append({"type": "text", "text": part["text"][:MAX_TEXT]})
        elif isinstance(part, str):
            parts.append({"type": "text", "text": part[:MAX_TEXT]})
    return parts


def _arguments(raw: Any) -> dict[str, Any]:
    """A tool call's arguments as an object (OpenAI sends them as a JSON string)."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw) if raw.strip() else {}
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}
    return {}


def _usage(turn: dict[str, Any] | None) -> dict[str, Any]:
    used = (turn or {}).get("usage") or {}
    inp, out = int(used.get("prompt_tokens") or 0), int(used.get("completion_tokens") or 0)
    return {
        "input": inp,
        "output": out,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": inp + out,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def _from_messages(
    ev: _Events, messages: list[dict[str, Any]], turns: list[dict[str, Any]], model: dict[str, Any], prompts: list[str]
) -> None:
    names: dict[str, str] = {}
    turn_iter = iter(turns)
    if prompts and not any(m.get("role") == "user" for m in messages if isinstance(m, dict)):
        for prompt in prompts:
            ev.message("user", [{"type": "text", "text": prompt}])
    for m in messages:
        if not isinstance(m, dict):
            continue
        role = m.get("role")
        if role == "user":
            ev.message("user", _text_parts(m.get("content")))
        elif role == "assistant":
            content = _text_parts(m.get("content"))
            calls = [c for c in m.get("tool_calls") or [] if isinstance(c, dict)]
            for c in calls:
                fn = c.get("function") if isinstance(c.get("function"), dict) else c
                name, call_id = str(fn.get("name") or "?"), str(c.get("id") or f"call_{len(names)}")
                names[call_id] = name
                content.append(
                    {"type": "toolCall", "id": call_id, "name": name, "arguments": _arguments(fn.get("arguments"))}
                )
            ev.message(
                "assistant",
                content,
                api="openai-completions",
                provider=model["provider"],
                model=model["modelId"],
                usage=_usage(next(turn_iter, None)),
                stopReason="toolUse" if calls else "stop",
            )
        elif role == "tool":
            call_id = str(m.get("tool_call_id") or "")
            text = m.get("content")
            ev.message(
                "toolResult",
                _text_parts(text if isinstance(text, (str, list)) else json.dumps(text)),
                toolCallId=call_id,
                toolName=names.get(call_id, str(m.get("name") or "")),
                isError=_is_error(text),
            )


def _is_error(text: Any) -> bool:
    if not isinstance(text, str) or not text.startswith("{"):
        return False
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, dict) and value.get("status") == "error"


def _from_steps(
    ev: _Events, steps: Iterable[dict[str, Any]], model: dict[str, Any], prompts: list[str], final: str | None
) -> None:
    for prompt in prompts:
        ev.message("user", [{"type": "text", "text": prompt}])
    for n, step in enumerate(steps):
        if not isinstance(step, dict) or step.get("kind") not in ("exec", "tool"):
            continue
        if step["kind"] == "exec":
            name = "exec"
            args = {"command": str(step.get("command") or step.get("description") or "")}
            output = str(step.get("output") or "")
            failed = step.get("exit_code") not in (0, None)
            result = (output or "(no output)") + (
                f"\n\n(Command exited with code {step['exit_code']})" if failed else ""
            )
        else:
            name, args = str(step.get("name") or "?"), _arguments(step.get("arguments"))
            result, failed = str(step.get("result") or ""), step.get("ok") is False
        call_id = f"call_{n}"
        ev.message(
            "assistant",
            [{"type": "toolCall", "id": call_id, "name": name, "arguments": args}],
            api="openai-completions",
            provider=model["provider"],
            model=model["modelId"],
            usage=_usage(None),
            stopReason="toolUse",
        )
        ev.message(
            "toolResult",
            [{"type": "text", "text": result[:MAX_TEXT]}],
            toolCallId=call_id,
            toolName=name,
            isError=bool(failed),
        )
    if final:
        ev.message(
            "assistant",
            _text_parts(final),
            api="openai-completions",
            provider=model["provider"],
            model=model["modelId"],
            usage=_usage(None),
            stopReason="stop",
        )


def session_events(
    trajectory: dict[str, Any] | None,
    *,
    prompts: list[str] | None = None,
    clock: str | None = None,
    cwd: str = "/root/.openclaw/workspace",
) -> list[dict[str, Any]]:
    """The OpenClaw session transcript (parsed lines) of `trajectory`.

    `prompts` are the user's messages, used when the trajectory recorded no conversation (an
    agent that only ran commands) or no user turn.
    """
    trajectory = trajectory or {}
    task = trajectory.get("task") or {}
    session_id = f"{task.get('name') or 'task'}_{int(parse_clock(clock).timestamp() * 1000)}"
    ev = _Events(session_id, parse_clock(clock))
    policy = trajectory.get("policy") or {}
    model = {
        "provider": str(policy.get("type") or (trajectory.get("agent") or {}).get("type") or "clawgym"),
        "modelId": str(policy.get("model") or policy.get("type") or "none"),
    }
    ev.add("session", version=SESSION_VERSION, cwd=cwd)
    header = ev.out[0]
    header.pop("parentId")
    header["id"] = session_id
    ev.parent = None
    ev.add("model_change", provider=model["provider"], modelId=model["modelId"])
    messages = [m for m in trajectory.get("messages") or [] if isinstance(m, dict) and m.get("role") != "system"]
    if messages:
        _from_messages(ev, messages, list(trajectory.get("turns") or []), model, list(prompts or []))
    else:
        _from_steps(ev, trajectory.get("steps") or [], model, list(prompts or []), trajectory.get("final_message"))
    return ev.out


def session_jsonl(events: list[dict[str, Any]]) -> str:
    """The events as the JSONL file OpenClaw writes (one compact object a line)."""
    return "".join(json.dumps(e, ensure_ascii=False, separators=(",", ":"), default=str) + "\n" for e in events)
