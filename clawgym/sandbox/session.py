"""A bubblewrap sandbox kept across the execs of one trial: one bwrap, an exec server as its pid 1.

Starting a sandbox (user, mount, pid, ipc, uts, cgroup and net namespaces, some thirty mounts, a
fresh /proc, and as root a move into a memory cgroup) costs far more than running a command, and
an agent runs many commands. So the local backend starts one bwrap per sandbox whose pid 1 is the
small server below (the sandbox's own `python3`, isolated mode, no site), and each exec becomes one
fork inside the namespaces that already exist.

What an exec sees is unchanged: the server runs one command at a time, alone in the pid namespace;
when the command exits it SIGKILLs every other process in the namespace (`kill(-1)` from pid 1:
background, setsid'd and nohup'd children never outlive their exec) and reaps them, then empties
the private /tmp, HOME and /dev/shm, so that only the workspace persists between execs. A timeout,
an output flood or close() SIGKILLs pid 1 (the whole namespace); the next exec starts a new one.
The host never runs or trusts anything the sandbox sends except the exit status it reads (a number).

Protocol on a Unix stream socket passed to bwrap: the host sends an 8-byte length with the
command's output pipe (and stdin pipe) attached (SCM_RIGHTS), then the request as NUL-separated
fields (cwd, argc, argv..., KEY=VALUE...); the server answers with a 4-byte signed exit code once
the command and its leftovers are gone. The server imports only built-in modules (it starts in a
few milliseconds).
"""

from __future__ import annotations

import os
import selectors
import socket
import struct
import time
from typing import Any, Callable

SERVER = r"""
import os, sys, _signal, _socket
ctl = _socket.socket(fileno=int(sys.argv[2]))
wipe = sys.argv[3:]
_signal.signal(_signal.SIGPIPE, _signal.SIG_DFL)
_signal.signal(_signal.SIGXFSZ, _signal.SIG_DFL)
def clear(top, dev=None):
    # empty a private tmpfs; never touch what is mounted below it (the workspace, binds)
    try:
        dev = os.lstat(top).st_dev if dev is None else dev
        names = os.listdir(top)
    except OSError:
        return
    for name in names:
        path = top + "/" + name
        try:
            st = os.lstat(path)
            if st.st_dev != dev:
                continue
            if st.st_mode & 0o170000 == 0o040000:
                os.chmod(path, 0o700)
                clear(path, dev)
                os.rmdir(path)
            else:
                os.unlink(path)
        except OSError:
            pass
def recv_exact(n):
    buf = b""
    while len(buf) < n:
        part = ctl.recv(n - len(buf))
        if not part:
            os._exit(0)
        buf += part
    return buf
while True:
    try:
        head, anc, _, _ = ctl.recvmsg(8, _socket.CMSG_SPACE(8))
    except OSError:
        os._exit(0)
    if not head:
        os._exit(0)
    fds = []
    for level, kind, data in anc:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds += [int.from_bytes(data[i:i + 4], sys.byteorder) for i in range(0, len(data) - len(data) % 4, 4)]
    if len(head) < 8:
        head += recv_exact(8 - len(head))
    fields = recv_exact(int.from_bytes(head, "big")).split(b"\0")
    cwd, argc = fields[0], int(fields[1])
    argv, env = fields[2:2 + argc], fields[2 + argc:]
    env = dict(kv.split(b"=", 1) for kv in env)
    out, inp = fds[0], (fds[1] if len(fds) > 1 else None)
    pid = os.fork()
    if pid == 0:
        try:
            null = os.open("/dev/null", os.O_RDONLY)
            os.dup2(inp if inp is not None else null, 0)
            os.dup2(out, 1)
            os.dup2(out, 2)
            os.closerange(3, 1 << 16)
            try:
                os.chdir(cwd)
            except OSError:
                os.write(2, b"sh: 1: cd: can't cd to " + cwd + b"\n")
                os._exit(1)
            try:
                os.execvpe(argv[0], argv, env)
            except FileNotFoundError:
                os.write(2, b"sh: 1: " + argv[0] + b": not found\n")
                os._exit(127)
            except OSError as e:
                os.write(2, b"sh: 1: " + argv[0] + b": " + str(e.strerror).encode() + b"\n")
                os._exit(126)
        finally:
            os._exit(127)
    os.close(out)
    if inp is not None:
        os.close(inp)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    code = os.waitstatus_to_exitcode(status)
    code = 128 - code if code < 0 else code
    try:
        os.kill(-1, 9)
    except OSError:
        pass
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
    for top in wipe:
        clear(top)
    ctl.sendall(code.to_bytes(4, "big", signed=True))
"""

PYTHON = "/usr/bin/python3"


BOOT = "import os,sys;exec(os.fdopen(int(sys.argv[1]),'rb').read())"


def server_command(code_fd: int, ctl_fd: int, wipe: list[str]) -> list[str]:
    """pid 1 of a kept sandbox: the exec server on the sandbox's python3 (isolated, no site), its
    code read from a pipe (`server_code_pipe`) so that its command line stays one short line."""
    return [PYTHON, "-I", "-S", "-c", BOOT, str(code_fd), str(ctl_fd), *wipe]


def server_code_pipe() -> int:
    """The read end of a pipe holding the server's code (it fits in the pipe's buffer)."""
    r, w = os.pipe()
    os.write(w, SERVER.encode())
    os.close(w)
    return r


def available() -> bool:
    """Whether the sandbox's system folders have the python3 the server needs."""
    return os.access(PYTHON, os.X_OK)


def send_request(
    ctl: socket.socket, argv: list[str], env: dict[str, str], cwd: str, out_w: int, in_r: int | None
) -> None:
    """Ask the server to run one command with its output (and input) on the given pipe ends."""
    fields = [cwd, str(len(argv)), *argv, *(f"{k}={v}" for k, v in env.items())]
    if any("\0" in f for f in fields):
        raise ValueError("a NUL byte in a command, its environment or its working folder")
    payload = "\0".join(fields).encode("utf-8", errors="surrogateescape")
    socket.send_fds(ctl, [struct.pack("!Q", len(payload))], [out_w] + ([in_r] if in_r is not None else []))
    ctl.sendall(payload)


def read_status(buffer: bytearray) -> int | None:
    """The exit code once its 4 bytes have arrived, else None."""
    return struct.unpack("!i", bytes(buffer[:4]))[0] if len(buffer) >= 4 else None


class Session:
    """The host side of one kept sandbox: its bwrap process, pid 1 and control socket.

    `run` executes one command (the caller holds `busy`); `kill` ends the whole namespace.
    """

    def __init__(self, proc: Any, ctl: socket.socket, child_pid: int) -> None:
        self.proc, self.ctl, self.child_pid = proc, ctl, child_pid
        self.busy, self.dead = False, False

    def kill(self) -> None:
        from .host import kill_pid1

        self.dead = True
        if not kill_pid1(self.child_pid, self.proc.pid):
            try:
                self.proc.kill()
            except OSError:
                pass

    def reap(self, grace: float) -> None:
        """After `kill`: wait for bwrap to go, close the socket."""
        from .host import wait_exit

        try:
            wait_exit(self.proc, grace)
        except Exception:  # noqa: BLE001 - subprocess.TimeoutExpired: force it
            self.proc.kill()
            self.proc.wait()
        self.ctl.close()

    def run(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: str,
        data: bytes | None,
        limit: float,
        cap: int,
        flood: int,
        killed: Callable[[], str | None],
    ) -> tuple[int | None, bytes, int, str | None]:
        """Run one command: (exit code or None when killed, output kept, bytes seen, kill reason).
        `killed()` reports a reason when close() ended the sandbox meanwhile."""
        out_r, out_w = os.pipe()
        in_r, in_w = os.pipe() if data else (None, None)
        try:
            send_request(self.ctl, argv, env, cwd, out_w, in_r)
        except OSError:
            self.dead = True
            for fd in (out_r, in_w):
                if fd is not None:
                    os.close(fd)
            return None, b"", 0, "lost"
        finally:
            os.close(out_w)
            if in_r is not None:
                os.close(in_r)
        start = time.monotonic()
        deadline, hard = start + max(limit, 0.0), None
        buf, status, seen, reason, code = bytearray(), bytearray(), 0, None, None
        pending = memoryview(data or b"")
        sel = selectors.DefaultSelector()
        os.set_blocking(out_r, False)
        sel.register(out_r, selectors.EVENT_READ)
        sel.register(self.ctl, selectors.EVENT_READ)
        if in_w is not None:
            os.set_blocking(in_w, False)
            sel.register(in_w, selectors.EVENT_WRITE)
        reads = {out_r, self.ctl.fileno()}
        try:
            while reads:
                now = time.monotonic()
                reason = reason or killed()
                if reason is None and now >= deadline:
                    reason = "timeout"
                if reason is not None and hard is None:
                    self.kill()
                    hard = now + 5.0
                if hard is not None and now >= hard:
                    break
                for key, _ in sel.select(max((hard or deadline) - now, 0.0) if reason is None else 0.05):
                    if key.fd == in_w:
                        try:
                            pending = pending[os.write(in_w, pending[:65536]) :]
                        except BlockingIOError:
                            continue
                        except OSError:
                            pending = pending[:0]
                        if not pending:
                            sel.unregister(in_w)
                            os.close(in_w)
                            in_w = None
                        continue
                    try:
                        chunk = os.read(key.fd, 1 << 18)
                    except BlockingIOError:
                        continue
                    except OSError:
                        chunk = b""
                    if key.fd != out_r:
                        status += chunk
                        if not chunk:
                            self.dead = True  # pid 1 is gone
                    else:
                        seen += len(chunk)
                        buf += chunk[: max(cap - len(buf), 0)]
                        if seen > flood and reason is None:
                            reason = "output limit"
                    if not chunk or (key.fd != out_r and read_status(status) is not None):
                        sel.unregister(key.fd)
                        reads.discard(key.fd)
        except BaseException:
            self.kill()
            raise
        finally:
            sel.close()
            os.close(out_r)
            if in_w is not None:
                os.close(in_w)
        code = read_status(status)
        if code is None and reason is None:
            reason = "lost"
        return (None if reason else code), bytes(buf), seen, reason
