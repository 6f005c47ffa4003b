"""The sandbox contract: an isolated environment over one host workspace folder.

Every backend (``local`` bubblewrap, later others) implements :class:`Sandbox` and must pass the
shared suite in :mod:`clawgym.sandbox.conformance`. Backends are plugins of kind ``"sandbox"``;
:func:`create_sandbox` builds one from a spec such as ``{"type": "local"}``.
"""

from __future__ import annotations

import functools
import inspect
import posixpath
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import ClawgymError, did_you_mean

DEFAULT_MOUNT = "/root/.openclaw/workspace"
PRIVATE_MOUNT = "/run/clawgym"  # a host-owned folder shown read-only: sockets, helpers, grading files
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits applied to everything a sandbox runs."""

    wall_seconds: float = 600.0  # default timeout of one exec
    memory_mb: int = 2048  # address space / memory cap for the process tree
    pids: int = 256  # max processes/threads in the sandbox at once
    output_bytes: int = 1_000_000  # captured output cap per exec (more is dropped, flooders killed)
    file_size_mb: int = 256  # largest file a process may write (RLIMIT_FSIZE)
    cpu_seconds: float | None = None  # CPU time each process may use (RLIMIT_CPU); None: only the wall time

    def __post_init__(self) -> None:
        for name in ("wall_seconds", "memory_mb", "pids", "output_bytes", "file_size_mb"):
            if not getattr(self, name) > 0:
                raise ClawgymError(f"sandbox limit {name} must be positive, got {getattr(self, name)!r}")
        if self.cpu_seconds is not None and not self.cpu_seconds >= 1:
            raise ClawgymError(f"sandbox limit cpu_seconds must be at least 1, got {self.cpu_seconds!r}")


@dataclass
class ExecResult:
    """Outcome of one command run in a sandbox."""

    exit_code: int | None  # None when killed
    output: str  # stdout and stderr interleaved, utf-8 with errors="replace"
    timed_out: bool = False
    truncated: bool = False  # output went past output_bytes
    duration_s: float = 0.0
    killed_reason: str | None = None  # "timeout", "output limit", "closed"

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


class LiveExec:
    """One exec in flight, as a backend's `close()` sees it: `done` is set by the thread running it.

    That thread may unwind without setting it (a KeyboardInterrupt raised between two of its steps),
    so `close()` waits through `wait_ended`, which stops waiting for an owner that is gone."""

    def __init__(self) -> None:
        self.owner = threading.current_thread()
        self.done = threading.Event()

    def wait_ended(self, timeout: float) -> bool:
        """Wait until the exec has ended or its owner can no longer end it; True when it ended."""
        deadline = time.monotonic() + timeout
        while not self.done.wait(min(0.05, max(deadline - time.monotonic(), 0.0))):
            if self.owner is threading.current_thread() or not self.owner.is_alive():
                return False  # the owner unwound (or is the caller itself): nobody will set `done`
            if time.monotonic() >= deadline:
                return False
        return True


def home_for(mount: str) -> str:
    """HOME inside the sandbox: the folder holding ``.openclaw`` in `mount`, else ``/root``."""
    parts = mount.split("/")
    if ".openclaw" in parts:
        return "/".join(parts[: parts.index(".openclaw")]) or "/"
    return "/root"


def check_mount(mount: str) -> str:
    """Validate and normalise the in-sandbox workspace path."""
    if not isinstance(mount, str) or not mount.startswith("/"):
        raise ClawgymError(f"sandbox mount must be an absolute path, got {mount!r}")
    norm = posixpath.normpath(mount)
    top = norm.split("/")[1]
    if norm == "/" or top in {
        "usr",
        "bin",
        "sbin",
        "lib",
        "lib32",
        "lib64",
        "libx32",
        "etc",
        "proc",
        "dev",
        "sys",
        "run",
    }:
        raise ClawgymError(
            f"sandbox mount {mount!r} is not allowed",
            hint="use a folder such as /root/.openclaw/workspace or /workspace",
        )
    return norm


class Sandbox(ABC):
    """A live isolated environment over one workspace folder on the host.

    The workspace is the only writable host folder and is shown inside at `mount`. Commands see
    HOME (parent of ``.openclaw``), PATH, LANG=C.UTF-8 and TZ=UTC and nothing of the host
    environment. Use as a context manager or call :meth:`close`.
    """

    workspace: Path
    mount: str
    network: bool
    limits: SandboxLimits
    private_dir: Path | None = None  # host side of PRIVATE_MOUNT, when create_sandbox was given one
    # Exactly the files the workspace holds ({relative path: bytes}) until something runs in it, when
    # the caller knows them (the runner, right after writing a task's files): an agent may take its
    # start-up reads (the claw system prompt) from here instead of the disk.
    initial_files: Mapping[str, bytes] | None = None

    @abstractmethod
    def exec(
        self,
        command: str | Sequence[str],
        *,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        workdir: str | None = None,
        stdin: str | bytes | None = None,
    ) -> ExecResult:
        """Run `command` (a string goes through ``bash -c``, falling back to ``sh``).

        `timeout` defaults to ``limits.wall_seconds``; a relative `workdir` resolves against
        `mount`, the default working folder is `mount`.
        """

    @abstractmethod
    def close(self) -> None:
        """Kill every process still alive and release resources. Idempotent."""

    def prepare(self) -> None:
        """Take the workspace over now rather than at the first exec (a no-op where nothing is taken
        over): after it, the workspace folder's owner is the one the sandbox's commands run as, so a
        file the host adds for them (a pipe) can be given that owner."""

    def default_env(self) -> dict[str, str]:
        return {"HOME": home_for(self.mount), "PATH": SANDBOX_PATH, "LANG": "C.UTF-8", "TZ": "UTC"}

    def command_env(
        self, command: str | Sequence[str], env: Mapping[str, str] | None, shell: str = "/bin/bash"
    ) -> tuple[list[str], dict[str, str]]:
        """The argv (a string runs with `shell -c`) and the full environment of one exec, checked."""
        argv = [shell, "-c", command] if isinstance(command, str) else [str(a) for a in command]
        if not argv:
            raise ClawgymError("empty command")
        run_env = self.default_env()
        for key, value in (env or {}).items():
            if not key or "=" in key or "\0" in key or "\0" in str(value):
                raise ClawgymError(f"bad environment variable name or value: {key!r}")
            run_env[key] = str(value)
        return argv, run_env

    def resolve_workdir(self, workdir: str | None) -> str:
        if not workdir:
            return self.mount
        return posixpath.normpath(posixpath.join(self.mount, workdir))

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        """Close a sandbox nobody closed (backends set `_closed` once they hold resources)."""
        if not getattr(self, "_closed", True):
            try:
                self.close()
            except Exception:  # noqa: BLE001 - best effort at garbage collection
                pass


@functools.lru_cache(maxsize=64)
def _parameters(cls: type) -> Mapping[str, inspect.Parameter]:
    """A backend class's constructor parameters (looked up once per class, not per sandbox)."""
    return inspect.signature(cls).parameters


def create_sandbox(
    spec: Mapping[str, Any] | None,
    workspace: Path,
    *,
    limits: SandboxLimits | None = None,
    network: bool = False,
    mount: str = DEFAULT_MOUNT,
    private_dir: Path | None = None,
) -> Sandbox:
    """Build a sandbox from `spec` (``{"type": "local", ...options}``; None means local).

    `private_dir` is a host folder the sandbox sees read-only at PRIVATE_MOUNT and can never write:
    where the host puts what the sandbox may use but must not change (the recording proxy's
    socket, a grader and its files). It must be world-searchable, its contents world-readable.
    """
    from .. import registry

    options = dict(spec or {})
    kind = str(options.pop("type", "local"))
    if private_dir is not None:
        options["ro_binds"] = [*(options.get("ro_binds") or []), [str(private_dir), PRIVATE_MOUNT]]
    cls = registry.get("sandbox", kind)
    params = _parameters(cls)
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        known = [n for n in params if n not in {"workspace", "limits", "network", "mount"}]
        for key in options:
            if key not in params:
                raise ClawgymError(
                    f"unknown option {key!r} for sandbox type {kind!r}",
                    key=f"sandbox.{key}",
                    hint=did_you_mean(key, known) or f"options: {', '.join(known) or 'none'}",
                )
    sandbox = cls(Path(workspace), limits=limits, network=network, mount=mount, **options)
    sandbox.private_dir = private_dir
    return sandbox
