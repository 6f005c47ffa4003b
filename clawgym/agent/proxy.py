"""The recording proxy for black-box agents: an OpenAI-compatible server on a Unix socket that
forwards every chat request to the upstream policy and records it in the trial's trajectory.

The sandbox has no network, so the proxy is reached through a Unix socket in the trial's private
folder: a host folder the sandbox sees read-only at PRIVATE_MOUNT and that nothing in the sandbox
can write, replace or link elsewhere (the host never touches a path the agent could have made).
A tiny forwarder started inside the sandbox listens on the sandbox's own loopback and relays to
the socket. Request bodies past `max_request_bytes` are refused with 413, and requests past the
task's turn budget with 429, each noted in the trajectory, so an agent cannot make the runner hold
gigabytes or record without end.
"""

from __future__ import annotations

import os
import socketserver
import threading
import time
from pathlib import Path
from typing import Any

from ..policy.base import Completion, Policy
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


class RecordingPolicy(Policy):
    """Forwards to `upstream` and records each call into `trajectory` (messages, tools, turns)."""

    type = "recording"

    def __init__(self, upstream: Policy, trajectory: Trajectory):
        super().__init__({"type": "recording"})
        self.upstream, self.trajectory = upstream, trajectory
        self._lock = threading.Lock()

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, **sampling: Any
    ) -> Completion:
        started = time.monotonic()
        try:
            out = self.upstream.complete(messages, tools=tools, **sampling)
        except Exception as exc:  # the agent gets an HTTP 500; the trial becomes an `error`
            with self._lock:
                self.trajectory.turns.append(
                    {
                        "index": len(self.trajectory.turns),
                        "error": f"{type(exc).__name__}: {exc}",
                        "latency_s": round(time.monotonic() - started, 4),
                    }
                )
            raise
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
        socketserver.UnixStreamServer.__init__(self, path, ChatHandler)
        self.setup_chat(policy, model_name)
        self.trajectory, self.max_request_bytes, self.max_turns = trajectory, max_request_bytes, max_turns
        self._lock = threading.Lock()
        self._admitted = 0
        self._refusals = 0

    def admit(self) -> str | None:
        with self._lock:
            if self.max_turns is not None and self._admitted >= self.max_turns:
                return f"the task's budget of {self.max_turns} model turns is spent"
            self._admitted += 1
            return None

    def request_refused(self, status: int, reason: str) -> None:
        with self._lock:
            self._refusals += 1
            if self._refusals <= 100:  # an agent that keeps asking cannot grow the trajectory without end
                self.trajectory.add("proxy_refused", status=status, reason=reason)


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

    def stop(self) -> None:
        """Stop serving; the trial's work folder (holding the socket) is removed with the trial."""
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)
