"""Agent configs from command-line style options (`--agent`, `--model`, `--base-url`, ...): what
`clawgym run` and `clawgym bench run` both turn their options into."""

from __future__ import annotations

from ..errors import ClawgymError

MODEL_AGENTS = ("claw", "command")


def policy_config(model: str | None, base_url: str | None, temperature: float | None,
                  max_tokens: int | None = None) -> dict:
    """The policy a model-driven agent uses, from the command-line options."""
    if base_url:
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


def agent_configs(agents: list[str], *, model: str | None = None, base_url: str | None = None,
                  temperature: float | None = None, max_tokens: int | None = None,
                  max_turns: int | None = None) -> list[dict]:
    """Agent configs for `--agent` options; model options apply to model-driven agents."""
    from ..registry import get

    configs = []
    for name in agents:
        get("agent", name)  # an unknown agent fails here, with the closest names
        config: dict = {"type": name}
        if name in MODEL_AGENTS:
            config["policy"] = policy_config(model, base_url, temperature, max_tokens)
        if name == "claw" and max_turns is not None:
            config["max_turns"] = max_turns
        configs.append(config)
    if (model or base_url) and not any(a in MODEL_AGENTS for a in agents):
        raise ClawgymError("--model and --base-url apply to model-driven agents",
                           hint="add --agent claw")
    return configs
