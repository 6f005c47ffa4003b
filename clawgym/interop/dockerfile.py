"""Interpret a Harbor task's `environment/Dockerfile` into the agent's workspace, without Docker.

`plan_environment` reads the Dockerfile and plans the build without running anything: WORKDIR
(the mount), ARG and ENV (the environment), COPY/ADD of local files, folders, archives and
heredocs, and RUN steps that need no network. `build_workspace` then carries the plan out over a
host folder, running the RUN steps in the local sandbox without network. Anything that cannot be
done here (a RUN step that needs the network, an ADD of a URL, a multi-stage build, a COPY outside
WORKDIR, a failing RUN step ...) raises `DockerfileError` with the reason.
"""

from __future__ import annotations

import glob
import json
import os
import posixpath
import re
import shlex
import shutil
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ClawgymError, PrerequisiteError

__all__ = [
    "Build",
    "DockerfileError",
    "Instruction",
    "build_workspace",
    "network_word",
    "parse_dockerfile",
    "plan_build",
    "plan_environment",
]

RUN_TIMEOUT = 300.0
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_NETWORK = re.compile(
    r"(?<![\w.-])(apt-get|apt|aptitude|apk|yum|dnf|microdnf|zypper|pacman|pip3?(?:\.\d+)?|pipx|uv|uvx|poetry|"
    r"conda|mamba|micromamba|npm|npx|yarn|pnpm|bun|curl|wget|git\s+(?:clone|fetch|pull|submodule|ls-remote)|"
    r"go\s+(?:get|install|mod\s+download)|cargo\s+(?:install|fetch|build|add)|gem\s+install|cpanm?|composer|"
    r"rustup|add-apt-repository|nvm|sdk\s+install)(?![\w-])"
)
_ARCHIVE = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
_URL = re.compile(r"^(https?|ftp|git)://|^git@")
_VAR = re.compile(
    r"\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?::?-(?P<default>[^}]*))?\}"
    r"|(?P<plain>[A-Za-z_][A-Za-z0-9_]*))"
)


class DockerfileError(Exception):
    """The workspace cannot be built from this Dockerfile here; the message says why."""


@dataclass
class Instruction:
    """One Dockerfile instruction: its first line number, the upper-case op, its arguments, its heredocs."""

    line: int
    op: str
    args: str
    heredocs: list[tuple[str, str]] = field(default_factory=list)  # (delimiter, body)


def parse_dockerfile(text: str) -> list[Instruction]:
    """Instructions with their first line number: continuations joined, comments dropped, heredocs read."""
    lines = text.splitlines()
    out: list[Instruction] = []
    i = 0
    while i < len(lines):
        raw = lines[i]
        start = i + 1
        i += 1
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        text, more = _continued(raw)
        parts = [text]
        while more and i < len(lines):
            nxt = lines[i]
            i += 1
            if nxt.lstrip().startswith("#") or not nxt.strip():
                continue  # comments and blank lines inside a continuation are dropped
            text, more = _continued(nxt)
            parts.append(text)
        logical = " ".join(p.strip() for p in parts if p.strip())
        op, _, args = logical.partition(" ")
        ins = Instruction(start, op.upper(), args.strip())
        scan = ins.args if ins.op in ("RUN", "COPY") else ""
        for m in re.finditer(r"(?<!<)<<(-?)([\"']?)([A-Za-z_][A-Za-z0-9_]*)\2", scan):
            body = []
            while i < len(lines) and (lines[i].lstrip("\t") if m[1] else lines[i]) != m[3]:
                body.append(lines[i].lstrip("\t") if m[1] else lines[i])
                i += 1
            i += 1
            ins.heredocs.append((m[3], "\n".join(body) + "\n"))
        out.append(ins)
    return out


def _continued(line: str) -> tuple[str, bool]:
    """The line without a trailing continuation backslash, and whether it had one."""
    stripped = line.rstrip()
    return (stripped[:-1], True) if stripped.endswith("\\") else (line, False)


def _expand(text: str, variables: dict[str, str]) -> str:
    def sub(m: re.Match) -> str:
        name = m["braced"] or m["plain"]
        if name in variables and variables[name] != "":
            return variables[name]
        return m["default"] if m["default"] is not None else variables.get(name, "")

    return _VAR.sub(sub, text)


def _words(args: str) -> list[str]:
    """Arguments of COPY/ADD/ENV in shell form or JSON (exec) form."""
    if args.startswith("["):
        try:
            value = json.loads(args)
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                return value
        except ValueError:
            pass
    try:
        return shlex.split(args)
    except ValueError:
        return args.split()


def network_word(command: str) -> str | None:
    """The tool in a shell command that needs the network (apt-get, pip, curl ...), or None."""
    text = "\n".join(ln for ln in command.splitlines() if not ln.lstrip().startswith("#"))
    m = _NETWORK.search(text)
    return " ".join(m[1].split()) if m else None


@dataclass
class Build:
    """What the Dockerfile does to the workspace, in order, and where the agent works."""

    image: str = ""
    workdir: str = ""
    env: dict[str, str] = field(default_factory=dict)
    steps: list[tuple[Instruction, str, dict]] = field(default_factory=list)  # (instruction, cwd, what to do)
    warnings: list[str] = field(default_factory=list)


def plan_build(text: str) -> Build:
    """Interpret a Dockerfile without running anything; DockerfileError names the first thing we cannot do."""
    build, variables, workdir, froms = Build(), {}, "/", 0
    args: dict[str, str] = {}  # ARG values: RUN steps see them as environment variables
    for ins in parse_dockerfile(text):
        where = f"Dockerfile line {ins.line}"
        if ins.op == "FROM":
            froms += 1
            if froms > 1:
                raise DockerfileError(f"{where}: a second FROM (multi-stage build) is not supported")
            build.image = _expand(ins.args.split()[0] if ins.args else "", variables)
        elif ins.op == "ARG":
            for word in _words(ins.args):
                name, _, default = word.partition("=")
                variables.setdefault(name, _expand(default, variables))
                args.setdefault(name, variables[name])
        elif ins.op == "ENV":
            words = _words(ins.args)
            pairs = (
                [(words[0], " ".join(words[1:]))]
                if words and "=" not in words[0]
                else [tuple(w.split("=", 1)) for w in words if "=" in w]
            )
            for name, value in pairs:
                value = _expand(value, {**variables, "PATH": variables.get("PATH", DEFAULT_PATH)})
                variables[name] = value
                build.env[name] = value
        elif ins.op == "WORKDIR":
            workdir = posixpath.normpath(posixpath.join(workdir, _expand(ins.args.strip(), variables)))
        elif ins.op in ("COPY", "ADD"):
            words = [_expand(w, variables) for w in _words(ins.args)]
            flags = [w for w in words if w.startswith("--")]
            words = [w for w in words if not w.startswith("--")]
            if any(f.startswith("--from") for f in flags):
                raise DockerfileError(f"{where}: COPY --from (multi-stage build) is not supported")
            chmod = next((f.split("=", 1)[1] for f in flags if f.startswith("--chmod=")), None)
            if ins.heredocs:
                dest = words[-1] if words else ""
                build.steps.append((ins, workdir, {"heredocs": ins.heredocs, "dest": dest, "chmod": chmod}))
                continue
            if len(words) < 2:
                raise DockerfileError(f"{where}: {ins.op} needs a source and a destination")
            if ins.op == "ADD" and any(_URL.match(w) for w in words[:-1]):
                raise DockerfileError(f"{where}: ADD of a URL needs the network at build time")
            build.steps.append((ins, workdir, {"sources": words[:-1], "dest": words[-1], "chmod": chmod}))
        elif ins.op == "RUN":
            command = ins.args
            if ins.heredocs:
                head = re.sub(r"(?<!<)<<-?([\"']?)[A-Za-z_][A-Za-z0-9_]*\1", "", command).strip()
                if not head:
                    command = ins.heredocs[0][1]
                else:
                    command = command + "\n" + "".join(f"{body}{word}\n" for word, body in ins.heredocs)
            elif command.startswith("["):
                argv = _words(command)
                command = shlex.join(argv) if argv != [command] else command
            command = re.sub(r"^--\S+\s+", "", command)  # RUN --mount=... flags
            word = network_word(command)
            if word:
                raise DockerfileError(
                    f"{where}: RUN {_clip(command)} needs the network at build time ({word}), "
                    "so the workspace cannot be built here"
                )
            build.steps.append((ins, workdir, {"run": command, "env": {**args, **build.env}}))
        elif ins.op == "USER" and ins.args.split(":")[0] not in ("root", "0"):
            build.warnings.append(f"{where}: USER {ins.args} ignored (the agent and the tests run as root here)")
        elif ins.op == "SHELL":
            build.warnings.append(f"{where}: SHELL ignored (RUN steps use /bin/sh -c)")
    if froms == 0:
        raise DockerfileError("the Dockerfile has no FROM")
    if workdir == "/":
        raise DockerfileError("the Dockerfile sets no WORKDIR, so the agent's working folder is unknown")
    from ..sandbox.base import check_mount

    try:
        build.workdir = check_mount(workdir)
    except ClawgymError as e:
        raise DockerfileError(f"WORKDIR {workdir} cannot be the workspace: {e}") from None
    if workdir.split("/")[1] in ("tests", "logs"):
        raise DockerfileError(f"WORKDIR {workdir} would hide the verifier's /tests or /logs")
    return build


def plan_environment(environment: Path) -> Build:
    """Plan the build of `environment/Dockerfile` (nothing runs yet); DockerfileError says why it cannot be."""
    dockerfile = environment / "Dockerfile"
    if not dockerfile.is_file():
        raise DockerfileError("no environment/Dockerfile (the workspace is built from it)")
    return plan_build(dockerfile.read_text(encoding="utf-8", errors="replace"))


def _clip(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _inside(path: str, workdir: str, cwd: str, where: str, what: str) -> str:
    """`path` (relative to `cwd`) as a path relative to the workspace at `workdir`."""
    full = posixpath.normpath(posixpath.join(cwd, path))
    if full == workdir:
        return ""
    if not full.startswith(workdir.rstrip("/") + "/"):
        raise DockerfileError(
            f"{where}: {what} {full} lies outside the WORKDIR {workdir}; only the workspace is carried over"
        )
    return full[len(workdir.rstrip("/")) + 1 :]


def _copy_into(src: Path, dest: Path, chmod: str | None) -> None:
    if src.is_dir():
        dest.mkdir(parents=True, exist_ok=True)
        for child in sorted(src.iterdir()):
            _copy_into(child, dest / child.name, chmod)
        return
    if src.is_symlink():
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.is_dir():
        dest = dest / src.name
    shutil.copy2(src, dest)
    if chmod:
        os.chmod(dest, int(chmod, 8))


def build_workspace(build: Build, context: Path, workspace: Path, sandbox: dict | None = None) -> None:
    """Carry out the planned COPY/ADD/RUN steps over the host folder `workspace` (WORKDIR)."""
    workspace.mkdir(parents=True, exist_ok=True)
    context = context.resolve()
    for ins, cwd, payload in build.steps:
        where = f"Dockerfile line {ins.line}"
        if "run" in payload:
            _run_step(build, ins, cwd, payload["run"], payload["env"], workspace, sandbox)
            continue
        dest_rel = _inside(payload["dest"], build.workdir, cwd, where, "destination")
        dest = workspace / dest_rel if dest_rel else workspace
        chmod = payload.get("chmod")
        if "heredocs" in payload:
            for word, body in payload["heredocs"]:
                target = dest / word if payload["dest"].endswith("/") else dest
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(body, encoding="utf-8")
                if chmod:
                    os.chmod(target, int(chmod, 8))
            continue
        sources: list[Path] = []
        for pattern in payload["sources"]:
            pattern = pattern.lstrip("/") or "."  # sources are relative to the build context
            matches = sorted(glob.glob(str(context / pattern))) if glob.has_magic(pattern) else [str(context / pattern)]
            for match in matches:
                path = Path(os.path.normpath(match))
                if path != context and not path.is_relative_to(context):
                    raise DockerfileError(f"{where}: {ins.op} source {pattern} lies outside environment/")
                if not path.exists():
                    raise DockerfileError(f"{where}: {ins.op} source {pattern} not found in environment/")
                sources.append(path)
        as_dir = payload["dest"].endswith("/") or len(sources) > 1 or dest.is_dir() or not dest_rel
        for src in sources:
            if ins.op == "ADD" and src.is_file() and src.name.endswith(_ARCHIVE):
                dest.mkdir(parents=True, exist_ok=True)
                with tarfile.open(src) as tar:
                    kwargs = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
                    tar.extractall(dest, **kwargs)  # noqa: S202 - filtered where Python supports it
            elif src.is_dir():
                _copy_into(src, dest, chmod)
            else:
                _copy_into(src, dest / src.name if as_dir else dest, chmod)


def _run_step(
    build: Build, ins: Instruction, cwd: str, command: str, env: dict[str, str], workspace: Path, sandbox: dict | None
) -> None:
    """Run one offline RUN step in the local sandbox (no network) with `workspace` mounted at WORKDIR."""
    where = f"Dockerfile line {ins.line}"
    inside = cwd == build.workdir or cwd.startswith(build.workdir.rstrip("/") + "/")
    rel = cwd[len(build.workdir.rstrip("/")) + 1 :] if inside else "/tmp"  # e.g. RUN mkdir -p /app before WORKDIR
    from ..errors import InfraError
    from ..sandbox import SandboxLimits, create_sandbox

    env = {k: v for k, v in env.items() if k not in ("PATH", "HOME")}
    try:
        with create_sandbox(
            sandbox, workspace, limits=SandboxLimits(wall_seconds=RUN_TIMEOUT + 30), network=False, mount=build.workdir
        ) as box:
            res = box.exec(["/bin/sh", "-c", command], timeout=RUN_TIMEOUT, env=env, workdir=rel or None)
    except (PrerequisiteError, InfraError) as e:
        raise DockerfileError(f"{where}: RUN steps need the local sandbox to build the workspace: {e}") from None
    if res.timed_out or res.exit_code != 0:
        last = next((ln for ln in reversed(res.output.splitlines()) if ln.strip()), "")
        status = f"timed out after {RUN_TIMEOUT:g}s" if res.timed_out else f"exit status {res.exit_code}"
        raise DockerfileError(
            f"{where}: RUN {_clip(command)} failed at import ({status})" + (f": {_clip(last, 160)}" if last else "")
        )
