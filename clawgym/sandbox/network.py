"""User-mode networking for networked local sandboxes: one ``slirp4netns`` per exec.

A networked exec gets its own network namespace from bwrap (``--unshare-net``), like any other:
its own loopback, none of the host's listening sockets and none of its abstract Unix sockets (such
as the uid locks of :func:`clawgym.sandbox.host.claim_uid`). While the sandbox's pid 1 still waits
on ``--block-fd``, :meth:`UserNet.attach` starts slirp4netns on that namespace and waits for its
``--ready-fd``: ``tap0`` is then up with 10.0.2.100/24, the gateway 10.0.2.2 and a DNS forwarder
at 10.0.2.3 (the sandbox's /etc/resolv.conf), and only then is pid 1 let go, so a command never
runs before its network is there. Outbound connections become ordinary sockets of the helper on the
host: the sandbox reaches what the host reaches through its non-loopback addresses, but not the
host's loopback (``--disable-host-loopback`` refuses the gateway's mapping to 127.0.0.1; only port
53 of 10.0.2.3 reaches the host's resolver, even a loopback one), and nothing is forwarded inward.
A host address inside 10.0.2.0/24 would be shadowed by the sandbox's own network.

The helper runs as the sandbox's host uid (as root; otherwise as the user), joined by util-linux
``nsenter`` to the user namespace that owns the sandbox's network namespace (found with the
``NS_GET_USERNS`` ioctl, since bwrap's ``--disable-userns`` nests a second one), inside
slirp4netns' own empty mount namespace (``--enable-sandbox``) and under its seccomp filter
(``--enable-seccomp``). It lives as long as its exec: it is SIGKILLed on every exit path of the
exec and reaped in the background (the kernel takes ~25 ms to remove its tap device), sandbox close()
waits for every reap, and ``--exit-fd`` (a pipe only this process holds) ends it if this process dies.
As root it is also put in the sandbox's memory cgroup, so the memory it spends for the sandbox counts.

Why slirp4netns rather than pasta (both tried on Debian bookworm, slirp4netns 1.2.0 and passt
0.0~git20230309): slirp4netns stays a child process with ``--ready-fd`` and ``--exit-fd``, while
pasta reports readiness only by daemonizing, after which it is no longer ours to reap and it
outlived the namespace it served; slirp4netns is safe with one flag, while pasta by default forwards
ports both ways between the namespace and the host's loopback (``-t``/``-u``/``-T``/``-U auto``)
and copies the host's own address into the namespace, so it needs ``--no-map-gw``, four port
options and an address to be isolated; and slirp4netns started in about 6 ms against 24 ms.
"""

from __future__ import annotations

import fcntl
import logging
import os
import select
import shutil
import subprocess
import threading
import time
from typing import Sequence

from ..errors import InfraError, PrerequisiteError

GUEST_DNS = "10.0.2.3"
RESOLV_CONF = f"nameserver {GUEST_DNS}\n"
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
HELPER_HINT = "install it: apt-get install slirp4netns (Debian/Ubuntu) or dnf install slirp4netns"
TUN_HINT = "networked sandboxes need /dev/net/tun (modprobe tun) and slirp4netns (apt-get install slirp4netns)"
READY_TIMEOUT = 10.0  # seconds slirp4netns may take to configure the interface
NS_GET_USERNS = 0xB701  # ioctl on a namespace fd: the user namespace that owns it
MTU = 65520
log = logging.getLogger(__name__)


class NetworkStartError(InfraError):
    """The helper could not give an exec its network."""


class Helper:
    """One running slirp4netns serving one exec; :meth:`stop` and :meth:`join` are idempotent."""

    def __init__(self, proc: subprocess.Popen, exit_w: int) -> None:
        self.proc, self.pid, self._exit_w = proc, proc.pid, exit_w
        self._lock = threading.Lock()
        self._reaper: threading.Thread | None = None

    def stop(self, wait: bool = True) -> None:
        """SIGKILL it; reap it now, or (``wait=False``) in a thread, since its exit takes the kernel
        tens of milliseconds (removing the tap device) that an exec need not wait for."""
        with self._lock:
            if self._exit_w >= 0:
                os.close(self._exit_w)  # --exit-fd: it would end by itself; SIGKILL makes it immediate
                self._exit_w = -1
                try:
                    self.proc.kill()
                except OSError:
                    pass
                self._reaper = threading.Thread(target=self._reap, name=f"reap-slirp4netns-{self.pid}", daemon=True)
                self._reaper.start()
        if wait:
            self.join()

    def join(self, timeout: float = 10.0) -> None:
        """Wait until a stopped helper is reaped."""
        if self._reaper is not None:
            self._reaper.join(timeout)

    @property
    def reaped(self) -> bool:
        return self.proc.returncode is not None

    def _reap(self) -> None:
        if not _wait_exit(self.proc, 10.0):
            log.warning("slirp4netns (pid %s) did not die after SIGKILL", self.pid)


class UserNet:
    """One sandbox's networking: finds the tools (PrerequisiteError if one is missing), starts a
    :class:`Helper` per exec, and keeps the stopped ones until they are reaped."""

    def __init__(self) -> None:
        self.slirp = _tool("slirp4netns", "slirp4netns is not installed (needed by networked sandboxes)", HELPER_HINT)
        self.prefix = [
            _tool(
                "nsenter",
                "util-linux nsenter is not installed (needed by networked sandboxes)",
                "install it: apt-get install util-linux",
            ),
            "--preserve-credentials",
        ]
        self._lock = threading.Lock()
        self._dying: list[Helper] = []

    def retire(self, helper: Helper) -> None:
        """The exec is over: kill its helper now, reap it in the background."""
        helper.stop(wait=False)
        with self._lock:
            self._dying = [h for h in self._dying if not h.reaped] + [helper]

    def close(self, extra: Sequence[Helper] = ()) -> None:
        """Kill and reap every helper retired so far, and `extra` (those of execs still running)."""
        with self._lock:
            helpers, self._dying = [*self._dying, *extra], []
        for helper in helpers:
            helper.stop()

    def run_as(self, uid: int) -> None:
        """As root: run the helper as the sandbox's own uid, the owner of its user namespace."""
        setpriv = _tool(
            "setpriv",
            "util-linux setpriv is not installed (needed by networked sandboxes)",
            "install it: apt-get install util-linux",
        )
        self.prefix = [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--", *self.prefix]

    def attach(self, pid: int, timeout: float = READY_TIMEOUT) -> Helper:
        """Give the network namespace of `pid` (blocked, not yet running its command) its network."""
        deadline = time.monotonic() + timeout
        fds: list[int] = []
        try:
            _wait_mapped(pid, deadline)
            fds.append(net := os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC))
            fds.append(user := fcntl.ioctl(net, NS_GET_USERNS))
            exit_r, exit_w = os.pipe()
            ready_r, ready_w = os.pipe()
            fds += [exit_r, exit_w, ready_r, ready_w]
            fds.append(out := os.memfd_create("slirp4netns-log", os.MFD_CLOEXEC))
        except OSError as exc:
            for fd in fds:
                os.close(fd)
            raise NetworkStartError(f"cannot reach the sandbox's network namespace: {exc}") from None
        argv = [
            *self.prefix,
            f"--user=/proc/self/fd/{user}",
            "--",
            self.slirp,
            "--configure",
            f"--mtu={MTU}",
            "--disable-host-loopback",
            "--enable-sandbox",
            "--enable-seccomp",
            f"--exit-fd={exit_r}",
            f"--ready-fd={ready_w}",
            "--netns-type=path",
            f"--userns-path=/proc/self/fd/{user}",
            f"/proc/self/fd/{net}",
            "tap0",
        ]
        helper = None
        try:
            try:
                proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=out,
                    cwd="/",
                    env={"PATH": SYSTEM_PATH},
                    pass_fds=(net, user, exit_r, ready_w),
                )
            except (OSError, subprocess.SubprocessError) as exc:
                raise NetworkStartError(f"cannot start slirp4netns: {exc}") from None
            helper = Helper(proc, exit_w)  # closes exit_w when it stops
            fds.remove(exit_w)
            for fd in (net, user, exit_r, ready_w):  # only the helper holds these now
                fds.remove(fd)
                os.close(fd)
            if _wait_ready(ready_r, deadline) != b"1":
                helper.stop()
                detail = os.pread(out, 4096, 0).decode(errors="replace").strip().splitlines()
                why = "; ".join(line for line in detail if "seccomp is experimental" not in line)[-600:]
                raise NetworkStartError(
                    f"slirp4netns did not bring the sandbox's network up (exit {proc.returncode}): {why or 'no output'}"
                )
            return helper
        except BaseException:
            if helper is not None:
                helper.stop()
            raise
        finally:
            for fd in fds:
                os.close(fd)


def _wait_exit(proc: subprocess.Popen, timeout: float) -> bool:
    """Reap `proc` as soon as it exits (a pidfd, not Popen.wait's sleeps); False after `timeout`."""
    try:
        fd = os.pidfd_open(proc.pid)
    except OSError:  # already reaped, or no pidfd on this kernel
        fd = -1
    try:
        if fd < 0 or select.select([fd], [], [], timeout)[0]:
            proc.wait(timeout)
            return True
        return False
    except subprocess.TimeoutExpired:
        return False
    finally:
        if fd >= 0:
            os.close(fd)


def _wait_mapped(pid: int, deadline: float) -> None:
    """Wait until bwrap's child has written its id maps (it does so after reporting its pid):
    before that the helper would join the user namespace with an unmapped uid, without rights."""
    delay = 0.0002
    while True:
        with open(f"/proc/{pid}/gid_map", "rb") as f:  # written after uid_map
            if f.read().strip():
                return
        if time.monotonic() > deadline:
            raise OSError("the sandbox's user namespace got no id map in time")
        time.sleep(delay)
        delay = min(delay * 2, 0.01)


def _wait_ready(fd: int, deadline: float) -> bytes:
    """What the helper wrote on its --ready-fd ("1"), or b"" on EOF or at `deadline`."""
    while (left := deadline - time.monotonic()) > 0:
        if select.select([fd], [], [], left)[0]:
            return os.read(fd, 16)[:1]
    return b""


def _tool(name: str, problem: str, hint: str) -> str:
    found = shutil.which(name) or shutil.which(name, path=SYSTEM_PATH)
    if not found or not os.access(found, os.X_OK):
        raise PrerequisiteError(problem, hint=hint)
    return found
