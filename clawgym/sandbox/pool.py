"""A pool of pre-started local sandboxes: taking one costs no bwrap start.

Each pooled sandbox is a `LocalSandbox` over an empty workspace folder the pool made (in a private
work folder), with its host resources claimed and its kept bwrap already running (`start()`). The
caller takes one, writes the task's files into `sandbox.workspace`, calls `sandbox.adopt()` (as
root this hands the new files to the sandbox's uid) and uses it like any other; closing it also
removes the folder. A background thread keeps `size` sandboxes ready. Nothing is shared between
the sandboxes of a pool: each has its own namespaces, uid, memory cgroup and folder, and is used
once.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from typing import Any

from ..files import safefs
from ..files.tempdirs import make_temp
from .base import DEFAULT_MOUNT, SandboxLimits
from .bubblewrap import LocalSandbox

log = logging.getLogger(__name__)
FILL_NICE = 10


class SandboxPool:
    """Keeps `size` started local sandboxes with the same options ready to `take()`."""

    def __init__(
        self, size: int = 4, *, limits: SandboxLimits | None = None, mount: str = DEFAULT_MOUNT, **options: Any
    ) -> None:
        if options.get("network"):
            raise ValueError("a pool holds network-less sandboxes (networked ones get a fresh bwrap per exec)")
        self.size, self.limits, self.mount, self.options = max(1, int(size)), limits, mount, options
        self._ready: queue.Queue[LocalSandbox] = queue.Queue()
        self._want = threading.Semaphore(self.size)  # one permit per sandbox to make
        self._closed = threading.Event()
        self._filler = threading.Thread(target=self._fill, name="clawgym-sandbox-pool", daemon=True)
        self._filler.start()

    def _make(self) -> LocalSandbox:
        folder = make_temp("pool")
        workspace = folder / "workspace"
        workspace.mkdir()
        folder.chmod(0o711)  # a root-run sandbox resolves its workspace as its own uid
        try:
            sandbox = LocalSandbox(workspace, limits=self.limits, mount=self.mount, **self.options)
        except BaseException:
            safefs.remove_tree(folder)
            raise
        sandbox.on_close(lambda: safefs.remove_tree(folder))
        sandbox.start()
        sandbox.exec(["true"])  # the server's first fork is the slowest: not on the taker's time
        return sandbox

    def _fill(self) -> None:
        try:  # start sandboxes at a lower priority than the trials using them (bwrap inherits it)
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), FILL_NICE)
        except OSError:
            pass
        while True:
            self._want.acquire()
            if self._closed.is_set():
                return
            try:
                sandbox = self._make()
            except Exception as exc:  # noqa: BLE001 - take() then starts one itself and raises there
                log.warning("the sandbox pool could not start a sandbox: %s", exc)
                self._closed.wait(1.0)
                self._want.release()
                continue
            if self._closed.is_set():
                sandbox.close()
                return
            self._ready.put(sandbox)

    def take(self) -> LocalSandbox:
        """A started sandbox (one made on the spot when none is ready); the pool makes another."""
        if self._closed.is_set():
            raise ValueError("the sandbox pool is closed")
        try:
            sandbox = self._ready.get_nowait()
        except queue.Empty:
            sandbox = self._make()
        else:
            self._want.release()
        return sandbox

    def wait_ready(self, timeout: float = 30.0, count: int = 1) -> bool:
        """Wait until `count` sandboxes (at most the pool's size) are ready to take (benchmarks that
        take faster than the pool refills, or that want no refill running while they measure)."""
        want = min(max(1, count), self.size)
        deadline = time.monotonic() + timeout
        while self._ready.qsize() < want and time.monotonic() < deadline:
            time.sleep(0.002)
        return self._ready.qsize() >= want

    def close(self) -> None:
        """Stop refilling and close the sandboxes still waiting."""
        self._closed.set()
        self._want.release()
        self._filler.join(30)
        while True:
            try:
                self._ready.get_nowait().close()
            except queue.Empty:
                return

    def __enter__(self) -> "SandboxPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
