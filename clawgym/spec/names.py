"""Which names a template uses, and what to suggest when one of them is undefined.

Reads the Jinja syntax tree of a template: `data.guests`, `vars['total']` and `params.n` are
dotted names; an undefined attribute is explained against the mapping it was looked up on
(`data.guest` is compared with the keys of `data`, not with every key anywhere).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import jinja2
from jinja2 import nodes

from ..errors import did_you_mean

#: How many levels of a dotted name are kept (`vars.x`, `data.guests`, `persona.facts.pet`).
_DEPTH = 3


def _dotted(node: nodes.Node) -> list[str] | None:
    """`data.guests.x` as ['data', 'guests', 'x'], for a chain of attribute or constant-item lookups."""
    parts: list[str] = []
    while True:
        if isinstance(node, nodes.Getattr):
            parts.append(node.attr)
            node = node.node
        elif isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str):
            parts.append(node.arg.value)
            node = node.node
        elif isinstance(node, nodes.Name):
            parts.append(node.name)
            return parts[::-1]
        else:
            return None


_PARSER = jinja2.Environment()  # the syntax tree only: the rendering environment's options do not change it


@lru_cache(maxsize=4096)
def _parse(source: str) -> nodes.Template | None:
    try:
        return _PARSER.parse(source)
    except jinja2.TemplateSyntaxError:
        return None


@lru_cache(maxsize=4096)
def dotted_names(source: str) -> frozenset[str]:
    """Every dotted name the template reads, with its prefixes: {'vars', 'vars.total', ...}."""
    tree = _parse(source)
    if tree is None:
        return frozenset()
    out: set[str] = set()
    for node in tree.find_all((nodes.Getattr, nodes.Getitem, nodes.Name)):
        parts = _dotted(node)
        if parts:
            for n in range(1, min(len(parts), _DEPTH) + 1):
                out.add(".".join(parts[:n]))
    return frozenset(out)


def uses_any(source: Any, names: set[str]) -> bool:
    """Whether a template (or any string inside a list or mapping) reads one of `names`."""
    if not names:
        return False
    if isinstance(source, str):
        return bool(dotted_names(source) & names) if "{" in source else False
    if isinstance(source, dict):
        return any(uses_any(v, names) for v in source.values())
    if isinstance(source, list):
        return any(uses_any(v, names) for v in source)
    return False


def _lookup(context: dict, parts: list[str]) -> tuple[bool, Any]:
    value: Any = context
    for part in parts:
        if isinstance(value, dict) and part in value:
            value = value[part]
        else:
            return False, None
    return True, value


def missing_attribute(source: str, attr: str, context: dict) -> tuple[str, str] | None:
    """(the undefined dotted name, a hint from the mapping it was looked up on) for a template that
    failed with "no attribute `attr`", when the lookup is a dotted name of the context."""
    tree = _parse(source)
    if tree is None:
        return None
    for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
        parts = _dotted(node)
        if not parts or parts[-1] != attr or len(parts) < 2:
            continue
        found, base = _lookup(context, parts[:-1])
        if not found or not isinstance(base, dict) or attr in base:
            continue
        owner = ".".join(parts[:-1])
        keys = sorted(map(str, base))
        near = did_you_mean(attr, keys)
        if near:
            near = "did you mean " + " or ".join(f"'{owner}.{k}'" for k in _close(attr, keys)) + "?"
        return ".".join(parts), near or (f"{owner} has: {', '.join(keys)}" if keys else f"{owner} is empty")
    return None


def _close(word: str, keys: list[str]) -> list[str]:
    import difflib

    return difflib.get_close_matches(word, keys, n=2, cutoff=0.6)


def row_keys(context: dict) -> set[str]:
    """Keys of the rows of generated data (mappings inside `data`'s lists): what a loop variable or
    `map(attribute=...)` over generated rows can name."""
    out: set[str] = set()
    for value in (context.get("data") or {}).values():
        rows = value if isinstance(value, list) else []
        for row in rows[:50]:
            if isinstance(row, dict):
                out.update(map(str, row))
    return out
