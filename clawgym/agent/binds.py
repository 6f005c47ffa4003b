"""What a black-box agent's config may show inside its sandbox: only its own declared folders.

A `command` agent (real OpenClaw, another CLI agent) is often written by someone else, and its
config is code we run. Its `ro_binds` may therefore name only paths inside the folders the config
declares as the agent's own (`install:`; by default the per-machine agents cache, where
`clawgym agents install` puts programs). A declared folder may not be, contain or lie inside what
the host must keep to itself: `/`, `/proc`, `/sys`, `/dev`, `/run`, `/etc`, home folders' secrets,
the spec, task, runs and cache folders, the work folders of other trials. A bound path may not be
reached through a link, and it may not be or hold a socket or a device (a daemon's control
socket is root on the host). Inside the sandbox a bind may not cover the workspace or the
private folder. Problems come back as (key path, what, hint) so the run spec can point at the line.
"""

from __future__ import annotations

import os
import posixpath
import stat
from pathlib import Path
from typing import Any, Iterable, Sequence

from ..files import safefs
from ..sandbox.base import PRIVATE_MOUNT

SCAN_LIMITS = safefs.TreeLimits(
    entries=500_000, depth=safefs.GRADING_LIMITS.depth, apparent_bytes=1 << 62, data_bytes=1 << 62
)
NEVER_INSIDE = ("/proc", "/sys", "/dev", "/run", "/var/run", "/etc", "/boot", "/lost+found")
NEVER_EXACTLY = (
    "/",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/var",
    "/tmp",
    "/var/tmp",
    "/home",
    "/root",
    "/opt",
    "/srv",
    "/mnt",
    "/media",
    "/usr/local",
    "/usr/lib",
    "/usr/share",
)
HOME_SECRETS = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config",
    ".docker",
    ".kube",
    ".netrc",
    ".git-credentials",
    ".pypirc",
    ".local/share/keyrings",
)

Problem = tuple[tuple, str, str]


def agents_cache() -> Path:
    """The per-machine folder of installed agent programs (the default declared folder)."""
    from ..policy.embedded import cache_dir

    return cache_dir() / "agents"


def protected_paths(extra: Iterable[Path | str] = ()) -> list[str]:
    """Host paths no agent folder may be, hold or lie in: ClawGym's cache (but for the agents
    cache), the work folders, this package, and `extra` (spec, task and runs folders)."""
    from ..policy.embedded import cache_dir
    from ..files.tempdirs import work_root

    out = [cache_dir(), work_root(), Path(__file__).resolve().parent.parent, *map(Path, extra)]
    return [os.path.normpath(os.path.abspath(os.fspath(p))) for p in out]


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def declared_folders(config: dict[str, Any]) -> list[str]:
    """The agent's own folders: `install` (a path or a list), else the agents cache."""
    raw = config.get("install")
    items = [raw] if isinstance(raw, str) else list(raw or [])
    if not items:
        items = [str(agents_cache())]
    return [os.path.normpath(os.path.expanduser(str(p))) for p in items]


def folder_problem(folder: str, protected: Sequence[str]) -> str | None:
    """Why `folder` cannot be an agent's own folder, or None."""
    if not os.path.isabs(folder):
        return "must be an absolute path"
    if folder in NEVER_EXACTLY:
        return "is a system folder; give the agent a folder of its own, e.g. /opt/my-agent"
    for bad in NEVER_INSIDE:
        if _inside(folder, bad):
            return f"lies inside {bad}"
    home = os.path.normpath(str(Path.home()))
    if folder == home:
        return "is a home folder"
    for secret in HOME_SECRETS:
        if _inside(folder, os.path.join(home, secret)):
            return f"lies inside {os.path.join('~', secret)}"
    agents = os.path.normpath(str(agents_cache()))
    for p in protected:
        if _inside(p, folder):
            return f"holds {p}, which agents must not see"
        if _inside(folder, p) and not _inside(folder, agents):
            return f"lies inside {p}, which agents must not see"
    if not os.path.lexists(folder):
        return "does not exist"
    if os.path.realpath(folder) != folder:
        return f"is reached through a symbolic link (it resolves to {os.path.realpath(folder)})"
    if not os.path.isdir(folder):
        return "is not a folder"
    return None


def bind_problems(
    config: dict[str, Any], *, mount: str | None = None, protected: Iterable[Path | str] = ()
) -> list[Problem]:
    """Every problem with an agent config's `install` and `ro_binds` (key paths relative to the config)."""
    guarded = protected_paths(protected)
    problems: list[Problem] = []
    folders = declared_folders(config)
    good: list[str] = []
    key = ("install",) if config.get("install") is not None else ()
    for i, folder in enumerate(folders):
        why = folder_problem(folder, guarded)
        if why is None:
            good.append(folder)
        elif key:
            where = key + ((i,) if isinstance(config.get("install"), list) else ())
            problems.append(
                (where, f"the agent folder {folder} {why}", "declare a folder that holds only the agent's program")
            )
    for i, spec in enumerate(config.get("ro_binds") or []):
        problems += [(("ro_binds", i), what, hint) for what, hint in _bind_problem(spec, good, folders, mount)]
    return problems


def _bind_problem(spec: Any, good: list[str], declared: list[str], mount: str | None) -> list[tuple[str, str]]:
    if isinstance(spec, str):
        host, inside = spec, spec
    elif isinstance(spec, (list, tuple)) and len(spec) == 2 and all(isinstance(x, str) for x in spec):
        host, inside = spec
    else:
        return [("a bind is 'PATH' or ['HOST', 'INSIDE']", "write it as '/opt/agent' or ['/opt/agent', '/agent']")]
    out: list[tuple[str, str]] = []
    if not os.path.isabs(host) or not os.path.isabs(inside):
        return [(f"bind {spec!r} needs absolute paths", "write it as ['/opt/agent', '/agent']")]
    host_n, inside_n = os.path.normpath(host), posixpath.normpath(inside)
    where = ", ".join(declared) or "none"
    if not any(_inside(host_n, f) for f in good):
        out.append(
            (
                f"bind {host} is not inside the agent's own folders ({where})",
                "declare the agent's folder under 'install:' and bind only paths inside it",
            )
        )
        return out
    if not os.path.lexists(host_n):
        return [(f"bind {host} does not exist", "install the agent first")]
    if os.path.realpath(host_n) != host_n:
        return [(f"bind {host} is reached through a symbolic link", "bind the real path inside the agent's folder")]
    st = os.lstat(host_n)
    if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
        return [(f"bind {host} is a socket, device or pipe", "bind only the agent's files and folders")]
    if stat.S_ISDIR(st.st_mode):
        found = _special_inside(host_n)
        if found:
            out.append((f"bind {host} holds {found}", "bind only the agent's files and folders"))
    for covered, what in ((mount, "the workspace"), (PRIVATE_MOUNT, "the trial's private folder")):
        if covered and (_inside(inside_n, covered) or _inside(covered, inside_n)):
            out.append((f"bind target {inside} would cover {what} ({covered})", "pick another place inside"))
    return out


def _special_inside(folder: str) -> str | None:
    """The first socket, device or FIFO below `folder`, a note if it is too big to check, else None."""
    try:
        for entry in safefs.walk(folder, SCAN_LIMITS):
            if entry.kind == "other":
                return f"a socket, device or pipe ({entry.rel})"
    except safefs.TreeTooLarge as e:
        return f"too much to check ({e})"
    except OSError as e:
        return f"something unreadable ({e.strerror or e})"
    return None
