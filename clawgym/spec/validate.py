"""Validate spec documents against the published JSON Schemas, reporting every problem at once.

Plugin configs (checks, generators, agents) are picked by their `type:` key and validated
against that plugin's own schema, so errors stay readable. Fields marked `x-template: value`
accept a Jinja string before rendering; after rendering they are checked strictly.
"""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from importlib import resources
from typing import Any, Iterator

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match
from referencing import Registry, Resource

from .. import API_VERSION
from ..errors import Problem, did_you_mean, key_path
from .load import Document

KINDS = {
    "Task": "task",
    "Persona": "persona",
    "Skill": "skill",
    "Workspace": "workspace",
    "Run": "run",
    "Taxonomy": "taxonomy",
    "Synth": "synth",
    "Train": "train",
    "RL": "rl",
    "HeldOut": "heldout",
    "ComposeDomains": "compose-domains",
    "ComposeOperations": "compose-operations",
}
SCHEMA_FILES = (
    "common",
    "task",
    "persona",
    "skill",
    "workspace",
    "run",
    "taxonomy",
    "synth",
    "train",
    "rl",
    "heldout",
    "compose-domains",
    "compose-operations",
)
_TEMPLATE_STRING = {"type": "string", "pattern": r"\{\{|\{%"}


@lru_cache(maxsize=None)
def raw_schema(name: str) -> dict:
    """A published schema by file stem, e.g. 'task' → task.v1.json."""
    text = resources.files("clawgym.schemas").joinpath(f"{name}.v1.json").read_text(encoding="utf-8")
    return json.loads(text)


def relax_templates(schema: Any) -> Any:
    """Copy of `schema` where every `x-template: value` node also accepts a Jinja string."""
    if isinstance(schema, list):
        return [relax_templates(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: relax_templates(v) for k, v in schema.items()}
    if out.get("x-template") == "value":
        inner = {k: v for k, v in out.items() if k not in ("x-template", "description", "default")}
        if inner:
            return {
                "anyOf": [inner, _TEMPLATE_STRING],
                **{k: out[k] for k in ("x-template", "description", "default") if k in out},
            }
    return out


@lru_cache(maxsize=None)
def _registry() -> Registry:
    resources_ = [
        (f"{n}.v1.json", Resource.from_contents(relax_templates(raw_schema(n)), default_specification=_spec()))
        for n in SCHEMA_FILES
    ]
    return Registry().with_resources(resources_)


def _spec():
    from referencing.jsonschema import DRAFT202012

    return DRAFT202012


@lru_cache(maxsize=None)
def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(relax_templates(raw_schema(name)), registry=_registry())


def resolve(schema: dict) -> dict:
    """Follow a `$ref` into the published schemas (one level at a time, as needed)."""
    while isinstance(schema, dict) and "$ref" in schema:
        ref = schema["$ref"]
        file, _, pointer = ref.partition("#")
        target: Any = raw_schema(file.removesuffix(".v1.json")) if file else raw_schema("common")
        for part in filter(None, pointer.split("/")):
            target = target[part]
        extra = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**target, **extra}
    return schema


@lru_cache(maxsize=None)
def plugin_schema(kind: str, type_name: str) -> dict:
    """The JSON Schema of one plugin; check and generator params all accept templates.

    Cached: callers must treat the result as read-only."""
    from .. import registry

    plugin = registry.get(kind, type_name)
    schema = copy.deepcopy(getattr(plugin, "schema", None) or {"type": "object"})
    props = schema.setdefault("properties", {})
    props.setdefault("type", {"const": type_name, "description": f"Selects the `{type_name}` {kind}."})
    if kind in ("generator", "check"):  # plugin params take Jinja anywhere (explicit marks are kept)
        for name, sub in props.items():
            if name != "type":
                _mark_values(sub)
    return schema


def _mark_values(schema: dict) -> None:
    """Mark this node and everything nested under it as a value template unless already marked."""
    schema.setdefault("x-template", "value")
    for sub in schema.get("properties", {}).values():
        _mark_values(sub)
    if isinstance(schema.get("items"), dict):
        _mark_values(schema["items"])
    if isinstance(schema.get("additionalProperties"), dict):
        _mark_values(schema["additionalProperties"])


def validate_document(doc: Document, expected_kind: str | None = None) -> list[Problem]:
    """Every problem with one document: structure, kind, schema and plugin schemas."""
    data = doc.data
    if not isinstance(data, dict):
        return [
            Problem(
                "a spec must be a mapping of keys to values",
                **doc.where(()),
                hint="start with 'apiVersion: clawgym/v1' and 'kind: Task'",
            )
        ]
    head = _check_head(doc, expected_kind)
    if head:
        return head
    schema_name = KINDS[data["kind"]]
    problems = [p for e in _validator(schema_name).iter_errors(data) for p in _to_problems(e, doc)]
    problems += _plugin_problems(doc, raw_schema(schema_name), data, ())
    return _dedupe(problems)


def validate_plugin(kind: str, config: Any, doc: Document, path: tuple, *, strict: bool = False) -> list[Problem]:
    """Problems with one plugin config (a check, a generator, an agent)."""
    from .. import registry
    from ..errors import ClawgymError

    if not isinstance(config, dict) or not isinstance(config.get("type"), str):
        return [
            Problem(
                f"a {kind} needs a 'type' key naming the {kind}",
                **doc.where(path),
                hint=f"known {kind} types: {', '.join(registry.names(kind))}",
            )
        ]
    try:
        plugin_schema(kind, config["type"])  # an unknown type is reported with the closest names
    except ClawgymError as exc:
        p = exc.problems[0]
        return [Problem(p.what, hint=p.hint, **doc.where(path + ("type",)))]
    validator = _plugin_validator(kind, config["type"], strict)
    return [p for e in validator.iter_errors(config) for p in _to_problems(e, doc, prefix=path)]


_TEMPLATE_ONLY_KEYS = {"x-template", "description", "default", "title"}
_field_validators: dict[int, tuple[dict, Draft202012Validator]] = {}


def rendered_value_problems(schema: dict, value: Any, doc: Document, path: tuple) -> list[Problem]:
    """Problems of one rendered template field against its own schema (strict, templates resolved)."""
    rules = schema.keys() - _TEMPLATE_ONLY_KEYS
    if not rules:
        return []
    if (
        isinstance(value, str)
        and schema.get("type") == "string"
        and rules <= {"type", "minLength"}
        and len(value) >= schema.get("minLength", 0)
    ):
        return []  # the common case, without the validator's overhead
    entry = _field_validators.get(id(schema))
    if entry is None or entry[0] is not schema:  # keep the schema alive so its id stays unique
        entry = (schema, Draft202012Validator({k: v for k, v in schema.items() if k != "x-template"}))
        _field_validators[id(schema)] = entry
    problems = []
    for error in entry[1].iter_errors(value):
        problems += _to_problems(error, doc, prefix=path)
    return problems


@lru_cache(maxsize=None)
def _plugin_validator(kind: str, type_name: str, strict: bool) -> Draft202012Validator:
    schema = plugin_schema(kind, type_name)
    return Draft202012Validator(schema if strict else relax_templates(schema))


def _check_head(doc: Document, expected_kind: str | None) -> list[Problem]:
    data = doc.data
    problems = []
    version = data.get("apiVersion")
    if version is None:
        problems.append(
            Problem("missing required key 'apiVersion'", **doc.where(()), hint=f"add 'apiVersion: {API_VERSION}'")
        )
    elif version != API_VERSION:
        problems.append(
            Problem(f"unsupported apiVersion {version!r}", **doc.where(("apiVersion",)), hint=f"use '{API_VERSION}'")
        )
    kind = data.get("kind")
    if kind is None:
        problems.append(
            Problem(
                "missing required key 'kind'",
                **doc.where(()),
                hint=f"add 'kind: {expected_kind or 'Task'}' (one of {', '.join(KINDS)})",
            )
        )
    elif kind not in KINDS:
        problems.append(
            Problem(
                f"unknown kind {kind!r}",
                **doc.where(("kind",)),
                hint=did_you_mean(kind, KINDS) or f"one of {', '.join(KINDS)}",
            )
        )
    elif expected_kind and kind != expected_kind:
        problems.append(
            Problem(
                f"expected a {expected_kind} spec here, found kind {kind!r}",
                **doc.where(("kind",)),
                hint=f"this file must be a {expected_kind}",
            )
        )
    return problems


def _plugin_problems(doc: Document, schema: dict, value: Any, path: tuple) -> list[Problem]:
    """Walk `value` alongside `schema` and validate every `x-plugin` node against its plugin."""
    return [
        p
        for kind, sub_path, sub_value in iter_plugin_nodes(schema, value, path)
        for p in validate_plugin(kind, sub_value, doc, sub_path)
    ]


def iter_plugin_nodes(schema: dict, value: Any, path: tuple) -> Iterator[tuple[str, tuple, Any]]:
    schema = resolve(schema)
    if "x-plugin" in schema:
        yield schema["x-plugin"], path, value
        return
    if isinstance(value, dict):
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for key, sub in value.items():
            sub_schema = props.get(key, extra if isinstance(extra, dict) else None)
            if sub_schema:
                yield from iter_plugin_nodes(sub_schema, sub, path + (key,))
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, sub in enumerate(value):
            yield from iter_plugin_nodes(schema["items"], sub, path + (i,))


_TYPE_NAMES = {
    dict: "a mapping",
    list: "a list",
    str: "a string",
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    type(None): "null",
}


def _describe(value: Any) -> str:
    shown = repr(value) if not isinstance(value, (dict, list)) else ""
    return f"{_TYPE_NAMES.get(type(value), type(value).__name__)}{(' ' + shown) if shown else ''}"


def _to_problems(error: ValidationError, doc: Document, prefix: tuple = ()) -> list[Problem]:
    path = prefix + tuple(error.absolute_path)
    where = doc.where(path)
    v, schema, value = error.validator, error.schema, error.instance
    if v == "additionalProperties" and isinstance(value, dict):
        allowed = set(schema.get("properties", {}))
        out = []
        for key in value:
            if key not in allowed and not _matches_pattern_props(key, schema):
                hint = did_you_mean(key, allowed) or f"allowed keys: {', '.join(sorted(allowed))}"
                out.append(Problem(f"unknown key {key!r}", **doc.where(path + (key,)), hint=hint))
        return out
    if v == "required":
        missing = [k for k in error.validator_value if k not in value]
        out = []
        for key in missing:
            desc = resolve(schema.get("properties", {}).get(key, {})).get("description", "")
            out.append(
                Problem(
                    f"missing required key {key!r}",
                    **where,
                    hint=f"add '{key}:'" + (f" ({desc.rstrip('.')})" if desc else ""),
                )
            )
        return out
    if v == "type":
        expected = error.validator_value
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        return [Problem(f"expected {expected}, got {_describe(value)}", **where, hint=_desc_hint(schema))]
    if v == "enum":
        options = error.validator_value
        hint = did_you_mean(value, [str(o) for o in options]) if isinstance(value, str) else ""
        return [
            Problem(f"{value!r} is not one of {', '.join(map(str, options))}", **where, hint=hint or _desc_hint(schema))
        ]
    if v == "const":
        return [
            Problem(
                f"expected {error.validator_value!r}, got {value!r}", **where, hint=f"use {error.validator_value!r}"
            )
        ]
    if v == "pattern":
        return [
            Problem(f"{value!r} does not match the pattern {error.validator_value}", **where, hint=_desc_hint(schema))
        ]
    if v == "propertyNames":
        inner = best_match(error.context) if error.context else None
        bad = inner.instance if inner is not None else value
        return [
            Problem(
                f"key {bad!r} is not allowed here",
                **doc.where(path + (bad,)) if isinstance(bad, str) else where,
                hint=_desc_hint(schema) or (inner.message if inner else None),
            )
        ]
    if v in ("oneOf", "anyOf") and error.context:
        if "x-template" in schema:
            inner = best_match([e for e in error.context if e.schema is not _TEMPLATE_STRING] or error.context)
        else:
            inner = best_match(error.context)
        sub = _to_problems(inner, doc, prefix)
        for p in sub:
            if not p.hint:
                p.hint = _desc_hint(schema)
        return sub
    return [Problem(error.message, **where, hint=_desc_hint(schema))]


def _matches_pattern_props(key: str, schema: dict) -> bool:
    import re

    return any(re.search(p, key) for p in schema.get("patternProperties", {}))


def _desc_hint(schema: dict) -> str | None:
    desc = schema.get("description") if isinstance(schema, dict) else None
    return desc.rstrip(".") if desc else None


def _dedupe(problems: list[Problem]) -> list[Problem]:
    seen, out = set(), []
    for p in sorted(problems, key=lambda p: (p.file or "", p.line or 0, p.key or "")):
        ident = (p.file, p.line, p.key, p.what)
        if ident not in seen:
            seen.add(ident)
            out.append(p)
    return out


__all__ = [
    "KINDS",
    "validate_document",
    "validate_plugin",
    "plugin_schema",
    "raw_schema",
    "resolve",
    "iter_plugin_nodes",
    "key_path",
]
