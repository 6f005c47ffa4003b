"""Copying the workspace of a docker sandbox in and out: the host folder mirrored into the
container's mount (files, folders and links only, owned by root inside) and the mount copied back
out, streamed and bounded by the grading limits, links never leading out of the workspace. A mixin
of `DockerSandbox` (`docker.py`), which holds the state; `fingerprint` tells when the host changed
the workspace.
"""

from __future__ import annotations

import io
import logging
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..files import safefs
from ..errors import InfraError

if TYPE_CHECKING:
    import tarfile

log = logging.getLogger(__name__)


class WorkspaceSync:
    """The workspace copies of `DockerSandbox` (its attributes are set up there)."""

    workspace: Path
    mount: str
    workspace_problem: str | None
    _api: Any
    _container: Any
    _errors: Any
    _fingerprint: Any

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
        self._fingerprint = fingerprint(self.workspace)

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
                            what = (
                                f"more than {limits.entries:,} files and folders"
                                if count > limits.entries
                                else f"files claim more than {limits.apparent_bytes >> 20} MiB (apparent size)"
                            )
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
        self._fingerprint = fingerprint(self.workspace)


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


def fingerprint(root: Path) -> frozenset:
    """What changes when the host edits the workspace: every entry's path, type, size, mtime, mode."""
    seen = []
    try:
        for e in safefs.walk(root, limits=safefs.GRADING_LIMITS):
            link = os.readlink(e.name, dir_fd=e.dir_fd) if e.kind == "link" else None
            seen.append((e.rel, e.st.st_mode, e.st.st_size, e.st.st_mtime_ns, e.st.st_ino, link))
    except safefs.TreeTooLarge:
        seen.append(("", "too large"))  # the verifier refuses such a workspace anyway
    return frozenset(seen)
