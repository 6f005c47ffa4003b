"""`openclaw`: the real OpenClaw, pinned, run as a black box inside the trial's own sandbox.

Per trial: the task's workspace is OpenClaw's workspace; its state (sessions, logs) lives in a
per-trial host folder shown writable at STATE; the install (Node, OpenClaw) and the shared compile
cache are shown read-only; the generated `openclaw.json` sits in the trial's private folder
(read-only, so the agent cannot rewrite its own config between turns). There is no network: the
model is reached only through the recording proxy's Unix socket, relayed inside on loopback TCP.

Driving: 2026.4.x runs `agent --local --session-id ID` once per user turn (the task's instruction,
then its followups and any `follow_up` messages), continuing one session; 2026.9.x runs `agent
exec` (one turn per call); `mode: gateway` sends every message to the gateway's chat endpoint
(`gateway.py`), the way the published pipeline drove 2026.4.1.
How OpenClaw waits for the model is set from the trial's time (or `model_timeout`), so a slow
model is not cut off by OpenClaw's own default (60 s in 2026.4.x); the key set is recorded.
Endings, in the contract's words: a model call that failed, or none answered before OpenClaw gave
up waiting, is `model_error` (infrastructure: never a reward of 0); a last call whose prompt did
not fit the model's window is `context_overflow`; a spent turn or token budget is
`budget_exhausted`; a run cut at the trial's time is `agent_timeout`; OpenClaw reporting an error
or exiting without a result is `agent_crash`, with the tail of its output and log.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import time
import uuid
import weakref
from pathlib import Path
from typing import Any

from ...errors import ClawgymError, InfraError
from ...files import safefs
from ...files.tempdirs import make_temp
from ...policy.base import make_policy
from ...records.trajectory import Trajectory
from ...registry import register
from ...sandbox import Sandbox
from ...sandbox.base import PRIVATE_MOUNT
from ...spec.task import Task
from ..base import Agent
from ..proxy import RecordingProxy, call_seconds, model_ending, outlasted
from . import config as config_mod
from .gateway import DRIVER, DRIVER_NAME, answer_text, frames
from .install import DEFAULT_VERSION, check_version, find
from .launch import ADDRESS_SPACE_MB, CONFIG_NAME, ENV, GATEWAY_PLAN, GATEWAY_PORT, OPT, PORT, STATE, shell_line
from .options import SCHEMA
from .recorder import OpenClawRecorder, text_of
from .transcript import SESSION_FILE, parse_result, read_session, tool_steps

TAIL = 4000
MAX_LOG = 64 << 10
DEADLINE_MARGIN_S = 5.0  # a run that ends this close to its time limit was cut by it
SETTLE_S = 10.0  # how long a model call still running when OpenClaw exits may take to stop
# OpenClaw's words for a model endpoint it could not reach (no request got to the proxy)
UNREACHABLE = re.compile(r"connection refused|ECONNREFUSED|network connection|endpoint is unreachable", re.I)


@register("agent", "openclaw")
class OpenClawAgent(Agent):
    """The real OpenClaw (a pinned version from the per-machine install) behind the recording proxy."""

    type = "openclaw"
    schema = SCHEMA

    def __init__(self, config: dict[str, Any]):
        super().__init__(config)
        self.version = check_version(str(self.config.get("version") or DEFAULT_VERSION))
        mode = self.config.get("mode", "auto")
        self.mode = ("local" if self.version.startswith("2026.4.") else "exec") if mode == "auto" else mode
        if self.mode == "exec" and self.config.get("follow_up"):
            raise ClawgymError("follow_up messages need mode: local (agent exec runs one turn)", key="agent.follow_up")
        if not isinstance(self.config.get("policy"), dict) or "type" not in self.config["policy"]:
            raise ClawgymError(
                "the openclaw agent needs a policy: {type: hf|vllm|openai|scripted, ...}",
                key="agent.policy",
                hint="on the command line: --agent openclaw --model embedded",
            )
        self.install = find(self.version)  # PrerequisiteError naming `clawgym agents install` when missing
        self.policy = make_policy(dict(self.config["policy"]))
        self._state: Path | None = None
        self.transcript: bytes | None = None

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "version": self.version, "mode": self.mode, "policy": self.policy.describe()}

    def sandbox_options(self, task: Task) -> dict[str, Any]:
        """The install and compile cache read-only, a fresh per-trial state folder writable."""
        self._state = make_temp("openclaw")
        os.chmod(self._state, 0o711)  # a root-run sandbox's uid must reach it
        weakref.finalize(self, safefs.remove_tree, self._state)
        inst = self.install
        return {
            "ro_binds": [
                [str(inst.node_dir), f"{OPT}/node"],
                [str(inst.app_dir), f"{OPT}/app"],
                [str(inst.compile_cache), f"{OPT}/compile-cache"],
            ],
            "rw_binds": [[str(self._state), STATE]],
            "address_space_mb": ADDRESS_SPACE_MB,
        }

    # ------------------------------------------------------------------ run
    def run(self, task: Task, sandbox: Sandbox) -> Trajectory:
        if sandbox.private_dir is None:
            raise InfraError("the openclaw agent needs a sandbox with a private folder")
        traj = self.new_trajectory(task)
        traj.policy = self.policy.describe()
        limits = task.limits or {}
        seconds = float(limits.get("seconds", 600))
        deadline = time.monotonic() + seconds
        gateway = {"port": GATEWAY_PORT, "token": secrets.token_hex(16)} if self.mode == "gateway" else None
        model_timeout = max(int(self.config.get("model_timeout") or seconds), 1)
        deny, lean = config_mod.denied_tools(
            self.config.get("deny_tools"), getattr(self.policy, "context_window", None)
        )
        cfg = config_mod.build_config(
            self.version,
            port=PORT,
            model_id=str(self.config.get("model_name", "clawgym-model")),
            workspace=sandbox.mount,
            timeout_s=max(int(seconds), 1),
            context_window=int(self.config.get("context_window", 32768)),
            max_tokens=self._max_tokens(),
            model_timeout_s=model_timeout,
            deny=deny,
            gateway=gateway,
        )
        path = sandbox.private_dir / CONFIG_NAME
        path.write_text(json.dumps(cfg, indent=2), encoding="utf-8")
        os.chmod(path, 0o644)
        traj.agent.update(
            version=self.version,
            node=self.install.node_version,
            mode=self.mode,
            config_sha256=config_mod.config_hash(cfg),
            openclaw=self.install.verified,
            model_timeout={"seconds": model_timeout, "key": config_mod.model_timeout_key(self.version)},
            deny_tools=deny,
        )
        if lean:
            traj.agent["lean_tools"] = (
                f"the model's context window ({self.policy.context_window} tokens) is under "
                f"{config_mod.LEAN_BELOW}: OpenClaw's scheduling, session, sub-agent and fetching tools are denied"
            )
        self._model_timeout = model_timeout
        max_turns = min(int(self.config.get("max_turns", 50)), int(limits.get("turns", 10**9)))
        recorder = OpenClawRecorder(
            self.policy,
            traj,
            max_turns=max_turns,
            max_tokens_total=self.config.get("max_tokens_total"),
            max_tokens=self._max_tokens(),
        )
        proxy = RecordingProxy(
            self.policy,
            traj,
            sandbox.private_dir,
            str(self.config.get("model_name", "clawgym-model")),
            recorder=recorder,
        )
        self._recorder, self._proxy = recorder, proxy
        session = "clawgym-" + uuid.uuid4().hex[:12]
        result: dict[str, Any] | None = None
        outcome: tuple[str, str] | None = None
        # the task's own later messages (a multi-session task), then the agent config's follow_up ones
        messages = [(task.instruction, False)] + [
            (str(f["message"]), bool(f.get("new_session"))) for f in task.followups or ()
        ]
        messages += [(m, False) for m in self.config.get("follow_up") or []]
        try:
            if gateway is not None:
                outcome, result = self._gateway(sandbox, traj, messages, gateway, deadline)
                messages = []  # all sent
            for i, (message, new_session) in enumerate(messages):
                left = deadline - time.monotonic()
                if left <= 1:
                    outcome = ("agent_timeout", f"the trial's {seconds:.0f} s ran out")
                    break
                if i and (new_session or self.mode == "exec"):  # `agent exec` has no session to continue
                    session = "clawgym-" + uuid.uuid4().hex[:12]
                    traj.add(
                        "new_session", turn=len(traj.turns), message_index=len(traj.messages), requested=new_session
                    )
                outcome, turn_result = self._turn(sandbox, traj, message, session, left)
                result = turn_result or result
                if outcome is not None or recorder.spent:
                    break
        finally:
            proxy.stop()
            try:
                self._collect(traj)
            finally:
                if self._state is not None:  # emptied now; the folder itself stays while the sandbox
                    for name in os.listdir(self._state):  # may still bind it (Docker re-binds it to copy out)
                        safefs.remove_tree(self._state / name)
        if result is not None:
            payloads = result.get("payloads") or (result.get("result") or {}).get("payloads") or []
            text = "\n".join(str(p.get("text")) for p in payloads if isinstance(p, dict) and p.get("text"))
            traj.final_message = text or result.get("final") or traj.final_message
        if outcome is None and recorder.spent:
            outcome = ("budget_exhausted", recorder.spent)
        return self._finish(traj, recorder, *(outcome or ("completed", None)))

    def _command(self, message: str, session: str, seconds: float) -> str:
        node, entry = f"{OPT}/node/bin/node", f"{OPT}/app/node_modules/openclaw/openclaw.mjs"
        if self.mode == "local":
            args = [
                "agent",
                "--local",
                "--session-id",
                session,
                "--json",
                "--timeout",
                str(max(int(seconds) - 2, 5)),
                "--message",
                message,
            ]
        else:
            args = [
                "agent",
                "exec",
                "--config",
                f"{PRIVATE_MOUNT}/{CONFIG_NAME}",
                "--cwd",
                "{MOUNT}",
                "--state-dir",
                f"{STATE}/state",
                "--json",
                "--timeout",
                str(max(int(seconds) - 2, 5)),
                message,
            ]
        return " ".join(shlex.quote(a) for a in [node, entry, *args])

    def _turn(
        self, sandbox: Sandbox, traj: Trajectory, message: str, session: str, seconds: float
    ) -> tuple[tuple[str, str] | None, dict[str, Any] | None]:
        """Run OpenClaw for one user message; (outcome, reason) when the trial ends here, and its result."""
        command = self._command(message, session, seconds).replace(shlex.quote("{MOUNT}"), shlex.quote(sandbox.mount))
        started = time.monotonic()
        res = sandbox.exec(shell_line(command), timeout=seconds, env=ENV)
        result = parse_result(res.output)
        traj.add(
            "openclaw",
            message=message[:2000],
            exit_code=res.exit_code,
            timed_out=res.timed_out,
            duration_s=round(time.monotonic() - started, 3),
            result=_summary(result),
            output=res.output[-TAIL:],
        )
        ended = self._model_ending(res.output)
        if ended is not None:
            return ended, result
        if res.timed_out:
            return ("agent_timeout", f"OpenClaw ran past the trial's time ({seconds:.0f} s left at this turn)"), result
        aborted = bool(((result or {}).get("meta") or {}).get("aborted")) or (
            self.mode == "exec" and res.exit_code == 2
        )
        if aborted or self._gave_up():  # its own deadline (the trial's time, minus a margin) or its model timeout
            return self._aborted(time.monotonic() - started, seconds, json.dumps(_summary(result))[:800]), result
        if res.exit_code != 0 or result is None:
            return (
                "agent_crash",
                f"OpenClaw {self.version} exited {res.exit_code} without a result; "
                f"its last output:\n{res.output[-TAIL:].strip()}{self._log_tail()}",
            ), result
        if result.get("ok") is False:
            return ("agent_crash", f"OpenClaw reported an error: {json.dumps(_summary(result))[:800]}"), result
        return None, result

    def _max_tokens(self) -> int:
        """Most tokens a turn may generate: the agent's option, else its policy's, else 1024."""
        return int(self.config.get("max_tokens") or self.config["policy"].get("max_tokens") or 1024)

    def _model_ending(self, output: str) -> tuple[str, str] | None:
        """The outcome the model's side forces (see `model_ending`), or a model endpoint OpenClaw
        could not reach at all (no request got to the proxy)."""
        self._proxy.settle(SETTLE_S)  # OpenClaw has exited: nobody waits for a call still running
        calls = self._recorder.calls
        ended = model_ending(
            calls, f"OpenClaw {self.version} (its model timeout: {self._model_timeout} s)", self._model_timeout
        )
        if ended is None and not calls and UNREACHABLE.search(output):
            line = next((x for x in output.splitlines() if UNREACHABLE.search(x)), "")
            return "model_error", f"OpenClaw could not reach the model endpoint: {line.strip()[:400]}"
        return ended

    def _gave_up(self) -> bool:
        """Whether OpenClaw stopped waiting for its last model call (it hung up before the answer)."""
        calls = self._recorder.calls
        return bool(calls) and calls[-1].get("status") in ("abandoned", "running")

    def _aborted(self, took: float, seconds: float, summary: str) -> tuple[str, str]:
        """OpenClaw stopped its run itself: at the trial's time (`agent_timeout`), or earlier,
        waiting for a model call that never answered (its model timeout: `model_error`)."""
        calls = self._recorder.calls
        waited = call_seconds(calls[-1]) if calls else 0.0
        if self._gave_up() and took < seconds - DEADLINE_MARGIN_S:
            if outlasted(waited, self._model_timeout):
                return "model_error", (
                    f"OpenClaw gave up on model call {len(calls)} after {waited:.0f} s "
                    f"without an answer (its model timeout is {self._model_timeout} s): {summary}"
                )
            return "agent_crash", (
                f"OpenClaw gave up on model call {len(calls)} after {waited:.0f} s, before its model "
                f"timeout of {self._model_timeout} s: {summary}"
            )
        return "agent_timeout", f"OpenClaw stopped at the trial's time limit: {summary}"

    def _gateway(
        self,
        sandbox: Sandbox,
        traj: Trajectory,
        messages: list[tuple[str, bool]],
        gateway: dict[str, Any],
        deadline: float,
    ) -> tuple[tuple[str, str] | None, dict[str, Any] | None]:
        """Start the gateway inside the sandbox and send every message to its chat endpoint."""
        user = "clawgym-" + uuid.uuid4().hex[:12]
        turns = []
        for i, (message, new_session) in enumerate(messages):
            if i and new_session:
                user = "clawgym-" + uuid.uuid4().hex[:12]
            turns.append({"message": message, "user": user, "new_session": bool(i and new_session)})
        left = max(deadline - time.monotonic(), 1.0)
        plan = {
            "port": gateway["port"],
            "token": gateway["token"],
            "turns": turns,
            "ready_s": min(120.0, left),
            "deadline": time.time() + left - 2,
            "command": [
                f"{OPT}/node/bin/node",
                f"{OPT}/app/node_modules/openclaw/openclaw.mjs",
                "gateway",
                "--bind",
                "loopback",
                "--port",
                str(gateway["port"]),
                "--token",
                gateway["token"],
            ],
        }
        assert sandbox.private_dir is not None
        for name, text in ((GATEWAY_PLAN, json.dumps(plan)), (DRIVER_NAME, DRIVER)):
            (sandbox.private_dir / name).write_text(text, encoding="utf-8")
            os.chmod(sandbox.private_dir / name, 0o644)
        started = time.monotonic()
        res = sandbox.exec(
            shell_line(f"python3 {PRIVATE_MOUNT}/{DRIVER_NAME} {PRIVATE_MOUNT}/{GATEWAY_PLAN}"), timeout=left, env=ENV
        )
        found = frames(res.output)
        ready = found[0] if found and "ready" in found[0] else {"ready": False}
        answers = [f for f in found if "index" in f]
        for f in answers:
            turn = turns[f["index"]]
            if turn["new_session"]:
                traj.add("new_session", turn=len(traj.turns), requested=True)
            traj.add(
                "openclaw",
                message=turn["message"][:2000],
                mode="gateway",
                status=f.get("status"),
                duration_s=f.get("seconds"),
                error=f.get("error"),
                answer=(answer_text(f) or "")[:2000],
            )
        traj.add(
            "openclaw_gateway",
            ready=ready.get("ready"),
            ready_s=ready.get("ready_s"),
            exit_code=res.exit_code,
            timed_out=res.timed_out,
            duration_s=round(time.monotonic() - started, 3),
            output=res.output[-TAIL:],
        )
        ended = self._model_ending(res.output)
        if ended is not None:
            return ended, None
        if res.timed_out:
            return ("agent_timeout", "OpenClaw's gateway ran past the trial's time"), None
        if self._gave_up():
            return self._aborted(time.monotonic() - started, left, "its gateway stopped waiting for the model"), None
        if not ready.get("ready"):
            return (
                "agent_crash",
                f"OpenClaw {self.version}'s gateway did not start listening (exit {ready.get('exit')}); "
                f"its last output:\n{res.output[-TAIL:].strip()}{self._log_tail()}",
            ), None
        bad = next((f for f in answers if f.get("status") != 200), None)
        if bad is not None:
            return (
                "agent_crash",
                f"OpenClaw's gateway answered message {bad['index'] + 1} with "
                f"{bad.get('status') or bad.get('error')}: {str(bad.get('body') or '')[:800]}",
            ), None
        if len(answers) < len(turns):
            return (
                "agent_crash",
                f"OpenClaw's gateway answered {len(answers)} of {len(turns)} messages; its last output:\n"
                f"{res.output[-TAIL:].strip()}",
            ), None
        final = answer_text(answers[-1]) if answers else None
        return None, ({"final": final} if final is not None else None)

    def _log_tail(self) -> str:
        if self._state is None:
            return ""
        try:
            logs = sorted(n for n in os.listdir(self._state / "logs") if n.endswith(".log"))
        except OSError:
            return ""
        for name in logs[-1:]:
            try:
                data = safefs.read_under(self._state, f"logs/{name}", 16 << 20) or b""
            except ValueError:
                return ""
            return f"\nits log ({name}) ends:\n" + data[-MAX_LOG // 16 :].decode("utf-8", "replace")
        return ""

    def _collect(self, traj: Trajectory) -> None:
        """Keep OpenClaw's own transcript and turn the recorded conversation into tool steps."""
        traj.steps.extend(tool_steps(traj.messages, start=len(traj.steps)))
        traj.usage["turns"] = len([t for t in traj.turns if not t.get("error")])
        traj.usage["tool_calls"] = sum(1 for s in traj.steps if s.get("kind") == "tool")
        traj.usage["total_tokens"] = int(traj.usage.get("prompt_tokens", 0)) + int(
            traj.usage.get("completion_tokens", 0)
        )
        if self._state is not None and self.mode in ("local", "gateway"):
            self.transcript = read_session(self._state / "state")
            if self.transcript is not None:
                traj.add(
                    "openclaw_transcript",
                    file=SESSION_FILE,
                    bytes=len(self.transcript),
                    text=self.transcript.decode("utf-8", "replace"),
                )

    def _finish(
        self, traj: Trajectory, recorder: OpenClawRecorder, outcome: str, reason: str | None = None
    ) -> Trajectory:
        traj.agent["segments"] = recorder.segments + 1
        if traj.final_message is None and traj.messages and traj.messages[-1].get("role") == "assistant":
            traj.final_message = text_of(traj.messages[-1].get("content"))
        return traj.finish(outcome, reason)

    def trial_files(self) -> dict[str, bytes]:
        """Files kept beside the trajectory: OpenClaw's own session transcript."""
        return {SESSION_FILE: self.transcript} if self.transcript is not None else {}

    def close(self) -> None:
        if self._state is not None:
            safefs.remove_tree(self._state)
        self.policy.close()


def _summary(result: dict[str, Any] | None) -> dict[str, Any] | None:
    """OpenClaw's result without its (long) system-prompt report."""
    if result is None:
        return None
    out = {k: v for k, v in result.items() if k != "meta"}
    meta = result.get("meta")
    if isinstance(meta, dict):
        out["meta"] = {k: v for k, v in meta.items() if k != "systemPromptReport"}
    return out
