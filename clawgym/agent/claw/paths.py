"""Host-side access to the sandbox workspace that can never leave it.

File tools (read, write, edit, memory) work on the workspace folder from the host rather than
through `sandbox.exec`: a bubblewrap start costs ~20 ms, a host file operation microseconds, and
the harness aims at < 5 ms per turn. Isolation holds because every path is resolved the way the
sandbox would see it and then opened component by component with ``O_NOFOLLOW`` relative to a
directory fd of the workspace:

- a relative path resolves against the mount; an absolute one must lie inside the mount;
- symlinks are followed by hand, in the sandbox's view (an absolute target is a sandbox path);
  any step that lands outside the workspace is refused;
- the resolved path is then opened with ``openat(..., O_NOFOLLOW)`` at every level, so a symlink
  swapped in by a concurrently running background command fails the open instead of escaping.

New files and folders are given the owner of the workspace folder (as root the sandbox runs under
its own uid, and must still be able to change what the agent wrote).
"""

from __future__ import annotations

import os
import posixpath
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

_MAX_LINKS = 40
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class PathError(Exception):
    """A path the agent may not use, or cannot: the message goes back to the model."""


class Workspace:
    """The workspace folder on the host (`root`) as the sandbox shows it (at `mount`)."""

    def __init__(self, root: Path | str, mount: str) -> None:
        self.root = Path(root).resolve()
        self.mount = posixpath.normpath(mount)

    # ----------------------------------------------------------- resolution
    def rel(self, path: str) -> str:
        """Workspace-relative form of a model-given path, symlinks resolved in the sandbox's view.
        '' is the workspace itself. Raises PathError when the path leaves the workspace."""
        if not isinstance(path, str) or not path.strip():
            raise PathError("path must be a non-empty string")
        if "\0" in path:
            raise PathError("path contains a NUL byte")
        path = path.strip()
        if path == "~" or path.startswith("~/"):
            path = posixpath.join(posixpath.dirname(posixpath.dirname(self.mount)), path[2:])
        parts = self._inside(path if path.startswith("/") else posixpath.join(self.mount, path), path)
        done: list[str] = []
        links = 0
        while parts:
            name = parts.pop(0)
            host = self.root.joinpath(*done, name)
            try:
                st = os.lstat(host)
            except FileNotFoundError:
                done.append(name)
                done.extend(parts)  # the rest does not exist yet: nothing more to follow
                break
            except OSError as exc:
                raise PathError(f"cannot access {path}: {exc.strerror}") from None
            if stat.S_ISLNK(st.st_mode):
                links += 1
                if links > _MAX_LINKS:
                    raise PathError(f"too many levels of symbolic links in {path}")
                target = os.readlink(host)
                base = target if target.startswith("/") else posixpath.join(self.mount, *done, target)
                parts = self._inside(base, path, via_link=True) + parts
                done = []
            else:
                done.append(name)
        return "/".join(done)

    def _inside(self, sandbox_path: str, original: str, via_link: bool = False) -> list[str]:
        norm = posixpath.normpath(sandbox_path)
        if norm == self.mount:
            return []
        if not norm.startswith(self.mount + "/"):
            why = "a symbolic link in it points" if via_link else "it points"
            raise PathError(
                f"access denied: {original} is outside the workspace ({why} outside "
                f"{self.mount}); use a path inside the workspace"
            )
        return norm[len(self.mount) + 1 :].split("/")

    def display(self, rel: str) -> str:
        return rel or "."

    # ------------------------------------------------------------- opening
    @contextmanager
    def parent_fd(self, rel: str, create: bool = False) -> Iterator[tuple[int, str]]:
        """(fd of the parent folder, base name) for `rel`, walking with O_NOFOLLOW."""
        if not rel:
            raise PathError("the path is the workspace folder itself, not a file")
        *dirs, name = rel.split("/")
        fd = os.open(self.root, _DIR_FLAGS)
        try:
            for part in dirs:
                try:
                    nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise PathError(f"no such file or folder: {rel}") from None
                    os.mkdir(part, 0o755, dir_fd=fd)
                    self._own(part, fd)
                    nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except NotADirectoryError:
                    raise PathError(f"{part} in {rel} is not a folder") from None
                except OSError as exc:  # ELOOP: a symlink appeared after resolution
                    raise PathError(f"cannot open {rel}: {exc.strerror}") from None
                os.close(fd)
                fd = nfd
            yield fd, name
        finally:
            os.close(fd)

    def _own(self, name: str, dir_fd: int) -> None:
        """Give a new entry the workspace owner (matters when the host runs as root)."""
        st = os.stat(self.root)
        if os.geteuid() == 0 and (st.st_uid, st.st_gid) != (0, 0):
            os.chown(name, st.st_uid, st.st_gid, dir_fd=dir_fd, follow_symlinks=False)

    def read_bytes(self, rel: str, limit: int | None = None) -> bytes:
        with self.parent_fd(rel) as (dfd, name):
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dfd)
            except FileNotFoundError:
                raise PathError(f"no such file: {rel}") from None
            except IsADirectoryError:
                raise PathError(f"{rel} is a folder, not a file") from None
            except OSError as exc:
                raise PathError(f"cannot open {rel}: {exc.strerror}") from None
            try:
                mode = os.fstat(fd).st_mode
                if stat.S_ISDIR(mode):
                    raise PathError(f"{rel} is a folder, not a file (list it with exec: ls {rel})")
                if not stat.S_ISREG(mode):
                    raise PathError(f"{rel} is not a regular file")
                with os.fdopen(fd, "rb", closefd=False) as fh:
                    return fh.read() if limit is None else fh.read(limit)
            finally:
                os.close(fd)

    def write_bytes(self, rel: str, data: bytes) -> None:
        """Replace the file atomically (never writes through a hard link shared with another file)."""
        with self.parent_fd(rel, create=True) as (dfd, name):
            mode = 0o644
            try:
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    raise PathError(f"{rel} is a folder, not a file")
                mode = stat.S_IMODE(st.st_mode)
            except FileNotFoundError:
                pass
            tmp = f".{name}.clawgym-{os.getpid()}-{id(data) & 0xFFFF:x}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dfd)
            try:
                with os.fdopen(fd, "wb", closefd=False) as fh:
                    fh.write(data)
                os.fchmod(fd, mode)
            finally:
                os.close(fd)
            try:
                self._own(tmp, dfd)
                os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            except BaseException:
                os.unlink(tmp, dir_fd=dfd)
                raise

    def is_file(self, rel: str) -> bool:
        try:
            with self.parent_fd(rel) as (dfd, name):
                return stat.S_ISREG(os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode)
        except (PathError, OSError):
            return False

    def list_files(self, rel_dir: str, suffix: str = "") -> list[str]:
        """Regular files directly in a workspace folder (no symlinks), sorted."""
        try:
            host = self.root / rel_dir if rel_dir else self.root
            if host.is_symlink() or not host.is_dir():
                return []
            return sorted(
                f"{rel_dir}/{e.name}" if rel_dir else e.name
                for e in os.scandir(host)
                if e.is_file(follow_symlinks=False) and e.name.endswith(suffix)
            )
        except OSError:
            return []
