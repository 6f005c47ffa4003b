"""Host-side operations on folders an agent wrote: walk, measure, copy, read and remove.

An agent's workspace is hostile input. Everything here works through directory file descriptors
and no-follow opens (a symlink is copied or reported as a link, never followed), never recurses
(a tree of any depth cannot raise RecursionError), and is bounded: `TreeLimits` caps the number of
entries, the nesting depth, the apparent size (what `st_size` claims) and the data actually stored
(`st_blocks`), so a million files or a sparse file claiming terabytes cost the host nothing but a
`TreeTooLarge` with a readable reason. Copies keep holes in sparse files as holes.

`remove_tree` is the one exception to "bounded": it deletes trees of any depth and size, makes
unwritable folders writable on the way, and never raises (it returns what it could not delete).
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0)
_COPY_CHUNK = 1 << 20
_MAX_OPEN_DIRS = 64  # remove_tree keeps at most this many folders open at once, whatever the depth


@dataclass(frozen=True)
class TreeLimits:
    """Bounds on a tree the host walks, copies or snapshots."""

    entries: int = 100_000
    depth: int = 256
    apparent_bytes: int = 1 << 30  # sum of regular files' st_size
    data_bytes: int = 1 << 30  # sum of regular files' allocated blocks


GRADING_LIMITS = TreeLimits()


class TreeTooLarge(Exception):
    """The tree passes one of its `TreeLimits`; the message says which, for a verdict's reason."""


@dataclass
class Entry:
    """One entry of a walk. `dir_fd` (the parent folder) is valid only until the walk moves on."""

    rel: str  # posix path relative to the root
    name: str
    kind: str  # "file", "dir", "link" or "other"
    st: os.stat_result
    dir_fd: int
    depth: int  # 1 for the root's own entries


@dataclass
class Usage:
    """What a tree holds."""

    entries: int = 0
    apparent_bytes: int = 0
    data_bytes: int = 0


def kind_of(mode: int) -> str:
    return "link" if stat.S_ISLNK(mode) else "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"


def _size(n: int) -> str:
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return f"{n / div:.1f} {unit}"
    return f"{n} bytes"


def walk(root: Path | str, limits: TreeLimits | None = GRADING_LIMITS, usage: Usage | None = None) -> Iterator[Entry]:
    """Every entry below `root`, parents before children, never following links.

    Folders that cannot be opened are yielded but not entered. With `limits`, raises TreeTooLarge
    as soon as the tree passes one (`None`: no limits, for trees the host made itself).
    """
    usage = usage if usage is not None else Usage()
    root_fd = os.open(root, _DIR_FLAGS)
    stack: list[tuple[int, str, "os._ScandirIterator[str]", int]] = []
    try:
        stack.append((root_fd, "", os.scandir(root_fd), 1))
        while stack:
            fd, prefix, names, depth = stack[-1]
            item = next(names, None)
            if item is None:
                names.close()
                stack.pop()
                os.close(fd)
                continue
            name = item.name
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            usage.entries += 1
            kind = kind_of(st.st_mode)
            if kind == "file":
                usage.apparent_bytes += st.st_size
                usage.data_bytes += st.st_blocks * 512
            if limits is not None:
                _check(usage, depth, limits)
            entry = Entry(prefix + name, name, kind, st, fd, depth)
            yield entry
            if kind != "dir":
                continue
            try:
                sub = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError:
                continue
            try:
                listing = os.scandir(sub)
            except OSError:
                os.close(sub)
                continue
            stack.append((sub, entry.rel + "/", listing, depth + 1))
    finally:
        for fd, _, names, _ in reversed(stack):
            try:
                names.close()
            finally:
                os.close(fd)


def _check(usage: Usage, depth: int, limits: TreeLimits) -> None:
    if usage.entries > limits.entries:
        raise TreeTooLarge(f"more than {limits.entries:,} files and folders")
    if depth > limits.depth:
        raise TreeTooLarge(f"folders nested more than {limits.depth} deep")
    if usage.apparent_bytes > limits.apparent_bytes:
        raise TreeTooLarge(f"files claim more than {_size(limits.apparent_bytes)} (apparent size)")
    if usage.data_bytes > limits.data_bytes:
        raise TreeTooLarge(f"files hold more than {_size(limits.data_bytes)} of data")


def measure(root: Path | str, limits: TreeLimits = GRADING_LIMITS) -> Usage:
    """Count what `root` holds; TreeTooLarge past `limits`."""
    usage = Usage()
    for _ in walk(root, limits, usage):
        pass
    return usage


# ---------------------------------------------------------------------------------------------
# Copying


def copy_tree(src: Path | str, dst: Path | str, limits: TreeLimits | None = GRADING_LIMITS) -> list[str]:
    """Copy `src` to the new folder `dst`; returns what was left out, with why.

    Regular files (holes kept), folders and symlinks (copied as links, their targets untouched) are
    copied; devices, FIFOs and sockets are left out. Modes are kept without set-id bits; folders
    stay writable by their owner. Raises TreeTooLarge past `limits` (what was copied stays; the
    caller removes `dst`).
    """
    skipped: list[str] = []
    os.makedirs(dst, mode=0o700)
    dst_stack = [os.open(dst, _DIR_FLAGS)]
    try:
        for entry in walk(src, limits):
            while len(dst_stack) > entry.depth:
                os.close(dst_stack.pop())
            parent = dst_stack[-1]
            try:
                if entry.kind == "dir":
                    os.mkdir(entry.name, 0o700, dir_fd=parent)
                    sub = os.open(entry.name, _DIR_FLAGS, dir_fd=parent)
                    os.chmod(sub, (entry.st.st_mode & 0o777) | 0o700)
                    dst_stack.append(sub)
                elif entry.kind == "link":
                    os.symlink(os.readlink(entry.name, dir_fd=entry.dir_fd), entry.name, dir_fd=parent)
                elif entry.kind == "file":
                    _copy_file(entry, parent)
                else:
                    skipped.append(f"{entry.rel} (not a regular file)")
            except OSError as e:
                skipped.append(f"{entry.rel} ({e.strerror or e})")
                if entry.kind == "dir":  # its children would land in the wrong folder: push a placeholder
                    dst_stack.append(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
    finally:
        for fd in dst_stack:
            os.close(fd)
    return skipped


def _copy_file(entry: Entry, parent_fd: int) -> None:
    src = os.open(entry.name, _FILE_FLAGS, dir_fd=entry.dir_fd)
    try:
        dst = os.open(
            entry.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600, dir_fd=parent_fd
        )
        try:
            copy_data(src, dst, entry.st.st_size)
            os.fchmod(dst, (entry.st.st_mode & 0o777) | 0o600)
            os.utime(dst, ns=(entry.st.st_atime_ns, entry.st.st_mtime_ns))
        finally:
            os.close(dst)
    finally:
        os.close(src)


def copy_data(src: int, dst: int, size: int) -> None:
    """Copy `size` bytes from fd `src` to fd `dst`, skipping holes (the copy is as sparse as the source)."""
    offset = 0
    while offset < size:
        try:
            start = os.lseek(src, offset, os.SEEK_DATA)
            end = os.lseek(src, start, os.SEEK_HOLE)
        except OSError as e:
            if e.errno == errno.ENXIO:  # only a hole is left
                break
            start, end = offset, size  # no SEEK_DATA here: copy everything
        end = min(end, size)
        _copy_range(src, dst, start, end)
        offset = end
    os.ftruncate(dst, size)


def _copy_range(src: int, dst: int, start: int, end: int) -> None:
    pos = start
    while pos < end:
        n = min(_COPY_CHUNK, end - pos)
        try:
            done = os.copy_file_range(src, dst, n, pos, pos)
        except (OSError, AttributeError):
            data = os.pread(src, n, pos)
            done = os.pwrite(dst, data, pos) if data else 0
        if done <= 0:
            return  # the source shrank meanwhile
        pos += done


# ---------------------------------------------------------------------------------------------
# Reading one file


def open_under(root: Path | str, rel: str) -> int:
    """A read-only fd of `root/rel`, opening every component without following links.

    OSError (ELOOP for a link, ENOTDIR, ENOENT, ...) if any component is a link or missing.
    """
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise OSError(errno.EINVAL, f"bad relative path {rel!r}")
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            sub = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = sub
        return os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
    finally:
        os.close(fd)


def read_under(root: Path | str, rel: str, max_bytes: int) -> bytes | None:
    """The bytes of regular file `root/rel` (at most `max_bytes`, else ValueError); None if it is not
    a regular file reachable without links."""
    try:
        fd = open_under(root, rel)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        if st.st_size > max_bytes:
            raise ValueError(f"{rel} is larger than {max_bytes:,} bytes")
        data = os.read(fd, max_bytes + 1)
        if len(data) > max_bytes:
            raise ValueError(f"{rel} is larger than {max_bytes:,} bytes")
        return data
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------------------------
# Removing


def remove_tree(path: Path | str) -> list[str]:
    """Delete `path` (a folder of any depth, a file or a link, never followed); returns problems, never raises.

    Folders the owner cannot enter or write are made accessible first. Trees deeper than a few
    dozen levels are cut into pieces by renaming deep folders up to the top, so open descriptors
    stay bounded.
    """
    problems: list[str] = []
    try:
        path = os.fspath(path)
        parent, name = os.path.split(os.path.abspath(path))
        try:
            parent_fd = os.open(parent, _DIR_FLAGS)
        except OSError as e:
            return [] if e.errno == errno.ENOENT else [f"{path}: {e.strerror or e}"]
        try:
            try:
                st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
            except FileNotFoundError:
                return []
            if not stat.S_ISDIR(st.st_mode):
                _unlink(parent_fd, name, problems, path)
                return problems
            _remove_dir(parent_fd, name, problems, path)
        finally:
            os.close(parent_fd)
    except Exception as e:  # noqa: BLE001 - clean-up must never end a run
        problems.append(f"{path}: {type(e).__name__}: {e}")
    return problems


def _unlink(dir_fd: int, name: str, problems: list[str], where: str, *, is_dir: bool = False) -> bool:
    for attempt in range(2):
        try:
            if is_dir:
                os.rmdir(name, dir_fd=dir_fd)
            else:
                os.unlink(name, dir_fd=dir_fd)
            return True
        except FileNotFoundError:
            return True
        except PermissionError as e:
            if attempt == 0:
                try:
                    os.chmod(dir_fd, 0o700)  # the folder holding it was made unwritable
                    continue
                except OSError:
                    pass
            problems.append(f"{where}: cannot remove {name!r}: {e.strerror or e}")
            return False
        except OSError as e:
            problems.append(f"{where}: cannot remove {name!r}: {e.strerror or e}")
            return False
    return False


def _open_dir(dir_fd: int, name: str) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except PermissionError:
        os.chmod(name, 0o700, dir_fd=dir_fd, follow_symlinks=False)  # a folder of mode 000
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)


def _names(fd: int) -> list[str]:
    try:
        return os.listdir(fd)
    except OSError:
        return []


def _remove_dir(parent_fd: int, name: str, problems: list[str], where: str) -> None:
    """Empty and remove folder `name` of `parent_fd`, iteratively, in rounds: subtrees deeper than
    `_MAX_OPEN_DIRS` are renamed up into the top folder and removed in the next round."""
    try:
        top = _open_dir(parent_fd, name)
    except OSError as e:
        problems.append(f"{where}: {e.strerror or e}")
        return
    try:
        while _empty(top, problems, where):
            pass
    finally:
        os.close(top)
    _unlink(parent_fd, name, problems, where, is_dir=True)


def _empty(top: int, problems: list[str], where: str) -> bool:
    """Remove what `top` holds; True if deep folders were moved up and another round is needed."""
    moved = False
    stack: list[tuple[int, list[str], int | None, str]] = [(top, _names(top), None, "")]
    while stack:
        fd, names, parent, own = stack[-1]
        if not names:
            stack.pop()
            if parent is not None:
                os.close(fd)
                _unlink(parent, own, problems, where, is_dir=True)
            continue
        child = names.pop()
        try:
            st = os.stat(child, dir_fd=fd, follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode):
            _unlink(fd, child, problems, where)
            continue
        if len(stack) >= _MAX_OPEN_DIRS:
            try:
                os.rename(child, f".clawgym-rm-{os.urandom(6).hex()}", src_dir_fd=fd, dst_dir_fd=top)
                moved = True
            except OSError as e:
                problems.append(f"{where}: cannot move {child!r} up: {e.strerror or e}")
            continue
        try:
            sub = _open_dir(fd, child)
        except OSError as e:
            problems.append(f"{where}: cannot enter {child!r}: {e.strerror or e}")
            continue
        stack.append((sub, _names(sub), fd, child))
    return moved
