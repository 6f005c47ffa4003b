"""Policies (model backends): `openai`, `hf`, `vllm`, `scripted`. Heavy ones import their libraries lazily."""

from .base import Completion, ContextOverflow, Policy, PolicyError, RequestRejected, make_policy
from . import scripted as _scripted  # noqa: F401  (registers `scripted`)
from . import hf as _hf, openai as _openai  # noqa: F401  (register `hf`, `openai`; their libraries load lazily)
from . import vllm as _vllm  # noqa: F401  (registers `vllm`; the engine starts on first use)

__all__ = ["Completion", "ContextOverflow", "Policy", "PolicyError", "RequestRejected", "make_policy"]
