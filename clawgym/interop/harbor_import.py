"""`clawgym import harbor DIR --out OUT`: Harbor (Terminal-Bench 2) task folders → task specs.

A Harbor task folder holds `instruction.md`, `task.toml`, `environment/Dockerfile` (plus the files
it copies in), `tests/test.sh` and `solution/solve.sh`. Each becomes `OUT/<name>/`:

- `task.yaml`: instruction ← instruction.md; category, difficulty, tags, limits and network ←
  task.toml where they map; persona `workspace-owner`, workspace `blank`; mount ← the
  Dockerfile's WORKDIR; reference solution ← `solution/solve.sh` as a `script:` step; one
  `harbor_tests` check that runs `tests/test.sh` after the agent stopped;
- `workspace/`: what the Dockerfile puts into WORKDIR. The Dockerfile is interpreted, not built:
  WORKDIR, ARG, ENV, COPY and ADD of local files, folders and archives, and RUN steps that need
  no network (run at import time in a local sandbox over the workspace). A RUN step that looks
  like it needs the network (apt-get, pip, curl, git clone ...), an ADD of a URL, a multi-stage
  build or a COPY outside WORKDIR rejects the task: its workspace cannot be built here;
- `tests/` and `solution/`: the source folders, unchanged (never part of the workspace).

A bad folder is rejected (or imported with a warning) with its reason, never stopping the others.
`OUT/import-report.jsonl` records each folder's outcome and reasons.
"""

from __future__ import annotations

import glob
import json
import os
import posixpath
import re
import shlex
import shutil
import stat
import tarfile
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ClawgymError, PrerequisiteError
from ..spec.write import dump_spec, literal
from .library import ensure_library

REPORT = "import-report.jsonl"
DEFAULT_VERIFIER_TIMEOUT = 600.0
RUN_TIMEOUT = 300.0
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BOOTSTRAP_NAMES = ("AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "HEARTBEAT.md", "BOOTSTRAP.md")
RESERVED_NAMES = ("USER.md",)   # always written from the persona
_NAME_JUNK = re.compile(r"[^a-z0-9-]+")
_NETWORK = re.compile(
    r"(?<![\w.-])(apt-get|apt|aptitude|apk|yum|dnf|microdnf|zypper|pacman|pip3?(?:\.\d+)?|pipx|uv|uvx|poetry|"
    r"conda|mamba|micromamba|npm|npx|yarn|pnpm|bun|curl|wget|git\s+(?:clone|fetch|pull|submodule|ls-remote)|"
    r"go\s+(?:get|install|mod\s+download)|cargo\s+(?:install|fetch|build|add)|gem\s+install|cpanm?|composer|"
    r"rustup|add-apt-repository|nvm|sdk\s+install)(?![\w-])")
_ARCHIVE = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
_URL = re.compile(r"^(https?|ftp|git)://|^git@")
_VAR = re.compile(r"\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?::?-(?P<default>[^}]*))?\}"
                  r"|(?P<plain>[A-Za-z_][A-Za-z0-9_]*))")

# Harbor / Terminal-Bench categories → ours (unknown ones are left out and kept as a tag)
CATEGORIES = {
    "software": "software", "software-engineering": "software", "software-development": "software",
    "programming": "software", "coding": "software", "debugging": "software", "build": "software",
    "compilation": "software", "web-development": "software", "testing": "software",
    "systems": "systems", "system-administration": "systems", "sysadmin": "systems", "devops": "systems",
    "file-operations": "systems", "file-system": "systems", "automation": "systems", "networking": "systems",
    "security": "systems", "scripting": "systems",
    "analysis": "analysis", "data-analysis": "analysis", "data-science": "analysis", "data-processing": "analysis",
    "mathematics": "analysis", "math": "analysis", "statistics": "analysis", "machine-learning": "analysis",
    "scientific-computing": "analysis",
    "content": "content", "writing": "content", "text-processing": "content", "documentation": "content",
    "planning": "planning", "research": "planning", "knowledge": "planning",
    "productivity": "productivity", "office": "productivity", "spreadsheets": "productivity",
}


class Rejected(Exception):
    """This task folder cannot be imported; the message says why."""


@dataclass
class Outcome:
    """What happened to one source folder."""

    source: str
    status: str                      # imported | warned | rejected
    name: str | None = None          # the spec folder under OUT
    reasons: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# task.toml


def read_toml(folder: Path) -> dict[str, Any]:
    path = folder / "task.toml"
    if not path.is_file():
        return {}
    try:
        import tomllib  # type: ignore[import-not-found]
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ModuleNotFoundError:
            raise PrerequisiteError("reading task.toml needs Python 3.11 or the tomli package",
                                    hint="pip install tomli") from None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise Rejected(f"task.toml is not UTF-8 text ({e.reason} at byte {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise Rejected(f"task.toml is not valid TOML: {e}") from None
    return data


def _section(data: dict, name: str) -> dict:
    value = data.get(name)
    return value if isinstance(value, dict) else {}


def _positive(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if value > 0 else None


def _memory_mb(env: dict) -> int | None:
    if isinstance(env.get("memory_mb"), int) and not isinstance(env["memory_mb"], bool):
        return env["memory_mb"] if env["memory_mb"] >= 16 else None
    text = str(env.get("memory") or "").strip().upper()
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([MG])I?B?", text)
    if not m:
        return None
    mb = float(m[1]) * (1024 if m[2] == "G" else 1)
    return int(mb) if mb >= 16 else None


# ---------------------------------------------------------------------------------------------
# Dockerfile


@dataclass
class Instruction:
    line: int
    op: str
    args: str
    heredocs: list[tuple[str, str]] = field(default_factory=list)   # (delimiter, body)


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
    """Interpret a Dockerfile without running anything; Rejected names the first thing we cannot do."""
    build, variables, workdir, froms = Build(), {}, "/", 0
    args: dict[str, str] = {}  # ARG values: RUN steps see them as environment variables
    for ins in parse_dockerfile(text):
        where = f"Dockerfile line {ins.line}"
        if ins.op == "FROM":
            froms += 1
            if froms > 1:
                raise Rejected(f"{where}: a second FROM (multi-stage build) is not supported")
            build.image = _expand(ins.args.split()[0] if ins.args else "", variables)
        elif ins.op == "ARG":
            for word in _words(ins.args):
                name, _, default = word.partition("=")
                variables.setdefault(name, _expand(default, variables))
                args.setdefault(name, variables[name])
        elif ins.op == "ENV":
            words = _words(ins.args)
            pairs = ([(words[0], " ".join(words[1:]))] if words and "=" not in words[0]
                     else [tuple(w.split("=", 1)) for w in words if "=" in w])
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
                raise Rejected(f"{where}: COPY --from (multi-stage build) is not supported")
            chmod = next((f.split("=", 1)[1] for f in flags if f.startswith("--chmod=")), None)
            if ins.heredocs:
                dest = words[-1] if words else ""
                build.steps.append((ins, workdir, {"heredocs": ins.heredocs, "dest": dest, "chmod": chmod}))
                continue
            if len(words) < 2:
                raise Rejected(f"{where}: {ins.op} needs a source and a destination")
            if ins.op == "ADD" and any(_URL.match(w) for w in words[:-1]):
                raise Rejected(f"{where}: ADD of a URL needs the network at build time")
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
                raise Rejected(f"{where}: RUN {_clip(command)} needs the network at build time ({word}), "
                               "so the workspace cannot be built here")
            build.steps.append((ins, workdir, {"run": command, "env": {**args, **build.env}}))
        elif ins.op == "USER" and ins.args.split(":")[0] not in ("root", "0"):
            build.warnings.append(f"{where}: USER {ins.args} ignored (the agent and the tests run as root here)")
        elif ins.op == "SHELL":
            build.warnings.append(f"{where}: SHELL ignored (RUN steps use /bin/sh -c)")
    if froms == 0:
        raise Rejected("the Dockerfile has no FROM")
    if workdir == "/":
        raise Rejected("the Dockerfile sets no WORKDIR, so the agent's working folder is unknown")
    from ..sandbox.base import check_mount

    try:
        build.workdir = check_mount(workdir)
    except ClawgymError as e:
        raise Rejected(f"WORKDIR {workdir} cannot be the workspace: {e}") from None
    if workdir.split("/")[1] in ("tests", "logs"):
        raise Rejected(f"WORKDIR {workdir} would hide the verifier's /tests or /logs")
    return build


def _clip(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _inside(path: str, workdir: str, cwd: str, where: str, what: str) -> str:
    """`path` (relative to `cwd`) as a path relative to the workspace at `workdir`."""
    full = posixpath.normpath(posixpath.join(cwd, path))
    if full == workdir:
        return ""
    if not full.startswith(workdir.rstrip("/") + "/"):
        raise Rejected(f"{where}: {what} {full} lies outside the WORKDIR {workdir}; only the workspace is "
                       "carried over")
    return full[len(workdir.rstrip("/")) + 1:]


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
                    raise Rejected(f"{where}: {ins.op} source {pattern} lies outside environment/")
                if not path.exists():
                    raise Rejected(f"{where}: {ins.op} source {pattern} not found in environment/")
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


def _run_step(build: Build, ins: Instruction, cwd: str, command: str, env: dict[str, str], workspace: Path,
              sandbox: dict | None) -> None:
    where = f"Dockerfile line {ins.line}"
    inside = cwd == build.workdir or cwd.startswith(build.workdir.rstrip("/") + "/")
    rel = cwd[len(build.workdir.rstrip("/")) + 1:] if inside else "/tmp"  # e.g. RUN mkdir -p /app before WORKDIR
    from ..errors import InfraError
    from ..sandbox import SandboxLimits, create_sandbox

    env = {k: v for k, v in env.items() if k not in ("PATH", "HOME")}
    try:
        with create_sandbox(sandbox, workspace, limits=SandboxLimits(wall_seconds=RUN_TIMEOUT + 30),
                            network=False, mount=build.workdir) as box:
            res = box.exec(["/bin/sh", "-c", command], timeout=RUN_TIMEOUT, env=env, workdir=rel or None)
    except (PrerequisiteError, InfraError) as e:
        raise Rejected(f"{where}: RUN steps need the local sandbox to build the workspace: {e}") from None
    if res.timed_out or res.exit_code != 0:
        last = next((ln for ln in reversed(res.output.splitlines()) if ln.strip()), "")
        status = f"timed out after {RUN_TIMEOUT:g}s" if res.timed_out else f"exit status {res.exit_code}"
        raise Rejected(f"{where}: RUN {_clip(command)} failed at import ({status})"
                       + (f": {_clip(last, 160)}" if last else ""))


# ---------------------------------------------------------------------------------------------
# One folder


def spec_name(text: str) -> str:
    name = _NAME_JUNK.sub("-", text.lower().replace("_", "-").replace("/", "-")).strip("-")[:64].strip("-")
    return name or "task"


def _tree(folder: Path) -> tuple[list[str], set[str], list[str]]:
    """(files, executables, skipped) under `folder`, POSIX relative paths, symlinks left out."""
    files, executables, skipped = [], set(), []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            path = Path(dirpath) / name
            rel = path.relative_to(folder).as_posix()
            if path.is_symlink():
                skipped.append(rel)
            elif name in filenames and path.is_file():
                files.append(rel)
                if os.stat(path).st_mode & stat.S_IXUSR:
                    executables.add(rel)
    return files, executables, skipped


def build_spec(folder: Path, name: str, meta: dict, build: Build, workspace: Path) -> tuple[dict, list[str]]:
    """The task spec for an imported folder (its workspace already built) and the warnings."""
    warnings = list(build.warnings)
    task_sec, md, verifier, agent, env = (_section(meta, s) for s in ("task", "metadata", "verifier", "agent",
                                                                        "environment"))
    info = {**task_sec, **md}
    spec: dict[str, Any] = {"apiVersion": "clawgym/v1", "kind": "Task", "name": name}
    title = md.get("title")
    if isinstance(title, str) and title.strip():
        spec["title"] = title.strip()
    if isinstance(info.get("description"), str):
        spec["description"] = info["description"]
    raw_category = str(info.get("category") or "").strip()
    category = CATEGORIES.get(raw_category.lower().replace("_", "-").replace(" ", "-"))
    if category:
        spec["category"] = category
    difficulty = str(info.get("difficulty") or "").strip().lower()
    if difficulty in ("easy", "medium", "hard"):
        spec["difficulty"] = difficulty
    tags = [str(t) for t in info.get("tags") or [] if isinstance(t, (str, int, float))]
    if raw_category and not category:
        tags.append(raw_category)
    spec["tags"] = [*dict.fromkeys([*tags, "harbor"])]
    spec["persona"] = "workspace-owner"
    spec["workspace"] = "blank"
    files, executables, skipped = _tree(workspace)
    if skipped:
        for rel in skipped:
            (workspace / rel).unlink()
        warnings.append(f"symlinks in the workspace left out: {', '.join(skipped[:5])}")
    entries, bootstrap = [], {}
    top = sorted({f.split("/")[0] for f in files})
    for entry in top:
        if entry in BOOTSTRAP_NAMES:
            try:
                bootstrap[entry] = literal((workspace / entry).read_text(encoding="utf-8"))
                continue
            except UnicodeDecodeError:
                pass
        if entry in RESERVED_NAMES:
            warnings.append(f"{entry} in the workspace is replaced by the persona's {entry}")
            continue
        item: dict[str, Any] = {"path": entry, "source": f"workspace/{entry}"}
        if entry in executables:
            item["executable"] = True
        entries.append(item)
    instruction = (folder / "instruction.md").read_text(encoding="utf-8")
    spec["instruction"] = literal(instruction)
    if entries:
        spec["files"] = entries
    if bootstrap:
        spec["bootstrap"] = bootstrap
    if (folder / "solution" / "solve.sh").is_file():
        spec["solution"] = [{"name": "solution/solve.sh", "script": "solution/solve.sh"}]
    else:
        warnings.append("no solution/solve.sh: imported without a reference solution (the oracle agent has "
                        "nothing to run)")
    verify_timeout = _positive(verifier.get("timeout_sec")) or DEFAULT_VERIFIER_TIMEOUT
    check: dict[str, Any] = {"type": "harbor_tests", "name": "Harbor tests", "script": "tests/test.sh",
                             "workdir": build.workdir, "timeout": min(verify_timeout, 7200.0)}
    env_vars = {k: v for k, v in build.env.items() if k not in ("PATH", "HOME")}
    if env_vars:
        check["env"] = literal(env_vars)
        warnings.append(f"ENV {', '.join(sorted(env_vars))} reach the Harbor tests but not the agent")
    memory = _memory_mb(env)
    if memory:
        check["memory_mb"] = memory
    spec["checks"] = [check]
    limits: dict[str, Any] = {}
    agent_timeout = _positive(agent.get("timeout_sec"))
    if agent_timeout:
        limits["seconds"] = agent_timeout
    limits["verify_seconds"] = min(verify_timeout, 7200.0) + 60
    if memory:
        limits["memory_mb"] = memory
    spec["limits"] = limits
    if env.get("allow_internet") is True:
        spec["network"] = True
    spec["mount"] = build.workdir
    test_sh = (folder / "tests" / "test.sh").read_text(encoding="utf-8", errors="replace")
    word = network_word(test_sh)
    if word:
        warnings.append(f"tests/test.sh looks like it needs the network ({word}), but the Harbor tests run "
                        "offline here: without it the check scores 0")
    return spec, warnings


def import_one(folder: Path, out: Path, name: str | None = None, sandbox: dict | None = None) -> Outcome:
    """Import one Harbor task folder into `out/<name>/`; never raises for a bad folder."""
    outcome = Outcome(source=folder.name, status="rejected")
    tmp: Path | None = None
    try:
        if not (folder / "instruction.md").is_file():
            raise Rejected("no instruction.md (the instruction given to the agent)")
        meta = read_toml(folder)
        if not (folder / "tests" / "test.sh").is_file():
            raise Rejected("no tests/test.sh (the verifier that writes the reward)")
        dockerfile = folder / "environment" / "Dockerfile"
        if not dockerfile.is_file():
            raise Rejected("no environment/Dockerfile (the workspace is built from it)")
        build = plan_build(dockerfile.read_text(encoding="utf-8", errors="replace"))
        name = name or spec_name(str(_section(meta, "task").get("name") or _section(meta, "metadata").get("name")
                                     or folder.name))
        target = out / name
        ensure_library(out)
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=out))
        os.chmod(tmp, 0o755)  # mkdtemp's 0700 would stay on the imported folder
        build_workspace(build, folder / "environment", tmp / "workspace", sandbox)
        spec, warnings = build_spec(folder, name, meta, build, tmp / "workspace")
        if not (folder / "task.toml").is_file():
            warnings.insert(0, "no task.toml: metadata, timeouts and resources left at their defaults")
        for sub in ("tests", "solution"):
            if (folder / sub).is_dir():
                shutil.copytree(folder / sub, tmp / sub, symlinks=True)
        comment = (f"Imported from the Harbor task folder {folder.name!r} by 'clawgym import harbor'.\n"
                   "workspace/ is what the Dockerfile puts into WORKDIR; tests/ and solution/ are the source\n"
                   "folders, unchanged. Grading runs tests/test.sh (check harbor_tests) after the agent stopped.")
        (tmp / "task.yaml").write_text(dump_spec(spec, comment), encoding="utf-8")
        _validate(tmp / "task.yaml")
        old = target.with_name(f".{target.name}.{os.getpid()}.old")
        if target.exists():
            target.rename(old)
        tmp.rename(target)
        tmp = None
        shutil.rmtree(old, ignore_errors=True)
    except Rejected as e:
        outcome.reasons.append(str(e))
        return outcome
    except (OSError, UnicodeDecodeError) as e:
        outcome.reasons.append(f"cannot read the task folder: {e}")
        return outcome
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    outcome.name, outcome.reasons = name, warnings
    outcome.status = "warned" if warnings else "imported"
    return outcome


def _validate(spec_file: Path) -> None:
    """The written spec must load and compile; otherwise the task is rejected with the problems."""
    from ..compile import compile_task, load_task_spec
    from ..errors import SpecError

    try:
        compile_task(load_task_spec(spec_file), 0)
    except SpecError as e:
        raise Rejected("the imported spec does not compile: " + "; ".join(p.what for p in e.problems[:3])) from None


# ---------------------------------------------------------------------------------------------
# Many folders


def is_task_folder(folder: Path) -> bool:
    return folder.is_dir() and any((folder / n).exists() for n in ("instruction.md", "task.toml", "environment",
                                                                       "tests"))


def discover(source: Path) -> list[Path]:
    """`source` itself if it is a task folder, else its task subfolders (sorted)."""
    if is_task_folder(source):
        return [source]
    return [d for d in sorted(source.iterdir()) if not d.name.startswith(".") and is_task_folder(d)]


def import_command(source: Path, out: Path, *, quiet: bool = False, console: Any = None,
                   sandbox: dict | None = None) -> list[Outcome]:
    """The CLI: import, print each warning and rejection, write the report, print the summary."""
    folders = discover(source)
    if not folders:
        raise ClawgymError(f"{source} holds no Harbor task folders",
                           hint="give a task folder (instruction.md, task.toml, environment/, tests/) "
                                "or a folder of them")
    out.mkdir(parents=True, exist_ok=True)
    ensure_library(out)
    outcomes: list[Outcome] = []
    seen: dict[str, int] = {}
    for folder in folders:
        try:
            meta = read_toml(folder)
        except (Rejected, ClawgymError):
            meta = {}
        base = spec_name(str(_section(meta, "task").get("name") or _section(meta, "metadata").get("name")
                             or folder.name))
        seen[base] = seen.get(base, 0) + 1
        name = base if seen[base] == 1 else f"{base[:60]}-{seen[base]}"
        outcome = import_one(folder, out, name, sandbox)
        outcomes.append(outcome)
        if console is not None and not quiet and outcome.status != "imported":
            label = "rejected" if outcome.status == "rejected" else "warning "
            for reason in outcome.reasons:
                console.print(f"{label} {outcome.source}: {reason}", highlight=False, markup=False)
    report = out / REPORT
    tmp = report.with_name(f".{REPORT}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for outcome in outcomes:
            fh.write(json.dumps(asdict(outcome), ensure_ascii=False) + "\n")
    os.replace(tmp, report)
    counts = {s: sum(o.status == s for o in outcomes) for s in ("imported", "warned", "rejected")}
    if console is not None:
        console.print(f"{len(outcomes)} Harbor task folder(s): {counts['imported']} imported, {counts['warned']} "
                      f"imported with warnings, {counts['rejected']} rejected; specs in {out}, report in {report}",
                      highlight=False, markup=False)
    return outcomes
