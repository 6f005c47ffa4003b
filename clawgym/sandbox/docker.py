"""Docker sandbox backend: one container per sandbox, through the ``docker`` SDK.

The container runs the image ``clawgym/base:bookworm`` (made by ``scripts/build-image.sh``; no
registry is needed) with a read-only root, private tmpfs /tmp and HOME, an anonymous volume at
`mount`, every capability dropped, ``no-new-privileges``, ``network_mode="none"`` unless the task
allows the network (then ``"bridge"``: its own network namespace and loopback, outbound through the
daemon's NAT, never the host's loopback services or abstract Unix sockets), and the limits: memory
(``mem_limit``, no swap), processes (``pids_limit``), file size (``RLIMIT_FSIZE``) and optionally
CPUs (``nano_cpus``). Its pid 1 is a small bash loop that reaps orphans and keeps the container
up; each command is a ``docker exec``.

The sandbox's `workspace` stays a host folder. It is copied in when the sandbox starts and the host
folder is the source of truth between commands: with ``sync="exec"`` (default) host changes are
copied in before a command and the container's state is copied out after it, so the host always
sees what the commands did; with ``sync="close"`` the state is copied out once, on ``close()``,
which is cheaper for big workspaces. Copying out never follows links: symlinks leading outside the
workspace, device files and other special files are dropped, and files become the host user's.

A timeout, an output flood or ``close()`` kills the container's whole process tree by restarting
the container (``close()`` removes it); the workspace volume survives a restart, /tmp does not.
Background processes otherwise live on between execs until close. A kill therefore also ends
commands running concurrently in the same sandbox (they report exit code 137).

The ``docker`` package is imported lazily, so registering this backend costs nothing. The shared
SDK client is in `docker_client.py`, the workspace copies in and out in `docker_sync.py`.
"""

from __future__ import annotations

import logging
import os
import posixpath
import select
import socket
import threading
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import ClawgymError, InfraError, PrerequisiteError
from ..registry import register
from .base import DEFAULT_MOUNT, ExecResult, LiveExec, Sandbox, SandboxLimits, check_mount, home_for
from .docker_client import IMAGE, docker_client, docker_problem, release_client  # noqa: F401 - imported from here
from .docker_sync import WorkspaceSync, fingerprint

LABEL = "clawgym.sandbox"
BUILD_HINT = "build it with scripts/build-image.sh"
KILL_GRACE = 5.0
# pid 1: reaps orphans (bash's SIGCHLD handler waits for any child) and survives `kill -9 -1`.
KEEPER = ["/bin/bash", "-c", "trap '' TERM INT HUP; while :; do sleep 3600 & wait $!; done"]
INIT = ["/bin/sh", "-c", 'cd -- "$1" || exit 1; shift; "$@"; exit $?', "sh"]
log = logging.getLogger(__name__)


class _Run(LiveExec):
    def __init__(self) -> None:
        super().__init__()
        self.reason: str | None = None
        self.killer: threading.Thread | None = None


@register("sandbox", "docker")
class DockerSandbox(WorkspaceSync, Sandbox):
    """Docker sandbox: a container per sandbox with a read-only root, no capabilities and no network
    unless the task allows it; time, memory, processes, output and file size are capped.

    Options: `image` (default clawgym/base:bookworm), `cpus` (CPU cap, e.g. 1.5; default none),
    `sync` ("exec": the host workspace mirrors the container after every command, the default;
    "close": copied out only when the sandbox closes), `network_mode` (used when the network is
    allowed; default "bridge": a private namespace and loopback, outbound access through NAT, other
    containers on the same bridge reachable; any Docker network name works; "host" shares the host's
    network namespace, its loopback services and abstract Unix sockets, so only ask for it explicitly),
    `ro_binds` and `rw_binds` (extra host folders bind-mounted read-only or writable: "PATH" or
    ["HOST", "INSIDE"]; the daemon must see the same host paths, and a writable one must be writable
    by uid 0 without capabilities, e.g. mode 0777), `address_space_mb` (accepted for parity with the
    local backend and ignored: a container's memory is capped by its cgroup, not by RLIMIT_AS).
    """

    def __init__(
        self,
        workspace: Path | str,
        *,
        limits: SandboxLimits | None = None,
        network: bool = False,
        mount: str = DEFAULT_MOUNT,
        image: str = IMAGE,
        cpus: float | None = None,
        sync: str = "exec",
        network_mode: str = "bridge",
        ro_binds: Sequence[str | Sequence[str]] = (),
        rw_binds: Sequence[str | Sequence[str]] = (),
        address_space_mb: int | None = None,
    ) -> None:
        self.workspace, self.limits = Path(workspace).resolve(), limits or SandboxLimits()
        self.network, self.mount = bool(network), check_mount(mount)
        if sync not in ("exec", "close"):
            raise ClawgymError(f"sandbox option sync must be 'exec' or 'close', got {sync!r}")
        if cpus is not None and not float(cpus) > 0:
            raise ClawgymError(f"sandbox option cpus must be positive, got {cpus!r}")
        if not self.workspace.is_dir():
            raise ClawgymError(f"sandbox workspace {self.workspace} is not a folder")
        self._sync, self.image = sync, image
        self._binds = [(*_bind_pair(b, "read-only bind"), True) for b in ro_binds]
        self._binds += [(*_bind_pair(b, "writable bind"), False) for b in rw_binds]
        self._closed, self._lock, self._live = False, threading.Lock(), set()
        self._kill_lock = threading.Lock()
        self._container: Any = None
        self._fingerprint: Any = None
        self.workspace_problem: str | None = None  # set when the workspace could not be copied out whole
        self._client = docker_client()
        self._api = self._client.api
        import docker.errors  # noqa: PLC0415

        self._errors = docker.errors
        try:
            self._client.images.get(image)
        except docker.errors.ImageNotFound:
            raise PrerequisiteError(f"docker image {image} is missing", hint=BUILD_HINT) from None
        try:
            self._start(cpus, network_mode)
            self._push(clear=False)
        except BaseException:
            self.close()
            raise

    # ----------------------------------------------------------------- setup
    def _start(self, cpus: float | None, network_mode: str) -> None:
        from docker.types import Mount, Ulimit  # noqa: PLC0415

        mib, home = self.limits.memory_mb, home_for(self.mount)
        tmpfs = {"/tmp": f"rw,nosuid,nodev,size={mib}m,mode=1777"}
        if home not in ("/", "/tmp"):
            tmpfs[home] = f"rw,nosuid,nodev,size={mib}m,mode=0700"
        fsize = self.limits.file_size_mb << 20
        try:
            self._container = self._client.containers.run(
                self.image,
                KEEPER,
                detach=True,
                labels={LABEL: "1"},
                hostname="sandbox",
                network_mode=network_mode if self.network else "none",
                read_only=True,
                tmpfs=tmpfs,
                mounts=[
                    Mount(target=self.mount, source=None, type="volume"),
                    *(Mount(target=inside, source=host, type="bind", read_only=ro) for host, inside, ro in self._binds),
                ],
                mem_limit=f"{mib}m",
                memswap_limit=f"{mib}m",
                pids_limit=self.limits.pids,
                nano_cpus=int(float(cpus) * 1e9) if cpus else None,
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                environment=self.default_env(),
                working_dir="/",
                ulimits=[
                    Ulimit(name="fsize", soft=fsize, hard=fsize),
                    Ulimit(name="core", soft=0, hard=0),
                    *(
                        [Ulimit(name="cpu", soft=int(self.limits.cpu_seconds), hard=int(self.limits.cpu_seconds))]
                        if self.limits.cpu_seconds
                        else []
                    ),
                ],
                user="0:0",
            )
        except self._errors.DockerException as exc:
            raise InfraError(f"cannot start a docker sandbox: {exc}") from None

    # ------------------------------------------------------------------ exec
    def exec(
        self,
        command: str | Sequence[str],
        *,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        workdir: str | None = None,
        stdin: str | bytes | None = None,
    ) -> ExecResult:
        argv, run_env = self.command_env(command, env)
        data = stdin.encode() if isinstance(stdin, str) else (stdin or b"")
        limit = self.limits.wall_seconds if timeout is None else float(timeout)
        if self._closed:
            raise ClawgymError("sandbox is closed")
        run = _Run()
        with self._lock:
            self._live.add(run)
        start = time.monotonic()
        try:
            if self._sync == "exec" and fingerprint(self.workspace) != self._fingerprint:
                self._push()
            try:
                exec_id = self._api.exec_create(
                    self._container.id,
                    [*INIT, self.resolve_workdir(workdir), *argv],
                    stdin=True,
                    environment=run_env,
                    workdir="/",
                    user="0:0",
                )["Id"]
                sock = self._api.exec_start(exec_id, socket=True)
            except self._errors.DockerException as exc:
                if self._closed or run.reason:
                    return ExecResult(None, "", duration_s=time.monotonic() - start, killed_reason="closed")
                raise InfraError(f"cannot run a command in the docker sandbox: {exc}") from None
            raw = getattr(sock, "_sock", sock)
            try:
                buf, seen = self._collect(run, raw, data, start, limit)
            finally:
                if sock is not raw:
                    sock.close()  # the socket's fd closes only once its file wrappers are closed
                raw.close()
                if run.killer is not None:  # the next command must find the restarted container
                    run.killer.join(60)
            code = None
            if run.reason is None:
                code = self._api.exec_inspect(exec_id).get("ExitCode")
            if self._sync == "exec" and not self._closed:
                self._pull()
        finally:
            with self._lock:
                self._live.discard(run)
            run.done.set()
        return ExecResult(
            exit_code=code,
            output=bytes(buf).decode("utf-8", errors="replace"),
            timed_out=run.reason == "timeout",
            truncated=seen > self.limits.output_bytes,
            duration_s=time.monotonic() - start,
            killed_reason=run.reason,
        )

    def _collect(
        self, run: _Run, sock: socket.socket, data: bytes, start: float, limit: float
    ) -> tuple[bytearray, int]:
        cap = self.limits.output_bytes
        flood = cap + max(cap, 4 << 20)
        buf, frames, seen, pending = bytearray(), bytearray(), 0, memoryview(data)
        deadline, hard_deadline, writing = start + max(limit, 0.0), None, True
        sock.setblocking(False)
        if not pending:
            sock.shutdown(socket.SHUT_WR)
            writing = False
        try:
            while True:
                now = time.monotonic()
                if run.reason is None and now >= deadline:
                    run.reason = "timeout"
                    self._kill_soon(run)
                if run.reason is not None and hard_deadline is None:
                    hard_deadline = now + KILL_GRACE
                if hard_deadline is not None and now >= hard_deadline:
                    break
                wait = max((hard_deadline or deadline) - now, 0.0)
                if run.reason is not None:
                    wait = min(wait, 0.2)  # close() may have killed us: look again soon
                readable, writable, _ = select.select([sock], [sock] if writing else [], [], wait)
                if writable:
                    try:
                        pending = pending[sock.send(pending[:65536]) :]
                    except BlockingIOError:
                        pass
                    except OSError:
                        pending = pending[:0]
                    if not pending:
                        writing = False
                        try:
                            sock.shutdown(socket.SHUT_WR)
                        except OSError:
                            pass
                if not readable:
                    continue
                try:
                    chunk = sock.recv(1 << 18)
                except BlockingIOError:
                    continue
                except OSError:
                    break
                if not chunk:
                    break
                frames += chunk
                while len(frames) >= 8:  # multiplexed stream: 8-byte header, then the payload
                    size = int.from_bytes(frames[4:8], "big")
                    if len(frames) < 8 + size:
                        break
                    payload = frames[8 : 8 + size]
                    del frames[: 8 + size]
                    seen += len(payload)
                    buf += payload[: max(cap - len(buf), 0)]
                if seen > flood and run.reason is None:
                    run.reason = "output limit"
                    self._kill_soon(run)
        except BaseException:
            run.reason = run.reason or "interrupted"
            self._kill_soon(run)
            raise
        return buf, seen

    def _kill_soon(self, run: _Run) -> None:
        """Kill everything from another thread: the daemon waits for buffered output to be read."""
        run.killer = threading.Thread(target=self._kill_all, daemon=True)
        run.killer.start()

    def _kill_all(self) -> None:
        """Kill every process in the sandbox: restart the container (the workspace volume stays)."""
        with self._kill_lock:
            if self._closed or self._container is None:
                return
            try:
                self._api.restart(self._container.id, timeout=0)
            except self._errors.DockerException as exc:
                log.warning("cannot restart docker sandbox %s: %s", self._container.short_id, exc)

    # ----------------------------------------------------------------- close
    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed, runs = True, list(self._live)
        container, self._container = self._container, None
        if container is None:
            return
        try:
            for run in runs:
                run.reason = run.reason or "closed"
            try:
                container.kill()
            except self._errors.DockerException:
                pass  # already stopped
            for run in runs:
                run.wait_ended(KILL_GRACE * 2)
            self._container = container
            try:
                self._pull()
            finally:
                self._container = None
        finally:
            try:
                container.remove(force=True, v=True)
            except self._errors.NotFound:
                pass
            except self._errors.DockerException as exc:
                log.warning("cannot remove docker sandbox %s: %s", container.short_id, exc)

    def __repr__(self) -> str:
        return f"DockerSandbox({str(self.workspace)!r}, image={self.image!r}, mount={self.mount!r})"


def _bind_pair(spec: str | Sequence[str], what: str) -> tuple[str, str]:
    """("HOST", "INSIDE") from "PATH" or ["HOST", "INSIDE"]; both absolute, the host one existing."""
    host, inside = (spec, spec) if isinstance(spec, str) else (spec[0], spec[1])
    if not os.path.isabs(host) or not os.path.isabs(inside) or not os.path.exists(host):
        raise ClawgymError(
            f"{what} {spec!r} needs an existing absolute host path and an absolute path inside",
            hint="write it as '/opt/data' or ['/opt/data', '/data']",
        )
    return os.path.realpath(host), posixpath.normpath(inside)
