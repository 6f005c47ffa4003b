"""The recording proxy for black-box agents: an OpenAI-compatible server on a Unix socket that
forwards every chat request to the upstream policy and records it in the trial's trajectory.

The sandbox has no network, so the proxy is reached through a Unix socket in the trial's private
folder: a host folder the sandbox sees read-only at PRIVATE_MOUNT and that nothing in the sandbox
can write, replace or link elsewhere (the host never touches a path the agent could have made).
A tiny forwarder started inside the sandbox listens on the sandbox's own loopback and relays to
the socket. Request bodies past `max_request_bytes` are refused with 413, and requests past the
task's turn budget with 429, each noted in the trajectory, so an agent cannot make the runner hold
gigabytes or record without end.

Every model call is kept in `RecordingPolicy.calls` with how it ended: `answered`, `failed` (the
endpoint itself failed: a PolicyError such as a connection error, a 5xx or a timeout after its
retries), `rejected` (the request as the agent made it was refused or broke the model's input
handling: the agent's doing), `context_overflow` (the prompt did not fit the model's window) or
`abandoned` (the agent hung up first, e.g. its own request timeout; the generation is then
stopped). `model_ending` reads the outcome that forces on a trial: only what the agent cannot cause
at will becomes an infrastructure outcome. A request runs under the
trial's caps (`max_model_requests`) with its own cancel token, cancelled when the agent hangs up,
the trial is cancelled or the proxy stops; `stop` waits for the requests still running.
"""

from __future__ import annotations

import os
import select
import socket
import socketserver
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from .. import trial_controls as control
from ..policy.base import Completion, ContextOverflow, Policy, PolicyError, RequestRejected
from ..policy.server import ChatHandler, ChatServing
from ..records.trajectory import Trajectory

SOCKET_NAME, FORWARDER_NAME = "proxy.sock", "forward.py"
MAX_REQUEST_BYTES = 32 << 20
FORWARDER = r"""
import os, socket, sys, threading
sock_path, port = sys.argv[1], int(sys.argv[2])
server = socket.socket(); server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", port)); server.listen(64)
open(sys.argv[3], "w").close()  # ready
def pump(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    finally:
        for s in (a, b):
            try: s.shutdown(socket.SHUT_RDWR)
            except OSError: pass
def handle(client):
    upstream = socket.socket(socket.AF_UNIX); upstream.connect(sock_path)
    threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
    pump(upstream, client)
while True:
    conn, _ = server.accept()
    threading.Thread(target=handle, args=(conn,), daemon=True).start()
"""


STOP_WAIT_S = 60.0  # how long `stop` waits for running requests (a generation ends at its next token)
_local = threading.local()  # the model call the current handler thread made


class RecordingPolicy(Policy):
    """Forwards to `upstream` and records each call into `trajectory` (messages, tools, turns);
    `calls` keeps how every call ended (see the module's docstring). A request's `max_tokens` is cut
    to `max_tokens` (default: the upstream policy's own): the run's settings decide how long a turn
    may be, so an agent cannot ask for a generation that outlasts the endpoint's request timeout."""

    type = "recording"

    def __init__(self, upstream: Policy, trajectory: Trajectory, *, max_tokens: int | None = None):
        super().__init__({"type": "recording"})
        self.upstream, self.trajectory = upstream, trajectory
        self.max_tokens = int(max_tokens or upstream.sampling()["max_tokens"])
        self.calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, **sampling: Any
    ) -> Completion:
        started = time.monotonic()
        with self._lock:
            call: dict[str, Any] = {"index": len(self.calls), "status": "running", "started": started}
            self.calls.append(call)
        _local.call = call
        if int(sampling.get("max_tokens") or 0) > self.max_tokens:
            sampling["max_tokens"] = self.max_tokens
        try:
            out = self.upstream.complete(messages, tools=tools, **sampling)
        except Exception as exc:
            seconds = round(time.monotonic() - started, 4)
            token = control.current().token
            if token.cancelled:  # the agent hung up, or the trial ended: nobody waits for this answer
                call.update(status="abandoned", seconds=seconds, error=token.reason)
                note(self.trajectory, "model_call_abandoned", call=call["index"], seconds=seconds, reason=token.reason)
                raise
            if isinstance(exc, ContextOverflow):
                status = "context_overflow"
            elif isinstance(exc, PolicyError) and not isinstance(exc, RequestRejected):
                status = "failed"
            else:  # the agent's request was refused or could not be read: its doing, not the endpoint's
                status = "rejected"
            call.update(status=status, seconds=seconds, error=f"{type(exc).__name__}: {exc}")
            with self._lock:  # the agent gets an HTTP 400 (overflow) or 500; see `model_ending`
                self.trajectory.turns.append(
                    {
                        "index": len(self.trajectory.turns),
                        "error": call["error"],
                        "status": status,
                        "latency_s": seconds,
                    }
                )
            raise
        call.update(status="answered", seconds=round(time.monotonic() - started, 4))
        with self._lock:
            traj = self.trajectory
            index = len(traj.turns)
            traj.messages = [dict(m) for m in messages] + [dict(out.message)]
            traj.tools = list(tools or traj.tools)
            turn = {
                "index": index,
                "finish_reason": out.finish_reason,
                "usage": dict(out.usage),
                "latency_s": round(time.monotonic() - started, 4),
                "request_messages": len(messages),
            }
            for key in ("prompt_token_ids", "token_ids", "logprobs"):
                if getattr(out, key) is not None:
                    turn[key] = getattr(out, key)
            traj.turns.append(turn)
            for key in ("prompt_tokens", "completion_tokens"):
                traj.usage[key] = traj.usage.get(key, 0) + int(out.usage.get(key, 0))
            if not out.tool_calls and out.message.get("content"):
                traj.final_message = out.message["content"]
        return out


MAX_NOTES = 100  # the proxy's own steps (refusals, abandoned calls) kept in one trajectory
_NOTE_KINDS = ("proxy_refused", "model_call_abandoned")
_notes_lock = threading.Lock()


def note(trajectory: Trajectory, kind: str, **fields: Any) -> None:
    """Add one of the proxy's own steps, up to MAX_NOTES of them in all: an agent that keeps asking
    or hanging up cannot grow its trajectory without end."""
    with _notes_lock:
        if sum(1 for s in trajectory.steps if s.get("kind") in _NOTE_KINDS) < MAX_NOTES:
            trajectory.add(kind, **fields)


def model_ending(
    calls: list[dict[str, Any]], agent: str = "the agent", patience: float | None = None
) -> tuple[str, str] | None:
    """(outcome, reason) that the model's side forces on a black-box run, or None: any failed call
    is `model_error`; a last call whose prompt overflowed is `context_overflow`; no call answered
    while one was abandoned is `model_error` too, but only when the agent waited at least its own
    model timeout (`patience`, seconds; 10% slack) for it: the model was too slow for the run's
    settings. An agent that hangs up sooner (or whose patience is unknown) chose to: that is its
    own doing, never an infrastructure outcome, as a request it made that was `rejected` is. Read
    once the agent has exited: a call still running then is abandoned."""
    failed = [c for c in calls if c.get("status") == "failed"]
    if failed:
        c = failed[-1]
        return "model_error", f"model call {c['index'] + 1} failed: {c.get('error')}"
    if calls and calls[-1].get("status") == "context_overflow":
        return "context_overflow", f"model call {calls[-1]['index'] + 1}: {calls[-1].get('error')}"
    abandoned = [c for c in calls if c.get("status") in ("abandoned", "running")]  # running: nobody waits now
    waited = max((call_seconds(c) for c in abandoned), default=0.0)
    if abandoned and not any(c.get("status") == "answered" for c in calls) and outlasted(waited, patience):
        return "model_error", (
            f"the model never answered: none of {len(calls)} model call(s) was answered; {agent} stopped "
            f"waiting after {waited:.0f} s: {abandoned[-1].get('error') or 'it exited while the model still worked'}"
        )
    return None


def outlasted(waited: float, patience: float | None) -> bool:
    """Whether an agent that stopped waiting after `waited` seconds gave the model its own model
    timeout (`patience`, with 10% slack); an unknown patience never counts as outlasted."""
    return bool(patience) and waited >= 0.9 * float(patience or 0)


def call_seconds(call: dict[str, Any]) -> float:
    """How long a model call took, or has taken so far."""
    if call.get("seconds") is not None:
        return float(call["seconds"])
    return time.monotonic() - float(call.get("started") or time.monotonic())


class _ProxyHandler(ChatHandler):
    """ChatHandler whose requests run under the trial's caps with a token of their own (cancelled
    when the agent hangs up), and that notes an answer the agent did not wait for."""

    server: "_UnixChatServer"
    sent: int | None = None

    def send_response(self, code: int, message: str | None = None) -> None:
        self.sent = code
        super().send_response(code, message)

    def do_POST(self) -> None:  # noqa: N802
        _local.call = None
        token = control.CancelToken()
        delivered = False
        with self.server.running(token):
            watcher = threading.Thread(
                target=_watch_hangup, args=(self.connection, token), daemon=True, name="clawgym-proxy-watch"
            )
            watcher.start()
            try:
                with control.use(control.Controls(token=token, model_requests=self.server.caps.model_requests)):
                    super().do_POST()
                delivered = self.sent == 200
            finally:  # an answer that was not delivered (a 500 after cancellation, a write that failed)
                call = _local.call
                if call is not None and call.get("status") == "answered" and not delivered:
                    reason = token.reason or "the agent hung up before the answer was sent"
                    call.update(status="abandoned", error=reason)
                    note(self.server.trajectory, "model_call_abandoned", call=call["index"], reason=reason)
                token.cancel("the request is over")  # stops the watcher
                watcher.join(timeout=1)


def _watch_hangup(conn: socket.socket, token: control.CancelToken) -> None:
    """Cancel `token` when the agent closes its end of `conn` while its request is worked on."""
    while not token.wait(0.25):
        try:
            ready, _, _ = select.select([conn], [], [], 0)
            if ready and conn.recv(1, socket.MSG_PEEK) == b"":
                token.cancel("the agent hung up before the answer (its request timeout, or it exited)")
                return
        except (OSError, ValueError):
            return


class _UnixChatServer(ChatServing, socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """The chat-completions server over a Unix socket."""

    def __init__(
        self,
        path: str,
        policy: Policy,
        model_name: str,
        trajectory: Trajectory,
        max_request_bytes: int,
        max_turns: int | None,
    ):
        socketserver.UnixStreamServer.__init__(self, path, _ProxyHandler)
        self.setup_chat(policy, model_name)
        self.trajectory, self.max_request_bytes, self.max_turns = trajectory, max_request_bytes, max_turns
        self.caps = control.current()  # the trial's: its model-request cap and cancellation
        self._lock = threading.Lock()
        self._admitted = 0
        self._running: set[control.CancelToken] = set()
        self._idle = threading.Condition(self._lock)
        self._stopping = False

    @contextmanager
    def running(self, token: control.CancelToken) -> Iterator[None]:
        """`token`'s request is being worked on (cancelled at once when the proxy is stopping)."""
        with self._lock:
            self._running.add(token)
            stopping = self._stopping
        if stopping or self.caps.token.cancelled:
            token.cancel("the trial is over")
        try:
            yield
        finally:
            with self._lock:
                self._running.discard(token)
                self._idle.notify_all()

    def cancel_running(self, reason: str, wait_s: float = 0.0, stopping: bool = True) -> bool:
        """Cancel every request being worked on (and, `stopping`, every later one), and wait up to
        `wait_s` for them to end; whether they did."""
        with self._lock:
            self._stopping = self._stopping or stopping
            tokens = list(self._running)
        for token in tokens:
            token.cancel(reason)
        with self._lock:
            return self._idle.wait_for(lambda: not self._running, timeout=wait_s)

    def admit(self) -> str | None:
        with self._lock:
            if self.max_turns is not None and self._admitted >= self.max_turns:
                return f"the task's budget of {self.max_turns} model turns is spent"
            self._admitted += 1
            return None

    def request_refused(self, status: int, reason: str) -> None:
        note(self.trajectory, "proxy_refused", status=status, reason=reason)


class RecordingProxy:
    """Serve `policy` (recording into `trajectory`) on a Unix socket in `folder`, a host folder the
    sandbox sees read-only (its `private_dir`); the forwarder script is written beside it.
    `recorder` replaces the default RecordingPolicy (e.g. one that also keeps budgets)."""

    def __init__(
        self,
        policy: Policy,
        trajectory: Trajectory,
        folder: Path,
        model_name: str,
        max_request_bytes: int = MAX_REQUEST_BYTES,
        max_turns: int | None = None,
        recorder: RecordingPolicy | None = None,
    ):
        self.folder = folder
        self.socket_path = folder / SOCKET_NAME
        self.recorder = recorder or RecordingPolicy(policy, trajectory)
        self.server = _UnixChatServer(
            str(self.socket_path), self.recorder, model_name, trajectory, max_request_bytes, max_turns
        )
        os.chmod(self.socket_path, 0o777)  # the sandbox's uid connects; the folder stays read-only to it
        forwarder = folder / FORWARDER_NAME
        forwarder.write_text(FORWARDER)
        os.chmod(forwarder, 0o644)
        self._thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True, name="clawgym-proxy"
        )
        self._thread.start()
        self._unregister = self.server.caps.token.on_cancel(self._trial_cancelled)

    def _trial_cancelled(self) -> None:
        self.server.cancel_running("the trial was cancelled")

    @property
    def calls(self) -> list[dict[str, Any]]:
        """How each model call ended (see `RecordingPolicy.calls`)."""
        return self.recorder.calls

    def settle(self, wait_s: float) -> None:
        """The agent has exited: stop the model calls still running for it, waiting up to `wait_s`."""
        self.server.cancel_running("the agent exited before the answer", wait_s=wait_s, stopping=False)

    def stop(self) -> None:
        """Stop serving, stop the model calls still running (nobody waits for them any more) and wait
        for them; the trial's work folder (holding the socket) is removed with the trial."""
        self._unregister()
        self.server.shutdown()
        if not self.server.cancel_running("the agent's run is over", wait_s=STOP_WAIT_S):
            self.recorder.trajectory.add("proxy_busy_at_stop", waited_s=STOP_WAIT_S)
        self.server.server_close()
        self._thread.join(timeout=5)
