"""Policies (model backends): `openai`, `hf`, `scripted`. Heavy ones import their libraries lazily."""

from .base import Completion, Policy, PolicyError, make_policy
from . import scripted as _scripted  # noqa: F401  (registers `scripted`)

__all__ = ["Completion", "Policy", "PolicyError", "make_policy"]
