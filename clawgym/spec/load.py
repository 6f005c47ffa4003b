"""Read YAML spec files into plain Python data plus the file:line of every key path.

The loader is safe (no Python objects) and turns off YAML 1.1 surprises: `no`/`yes`/`on`/`off`
stay strings, dates stay strings, and `1:20` is not a base-60 number. Duplicate keys are errors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import SpecError, key_path

try:  # the C parser is much faster; marks and our resolver work the same with it
    _BaseLoader = yaml.CSafeLoader  # type: ignore[attr-defined]
except AttributeError:  # pragma: no cover - libyaml missing
    _BaseLoader = yaml.SafeLoader


class SpecLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    """SafeLoader with YAML 1.2-style implicit types (bool is only true/false, no timestamps)."""


SpecLoader.yaml_implicit_resolvers = {}
for _first, _resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items():
    SpecLoader.yaml_implicit_resolvers[_first] = [
        (tag, regexp)
        for tag, regexp in _resolvers
        if tag
        not in (
            "tag:yaml.org,2002:bool",
            "tag:yaml.org,2002:timestamp",
            "tag:yaml.org,2002:int",
            "tag:yaml.org,2002:float",
        )
    ]
SCALARS = (  # the plain scalars that load as something other than a string (write.py quotes them)
    ("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")),
    ("tag:yaml.org,2002:int", re.compile(r"^(?:[-+]?(?:0|[1-9][0-9]*)|0x[0-9a-fA-F]+)$"), list("-+0123456789")),
    (
        "tag:yaml.org,2002:float",  # YAML 1.2 floats: 1e-5 and 2E3 too, not only 1.0e-5
        re.compile(
            r"^(?:[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|[-+]?(?:0|[1-9][0-9]*)[eE][-+]?[0-9]+"
            r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
        ),
        list("-+.0123456789"),
    ),
)
for _tag, _regexp, _first in SCALARS:
    SpecLoader.add_implicit_resolver(_tag, _regexp, _first)

Path_ = tuple  # a key path such as ("checks", 2, "path")


@dataclass
class Document:
    """A parsed YAML file: its data and the 1-based line of every key path in it."""

    data: Any
    file: str
    lines: dict[tuple, int] = field(default_factory=dict)

    def line(self, path: tuple | list) -> int:
        """Line of the closest known ancestor of `path` (1 for the document itself)."""
        path = tuple(path)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), 1)

    @property
    def folder(self) -> Path:
        return Path(self.file).resolve().parent

    def where(self, path: tuple | list) -> dict:
        """Keyword arguments for `Problem`/`ClawgymError` locating `path` in this file."""
        return {"file": self.file, "line": self.line(path), "key": key_path(path) or None}


def load_text(text: str, file: str) -> Document:
    """Parse YAML text; syntax errors and duplicate keys raise SpecError at file:line."""
    loader = SpecLoader(text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        what = f"invalid YAML: {exc.problem or exc}"
        if exc.context:
            started = exc.context_mark.line + 1 if exc.context_mark else None
            what += f" ({exc.context}" + (f" that starts on line {started})" if started and started != line else ")")
        raise SpecError.one(
            what,
            file=file,
            line=line,
            hint="check indentation, quoting and that every 'key: value' has a space after the colon",
        )
    except yaml.YAMLError as exc:
        raise SpecError.one(f"invalid YAML: {exc}", file=file, line=1)
    finally:
        loader.dispose()
    if node is None:
        raise SpecError.one(
            "the file is empty", file=file, line=1, hint="a spec starts with 'apiVersion: clawgym/v1' and 'kind: ...'"
        )
    doc = Document(data=None, file=file)
    doc.lines[()] = node.start_mark.line + 1
    doc.data = _build(node, (), doc, loader)
    return doc


def load_file(path: str | Path) -> Document:
    """Read and parse one YAML spec file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError.one("file not found", file=str(path), hint="check the path")
    except UnicodeDecodeError as exc:
        raise SpecError.one(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=str(path))
    return load_text(text, str(path))


def _build(node: yaml.Node, path: tuple, doc: Document, loader: yaml.BaseLoader) -> Any:
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)  # YAML merge keys (<<)
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if not isinstance(key, str):
                key = str(key)
            if key in out:
                raise SpecError.one(
                    f"duplicate key {key!r} (first at line {doc.lines[path + (key,)]})",
                    file=doc.file,
                    line=line,
                    key=key_path(path + (key,)),
                    hint="remove one of them",
                )
            doc.lines[path + (key,)] = line
            out[key] = _build(value_node, path + (key,), doc, loader)
        return out
    if isinstance(node, yaml.SequenceNode):
        items = []
        for i, item in enumerate(node.value):
            doc.lines[path + (i,)] = item.start_mark.line + 1
            items.append(_build(item, path + (i,), doc, loader))
        return items
    return loader.construct_object(node, deep=True)
