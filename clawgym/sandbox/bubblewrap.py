"""Local sandbox backend on bubblewrap (``bwrap``).

A sandbox runs in new user, mount, pid, ipc, uts, cgroup and net namespaces. Without a network,
one bwrap is kept for the execs of a sandbox from its second exec on (the first runs in a fresh
bwrap, so a sandbox that runs one command, a grader say, costs what it did), its pid 1 a small exec
server that runs each command alone in the namespace and clears everything but the workspace
after it (see :mod:`clawgym.sandbox.session`); an exec that overlaps another, or any exec with
``keep_namespaces=False``, gets a fresh bwrap of its own. With ``network=True`` every exec gets a
fresh bwrap and a slirp4netns started for it gives that net namespace outbound access
(see :mod:`clawgym.sandbox.network`), never the host's loopback or abstract sockets. Inside: the
workspace read-write at `mount`; /usr, /bin, /lib*, /sbin and a minimal /etc read-only (with
networking, a resolv.conf naming the user-mode network's DNS forwarder); private size-capped tmpfs
/tmp, HOME and /dev/shm; a fresh /proc and a minimal /dev; nothing else of the host. Processes are
uid 0 of their own user namespace, without capabilities, mapped on the host to:

* as root: a dedicated unprivileged uid per sandbox (from a reserved range, claimed with an
  abstract-socket lock). It owns the workspace while the sandbox lives; owners are restored on
  close (hard-linked files are not handed over). RLIMIT_NPROC then caps the sandbox's processes
  exactly, and a memory cgroup caps the whole tree's memory where one can be created.
* as a normal user: the user's own uid. RLIMIT_NPROC is set inside through ``prlimit`` (exact on
  kernels >= 5.14, which count it per user namespace; best effort elsewhere); no memory cgroup.

Every process also gets RLIMIT_AS (memory_mb) and RLIMIT_FSIZE. The command runs under a small
``sh`` as pid 1: when the command exits the pid namespace is torn down, so background or setsid'd
children never outlive their exec (in a kept sandbox the exec server SIGKILLs every other process
of the namespace when the command exits); a timeout, an output flood or close() SIGKILLs pid 1,
which takes the whole tree with it. Only the workspace persists between execs (SysV IPC objects of
a kept sandbox last until it closes). There is no seccomp filter. Host resources (the uid, the
hand-over of the workspace, the memory cgroup) are claimed at the first exec, so a sandbox whose
agent never runs a command costs almost nothing.

bwrap is started through util-linux ``setpriv``/``prlimit`` (uid, limits), so spawning never forks
this Python process; only when root's sandbox uid cannot walk down to the workspace is a
``preexec_fn`` used, to bind the workspace onto /mnt (or similar) in a private mount namespace.
The command line is built in `bwrap_command.py`.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import socket
import stat
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Mapping, Sequence

from ..errors import ClawgymError, InfraError, PrerequisiteError
from ..registry import register
from .host import claim_uid, later, memory_cgroup, release_cgroup, walk_entries
from .base import DEFAULT_MOUNT, ExecResult, Sandbox, SandboxLimits, check_mount
from .network import TUN_HINT, NetworkStartError, UserNet
from . import session
from .fresh import KILL_GRACE, FreshExecs
from .kept import KeptNamespaces, finish_teardown
from .bwrap_command import BwrapCommand, bind_pair

UID_BASE, UID_COUNT = 1_900_000_000, 65_536  # host uids reserved for sandboxes run by root
FRESH_FIRST = 1  # a kept sandbox runs its first exec in a fresh bwrap: one-command sandboxes pay no server
INSTALL_HINT = "install it: apt-get install bubblewrap (Debian/Ubuntu) or dnf install bubblewrap"
USERNS_HINT = (
    "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, "
    "user.max_user_namespaces > 0, kernel.apparmor_restrict_unprivileged_userns=0)"
)
log = logging.getLogger(__name__)
_probe_lock = threading.Lock()
_probed: set[tuple[str, bool, bool]] = set()
_features: dict[str, frozenset[str]] = {}


@register("sandbox", "local")
class LocalSandbox(KeptNamespaces, FreshExecs, BwrapCommand, Sandbox):
    """Bubblewrap sandbox: each command runs in fresh Linux namespaces where only the workspace is
    writable, system folders are read-only, nothing else of the host is visible and there is no
    network unless the task allows it (then a private one with outbound access only); time, memory,
    processes, output and file size are capped.

    Options: `bwrap` (path of the binary; default: found on PATH), `uid_base` and `uid_count`
    (host uids given to sandboxes when running as root), `ro_binds` (extra host folders shown
    read-only: "PATH" or ["HOST", "INSIDE"]; they must be world-readable, since the sandbox's uid
    resolves them), `rw_binds` (extra host folders shown writable, same forms: as root they are handed
    to the sandbox's uid like the workspace while it lives, so they must not be shared with other
    sandboxes), `own_cgroup` (default true: as root, a memory cgroup of its own; false when the
    calling process already sits in a memory cgroup that bounds it, which saves a cgroup move per
    exec), `address_space_mb` (RLIMIT_AS of each process; default the memory limit: runtimes such as
    Node reserve far more address space than they use, so an agent running on one raises it while
    the memory cgroup, as root, still caps what the tree really uses), `keep_namespaces` (default true:
    one bwrap for the execs of a network-less sandbox from its second on, its exec server holding about
    7 MB while the sandbox lives; false: a fresh bwrap per exec). Keep one
    live sandbox per workspace.
    """

    def __init__(
        self,
        workspace: Path | str,
        *,
        limits: SandboxLimits | None = None,
        network: bool = False,
        mount: str = DEFAULT_MOUNT,
        bwrap: str | None = None,
        uid_base: int = UID_BASE,
        uid_count: int = UID_COUNT,
        ro_binds: Sequence[str | Sequence[str]] = (),
        rw_binds: Sequence[str | Sequence[str]] = (),
        own_cgroup: bool = True,
        address_space_mb: int | None = None,
        keep_namespaces: bool = True,
    ) -> None:
        self.workspace, self.limits = Path(workspace).resolve(), limits or SandboxLimits()
        self.network, self.mount = bool(network), check_mount(mount)
        self._closed, self._lock, self._live = False, threading.Lock(), set()
        self._close_done = threading.Event()
        self._closer: threading.Thread | None = None  # the thread that took the close on
        self._closing = False
        self._uid_sock: socket.socket | None = None
        self._owners: dict[tuple[int, int], tuple[int, int]] | None = None
        self._cgroup: Path | None = None
        self._cgroup_joined = False  # set when the command line is built (bwrap_command.py)
        self._bridges: dict[str, str] = {}  # host folder the sandbox uid cannot reach -> where it is bridged
        self._net: UserNet | None = None
        self._ro_binds = [bind_pair(b) for b in ro_binds]
        if address_space_mb is not None and not int(address_space_mb) > 0:
            raise ClawgymError(f"sandbox option address_space_mb must be positive, got {address_space_mb!r}")
        self._address_space_mb = int(address_space_mb or self.limits.memory_mb)
        self._rw_binds = [bind_pair(b, "writable bind") for b in rw_binds]
        self._defaults: dict[Path, tuple[int, int]] = {}  # owner of each handed-over root
        found = bwrap or shutil.which("bwrap")
        if not found or not os.access(found, os.X_OK):
            raise PrerequisiteError("bubblewrap (bwrap) is not installed", hint=INSTALL_HINT)
        self._bwrap = found
        if found not in _features:
            try:
                out = subprocess.run([found, "--help"], capture_output=True, text=True, timeout=30)
            except OSError as exc:
                raise PrerequisiteError(f"bubblewrap at {found} cannot run: {exc}", hint=INSTALL_HINT) from None
            _features[found] = frozenset(w for w in (out.stdout + out.stderr).split() if w.startswith("--"))
        feats = _features[found]
        if "--json-status-fd" not in feats or "--as-pid-1" not in feats:
            raise PrerequisiteError(f"bubblewrap at {found} is too old (need 0.5 or newer)", hint=INSTALL_HINT)
        if not self.workspace.is_dir():
            raise ClawgymError(f"sandbox workspace {self.workspace} is not a folder")
        self._root = os.geteuid() == 0
        if self.network:  # before anything is claimed: a missing helper is a PrerequisiteError
            self._net = UserNet()
        self._shell = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"
        self._uid = os.getuid()
        self._uid_range, self._own_cgroup, self._feats = (uid_base, uid_count), own_cgroup, feats
        self._prepared = False
        self._keep = bool(keep_namespaces) and not self.network and session.available()
        self._session: session.Session | None = None
        self._fresh_left = FRESH_FIRST
        self._on_close: list[Callable[[], None]] = []  # e.g. a pool removing the folder it made
        if (self._bwrap, self._root, self.network) not in _probed:
            try:
                self._probe()  # once per process and mode: prepares this sandbox now
            except BaseException:
                self.close()
                raise

    # ----------------------------------------------------------------- setup
    def _prepare(self) -> None:
        """Claim what the sandbox needs on the host (as root: its uid, the workspace handed over, a
        memory cgroup), at its first exec: a sandbox whose agent never runs a command costs nothing."""
        with self._lock:
            if self._prepared:
                return
            if self._closed:
                raise ClawgymError("sandbox is closed")
            try:
                if self._root:
                    self._uid, self._uid_sock = claim_uid(*self._uid_range)
                    if self._net is not None:
                        self._net.run_as(self._uid)
                    self._hand_over()
                    if self._own_cgroup:
                        self._cgroup = memory_cgroup(
                            f"clawgym-sandbox-{self._uid}-{secrets.token_hex(3)}", self.limits.memory_mb << 20
                        )
                    self._plan_bridges()
                self._build_args(self._feats)
                self._prepared = True
            except BaseException:
                self._closed = True
                self._release_host()
                raise

    def prepare(self) -> None:
        self._prepare()

    def _writable_roots(self) -> list[Path]:
        return [self.workspace, *(Path(host) for host, _ in self._rw_binds)]

    def _hand_over(self) -> None:
        """Give the workspace (and writable binds) to the sandbox uid, remembering owners to restore on close."""
        owners: dict[tuple[int, int], tuple[int, int]] = self._owners if self._owners is not None else {}
        self._owners = owners
        for root in self._writable_roots():
            st = os.stat(root)
            self._defaults.setdefault(root, (st.st_uid, st.st_gid))
            for dfd, name, st in walk_entries(root):
                if (st.st_uid, st.st_gid) == (self._uid, self._uid) or (stat.S_ISREG(st.st_mode) and st.st_nlink > 1):
                    continue  # a hard link may be shared with a file outside the workspace
                owners[(st.st_dev, st.st_ino)] = (st.st_uid, st.st_gid)
                os.chown(name, self._uid, self._uid, dir_fd=dfd, follow_symlinks=False)

    def _restore_owners(self) -> None:
        owners, self._owners = self._owners, None
        if owners is None:
            return
        for root, default in self._defaults.items():
            if not root.exists():
                continue
            for dfd, name, st in walk_entries(root):
                if self._uid in (st.st_uid, st.st_gid):
                    uid, gid = owners.get((st.st_dev, st.st_ino), default)
                    try:
                        os.chown(name, uid, gid, dir_fd=dfd, follow_symlinks=False)
                    except OSError as exc:
                        log.warning("cannot restore the owner of %s: %s", name, exc)

    def _probe(self) -> None:
        """Once per process and mode: check that bwrap (and the network helper) can build a sandbox here."""
        key = (self._bwrap, self._root, self.network)
        with _probe_lock:
            if key in _probed:
                return
            try:
                self._prepare()
                argv, env = self.command_env(["true"], None, self._shell)
                res = self._exec_fresh(argv, env, None, None, 60.0)
                problem = None if res.exit_code == 0 else res.output.strip() or f"exit code {res.exit_code}"
            except NetworkStartError as exc:
                raise PrerequisiteError(str(exc), hint=TUN_HINT) from None
            except InfraError as exc:
                problem = str(exc)
            if problem and any(w in problem for w in ("namespace", "uid map", "ermission", "not permitted")):
                raise PrerequisiteError(f"bubblewrap cannot create a sandbox here: {problem}", hint=USERNS_HINT)
            if problem:
                raise InfraError(f"the sandbox self-test failed: {problem}")
            _probed.add(key)

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
        argv, run_env = self.command_env(command, env, self._shell)
        data = stdin.encode() if isinstance(stdin, str) else stdin
        limit = self.limits.wall_seconds if timeout is None else float(timeout)
        if self._closed:
            raise ClawgymError("sandbox is closed")
        started = time.monotonic()
        try:
            self._prepare()
            kept = self._take_session()
            if kept is None:
                return self._exec_fresh(argv, run_env, workdir, data, limit)
            try:
                return self._exec_kept(kept, argv, run_env, workdir, data, limit)
            finally:
                kept.busy = False
        except InfraError:
            if not self._closed:
                raise
            # close() (a timeout, the run ending) came while this exec was starting: killed, not broken
            return ExecResult(exit_code=None, output="", duration_s=time.monotonic() - started, killed_reason="closed")

    # ----------------------------------------------------------------- close
    def close(self) -> None:
        me = threading.current_thread()
        with self._lock:
            if self._close_done.is_set():
                return
            closer = self._closer
            # a close that unwound before it began (an interrupt between two steps) is taken over
            ours = closer is None or not closer.is_alive() or (closer is me and not self._closing)
            if ours:
                self._closer, self._closed, runs = me, True, list(self._live)
        if not ours:  # e.g. a timeout closed it from another thread: wait until it is done
            deadline = time.monotonic() + KILL_GRACE * 2 + 30
            while not self._close_done.wait(0.05) and closer.is_alive() and time.monotonic() < deadline:
                pass
            return
        try:
            self._closing = True
            self._close(runs)
        finally:
            self._closing = False
            self._close_done.set()

    def _close(self, runs: list) -> None:
        kept, self._session = self._session, None
        if kept is not None and not kept.busy and not runs:
            # Idle: the exec server is alone in its namespace, blocked on its socket, so once it is
            # killed nothing can write any more. Owners are restored now, the rest in the background.
            kept.kill()
            cgroup, uid_sock, callbacks = self._cgroup, self._uid_sock, list(self._on_close)
            self._cgroup = self._uid_sock = None
            try:
                self._restore_owners()
            finally:
                later(lambda: finish_teardown(kept, cgroup, uid_sock, callbacks))
            return
        if kept is not None:
            kept.kill()
        for run in runs:
            run.kill("closed")
        for run in runs:
            if not run.wait_ended(KILL_GRACE * 2):
                self._abandoned(run)
        if kept is not None:
            deadline = time.monotonic() + KILL_GRACE * 2
            while kept.busy and time.monotonic() < deadline:  # its exec returns as soon as it sees the kill
                time.sleep(0.005)
            kept.reap(KILL_GRACE)
        if self._net is not None:  # helpers of ended execs, and of any exec that did not return in time
            self._net.close([run.helper for run in runs if run.helper is not None])
        self._release_host()

    def _release_host(self) -> None:
        """Give the workspace back, remove the memory cgroup and free the uid (what `_prepare` claimed)."""
        try:
            self._restore_owners()
        finally:
            release_cgroup(self._cgroup, self._uid_sock)
            self._cgroup = self._uid_sock = None
        for callback in self._on_close:
            callback()

    def __repr__(self) -> str:
        return f"LocalSandbox({str(self.workspace)!r}, mount={self.mount!r}, network={self.network})"
