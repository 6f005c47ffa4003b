"""Agent configs from command-line style options (`--agent`, `--model`, `--base-url`, ...): what
`clawgym run` and `clawgym bench run` both turn their options into."""

from __future__ import annotations

from ..errors import ClawgymError

MODEL_AGENTS = ("claw", "command", "openclaw")
VERSIONED_AGENTS = ("openclaw",)  # `--agent openclaw@2026.9.6` pins a version


def policy_config(
    model: str | None, base_url: str | None, temperature: float | None, max_tokens: int | None = None
) -> dict:
    """The policy a model-driven agent uses, from the command-line options: `vllm:MODEL` is the
    `vllm` policy (an engine started for the run, or the vLLM server at `base_url`)."""
    if model and model.startswith("vllm:"):
        name = model[len("vllm:") :]
        if not name:
            raise ClawgymError("--model vllm: needs a model", hint="e.g. --model vllm:embedded or vllm:PATH")
        config = {"type": "vllm", "model": name, **({"base_url": base_url} if base_url else {})}
    elif base_url:
        if not model:
            raise ClawgymError("--base-url needs --model (the endpoint's model name)")
        config = {"type": "openai", "model": model, "base_url": base_url}
    else:
        config = {"type": "hf", "model": model or "embedded"}
    if temperature is not None:
        config["temperature"] = temperature
    if max_tokens is not None:
        config["max_tokens"] = max_tokens
    return config


def agent_configs(
    agents: list[str],
    *,
    model: str | None = None,
    base_url: str | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    max_turns: int | None = None,
) -> list[dict]:
    """Agent configs for `--agent` options; model options apply to model-driven agents."""
    from ..registry import get

    configs = []
    names = []
    for spec in agents:
        name, _, version = spec.partition("@")
        if version and name not in VERSIONED_AGENTS:
            raise ClawgymError(
                f"--agent {spec}: only {', '.join(VERSIONED_AGENTS)} takes a version", hint=f"write --agent {name}"
            )
        get("agent", name)  # an unknown agent fails here, with the closest names
        config: dict = {"type": name}
        if version:
            config["version"] = version
            config["name"] = f"{name}-{version}"
        names.append(name)
        if name in MODEL_AGENTS:
            config["policy"] = policy_config(model, base_url, temperature, max_tokens)
        if name in ("claw", "openclaw") and max_turns is not None:
            config["max_turns"] = max_turns
        configs.append(config)
    if (model or base_url) and not any(a in MODEL_AGENTS for a in names):
        raise ClawgymError("--model and --base-url apply to model-driven agents", hint="add --agent claw")
    return configs
