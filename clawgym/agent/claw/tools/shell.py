"""exec and process: shell commands in the sandbox, including background sessions.

Each `sandbox.exec` is a fresh process tree that dies when it returns, so a background session is
a helper thread holding one long `sandbox.exec` call. Its output is streamed to the host through
a named pipe created in the workspace just before the start and removed by the command's wrapper
as soon as it has opened it (the pipe is visible in the workspace for a few milliseconds and never
holds data). A second pipe, opened by a watcher inside the sandbox, carries `kill`: the watcher
then SIGKILLs every process of that sandbox, the wrapper ends and the exec returns.

Limits: no stdin for background commands (`process write` is unsupported), no pty; a session
lives at most until the run ends (all sessions are killed then) and never beyond the task's wall
budget; its log keeps the last `LOG_CAP` characters.
"""

from __future__ import annotations

import os
import secrets
import threading
import time
from typing import Any

from . import RunState, ToolError, arg_num, arg_str, as_json

LOG_CAP = 1 << 20
# $1 output pipe, $2 control pipe, $3 the command. The watcher kills everything on a line from $2.
WRAPPER = r"""exec >"$1" 2>&1 </dev/null; rm -f "$1"
exec 9<"$2"; rm -f "$2"
{ read -r _ <&9; kill -9 -1; } &
sh -c "$3" 9<&-; rc=$?
exit $rc"""


def cap_output(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = text[: limit * 4 // 5]
    tail = text[-(limit // 5) :] if limit >= 5 else ""
    return (
        f"{head}\n\n[... output truncated: {len(text) - len(head) - len(tail)} characters omitted "
        f"of {len(text)} (limit {limit}) ...]\n\n{tail}"
    )


def format_result(output: str, exit_code: int | None, timed_out: bool, limit: int, timeout: float) -> str:
    text = output if output.strip() else "(no output)"
    text = cap_output(text, limit)
    if timed_out:
        text += f"\n\n[Command timed out after {timeout:g} s and was killed]"
    elif exit_code is None:
        text += "\n\n[Command was killed]"
    elif exit_code != 0:
        text += f"\n\n[Command exited with code {exit_code}]"
    return text


def _env(args: dict[str, Any]) -> dict[str, str] | None:
    env = args.get("env")
    if env is None:
        return None
    if not isinstance(env, dict) or not all(isinstance(k, str) and k and "=" not in k for k in env):
        raise ToolError("argument 'env' must be an object of NAME: value strings")
    return {k: str(v) for k, v in env.items()}


def exec_tool(state: RunState, args: dict[str, Any]) -> str:
    command = arg_str(args, "command")
    if not command.strip():
        raise ToolError("argument 'command' is empty")
    workdir = arg_str(args, "workdir", required=False)
    if workdir:
        rel = state.workspace.rel(workdir)
        workdir = state.workspace.mount + ("/" + rel if rel else "")
    left = state.seconds_left()
    if left <= 0:
        raise ToolError("the task's time budget is used up")
    timeout = min(float(arg_num(args, "timeout", left, minimum=0.001, integer=False)), left)
    env = _env(args)
    yield_ms = arg_num(args, "yieldMs", None, minimum=0)
    if args.get("background") in (True, "true") or yield_ms is not None:
        session = sessions(state).start(command, workdir, env, timeout)
        if yield_ms is not None and session.done.wait(yield_ms / 1000):
            sessions(state).forget(session.id)
            return format_result(session.text(), session.exit_code, session.timed_out, state.tool_output_chars, timeout)
        return (
            f"Command still running in the background (session {session.id}, pid n/a). "
            f"Use process with action poll or log and sessionId {session.id!r} to follow it, "
            "or action kill to stop it."
        )
    result = state.sandbox.exec(command, timeout=timeout, env=env, workdir=workdir)
    return format_result(result.output, result.exit_code, result.timed_out, state.tool_output_chars, timeout)


class Session:
    """One background command: a thread holding a sandbox exec, output read from a pipe."""

    def __init__(self, sid: str, command: str) -> None:
        self.id, self.command, self.started = sid, command, time.time()
        self.buf: list[str] = []
        self.size = 0
        self.exit_code: int | None = None
        self.timed_out = False
        self.killed = False
        self.exec_done = threading.Event()  # the sandbox exec returned
        self.done = threading.Event()  # ... and its output is fully read
        self.ctl_fd: int | None = None
        self.polled = 0  # characters already returned by poll
        self.lock = threading.Lock()

    def add(self, chunk: str) -> None:
        with self.lock:
            self.buf.append(chunk)
            self.size += len(chunk)
            if self.size > LOG_CAP * 2:
                text = "".join(self.buf)[-LOG_CAP:]
                self.polled = max(0, self.polled - (self.size - len(text)))
                self.buf, self.size = [text], len(text)

    def text(self) -> str:
        with self.lock:
            return "".join(self.buf)

    @property
    def status(self) -> str:
        if not self.done.is_set():
            return "running"
        if self.killed:
            return "killed"
        return "timeout" if self.timed_out else f"exited ({self.exit_code})"


class Sessions:
    """The background sessions of one run."""

    def __init__(self, state: RunState) -> None:
        self.state, self.items, self.counter = state, {}, 0

    def start(self, command: str, workdir: str | None, env: dict[str, str] | None, timeout: float) -> Session:
        self.counter += 1
        sid = f"proc-{self.counter}"
        session = Session(sid, command)
        token = secrets.token_hex(6)
        names = (f".clawgym-{token}.out", f".clawgym-{token}.ctl")
        root = self.state.workspace.root
        # the sandbox hands the workspace to its own uid at its first command, which may be running
        # in another session's thread right now: take it over first, then read the owner to give
        self.state.sandbox.prepare()
        st = os.stat(root)
        for name in names:
            os.mkfifo(root / name, 0o600)
            if os.geteuid() == 0:
                os.chown(root / name, st.st_uid, st.st_gid)
        # non-blocking opens that never wait for the other end (O_RDWR on a fifo does not block)
        out_fd = os.open(root / names[0], os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        session.ctl_fd = os.open(root / names[1], os.O_RDWR | os.O_CLOEXEC)
        mount = self.state.workspace.mount
        argv = ["sh", "-c", WRAPPER, "sh", f"{mount}/{names[0]}", f"{mount}/{names[1]}", command]

        def run() -> None:
            try:
                res = self.state.sandbox.exec(argv, timeout=timeout, env=env, workdir=workdir)
                session.exit_code, session.timed_out = res.exit_code, res.timed_out
                if res.output.strip():
                    session.add(res.output)
            except Exception as exc:  # noqa: BLE001 - reported in the session log
                session.add(f"\n[the sandbox could not run the command: {exc}]\n")
            finally:
                for name in names:
                    try:
                        os.unlink(root / name)
                    except OSError:
                        pass
                session.exec_done.set()

        def pump() -> None:
            try:
                while True:
                    try:
                        chunk = os.read(out_fd, 65536)
                    except BlockingIOError:
                        chunk = None
                    if chunk:
                        session.add(chunk.decode("utf-8", errors="replace"))
                    elif session.exec_done.is_set():
                        while chunk := _read(out_fd):  # the writer is gone: drain what is left
                            session.add(chunk.decode("utf-8", errors="replace"))
                        break
                    else:
                        time.sleep(0.02)
            finally:
                os.close(out_fd)
                session.done.set()

        threading.Thread(target=run, name=f"clawgym-{sid}", daemon=True).start()
        threading.Thread(target=pump, name=f"clawgym-{sid}-out", daemon=True).start()
        self.items[sid] = session
        return session

    def get(self, sid: str | None) -> Session:
        if not sid:
            raise ToolError("missing required argument 'sessionId'")
        if sid not in self.items:
            known = ", ".join(self.items) or "none"
            raise ToolError(f"no background session {sid!r} (sessions: {known})")
        return self.items[sid]

    def forget(self, sid: str) -> None:
        self.items.pop(sid, None)

    def kill(self, session: Session) -> None:
        if session.done.is_set():
            return
        session.killed = True
        try:
            os.write(session.ctl_fd, b"kill\n")
        except OSError:
            pass

    def close(self, wait: float = 3.0) -> None:
        """Kill every session (at the end of a run) and release the pipes."""
        for session in self.items.values():
            self.kill(session)
        end = time.monotonic() + wait
        for session in self.items.values():
            session.done.wait(max(end - time.monotonic(), 0))
            if session.ctl_fd is not None:
                os.close(session.ctl_fd)
                session.ctl_fd = None


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except BlockingIOError:
        return b""


def sessions(state: RunState) -> Sessions:
    if state.sessions is None:
        state.sessions = Sessions(state)
    return state.sessions


def process(state: RunState, args: dict[str, Any]) -> str:
    action = arg_str(args, "action")
    reg = sessions(state)
    if action == "list":
        return as_json(
            {
                "sessions": [
                    {
                        "sessionId": s.id,
                        "command": s.command,
                        "status": s.status,
                        "runtimeS": round(time.time() - s.started, 1),
                    }
                    for s in reg.items.values()
                ]
            }
        )
    session = reg.get(arg_str(args, "sessionId", required=False))
    if action == "poll":
        wait = arg_num(args, "timeout", 0, minimum=0, integer=False)  # milliseconds
        if wait:
            session.done.wait(min(float(wait) / 1000, max(state.seconds_left(), 0)))
        text = session.text()
        new, session.polled = text[session.polled :], len(text)
        body = cap_output(new, state.tool_output_chars) if new else "(no new output)"
        return f"{body}\n\n[session {session.id}: {session.status}]"
    if action == "log":
        lines = session.text().splitlines()
        offset = arg_num(args, "offset", 0, minimum=0)
        limit = arg_num(args, "limit", None, minimum=1)
        part = lines[offset : offset + limit] if limit else lines[offset:]
        body = cap_output("\n".join(part), state.tool_output_chars) if part else "(no output)"
        return f"{body}\n\n[session {session.id}: {session.status}; {len(lines)} lines in the log]"
    if action == "kill":
        reg.kill(session)
        session.done.wait(5)
        return f"Session {session.id} {'killed' if session.killed else session.status}"
    if action in ("write", "send-keys", "submit", "paste"):
        raise ToolError(f"action {action!r} is not supported here: background commands get no stdin")
    raise ToolError(f"unknown action {action!r}; use list, poll, log or kill")
