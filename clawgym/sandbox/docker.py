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

The ``docker`` package is imported lazily, so registering this backend costs nothing.
"""

from __future__ import annotations

import io
import logging
import os
import posixpath
import select
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..files import safefs
from ..errors import ClawgymError, InfraError, PrerequisiteError
from ..registry import register
from .base import DEFAULT_MOUNT, ExecResult, Sandbox, SandboxLimits, check_mount, home_for

if TYPE_CHECKING:
    import tarfile

IMAGE = "clawgym/base:bookworm"
LABEL = "clawgym.sandbox"
BUILD_HINT = "build it with scripts/build-image.sh"
DAEMON_HINT = "install and start Docker (apt-get install docker.io; dockerd &), or use the local sandbox"
KILL_GRACE = 5.0
# pid 1: reaps orphans (bash's SIGCHLD handler waits for any child) and survives `kill -9 -1`.
KEEPER = ["/bin/bash", "-c", "trap '' TERM INT HUP; while :; do sleep 3600 & wait $!; done"]
INIT = ["/bin/sh", "-c", 'cd -- "$1" || exit 1; shift; "$@"; exit $?', "sh"]
log = logging.getLogger(__name__)
_client_lock = threading.Lock()
_client: Any = None


def docker_client() -> Any:
    """The shared docker SDK client (imported and connected on first use)."""
    global _client
    with _client_lock:
        if _client is None:
            try:
                import docker  # noqa: PLC0415 - optional, heavy: only when a docker sandbox is made
            except ImportError:
                raise PrerequisiteError("the docker Python package is not installed",
                                        hint="pip install docker") from None
            try:
                client = docker.from_env(timeout=120)
                client.ping()
            except Exception as exc:  # noqa: BLE001 - any failure means no usable daemon
                raise PrerequisiteError(f"cannot reach a Docker daemon: {exc}", hint=DAEMON_HINT) from None
            _client = client
        return _client


def release_client() -> None:
    """Close the shared client's connections (the end of a run); the next use reconnects."""
    global _client
    with _client_lock:
        if _client is not None:
            try:
                _client.close()
            except Exception:  # noqa: BLE001 - best effort
                pass
            _client = None


def docker_problem() -> str | None:
    """Why the docker sandbox cannot run here (no SDK, no daemon, no base image), or None."""
    try:
        client = docker_client()
        import docker.errors  # noqa: PLC0415
    except PrerequisiteError as exc:
        return str(exc)
    try:
        client.images.get(IMAGE)
    except docker.errors.ImageNotFound:
        return f"image {IMAGE} is missing: build it with scripts/build-image.sh"
    return None


class _Run:
    def __init__(self) -> None:
        self.reason: str | None = None
        self.killer: threading.Thread | None = None
        self.done = threading.Event()


@register("sandbox", "docker")
class DockerSandbox(Sandbox):
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

    def __init__(self, workspace: Path | str, *, limits: SandboxLimits | None = None, network: bool = False,
                 mount: str = DEFAULT_MOUNT, image: str = IMAGE, cpus: float | None = None,
                 sync: str = "exec", network_mode: str = "bridge", ro_binds: Sequence[str | Sequence[str]] = (),
                 rw_binds: Sequence[str | Sequence[str]] = (), address_space_mb: int | None = None) -> None:
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
                self.image, KEEPER, detach=True, labels={LABEL: "1"}, hostname="sandbox",
                network_mode=network_mode if self.network else "none", read_only=True, tmpfs=tmpfs,
                mounts=[Mount(target=self.mount, source=None, type="volume"),
                        *(Mount(target=inside, source=host, type="bind", read_only=ro)
                          for host, inside, ro in self._binds)],
                mem_limit=f"{mib}m", memswap_limit=f"{mib}m", pids_limit=self.limits.pids,
                nano_cpus=int(float(cpus) * 1e9) if cpus else None, cap_drop=["ALL"],
                security_opt=["no-new-privileges"], environment=self.default_env(), working_dir="/",
                ulimits=[Ulimit(name="fsize", soft=fsize, hard=fsize), Ulimit(name="core", soft=0, hard=0),
                         *([Ulimit(name="cpu", soft=int(self.limits.cpu_seconds), hard=int(self.limits.cpu_seconds))]
                           if self.limits.cpu_seconds else [])],
                user="0:0")
        except self._errors.DockerException as exc:
            raise InfraError(f"cannot start a docker sandbox: {exc}") from None

    # ------------------------------------------------------------------ sync
    def _push(self, clear: bool = True) -> None:
        """Make the container's mount mirror the host workspace."""
        import tarfile  # noqa: PLC0415 - keeps registering this backend light
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for path in sorted(self.workspace.iterdir()):
                tar.add(path, arcname=path.name, filter=_push_filter)
        if clear:
            res = self._api.exec_create(self._container.id, ["find", self.mount, "-mindepth", "1", "-delete"])
            self._api.exec_start(res["Id"])
        if not self._api.put_archive(self._container.id, self.mount, buf.getvalue()):
            raise InfraError("cannot copy the workspace into the docker sandbox")
        self._fingerprint = _fingerprint(self.workspace)

    def _pull(self) -> None:
        """Replace the host workspace's contents with the container's mount, safely and bounded.

        The archive is streamed and extracted member by member within the grading limits
        (`safefs.GRADING_LIMITS`: entries, depth, apparent size); past them the pull stops and
        `workspace_problem` says why, so the verifier fails the grade instead of the host
        filling up. Links never lead out of the workspace.
        """
        import tarfile  # noqa: PLC0415
        try:
            stream, _ = self._api.get_archive(self._container.id, self.mount + "/.")
        except self._errors.DockerException as exc:
            raise InfraError(f"cannot copy the workspace out of the docker sandbox: {exc}") from None
        limits = safefs.GRADING_LIMITS
        # staged beside the workspace (same file system): moving the result in is a rename
        with tempfile.TemporaryDirectory(prefix="clawgym-docker-", dir=self.workspace.parent) as tmp:
            dest = os.path.realpath(tmp)
            count, size = 0, 0
            try:
                with tarfile.open(fileobj=_Chunks(stream), mode="r|") as tar:
                    tar.errorlevel = 0  # a member that cannot be written (too long a path) is skipped
                    for member in tar:
                        count += 1
                        size += member.size if member.isfile() else 0
                        if count > limits.entries or size > limits.apparent_bytes:
                            what = (f"more than {limits.entries:,} files and folders" if count > limits.entries
                                    else f"files claim more than {limits.apparent_bytes >> 20} MiB (apparent size)")
                            self.workspace_problem = f"the workspace is too large to copy out and grade: {what}"
                            break
                        name = member.name.split("/", 1)[1] if "/" in member.name else ""
                        if not name or name == ".":
                            continue
                        if name.count("/") >= limits.depth:
                            self.workspace_problem = f"the workspace has folders nested more than {limits.depth} deep"
                            continue
                        member = member.replace(name=name, deep=False)
                        if member.islnk():
                            member = member.replace(linkname=member.linkname.split("/", 1)[-1], deep=False)
                        try:
                            tar.extract(tarfile.data_filter(member, dest), dest, filter="fully_trusted")
                        except tarfile.FilterError as exc:
                            log.warning("not copied out of the docker sandbox: %s", exc)
            except (tarfile.TarError, OSError) as exc:
                log.warning("docker workspace archive ends early: %s", exc)
            finally:
                close = getattr(stream, "close", None)
                if close is not None:
                    close()
            for entry in os.scandir(self.workspace):
                safefs.remove_tree(entry.path)
            for name in os.listdir(dest):
                os.rename(os.path.join(dest, name), self.workspace / name)
        self._fingerprint = _fingerprint(self.workspace)

    # ------------------------------------------------------------------ exec
    def exec(self, command: str | Sequence[str], *, timeout: float | None = None,
             env: Mapping[str, str] | None = None, workdir: str | None = None,
             stdin: str | bytes | None = None) -> ExecResult:
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
            if self._sync == "exec" and _fingerprint(self.workspace) != self._fingerprint:
                self._push()
            try:
                exec_id = self._api.exec_create(self._container.id, [*INIT, self.resolve_workdir(workdir), *argv],
                                                stdin=True, environment=run_env, workdir="/", user="0:0")["Id"]
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
        return ExecResult(exit_code=code, output=bytes(buf).decode("utf-8", errors="replace"),
                          timed_out=run.reason == "timeout", truncated=seen > self.limits.output_bytes,
                          duration_s=time.monotonic() - start, killed_reason=run.reason)

    def _collect(self, run: _Run, sock: socket.socket, data: bytes, start: float,
                 limit: float) -> tuple[bytearray, int]:
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
                        pending = pending[sock.send(pending[:65536]):]
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
                    payload = frames[8:8 + size]
                    del frames[:8 + size]
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
                run.done.wait(KILL_GRACE * 2)
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


class _Chunks(io.RawIOBase):
    """A readable file over the docker SDK's stream of byte chunks (for tarfile's stream mode)."""

    def __init__(self, chunks: Any) -> None:
        self._chunks, self._buf = iter(chunks), b""

    def readable(self) -> bool:
        return True

    def readinto(self, out: Any) -> int:
        while not self._buf:
            try:
                self._buf = next(self._chunks)
            except StopIteration:
                return 0
        n = min(len(out), len(self._buf))
        out[:n], self._buf = self._buf[:n], self._buf[n:]
        return n


def _push_filter(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    if not (info.isfile() or info.isdir() or info.issym() or info.islnk()):
        return None  # devices, fifos: never copied in
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def _fingerprint(root: Path) -> frozenset:
    """What changes when the host edits the workspace: every entry's path, type, size, mtime, mode."""
    seen = []
    try:
        for e in safefs.walk(root, limits=safefs.GRADING_LIMITS):
            link = os.readlink(e.name, dir_fd=e.dir_fd) if e.kind == "link" else None
            seen.append((e.rel, e.st.st_mode, e.st.st_size, e.st.st_mtime_ns, e.st.st_ino, link))
    except safefs.TreeTooLarge:
        seen.append(("", "too large"))  # the verifier refuses such a workspace anyway
    return frozenset(seen)


def _bind_pair(spec: str | Sequence[str], what: str) -> tuple[str, str]:
    """("HOST", "INSIDE") from "PATH" or ["HOST", "INSIDE"]; both absolute, the host one existing."""
    host, inside = (spec, spec) if isinstance(spec, str) else (spec[0], spec[1])
    if not os.path.isabs(host) or not os.path.isabs(inside) or not os.path.exists(host):
        raise ClawgymError(f"{what} {spec!r} needs an existing absolute host path and an absolute path inside",
                           hint="write it as '/opt/data' or ['/opt/data', '/data']")
    return os.path.realpath(host), posixpath.normpath(inside)
