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
  build or a COPY outside WORKDIR rejects the task: its workspace cannot be built here (the
  Dockerfile part lives in `dockerfile.py`);
- `tests/` and `solution/`: the source folders, unchanged (never part of the workspace).

A bad folder is rejected (or imported with a warning) with its reason, never stopping the others.
`OUT/import-report.jsonl` records each folder's outcome and reasons.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ClawgymError, PrerequisiteError
from ..spec.write import dump_spec, literal
from .dockerfile import Build, DockerfileError, build_workspace, network_word, plan_environment
from .folders import spec_name, swap_in
from .library import ensure_library
from .outcomes import finish_import, print_reasons

REPORT = "import-report.jsonl"
DEFAULT_VERIFIER_TIMEOUT = 600.0
BOOTSTRAP_NAMES = ("AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "HEARTBEAT.md", "BOOTSTRAP.md")

# Harbor / Terminal-Bench categories → ours (unknown ones are left out and kept as a tag)
CATEGORIES = {
    "software": "software",
    "software-engineering": "software",
    "software-development": "software",
    "programming": "software",
    "coding": "software",
    "debugging": "software",
    "build": "software",
    "compilation": "software",
    "web-development": "software",
    "testing": "software",
    "systems": "systems",
    "system-administration": "systems",
    "sysadmin": "systems",
    "devops": "systems",
    "file-operations": "systems",
    "file-system": "systems",
    "automation": "systems",
    "networking": "systems",
    "security": "systems",
    "scripting": "systems",
    "analysis": "analysis",
    "data-analysis": "analysis",
    "data-science": "analysis",
    "data-processing": "analysis",
    "mathematics": "analysis",
    "math": "analysis",
    "statistics": "analysis",
    "machine-learning": "analysis",
    "scientific-computing": "analysis",
    "content": "content",
    "writing": "content",
    "text-processing": "content",
    "documentation": "content",
    "planning": "planning",
    "research": "planning",
    "knowledge": "planning",
    "productivity": "productivity",
    "office": "productivity",
    "spreadsheets": "productivity",
}


class Rejected(Exception):
    """This task folder cannot be imported; the message says why."""


@dataclass
class Outcome:
    """What happened to one source folder."""

    source: str
    status: str  # imported | warned | rejected
    name: str | None = None  # the spec folder under OUT
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
            raise PrerequisiteError(
                "reading task.toml needs Python 3.11 or the tomli package", hint="pip install tomli"
            ) from None
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
# One folder


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
    task_sec, md, verifier, agent, env = (
        _section(meta, s) for s in ("task", "metadata", "verifier", "agent", "environment")
    )
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
        warnings.append(
            "no solution/solve.sh: imported without a reference solution (the oracle agent has nothing to run)"
        )
    verify_timeout = _positive(verifier.get("timeout_sec")) or DEFAULT_VERIFIER_TIMEOUT
    check: dict[str, Any] = {
        "type": "harbor_tests",
        "name": "Harbor tests",
        "script": "tests/test.sh",
        "workdir": build.workdir,
        "timeout": min(verify_timeout, 7200.0),
    }
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
        warnings.append(
            f"tests/test.sh looks like it needs the network ({word}), but the Harbor tests run "
            "offline here: without it the check scores 0"
        )
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
        build = plan_environment(folder / "environment")
        name = name or spec_name(
            str(_section(meta, "task").get("name") or _section(meta, "metadata").get("name") or folder.name)
        )
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
        comment = (
            f"Imported from the Harbor task folder {folder.name!r} by 'clawgym import harbor'.\n"
            "workspace/ is what the Dockerfile puts into WORKDIR; tests/ and solution/ are the source\n"
            "folders, unchanged. Grading runs tests/test.sh (check harbor_tests) after the agent stopped."
        )
        (tmp / "task.yaml").write_text(dump_spec(spec, comment), encoding="utf-8")
        _validate(tmp / "task.yaml")
        swap_in(tmp, target)
        tmp = None
    except (Rejected, DockerfileError) as e:
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
    from ..compile.compiler import compile_task, load_task_spec
    from ..errors import SpecError

    try:
        compile_task(load_task_spec(spec_file), 0)
    except SpecError as e:
        raise Rejected("the imported spec does not compile: " + "; ".join(p.what for p in e.problems[:3])) from None


# ---------------------------------------------------------------------------------------------
# Many folders


def is_task_folder(folder: Path) -> bool:
    return folder.is_dir() and any(
        (folder / n).exists() for n in ("instruction.md", "task.toml", "environment", "tests")
    )


def discover(source: Path) -> list[Path]:
    """`source` itself if it is a task folder, else its task subfolders (sorted)."""
    if is_task_folder(source):
        return [source]
    return [d for d in sorted(source.iterdir()) if not d.name.startswith(".") and is_task_folder(d)]


def import_command(
    source: Path, out: Path, *, quiet: bool = False, console: Any = None, sandbox: dict | None = None
) -> list[Outcome]:
    """The CLI: import, print each warning and rejection, write the report, print the summary."""
    folders = discover(source)
    if not folders:
        raise ClawgymError(
            f"{source} holds no Harbor task folders",
            hint="give a task folder (instruction.md, task.toml, environment/, tests/) or a folder of them",
        )
    out.mkdir(parents=True, exist_ok=True)
    ensure_library(out)
    outcomes: list[Outcome] = []
    seen: dict[str, int] = {}
    for folder in folders:
        try:
            meta = read_toml(folder)
        except (Rejected, ClawgymError):
            meta = {}
        base = spec_name(
            str(_section(meta, "task").get("name") or _section(meta, "metadata").get("name") or folder.name)
        )
        seen[base] = seen.get(base, 0) + 1
        name = base if seen[base] == 1 else f"{base[:60]}-{seen[base]}"
        outcome = import_one(folder, out, name, sandbox)
        outcomes.append(outcome)
        print_reasons(console, outcome, quiet)
    finish_import(outcomes, out, REPORT, "Harbor task folder", console)
    return outcomes
