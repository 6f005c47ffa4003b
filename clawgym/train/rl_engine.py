"""The rollout engine of a GRPO run (`rollout.server: {type: vllm}`): a vLLM engine started from
the trainer's own weights, sampling every rollout, and given the new weights after each update.

Weight sync goes through the engine's RL API, the way trainers that generate on vLLM do it:

1. `POST /pause?mode=wait`: no new tokens while the weights change (in-flight requests finish
   first; between GRPO steps there are none);
2. `POST /collective_rpc {"method": "reload_weights", "kwargs": {"weights_path": FOLDER}}`: every
   worker reloads its weights in place from the folder the trainer just saved (safetensors; LoRA
   merged);
3. `POST /reset_prefix_cache`: no prompt reuses a KV cache computed by the old weights;
4. `POST /update_weight_version {"new_version": N}` and `POST /resume`.

A model whose output head is tied to its input embeddings (SmolLM2) is saved without an
`lm_head.weight`; vLLM's in-place reload then refreshes the embeddings and leaves the head on the
old tensor, so the head is written out next to the weights as well (`tied-lm-head.safetensors`).

Then a fixed probe text's log-probabilities are asked of the engine (`prompt_logprobs`) and
compared with the trainer's own: a sync that did not take (a wrong folder, a worker that kept its
old weights) fails the step instead of training silently off-policy. Before each step's rollouts
the engine's weight version (`GET /weight_info`) must be the trainer's step.

Reloading from disk works on every device (and is the only path on CPU). vLLM's in-memory
transfers (NCCL or CUDA IPC through `/init_weight_transfer_engine` and `/update_weights`) skip the
disk on a GPU; they are not wired here (no GPU to test them on), so a GPU run pays one safetensors
write and read per step: about a second for a 1B model on local NVMe.

The RL and `collective_rpc` routes exist only in vLLM's dev mode (`VLLM_SERVER_DEV_MODE=1`); the
engine listens on 127.0.0.1, which sandboxes cannot reach (they have no network, or only the
task's allowed hosts), so no agent can call them.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ClawgymError

SERVED_NAME = "policy"
PROBE_TEXT = (
    "Meeting notes, Tuesday: the budget review moved to Friday at 10:00. Dana will send the "
    "updated spreadsheet to finance; the invoices from March are still missing two receipts."
)
# How far the engine's probe log-probabilities may sit from the trainer's after a sync (mean
# absolute difference per token, nats). Same weights in float32 agree to ~1e-5 (measured on CPU);
# bfloat16 kernels of an engine and a trainer differ by ~1e-2 on average. A stale engine is far
# past this: one optimiser step moves a probe token's log-probability by ~0.1 or more.
PROBE_TOLERANCE = 0.05
SYNC_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class SyncReport:
    """What one weight sync cost and what the probe saw."""

    version: int
    seconds: float
    probe_gap: float  # mean |engine − trainer| over the probe's tokens, after the sync
    probe_shift: float | None  # mean |after − before| of the engine's probe: the weights did change


class RolloutEngine:
    """One vLLM engine serving the trainer's weights (see the module docstring)."""

    def __init__(self, server: dict[str, Any], *, max_concurrency: int):
        self.config = server
        self.max_concurrency = int(server.get("max_concurrency") or max_concurrency)
        self.process: Any = None
        self.folder: Path | None = None
        self.probe_ids: list[int] = []
        self.last_probe: list[float] | None = None

    # ------------------------------------------------------------------ life
    def start(self, folder: Path, version: int) -> "RolloutEngine":
        """Start the engine on the model folder the trainer saved (its weights at `version`)."""
        from ..engines.vllm import EngineSettings, VLLMServer

        engine = dict(self.config.get("engine") or {})
        engine["env"] = {**(engine.get("env") or {}), "VLLM_SERVER_DEV_MODE": "1"}
        settings = EngineSettings.from_config(
            {
                "model": str(folder.resolve()),
                "served_model_name": SERVED_NAME,
                "max_concurrency": self.max_concurrency,
                "engine": engine,
            }
        )
        self.folder = folder.resolve()
        self.process = VLLMServer(settings).start()
        self.stamp_version(version)
        return self

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None

    @property
    def base_url(self) -> str:
        assert self.process is not None, "the engine is not started"
        return str(self.process.base_url)

    @property
    def log(self) -> str:
        return str(self.process.log) if self.process is not None else ""

    def policy(self, sampling: dict[str, Any], chat_template: str | None) -> dict[str, Any]:
        """The `vllm` policy config of the rollouts: this engine, token ids and log-probabilities."""
        assert self.folder is not None
        policy: dict[str, Any] = {
            "type": "vllm",
            "model": str(self.folder),  # where the prompt's tokenizer and chat template come from
            "base_url": self.base_url,
            "served_model_name": SERVED_NAME,
            "max_concurrency": self.max_concurrency,
            "timeout": float(self.config.get("timeout", 600)),
            **sampling,
        }
        if chat_template:
            policy["chat_template"] = chat_template
        return policy

    # ------------------------------------------------------------------ weights
    def sync(self, folder: Path, version: int, trainer_probe: list[float]) -> SyncReport:
        """Load the weights saved in `folder` into the engine (paused meanwhile), stamp `version`,
        and check with the probe that it now computes what the trainer computes."""
        start = time.monotonic()
        self._post("/pause?mode=wait", {})
        try:
            self._post(
                "/collective_rpc",
                {
                    "method": "reload_weights",
                    "kwargs": {"weights_path": str(folder.resolve())},
                    "timeout": SYNC_TIMEOUT_S,
                },
            )
            self._post("/reset_prefix_cache", {})
            self.stamp_version(version)
        finally:
            self._post("/resume", {})
        seconds = time.monotonic() - start
        before = self.last_probe
        after = self.probe()
        gap = mean_gap(after, trainer_probe)
        if gap > PROBE_TOLERANCE:
            raise ClawgymError(
                f"after loading the step-{version} weights the engine's log-probabilities of a probe text "
                f"differ from the trainer's by {gap:.4f} per token (at most {PROBE_TOLERANCE} allowed): "
                f"the engine is not serving the trainer's weights (its log: {self.log})",
                key="rollout.server",
                hint="check the engine's log for a reload error; a model vLLM cannot reload in place "
                "needs rollout.server.type openai with a server that loads folders",
            )
        return SyncReport(version, seconds, gap, mean_gap(after, before) if before is not None else None)

    def stamp_version(self, version: int) -> None:
        """Take `version` as the weights' version without loading any (a step that did not update)."""
        self._post("/update_weight_version", {"new_version": str(version)})

    def serving_version(self) -> str | None:
        """The weight version the engine says it serves."""
        from ..engines.vllm import http_json

        status, data = http_json(self.process.url + "/weight_info", timeout=30)
        return str(data.get("weight_version")) if status == 200 and isinstance(data, dict) else None

    def check_version(self, version: int) -> None:
        found = self.serving_version()
        if found != str(version):
            raise ClawgymError(
                f"the rollout engine serves weight version {found!r}, the trainer is at step {version}",
                key="rollout.server",
                hint=f"the engine missed a weight sync; its log: {self.log}",
            )

    def probe(self) -> list[float]:
        """The engine's log-probabilities (temperature 1) of the probe text's tokens after the first."""
        from ..engines.vllm import http_json

        body = {
            "model": SERVED_NAME,
            "prompt": self.probe_ids,
            "max_tokens": 1,
            "temperature": 1.0,
            "prompt_logprobs": 0,
        }
        status, data = http_json(self.base_url + "/completions", body, timeout=120)
        try:
            rows = data["choices"][0]["prompt_logprobs"][1:]
            values = [float(next(iter(row.values()))["logprob"]) for row in rows]
        except (TypeError, KeyError, IndexError, StopIteration, ValueError):
            raise ClawgymError(
                f"the rollout engine did not return the probe's log-probabilities (HTTP {status}): {str(data)[:300]}",
                key="rollout.server",
            ) from None
        self.last_probe = values
        return values

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        from ..engines.vllm import http_json

        status, data = http_json(self.process.url + path, body, timeout=SYNC_TIMEOUT_S)
        if status != 200:
            raise ClawgymError(
                f"the rollout engine refused POST {path.split('?')[0]} (HTTP {status}): {str(data)[:300]}",
                key="rollout.server",
                hint=f"the engine's log: {self.log}",
            )
        return data


TIED_HEAD = "tied-lm-head.safetensors"


def add_tied_head(folder: Path, model: Any) -> None:
    """Write a tied output head as its own tensor (see the module docstring), listed in the
    folder's shard index when it has one."""
    import json

    from safetensors.torch import save_file

    config = getattr(model, "config", None)
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if not getattr(config, "tie_word_embeddings", False) or head is None:
        return
    weight = head.weight.detach().to("cpu").contiguous()
    save_file({"lm_head.weight": weight}, str(folder / TIED_HEAD), metadata={"format": "pt"})
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        data = json.loads(index.read_text(encoding="utf-8"))
        data.setdefault("weight_map", {})["lm_head.weight"] = TIED_HEAD
        index.write_text(json.dumps(data, indent=2), encoding="utf-8")


def probe_ids(tokenizer: Any) -> list[int]:
    return list(tokenizer(PROBE_TEXT, add_special_tokens=False)["input_ids"])


def trainer_probe(model: Any, ids: list[int], device: Any) -> list[float]:
    """The trainer's log-probabilities (temperature 1) of `ids[1:]` given what precedes each."""
    import torch

    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids], device=device), use_cache=False).logits[0].float()
        logp = torch.log_softmax(logits[:-1], dim=-1)
        return [float(v) for v in logp.gather(1, torch.tensor(ids[1:], device=device)[:, None])[:, 0]]
    finally:
        model.train(was_training)


def mean_gap(a: list[float], b: list[float]) -> float:
    if len(a) != len(b) or not a:
        return math.inf
    return sum(abs(x - y) for x, y in zip(a, b)) / len(a)
