"""Generate the spec reference (markdown) from the JSON Schemas and plugin schemas.

`docs/reference.md` is this module's output; a test fails when the committed file differs, so the
reference cannot drift from the code. Regenerate with `clawgym docs --out docs/reference.md`.
"""

from __future__ import annotations

import json
from typing import Any

from .. import registry
from ..spec.validate import plugin_schema, raw_schema, resolve

SPEC_KINDS = [
    ("Task", "task"),
    ("Persona", "persona"),
    ("Skill", "skill"),
    ("Workspace", "workspace"),
    ("Run", "run"),
    ("Synth", "synth"),
    ("Taxonomy", "taxonomy"),
    ("HeldOut", "heldout"),
    ("ComposeDomains", "compose-domains"),
    ("ComposeOperations", "compose-operations"),
    ("Train", "train"),
    ("RL", "rl"),
]
PLUGIN_KINDS = [
    ("check", "Checks"),
    ("generator", "Data generators"),
    ("agent", "Agents"),
    ("policy", "Policies"),
    ("sandbox", "Sandboxes"),
]


def _type_of(schema: dict) -> str:
    schema = resolve(schema)
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "enum" in schema:
        return " | ".join(f"`{v}`" for v in schema["enum"])
    if "oneOf" in schema or "anyOf" in schema:
        return " or ".join(_type_of(s) for s in schema.get("oneOf", schema.get("anyOf")))
    t = schema.get("type")
    if isinstance(t, list):
        return " or ".join(t)
    if t == "array" and isinstance(schema.get("items"), dict):
        return f"list of {_type_of(schema['items'])}"
    if "x-plugin" in schema:
        return f"{schema['x-plugin']} (see below)"
    return t or "any"


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _fields_table(schema: dict, prefix: str = "", depth: int = 0) -> list[str]:
    schema = resolve(schema)
    rows: list[str] = []
    required = set(schema.get("required", []))
    for name, sub in schema.get("properties", {}).items():
        sub_r = resolve(sub)
        notes = []
        if name in required:
            notes.append("required")
        if "default" in sub_r:
            notes.append(f"default `{json.dumps(sub_r['default'])}`")
        if sub_r.get("x-template"):
            notes.append("Jinja" if sub_r["x-template"] == "text" else "Jinja (native value)")
        rows.append(
            f"| `{prefix}{name}` | {_cell(_type_of(sub_r))} | {_cell(', '.join(notes))} | "
            f"{_cell(sub_r.get('description', ''))} |"
        )
        if depth < 2:
            if sub_r.get("type") == "object" and "properties" in sub_r and "x-plugin" not in sub_r:
                rows += _fields_table(sub_r, f"{prefix}{name}.", depth + 1)
            items = resolve(sub_r.get("items", {})) if isinstance(sub_r.get("items"), dict) else {}
            if items.get("properties") and "x-plugin" not in items:
                rows += _fields_table(items, f"{prefix}{name}[].", depth + 1)
            extra = sub_r.get("additionalProperties")
            if isinstance(extra, dict) and resolve(extra).get("properties"):
                rows += _fields_table(resolve(extra), f"{prefix}{name}.<name>.", depth + 1)
    return rows


def _table(schema: dict) -> list[str]:
    return ["| field | type | notes | description |", "|---|---|---|---|", *_fields_table(schema), ""]


def reference_markdown() -> str:
    """The whole reference document."""
    out = [
        "# ClawGym spec reference",
        "",
        "Generated from the JSON Schemas in `clawgym/schemas/` and the built-in plugins by "
        "`clawgym docs --out docs/reference.md`. Do not edit by hand.",
        "",
        "Every spec file starts with `apiVersion: clawgym/v1` and a `kind`. Editors that speak the YAML "
        "language server check files as you type when the first line is "
        "`# yaml-language-server: $schema=<path to clawgym/schemas/KIND.v1.json>`.",
        "",
    ]
    for kind, stem in SPEC_KINDS:
        schema = raw_schema(stem)
        out += [f"## {kind} (`{stem}.v1.json`)", "", schema.get("description", ""), "", *_table(schema)]
    common = raw_schema("common")["$defs"]
    out += [
        "## Workspace file entries (`files:`)",
        "",
        common["file_entry"]["description"],
        "",
        *_table(common["file_entry"]),
    ]
    out += ["## Parameters (`params:`)", "", common["param"]["description"], "", *_table(common["param"])]
    out += ["## Limits (`limits:`)", "", *_table(common["limits"])]
    for kind, title in PLUGIN_KINDS:
        out += [f"## {title}", ""]
        for name in registry.names(kind):
            plugin = registry.get(kind, name)
            if not getattr(plugin, "__module__", "clawgym").startswith("clawgym"):
                continue  # a plugin registered by a test or a user's package is not ClawGym's reference
            doc = (plugin.__doc__ or "").strip()
            out += [f"### `{name}`", "", " ".join(doc.split("\n\n")[0].split()), ""]
            if kind in ("check", "generator", "agent", "policy"):
                schema: Any = plugin_schema(kind, name)
                out += _table(schema)
            if kind == "generator":
                out += generator_example(name)
    return "\n".join(out).rstrip() + "\n"


#: The option that sets how much a generator writes; the examples ask for two of it.
_SIZE_KEYS = ("rows", "count", "events", "lines", "entries", "items")
_EXAMPLE_SEED = "example"
_EXAMPLE_EXTRA = {"log_lines": {"lines": 3, "errors": 1, "warnings": 0}}


def _shorten(value: Any, depth: int = 0) -> Any:
    """The example's data with lists cut to two items and long strings to 60 characters."""
    if isinstance(value, list):
        cut = [_shorten(v, depth + 1) for v in value[:2]]
        return cut + ([f"... {len(value) - 2} more"] if len(value) > 2 else [])
    if isinstance(value, dict):
        return {k: _shorten(v, depth + 1) for k, v in value.items()}
    if isinstance(value, str) and len(value) > 60:
        return value[:57] + "..."
    return value


def generator_example(name: str) -> list[str]:
    """Markdown showing what generator `name` writes and the `data` rows templates see, produced
    by running it (two rows or items, the seed material `example`)."""
    from ..generators import get_generator, run_generator

    props = getattr(get_generator(name), "schema", {}).get("properties", {})
    params = {k: 2 for k in _SIZE_KEYS if k in props}
    params.update(_EXAMPLE_EXTRA.get(name, {}))
    generated = run_generator(name, params, _EXAMPLE_SEED)
    shape = "a list of rows (mappings)" if isinstance(generated.data, list) else "a mapping"
    option = ", ".join(f"{k}: {v}" for k, v in params.items())
    out = [
        f"Templates read what it wrote as `data.<name>` (`name:` of the file entry, else the file's stem), "
        f"{shape}. Example (`generate: {{type: {name}{', ' + option if option else ''}}}`):",
        "",
        "```json",
        json.dumps(_shorten(generated.data), indent=2, ensure_ascii=False, default=str),
        "```",
        "",
    ]
    if generated.files is not None:
        listing = sorted(generated.files)
        out += [
            "Files written (a folder):",
            "",
            "```",
            *listing[:4],
            *([f"... {len(listing) - 4} more"] if len(listing) > 4 else []),
            "```",
            "",
        ]
    else:
        text = (generated.content or b"").decode("utf-8", errors="replace").splitlines()
        out += [
            "The file begins:",
            "",
            "```",
            *[line[:100] for line in text[:6]],
            *(["..."] if len(text) > 6 else []),
            "```",
            "",
        ]
    return out
