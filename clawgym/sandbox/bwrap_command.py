"""The bwrap command line of a local sandbox (`bubblewrap.py`), built once at its first exec: the
namespaces, the read-only system folders and minimal /etc (one prepared folder, `etc_view.py`), the
size-capped tmpfs, the workspace and extra binds, and the limits and uid that a small launcher
(`launcher.py`; else util-linux ``setpriv``/``prlimit``) applies in front of bwrap (so spawning
never forks this Python process). Folders the sandbox uid cannot walk down to are
bridged onto a free mount point by a ``preexec_fn``, which also applies limits and uid where those
tools are missing. A mixin of `LocalSandbox`, which holds the state.
"""

from __future__ import annotations

import ctypes
import functools
import os
import resource
import shutil
from pathlib import Path
from typing import Any, Sequence

from ..errors import ClawgymError, PrerequisiteError
from .base import SandboxLimits, home_for
from .host import searchable
from .etc_view import etc_folder, host_entries
from .launcher import launch_args, launcher
from .network import RESOLV_CONF

SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
ETC_ENTRIES = (
    "ld.so.cache",
    "alternatives",
    "nsswitch.conf",
    "protocols",
    "services",
    "mime.types",
    "os-release",
    "ssl/certs",
    "ssl/openssl.cnf",
    "pki/tls/certs",
    "pki/tls/openssl.cnf",
    "pki/ca-trust/extracted",
    "crypto-policies/back-ends",
)
BRIDGES = ("/mnt", "/media", "/srv", "/opt", "/home")  # mount points for the root-only workspace bridge


class BwrapCommand:
    """The bwrap command line of `LocalSandbox` (its attributes are set up there)."""

    workspace: Path
    limits: SandboxLimits
    network: bool
    mount: str
    _bwrap: str
    _root: bool
    _uid: int
    _shell: str
    _ro_binds: list[tuple[str, str]]
    _rw_binds: list[tuple[str, str]]
    _bridges: dict[str, str]
    _address_space_mb: int
    _libc: Any
    _cgroup: Path | None

    def _plan_bridges(self) -> None:
        """bwrap resolves host paths as the sandbox's uid: folders it cannot walk down to (below a
        private temp folder, say) are bind-mounted onto a free top-level mount point first, in a
        private mount namespace of the spawning child (see `_preexec`)."""
        points = [b for b in BRIDGES if os.path.isdir(b) and not os.path.islink(b)]
        wanted = [str(self.workspace)] if not searchable(self.workspace, self._uid) else []
        wanted += [
            host
            for host, _ in [*self._ro_binds, *self._rw_binds]
            if host not in wanted and not searchable(Path(host) / "x", self._uid)
        ]
        if not wanted:
            return
        if len(wanted) > len(points):
            raise PrerequisiteError(
                f"the sandbox uid cannot reach {wanted[len(points)]}",
                hint="put the workspace and binds below world-searchable folders (mode o+x)",
            )
        self._bridges = dict(zip(wanted, points))
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_void_p]

    def _build_args(self, feats: frozenset[str]) -> None:
        home, mib = home_for(self.mount), 1 << 20
        size = ["--size", str(self.limits.memory_mb * mib)] if "--size" in feats else []
        perms = (lambda mode: ["--perms", mode]) if "--perms" in feats else (lambda mode: [])
        head = [
            self._bwrap,
            "--unshare-all",
            "--unshare-user",
            "--uid",
            "0",
            "--gid",
            "0",
            "--die-with-parent",
            "--new-session",
            "--as-pid-1",
            "--hostname",
            "sandbox",
        ]
        head += ["--disable-userns"] if "--disable-userns" in feats else []
        head += system_binds()
        etc = etc_entries()
        generated = [
            (
                "/etc/passwd",
                f"root:x:0:0:root:{home}:{self._shell}\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
            ),
            ("/etc/group", "root:x:0:\nnogroup:x:65534:\n"),
            ("/etc/hostname", "sandbox\n"),
            ("/etc/hosts", "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost\n"),
        ]
        if self.network:  # the user-mode network's DNS forwarder, not the host's resolvers
            generated.append(("/etc/resolv.conf", RESOLV_CONF))
        prepared = etc_folder(etc, generated)
        if prepared is not None:  # one read-only bind (see etc_view.py)
            head += ["--ro-bind", str(prepared), "/etc"]
            self._data = []
        else:
            for name in etc:
                head += ["--ro-bind", "/etc/" + name, "/etc/" + name]
            self._data = generated
        self._perms = perms("0644")
        tail = [
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            *size,
            "--tmpfs",
            "/dev/shm",
            *perms("1777"),
            *size,
            "--tmpfs",
            "/tmp",
        ]
        tail += [*perms("0700"), *size, "--tmpfs", home] if home not in ("/", "/tmp") else []
        tail += ["--symlink", "../tmp", "/var/tmp"] if not (self.mount + "/").startswith("/var/tmp/") else []
        bridged = self._bridges
        for host_path, inside in self._ro_binds:  # e.g. a black-box agent's own install, read-only
            tail += ["--ro-bind", bridged.get(host_path, host_path), inside]
        for host_path, inside in self._rw_binds:  # e.g. a verifier's log folder
            tail += ["--bind", bridged.get(host_path, host_path), inside]
        tail += [
            "--bind",
            bridged.get(str(self.workspace), str(self.workspace)),
            self.mount,
            "--remount-ro",
            "/dev",
            "--remount-ro",
            "/",
        ]
        self._head, self._tail = head, tail
        # Limits and uid are applied by setpriv/prlimit in front of bwrap, so the spawn needs no fork
        # of this (possibly big) Python process; without those tools a preexec_fn does the same.
        # As root NPROC counts per uid: outer bwrap + pid 1 + the command's tree (+ slirp4netns).
        wanted = [
            ("as", resource.RLIMIT_AS, self._address_space_mb * mib),
            ("core", resource.RLIMIT_CORE, 0),
            ("fsize", resource.RLIMIT_FSIZE, self.limits.file_size_mb * mib),
        ]
        wanted += [("nproc", resource.RLIMIT_NPROC, self.limits.pids + 2 + int(self.network))] if self._root else []
        wanted += [("cpu", resource.RLIMIT_CPU, int(self.limits.cpu_seconds))] if self.limits.cpu_seconds else []
        self._rlimits = []
        for name, res, value in wanted:
            hard = resource.getrlimit(res)[1]
            self._rlimits.append((name, res, value if hard == resource.RLIM_INFINITY else min(value, hard)))
        tools = util_linux()
        self._launch: list[str] = []
        program = launcher()  # one small static program (launcher.py), else util-linux's two
        self._cgroup_joined = False  # the launcher puts bwrap in the memory cgroup: no move after
        if program is not None:
            limits = [(res, value) for _, res, value in self._rlimits]
            self._launch = launch_args(program, limits, self._uid if self._root else None, self._cgroup)
            self._cgroup_joined = self._cgroup is not None
        elif tools["prlimit"] and (tools["setpriv"] or not self._root):
            if self._root:
                self._launch = [
                    tools["setpriv"],
                    f"--reuid={self._uid}",
                    f"--regid={self._uid}",
                    "--clear-groups",
                    "--",
                ]
            self._launch += [tools["prlimit"], *(f"--{n}={v}" for n, _, v in self._rlimits), "--"]
        self._preexec_fn = self._preexec if (self._bridges or not self._launch) else None
        # not root: NPROC is set inside, where it is counted per user namespace
        self._inner = (
            []
            if self._root or tools["prlimit"] != "/usr/bin/prlimit"
            else ["/usr/bin/prlimit", f"--nproc={self.limits.pids + 1}", "--"]
        )

    def _preexec(self) -> None:  # in the forked child, before bwrap starts
        if self._bridges:  # private mount namespace where the uid can reach the workspace and binds
            libc = self._libc
            if libc.unshare(0x00020000) or libc.mount(None, b"/", None, 0x4000 | 0x40000, None):
                raise OSError(ctypes.get_errno(), "cannot bridge the workspace")
            for host, point in self._bridges.items():
                if libc.mount(os.fsencode(host), point.encode(), None, 0x1000 | 0x4000, None):
                    raise OSError(ctypes.get_errno(), f"cannot bridge {host}")
        if self._launch:
            return
        for _, res, value in self._rlimits:
            resource.setrlimit(res, (value, value))
        if self._root:
            os.setgroups([])
            os.setgid(self._uid)
            os.setuid(self._uid)


# What these look at on the host does not change while a process runs: looked up once.
@functools.lru_cache(maxsize=1)
def system_binds() -> tuple[str, ...]:
    """The read-only system folders (symlinks where the host has them, as on merged-/usr systems)."""
    args: list[str] = []
    for name in SYSTEM_DIRS:
        host = "/" + name
        if os.path.islink(host):
            args += ["--symlink", os.readlink(host), host]
        elif os.path.isdir(host):
            args += ["--ro-bind", host, host]
    return tuple(args)


@functools.lru_cache(maxsize=1)
def etc_entries() -> list[str]:
    """The host's /etc entries a sandbox sees (those of ETC_ENTRIES that exist, and Python's)."""
    return host_entries([*ETC_ENTRIES, *sorted(p.name for p in Path("/etc").glob("python3*"))])


@functools.lru_cache(maxsize=1)
def util_linux() -> dict[str, str | None]:
    return {t: shutil.which(t, path="/usr/bin:/bin:/usr/sbin:/sbin") for t in ("setpriv", "prlimit")}


def bind_pair(spec: str | Sequence[str], what: str = "read-only bind") -> tuple[str, str]:
    """("HOST", "INSIDE") from "PATH" or ["HOST", "INSIDE"]; both absolute, the host one existing."""
    host, inside = (spec, spec) if isinstance(spec, str) else (spec[0], spec[1])
    if not os.path.isabs(host) or not os.path.isabs(inside) or not os.path.exists(host):
        raise ClawgymError(
            f"{what} {spec!r} needs an existing absolute host path and an absolute path inside",
            hint="write it as '/opt/agent' or ['/opt/agent', '/agent']",
        )
    return host, inside
