"""The recording proxy for black-box agents: an OpenAI-compatible server on a Unix socket that
forwards every chat request to the upstream policy and records it in the trial's trajectory.

The sandbox has no network, so the proxy is reached through a Unix socket placed in a hidden
folder of the workspace; a tiny forwarder started inside the sandbox listens on the sandbox's own
loopback and relays to it. Nothing else of the host network is reachable.
"""

from __future__ import annotations

import os
import socketserver
import threading
import time
from pathlib import Path
from typing import Any

from ..policy.base import Completion, Policy
from ..serve import ChatHandler, ChatServing
from ..trajectory import Trajectory

PROXY_DIR = ".clawgym-proxy"
FORWARDER = r'''
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
'''


class RecordingPolicy(Policy):
    """Forwards to `upstream` and records each call into `trajectory` (messages, tools, turns)."""

    type = "recording"

    def __init__(self, upstream: Policy, trajectory: Trajectory):
        super().__init__({"type": "recording"})
        self.upstream, self.trajectory = upstream, trajectory
        self._lock = threading.Lock()

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                 **sampling: Any) -> Completion:
        started = time.monotonic()
        try:
            out = self.upstream.complete(messages, tools=tools, **sampling)
        except Exception as exc:  # the agent gets an HTTP 500; the trial becomes an `error`
            with self._lock:
                self.trajectory.turns.append({"index": len(self.trajectory.turns), "error": f"{type(exc).__name__}: {exc}",
                                              "latency_s": round(time.monotonic() - started, 4)})
            raise
        with self._lock:
            traj = self.trajectory
            index = len(traj.turns)
            traj.messages = [dict(m) for m in messages] + [dict(out.message)]
            traj.tools = list(tools or traj.tools)
            turn = {"index": index, "finish_reason": out.finish_reason, "usage": dict(out.usage),
                    "latency_s": round(time.monotonic() - started, 4), "request_messages": len(messages)}
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

    def __init__(self, path: str, policy: Policy, model_name: str):
        socketserver.UnixStreamServer.__init__(self, path, ChatHandler)
        self.setup_chat(policy, model_name)


class RecordingProxy:
    """Serve `policy` (recording into `trajectory`) on a Unix socket inside `workspace`."""

    def __init__(self, policy: Policy, trajectory: Trajectory, workspace: Path, model_name: str):
        self.folder = workspace / PROXY_DIR
        self.folder.mkdir(mode=0o777, exist_ok=True)
        os.chmod(self.folder, 0o777)
        self.socket_path = self.folder / "proxy.sock"
        self.recorder = RecordingPolicy(policy, trajectory)
        self.server = _UnixChatServer(str(self.socket_path), self.recorder, model_name)
        os.chmod(self.socket_path, 0o777)
        (self.folder / "forward.py").write_text(FORWARDER)
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True, name="clawgym-proxy")
        self._thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)
        for child in sorted(self.folder.glob("*")):
            child.unlink(missing_ok=True)
        try:
            self.folder.rmdir()
        except OSError:
            pass
