"""The small program that starts bwrap with the sandbox's limits and, as root, its uid.

A sandbox's processes get resource limits (address space, file size, core, as root the number of
processes) and, when the host runs as root, a dedicated unprivileged uid. These must be in place
before bwrap starts, and spawning must not fork this (possibly large, many-threaded) Python
process, so they are applied by a program in front of bwrap. util-linux ``setpriv`` and ``prlimit``
do it in two dynamically linked programs (about 1.8 ms per sandbox start here); this launcher does
it in one statically linked one (about 0.4 ms): setrlimit for each limit, then (as root) join the
sandbox's memory cgroup, drop the supplementary groups and set real, effective and saved gid and
uid, then execv the program. Joining the cgroup here, before bwrap starts, means the host does not
move the sandbox's pid 1 into it afterwards: pid 1 need not wait for the host (no ``--block-fd``)
unless the sandbox has a network to attach.

It is compiled from the source below on first use (the C compiler that builds Python packages),
into the per-machine cache (`$XDG_CACHE_HOME/clawgym/bin`, else `~/.cache/clawgym/bin`, a folder
only its owner can write), named by the hash of its source; where no compiler is found or the
build fails, sandboxes use ``setpriv``/``prlimit`` as before (`launcher()` returns None).

    launch [-r RESOURCE=VALUE]... [-c CGROUP_PROCS_FILE] [-u UID] -- PROGRAM ARG...
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from .host import owned_privately

log = logging.getLogger(__name__)

SOURCE = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* launch [-r RESOURCE=VALUE]... [-c CGROUP_PROCS] [-u UID] -- PROGRAM ARG...
   (exit 125: bad use or a failed step) */
int main(int argc, char **argv) {
    long long uid = -1;
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--") != 0; i += 2) {
        if (i + 1 >= argc) return 125;
        if (strcmp(argv[i], "-u") == 0) {
            char *end;
            uid = strtoll(argv[i + 1], &end, 10);
            if (*end || uid < 1) return 125;
        } else if (strcmp(argv[i], "-c") == 0) {
            /* join a memory cgroup (its cgroup.procs file) while still privileged */
            int fd = open(argv[i + 1], O_WRONLY | O_CLOEXEC);
            if (fd < 0 || write(fd, "0\n", 2) != 2 || close(fd) != 0) {
                perror("launch: cannot join the sandbox's memory cgroup");
                return 125;
            }
        } else if (strcmp(argv[i], "-r") == 0) {
            int resource;
            unsigned long long value;
            char extra;
            if (sscanf(argv[i + 1], "%d=%llu%c", &resource, &value, &extra) != 2) return 125;
            struct rlimit limit = {(rlim_t)value, (rlim_t)value};
            if (setrlimit(resource, &limit) != 0) { perror("launch: setrlimit"); return 125; }
        } else {
            return 125;
        }
    }
    if (i + 1 >= argc) return 125;
    if (uid > 0) {
        if (setgroups(0, NULL) != 0 || setresgid(uid, uid, uid) != 0 || setresuid(uid, uid, uid) != 0) {
            perror("launch: cannot change to the sandbox uid");
            return 125;
        }
        if (setresuid(0, 0, 0) == 0) { fputs("launch: root could be regained\n", stderr); return 125; }
    }
    execv(argv[i + 1], argv + i + 1);
    perror("launch: execv");
    return 127;
}
"""


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "clawgym" / "bin"


@functools.lru_cache(maxsize=1)
def launcher() -> str | None:
    """The launcher's path, built on first use; None where it cannot be built (see the module doc)."""
    digest = hashlib.sha256(SOURCE.encode()).hexdigest()[:16]
    folder = _cache_dir()
    target = folder / f"launch-{digest}"
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o755)
        if not (owned_privately(folder) and owned_privately(folder.parent)):  # what runs from it runs as us
            log.warning("not using the sandbox launcher: %s is writable by others", folder)
            return None
        if target.is_file() and os.access(target, os.X_OK) and target.stat().st_uid == os.geteuid():
            return str(target)
        return _build(folder, target)
    except OSError as exc:
        log.info("sandbox launcher not available (%s): using setpriv/prlimit", exc)
        return None


def _build(folder: Path, target: Path) -> str | None:
    compiler = next((c for c in (os.environ.get("CC"), "cc", "gcc", "clang") if c and shutil.which(c)), None)
    if compiler is None:
        log.info("no C compiler for the sandbox launcher: using setpriv/prlimit")
        return None
    with tempfile.TemporaryDirectory(dir=folder, prefix=".build-") as tmp:
        src, out = Path(tmp) / "launch.c", Path(tmp) / "launch"
        src.write_text(SOURCE)
        for static in (["-static"], []):  # static starts fastest; without libc.a, dynamic
            try:
                done = subprocess.run(
                    [compiler, "-O2", *static, "-o", str(out), str(src)], capture_output=True, timeout=120
                )
            except (OSError, subprocess.TimeoutExpired):
                continue
            if done.returncode == 0 and _works(out):
                out.chmod(0o755)
                os.replace(out, target)  # atomic: processes building at once each install a whole one
                return str(target)
    log.info("the sandbox launcher did not build: using setpriv/prlimit")
    return None


def _works(program: Path) -> bool:
    try:
        done = subprocess.run([str(program), "-r", "4=0", "--", "/bin/sh", "-c", "ulimit -c"], capture_output=True)
    except OSError:
        return False
    return done.returncode == 0 and done.stdout.strip() == b"0"


def launch_args(program: str, rlimits: list[tuple[int, int]], uid: int | None, cgroup: Path | None = None) -> list[str]:
    """The launcher's arguments up to `--`: each (resource, value) limit, the memory cgroup to join
    and the uid (both as root)."""
    args = [program]
    for resource, value in rlimits:
        args += ["-r", f"{resource}={value}"]
    if cgroup is not None:
        args += ["-c", str(cgroup / "cgroup.procs")]
    if uid is not None:
        args += ["-u", str(uid)]
    return [*args, "--"]
