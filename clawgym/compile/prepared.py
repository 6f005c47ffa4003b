"""One materialised input tree per task instance, shared by the trials that start from it.

GRPO runs G rollouts of the same instance, and `attempts` or several agents do the same in a run:
instead of each trial writing the task's files from scratch, and each verification writing its
own pristine copy, the first trial of an instance in a process materialises the files once into a
host-private, read-only folder (`PreparedInputs.get`), and every trial of that instance copies it
into its workspace (`clone_tree`: a reflink where the filesystem has them, else an in-kernel copy).
The same folder is the pristine original the verifier grades against. It is never shown to any
sandbox; its digest (sha256 over every path, mode and content) is computed from the Task's own
bytes, checked after materialising and again before each verification (`check`), and recorded in
the trial, so a grade never rests on inputs that changed.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import stat
import threading
from pathlib import Path

from ..errors import InfraError
from ..files import safefs
from ..files.tempdirs import make_temp
from ..spec.task import Task
from .workspace import write_files

FICLONE = 0x40049409  # ioctl: share the source's extents (btrfs, xfs, bcachefs...), copy-on-write
_reflink = {"works": True}


def inputs_digest(files: dict[str, bytes] | object, executables: frozenset[str] | set[str]) -> str:
    """sha256 over the sorted (path, mode, content hash) of a task's input files."""
    h = hashlib.sha256()
    for rel in sorted(files):  # type: ignore[call-overload]
        mode = "755" if rel in executables else "644"
        h.update(f"{rel}\0{mode}\0{hashlib.sha256(files[rel]).hexdigest()}\n".encode())  # type: ignore[index]
    return h.hexdigest()


def tree_digest(folder: Path) -> str:
    """The same digest computed from a folder's regular files (never following links)."""
    files: dict[str, bytes] = {}
    executables: set[str] = set()
    for entry in safefs.walk(folder, safefs.GRADING_LIMITS):
        if entry.kind == "dir":
            continue
        if entry.kind != "file":
            raise InfraError(f"the prepared inputs hold a {entry.kind} at {entry.rel}")
        data = safefs.read_under(folder, entry.rel, entry.st.st_size)
        if data is None:
            raise InfraError(f"cannot read the prepared input {entry.rel}")
        files[entry.rel] = data
        if entry.st.st_mode & stat.S_IXUSR:
            executables.add(entry.rel)
    return inputs_digest(files, executables)


def _copy_file(src: str, dest: str, mode: int) -> None:
    fd_in = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        fd_out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
        try:
            os.fchmod(fd_out, mode)  # whatever the umask
            if _reflink["works"]:
                try:
                    fcntl.ioctl(fd_out, FICLONE, fd_in)
                    return
                except OSError as exc:
                    if exc.errno in (errno.EOPNOTSUPP, errno.ENOTTY, errno.EINVAL, errno.EXDEV, errno.ENOSYS):
                        _reflink["works"] = exc.errno == errno.EXDEV  # another filesystem may have them
                    else:
                        raise
            size, copied = os.fstat(fd_in).st_size, 0
            while copied < size:
                try:
                    n = os.copy_file_range(fd_in, fd_out, size - copied)
                except OSError as exc:  # another filesystem (older kernels, other types): sendfile
                    if exc.errno not in (errno.EXDEV, errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                        raise
                    n = os.sendfile(fd_out, fd_in, None, size - copied)
                if n == 0:
                    break
                copied += n
        finally:
            os.close(fd_out)
    finally:
        os.close(fd_in)


def clone_tree(src: Path, dest: Path) -> None:
    """Copy a prepared tree (folders and regular files only) into `dest`, writable: files 644, or
    755 when executable; a reflink where the filesystem allows, else an in-kernel copy."""
    os.makedirs(dest, exist_ok=True)
    src_root = os.fspath(src)
    for dirpath, dirnames, filenames in os.walk(src_root):
        rel = os.path.relpath(dirpath, src_root)
        target = os.fspath(dest) if rel == "." else os.path.join(dest, rel)
        for name in dirnames:
            os.mkdir(os.path.join(target, name), 0o755)
        for name in filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode):
                raise InfraError(f"the prepared inputs hold something other than a file: {path}")
            _copy_file(path, os.path.join(target, name), 0o755 if st.st_mode & stat.S_IXUSR else 0o644)


class PreparedInputs:
    """This process's prepared input trees, by task hash (thread-safe; `clear` removes them)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._trees: dict[str, tuple[Path, str]] = {}
        self._making: dict[str, threading.Lock] = {}
        self._root: Path | None = None

    def get(self, task: Task) -> tuple[Path, str]:
        """(read-only tree of the task's input files, their digest), materialised on first use."""
        with self._lock:
            found = self._trees.get(task.hash)
            if found is not None:
                return found
            making = self._making.setdefault(task.hash, threading.Lock())
        with making:
            with self._lock:
                found = self._trees.get(task.hash)
                if found is not None:
                    return found
                if self._root is None:
                    self._root = make_temp("prepared")
                    os.chmod(self._root, 0o700)  # the host's alone: no sandbox uid can even look in
                tree = self._root / task.hash[:32]
            write_files(task.files, task.executables, tree)
            digest = inputs_digest(task.files, task.executables)
            if tree_digest(tree) != digest:
                raise InfraError(f"the prepared inputs of {task.name} do not match the task's files")
            _freeze(tree)
            with self._lock:
                self._trees[task.hash] = (tree, digest)
            return tree, digest

    def check(self, tree: Path, digest: str) -> None:
        """Raise InfraError unless `tree` still holds exactly the inputs of `digest`."""
        if tree_digest(tree) != digest:
            raise InfraError("the prepared pristine inputs changed before grading")

    def forget(self) -> None:
        """Drop what this process knows without removing anything (a forked worker: the trees are
        its parent's)."""
        with self._lock:
            self._root = None
            self._trees.clear()
            self._making.clear()

    def clear(self) -> None:
        with self._lock:
            root, self._root = self._root, None
            self._trees.clear()
            self._making.clear()
        if root is not None:
            _thaw(root)
            safefs.remove_tree(root)


def _freeze(tree: Path) -> None:
    """Files and folders read-only (the tree is shared: nothing may change it by mistake)."""
    for dirpath, dirnames, filenames in os.walk(tree):
        for name in filenames:
            path = os.path.join(dirpath, name)
            os.chmod(path, 0o555 if os.stat(path).st_mode & stat.S_IXUSR else 0o444)
    for dirpath, _, _ in os.walk(tree, topdown=False):
        os.chmod(dirpath, 0o555)


def _thaw(root: Path) -> None:
    for dirpath, _, _ in os.walk(root):
        try:
            os.chmod(dirpath, 0o700)
        except OSError:
            pass


PREPARED = PreparedInputs()
