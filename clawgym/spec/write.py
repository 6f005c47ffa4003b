"""Write specs back out as YAML a person can review: block-style text, declaration order, Jinja kept literal."""

from __future__ import annotations

from typing import Any

import yaml

from .load import SCALARS

_MARKERS = ("{{", "{%", "{#")

try:  # libyaml's emitter is several times faster
    _BaseDumper = yaml.CSafeDumper  # type: ignore[attr-defined]
except AttributeError:  # pragma: no cover - libyaml missing
    _BaseDumper = yaml.SafeDumper


class _Dumper(_BaseDumper):  # type: ignore[misc, valid-type]
    """Block style for multi-line strings, declaration order for mappings."""


def _str(dumper: Any, value: str) -> yaml.Node:
    if "\n" in value and not any(line != line.rstrip() for line in value.split("\n")) and "\t" not in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    if any(regexp.match(value) for _, regexp, _ in SCALARS):  # "1818e81" would load back as a float
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="'")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str)


def literal(value: Any) -> Any:
    """Protect strings that look like Jinja, so compiling the spec gives them back unchanged."""
    if isinstance(value, str) and any(m in value for m in _MARKERS):
        return "{% raw %}" + value + "{% endraw %}"
    if isinstance(value, dict):
        return {k: literal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [literal(v) for v in value]
    return value


def dump_spec(spec: dict, comment: str = "") -> str:
    """YAML text of a spec, with a comment block on top."""
    head = "".join(f"# {line}\n" if line else "#\n" for line in comment.splitlines())
    return head + yaml.dump(spec, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=110)
