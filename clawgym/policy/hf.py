"""`hf`: a transformers causal LM in-process, returning sampled token ids and log-probabilities.

The prompt comes from `chat_format.render_chat` (shared with the SFT data, so training sees the
same text): the tokenizer's chat template with the tool schemas, or, for a template that ignores
`tools` (SmolLM2's, for one), the schemas in the system message with our own instructions to answer
in the Hermes `<tool_call>` format, and tool calls and results in the history as text in that
format too. Tool calls are parsed out of the generated text by `toolcalls.parse_tool_calls`.

`logprobs[i]` is log softmax(logits / T)[token_ids[i]]: the policy's own distribution after
temperature T (T = 1 when greedy), before top-p truncation. It equals the distribution sampled
from when top_p = 1 (no top-k is applied). The model's stored generation defaults (top-k,
repetition penalty...) are not used, so what is sampled is exactly what these settings say.
Models load once per (model, device, dtype) per process; generation is serialised by a lock.

With `max_batch` > 1, concurrent `complete` calls on one model (the trials of an RL rollout, as
threads of one process) are generated together in batches by the model's `BatchedGenerator`
(`hf_batch`); the results per call are the same as unbatched ones, except that `seed` is ignored.
`attach_model` serves a model already in memory (one being trained) as `live:<name>`.

A prompt that fills the model's context window (`context_window`, else the model config's
`max_position_embeddings`) raises ContextOverflow before anything is generated; otherwise at most
the room left in the window is generated. A generation stops early (PolicyError) when the calling
trial is cancelled (the recording proxy cancels a request whose client hung up) and when the
interpreter exits: no thread may still be inside torch while the process tears its libraries down,
which aborts it (`terminate called without an active exception`).
"""

from __future__ import annotations

import atexit
import functools
import threading
import time
from typing import Any, Callable

from .. import trial_controls as control
from ..errors import ClawgymError, PrerequisiteError
from ..registry import register
from .base import COMMON_POLICY_PROPS, Completion, Policy, PolicyError
from .chat_format import read_template, render_chat, tools_supported
from .embedded import INSTALL_HINT, embedded_model_path
from .hf_batch import BatchedGenerator, Generated, generate_rows, settings_key
from .prompt import end_token_ids, room_to_generate, turn_from_tokens

_CACHE: dict[tuple[str, str, str], "_Loaded"] = {}
_LIVE: dict[str, "_Loaded"] = {}  # attach_model's models, by name without the `live:` prefix
_CACHE_LOCK = threading.Lock()
_WINDOW_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")
_EXITING = threading.Event()  # set at interpreter exit: every generation stops at its next token
_EXIT_HOOK: list[bool] = []  # registered yet?
_EXIT_WAIT_S = 120.0  # how long exit waits for a generation to reach its next token (a long prefill)


class _Loaded:
    def __init__(self, tokenizer: Any, model: Any, device: str):
        self.tokenizer, self.model, self.device = tokenizer, model, device
        self.lock = threading.Lock()  # held while generating
        self._batcher: BatchedGenerator | None = None
        self._batcher_lock = threading.Lock()  # not `lock`: callers must reach the queue while a batch runs
        self.busy_s = 0.0  # wall seconds spent generating (RL logs the time rollouts wait on anything else)

    def generate(self, *args: Any, **kwargs: Any) -> list[Generated]:
        """`generate_rows` on this model, timed into `busy_s`; the caller holds `lock`."""
        start = time.monotonic()
        try:
            return generate_rows(*args, **kwargs)
        finally:
            self.busy_s += time.monotonic() - start

    def batcher(self, max_batch: int, batch_wait_ms: float, eos_ids: list[int], name: str) -> BatchedGenerator:
        """This model's one BatchedGenerator, made on first use. Policies sharing the model share
        it: it batches up to the largest `max_batch` any of them asked for (the first one's wait)."""
        with self._batcher_lock:
            if self._batcher is None or self._batcher.closed:
                run = functools.partial(
                    self.generate, _libs(), self.model, self.device, eos_ids, name, should_stop=exiting
                )
                self._batcher = BatchedGenerator(run, self.lock, max_batch, batch_wait_ms)
            self._batcher.max_batch = max(self._batcher.max_batch, max_batch)
            return self._batcher

    def close_batcher(self) -> None:
        if self._batcher is not None:
            self._batcher.close()


def _resolve(model: str) -> str:
    return str(embedded_model_path()) if model == "embedded" else model


_IMPORTS: dict[str, Any] = {}


def _libs() -> dict[str, Any]:
    """torch and the transformers classes, imported once under a lock: transformers' lazy module
    is not safe to import from several threads at once."""
    with _CACHE_LOCK:
        if not _IMPORTS:
            try:
                import torch
                from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig
                from transformers.utils import logging as hf_logging
            except ImportError as exc:
                raise PrerequisiteError(
                    f"the hf policy needs PyTorch and transformers ({exc})", hint=INSTALL_HINT
                ) from None
            hf_logging.disable_progress_bar()
            _IMPORTS.update(
                torch=torch,
                AutoModelForCausalLM=AutoModelForCausalLM,
                AutoTokenizer=AutoTokenizer,
                GenerationConfig=GenerationConfig,
            )
        return _IMPORTS


def attach_model(name: str, tokenizer: Any, model: Any, device: str) -> str:
    """Serve a tokenizer and causal LM already in memory (the RL trainer's, trained between rollout
    phases) as the policy model `live:<name>`, which is returned. The caller keeps the model in
    eval mode on `device` while rollouts run; attaching the same model again changes nothing."""
    with _CACHE_LOCK:
        old = _LIVE.get(name)
        if old is not None and old.model is model and old.tokenizer is tokenizer and old.device == device:
            return f"live:{name}"
        _LIVE[name] = _Loaded(tokenizer, model, device)
        _stop_at_exit()
    if old is not None:
        old.close_batcher()
    return f"live:{name}"


def generation_busy_s(model: str) -> float:
    """Seconds the attached `live:` model has spent generating so far (0.0 when not attached)."""
    with _CACHE_LOCK:
        loaded = _LIVE.get(model.removeprefix("live:"))
    return loaded.busy_s if loaded is not None else 0.0


def detach_model(name: str) -> None:
    """Forget `live:<name>` (policies made from it keep working until dropped)."""
    with _CACHE_LOCK:
        old = _LIVE.pop(name.removeprefix("live:"), None)
    if old is not None:
        old.close_batcher()


def load_model(model: str, device: str = "auto", dtype: str = "auto", *, fresh: bool = False) -> _Loaded:
    """Load (once per process) a tokenizer and causal LM; `live:<name>` is an attached one
    (its device and dtype are its own: `device` and `dtype` do not apply). `fresh` reads the
    folder again even when it was loaded before (its weights changed: an RL trainer's sync)."""
    if model.startswith("live:"):
        with _CACHE_LOCK:
            if model[5:] in _LIVE:
                return _LIVE[model[5:]]
        raise ClawgymError(
            f"no in-memory model is attached as {model!r}",
            key="policy.model",
            hint="live:<name> names a model given to clawgym.policy.hf.attach_model in this "
            "process; give a model folder, a hub id or 'embedded' otherwise",
        )
    libs = _libs()
    torch, AutoModelForCausalLM, AutoTokenizer = libs["torch"], libs["AutoModelForCausalLM"], libs["AutoTokenizer"]
    path = _resolve(model)
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if dtype == "auto":
        dtype = "bfloat16" if device.startswith("cuda") and torch.cuda.is_bf16_supported() else "float32"
    key = (path, device, dtype)
    with _CACHE_LOCK:
        if fresh and key in _CACHE:
            _CACHE.pop(key).close_batcher()
        if key not in _CACHE:
            try:
                tokenizer = AutoTokenizer.from_pretrained(path)
                lm = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype))
            except (OSError, ValueError) as exc:
                raise ClawgymError(
                    f"cannot load the model {model!r}: {str(exc).splitlines()[0][:300]}",
                    key="policy.model",
                    hint="give a local Hugging Face model folder, a hub id, or 'embedded'",
                ) from None
            lm.to(device).eval()
            _stop_at_exit()
            _CACHE[key] = _Loaded(tokenizer, lm, device)
        return _CACHE[key]


def exiting() -> bool:
    """Whether the interpreter is exiting (generations stop: see `_stop_generations`)."""
    return _EXITING.is_set()


def _stop_at_exit() -> None:
    """Register `_stop_generations` to run at interpreter exit (once; the caller holds _CACHE_LOCK)."""
    if not _EXIT_HOOK:
        atexit.register(_stop_generations)
        _EXIT_HOOK.append(True)


def _stop_generations() -> None:
    """At interpreter exit, stop the generations other threads still run (a request whose agent
    went away, still generating in a server thread) and wait until each model's lock is free."""
    _EXITING.set()
    with _CACHE_LOCK:
        loaded = list(_CACHE.values()) + list(_LIVE.values())
    for item in loaded:
        item.close_batcher()
        if item.lock.acquire(timeout=_EXIT_WAIT_S):
            item.lock.release()


def model_context_window(model: Any) -> int | None:
    """The most positions a causal LM's config says it takes (None when it says nothing)."""
    config = getattr(model, "config", None)
    for key in _WINDOW_KEYS:
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


@register("policy", "hf")
class HFPolicy(Policy):
    """A Hugging Face causal LM run in this process (CPU or GPU)."""

    type = "hf"
    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            **COMMON_POLICY_PROPS,
            "model": {
                "type": "string",
                "default": "embedded",
                "description": "Local model folder, hub id, 'embedded' (SmolLM2-135M-Instruct), or "
                "live:<name> (a model in memory, see attach_model).",
            },
            "device": {"type": "string", "default": "auto", "description": "auto, cpu, cuda or cuda:N."},
            "dtype": {
                "enum": ["auto", "float32", "bfloat16", "float16"],
                "default": "auto",
                "description": "Weights dtype; auto: bfloat16 on a GPU that has it, else float32.",
            },
            "max_new_tokens": {"type": "integer", "minimum": 1, "description": "Alias of max_tokens."},
            "chat_template": {
                "type": ["string", "null"],
                "default": None,
                "description": "A Jinja chat template (text or a file path) replacing the model's.",
            },
            "context_window": {
                "type": ["integer", "null"],
                "minimum": 2,
                "default": None,
                "description": "Most tokens (prompt + completion) the model takes; default: its config's "
                "max_position_embeddings. A longer prompt is a context overflow.",
            },
            "max_batch": {
                "type": "integer",
                "minimum": 1,
                "default": 1,
                "description": "Most concurrent calls on this model generated as one batch (1: each "
                "alone). Above 1, seed is ignored: it applies only when max_batch is 1.",
            },
            "batch_wait_ms": {
                "type": "number",
                "minimum": 0,
                "default": 5,
                "description": "How long a batch waits for more calls after the first arrives.",
            },
        },
    }

    def __init__(self, config: dict[str, Any]):
        super().__init__({"model": "embedded", **config})
        if "max_new_tokens" in self.config and "max_tokens" not in self.config:
            self.config["max_tokens"] = self.config["max_new_tokens"]
        self._template: str | None = read_template(self.config.get("chat_template"))
        self._loaded = load_model(
            self.config["model"], self.config.get("device", "auto"), self.config.get("dtype", "auto")
        )
        self.tokenizer = self._loaded.tokenizer
        self._tools_native: bool | None = None
        self._eos_ids = self._end_ids()

    def reload(self, model: str | None = None) -> None:
        """Serve new weights from `model` (default: the same folder, read again), e.g. those an RL
        trainer just saved; turns already being generated finish on the old weights."""
        model = model or self.config["model"]
        loaded = load_model(model, self.config.get("device", "auto"), self.config.get("dtype", "auto"), fresh=True)
        self._loaded, self.tokenizer, self.config["model"] = loaded, loaded.tokenizer, model
        self._tools_native = None
        self._eos_ids = self._end_ids()

    def _end_ids(self) -> list[int]:
        return end_token_ids(self.tokenizer, self._loaded.model.generation_config.eos_token_id)

    def _render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
        if tools and self._tools_native is None:
            self._tools_native = tools_supported(self.tokenizer, tools, chat_template=self._template)
        return render_chat(
            self.tokenizer,
            messages,
            tools,
            chat_template=self._template,
            add_generation_prompt=True,
            tools_native=bool(self._tools_native),
        )

    @property
    def context_window(self) -> int | None:
        """Most tokens (prompt + completion) the model takes: the config's `context_window`, else the model's."""
        given = self.config.get("context_window")
        return int(given) if given else model_context_window(self._loaded.model)

    def prompt_ids(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> list[int]:
        """The token ids of the prompt this policy would generate from."""
        text = self._render(messages, tools)
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def token_strings(self, ids: list[int]) -> list[str]:
        """Each token id decoded on its own (for OpenAI-style logprobs)."""
        return [self.tokenizer.decode([i]) for i in ids]

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, **sampling: Any
    ) -> Completion:
        settings = self.sampling(sampling)
        start = time.monotonic()
        prompt = self.prompt_ids(messages, tools)
        max_tokens = room_to_generate(prompt, int(settings["max_tokens"]), self.context_window, self.config["model"])
        key = settings_key(settings["temperature"], settings["top_p"], max_tokens)
        loaded, max_batch = self._loaded, int(self.config.get("max_batch", 1))
        if max_batch > 1:
            out = loaded.batcher(
                max_batch, float(self.config.get("batch_wait_ms", 5)), self._eos_ids, self.config["model"]
            ).generate(prompt, key)
        else:
            stop = _stopper(control.current().token)
            with loaded.lock:
                if stop():
                    raise _stopped()
                out = loaded.generate(
                    _libs(),
                    loaded.model,
                    loaded.device,
                    self._eos_ids,
                    self.config["model"],
                    [prompt],
                    key,
                    seed=settings.get("seed"),
                    should_stop=stop,
                )[0]
            if stop():  # cut short: the caller went away, or the process is exiting
                raise _stopped()
        return self._completion(prompt, out, tools, start)

    def _completion(
        self, prompt: list[int], out: Generated, tools: list[dict[str, Any]] | None, start: float
    ) -> Completion:
        """The assistant turn for sampled ids and their logprobs (tool calls parsed from the text)."""
        return turn_from_tokens(
            self.tokenizer,
            prompt,
            out.token_ids,
            out.logprobs,
            self._eos_ids,
            tools,
            latency_s=time.monotonic() - start,
        )

    def describe(self) -> dict[str, Any]:
        return super().describe() | {
            "device": self._loaded.device,
            "dtype": str(self._loaded.model.dtype).replace("torch.", ""),
        }


def _stopper(token: control.CancelToken) -> Callable[[], bool]:
    """Whether a generation for the trial of `token` should stop now."""
    return lambda: token.cancelled or _EXITING.is_set()


def _stopped() -> Exception:
    """The error of a generation cut short: the trial's cancellation, or the process exiting."""
    token = control.current().token
    if token.cancelled:
        return control.TrialCancelled(token.reason or "the request was cancelled")
    return PolicyError("generation stopped: the process is exiting")
