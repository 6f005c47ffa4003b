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
"""

from __future__ import annotations

import threading
import time
from typing import Any

from ..errors import ClawgymError, PrerequisiteError
from ..registry import register
from .base import COMMON_POLICY_PROPS, Completion, Policy, PolicyError
from .chat_format import read_template, render_chat, tools_supported
from .embedded import INSTALL_HINT, embedded_model_path
from .toolcalls import parse_tool_calls

_CACHE: dict[tuple[str, str, str], "_Loaded"] = {}
_CACHE_LOCK = threading.Lock()
_END_TOKENS = ("<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<|end|>", "<|endoftext|>", "</s>")


class _Loaded:
    def __init__(self, tokenizer: Any, model: Any, device: str):
        self.tokenizer, self.model, self.device = tokenizer, model, device
        self.lock = threading.Lock()


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
                raise PrerequisiteError(f"the hf policy needs PyTorch and transformers ({exc})",
                                        hint=INSTALL_HINT) from None
            hf_logging.disable_progress_bar()
            _IMPORTS.update(torch=torch, AutoModelForCausalLM=AutoModelForCausalLM, AutoTokenizer=AutoTokenizer,
                            GenerationConfig=GenerationConfig)
        return _IMPORTS


def load_model(model: str, device: str = "auto", dtype: str = "auto") -> _Loaded:
    """Load (once per process) a tokenizer and causal LM."""
    libs = _libs()
    torch, AutoModelForCausalLM, AutoTokenizer = libs["torch"], libs["AutoModelForCausalLM"], libs["AutoTokenizer"]
    path = _resolve(model)
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if dtype == "auto":
        dtype = "bfloat16" if device.startswith("cuda") and torch.cuda.is_bf16_supported() else "float32"
    key = (path, device, dtype)
    with _CACHE_LOCK:
        if key not in _CACHE:
            try:
                tokenizer = AutoTokenizer.from_pretrained(path)
                lm = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype))
            except (OSError, ValueError) as exc:
                raise ClawgymError(f"cannot load the model {model!r}: {str(exc).splitlines()[0][:300]}",
                                   key="policy.model",
                                   hint="give a local Hugging Face model folder, a hub id, or 'embedded'") from None
            lm.to(device).eval()
            _CACHE[key] = _Loaded(tokenizer, lm, device)
        return _CACHE[key]


@register("policy", "hf")
class HFPolicy(Policy):
    """A Hugging Face causal LM run in this process (CPU or GPU)."""

    type = "hf"
    schema = {"type": "object", "additionalProperties": False, "properties": {
        **COMMON_POLICY_PROPS,
        "model": {"type": "string", "default": "embedded",
                  "description": "Local model folder, hub id, or 'embedded' (SmolLM2-135M-Instruct)."},
        "device": {"type": "string", "default": "auto", "description": "auto, cpu, cuda or cuda:N."},
        "dtype": {"enum": ["auto", "float32", "bfloat16", "float16"], "default": "auto",
                  "description": "Weights dtype; auto: bfloat16 on a GPU that has it, else float32."},
        "max_new_tokens": {"type": "integer", "minimum": 1, "description": "Alias of max_tokens."},
        "chat_template": {"type": ["string", "null"], "default": None,
                          "description": "A Jinja chat template (text or a file path) replacing the model's."},
    }}

    def __init__(self, config: dict[str, Any]):
        super().__init__({"model": "embedded", **config})
        if "max_new_tokens" in self.config and "max_tokens" not in self.config:
            self.config["max_tokens"] = self.config["max_new_tokens"]
        self._template: str | None = read_template(self.config.get("chat_template"))
        self._loaded = load_model(self.config["model"], self.config.get("device", "auto"),
                                  self.config.get("dtype", "auto"))
        self.tokenizer = self._loaded.tokenizer
        self._tools_native: bool | None = None
        self._eos_ids = self._end_ids()

    def _end_ids(self) -> list[int]:
        tok, ids = self.tokenizer, set()
        eos = self._loaded.model.generation_config.eos_token_id
        ids.update(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        if tok.eos_token_id is not None:
            ids.add(tok.eos_token_id)
        vocab = tok.get_vocab()
        ids.update(vocab[t] for t in _END_TOKENS if t in vocab)
        return sorted(ids)

    def _render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
        if tools and self._tools_native is None:
            self._tools_native = tools_supported(self.tokenizer, tools, chat_template=self._template)
        return render_chat(self.tokenizer, messages, tools, chat_template=self._template, add_generation_prompt=True,
                           tools_native=bool(self._tools_native))

    def prompt_ids(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> list[int]:
        """The token ids of the prompt this policy would generate from."""
        text = self._render(messages, tools)
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def token_strings(self, ids: list[int]) -> list[str]:
        """Each token id decoded on its own (for OpenAI-style logprobs)."""
        return [self.tokenizer.decode([i]) for i in ids]

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                 **sampling: Any) -> Completion:
        libs = _libs()
        torch, GenerationConfig = libs["torch"], libs["GenerationConfig"]
        settings = self.sampling(sampling)
        start = time.monotonic()
        prompt = self.prompt_ids(messages, tools)
        temperature = float(settings["temperature"])
        do_sample = temperature > 0
        gen = GenerationConfig(max_new_tokens=int(settings["max_tokens"]), do_sample=do_sample,
                               temperature=temperature if do_sample else 1.0,
                               top_p=float(settings["top_p"]) if do_sample else 1.0, top_k=0,
                               repetition_penalty=1.0, min_new_tokens=0,
                               eos_token_id=self._eos_ids, pad_token_id=self._eos_ids[0] if self._eos_ids else None,
                               output_logits=True, return_dict_in_generate=True)
        model, loaded = self._loaded.model, self._loaded
        inputs = torch.tensor([prompt], device=loaded.device)
        try:
            with loaded.lock, torch.inference_mode():
                if settings.get("seed") is not None:
                    torch.manual_seed(int(settings["seed"]))
                out = model.generate(input_ids=inputs, attention_mask=torch.ones_like(inputs), generation_config=gen)
        except torch.cuda.OutOfMemoryError as exc:
            raise PolicyError(f"hf model {self.config['model']!r} ran out of GPU memory: {exc}") from None
        ids = out.sequences[0, len(prompt):].tolist()
        logits = torch.stack(out.logits, dim=0)[:, 0, :].float()
        scale = temperature if do_sample else 1.0
        logprobs = torch.log_softmax(logits / scale, dim=-1).gather(1, torch.tensor(ids, device=logits.device)[:, None])
        logprobs_list = [float(x) for x in logprobs[:, 0].tolist()]
        ended = bool(ids) and ids[-1] in self._eos_ids
        text = self.tokenizer.decode(ids[:-1] if ended else ids, skip_special_tokens=False)
        content, calls = parse_tool_calls(text, [t["function"]["name"] for t in tools or [] if "function" in t])
        message: dict[str, Any] = {"role": "assistant", "content": content or (None if calls else "")}
        if calls:
            message["tool_calls"] = calls
        finish = "tool_calls" if calls else ("stop" if ended else "length")
        return Completion(message=message, finish_reason=finish,
                          usage={"prompt_tokens": len(prompt), "completion_tokens": len(ids),
                                 "total_tokens": len(prompt) + len(ids)},
                          prompt_token_ids=prompt, token_ids=ids, logprobs=logprobs_list, raw_text=text,
                          latency_s=time.monotonic() - start)

    def describe(self) -> dict[str, Any]:
        return super().describe() | {"device": self._loaded.device,
                                     "dtype": str(self._loaded.model.dtype).replace("torch.", "")}
