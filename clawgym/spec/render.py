"""Sandboxed Jinja rendering of the spec fields that schemas mark as templates.

`x-template: text` fields render to a string. `x-template: value` fields that are a single
`{{ expression }}` evaluate to the expression's native value (a list, a number...); other value
templates render to text, which is parsed when it is a JSON list or object. Undefined variables are errors that name the field and suggest names.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import marshal
import os
import re
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import jinja2
import yaml
from jinja2.sandbox import SandboxedEnvironment
from jinja2.utils import Namespace

from ..errors import Problem, did_you_mean
from ..files.atomic import write_bytes_atomic
from .names import missing_attribute, row_keys

_MARKERS = ("{{", "{%", "{#")
_SINGLE_EXPR = re.compile(r"^\s*\{\{(?P<expr>(?:(?!\{\{|\}\}).)*)\}\}\s*$", re.S)


class RenderError(Exception):
    """A template failed; carries the Problem text without location (the caller adds it)."""

    def __init__(self, what: str, hint: str | None = None, template_line: int | None = None):
        super().__init__(what)
        self.what, self.hint, self.template_line = what, hint, template_line


def is_template(value: Any) -> bool:
    return isinstance(value, str) and any(m in value for m in _MARKERS)


def _tojson(value: Any, indent: int | None = None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=False, default=str)


def _toyaml(value: Any) -> str:
    return yaml.safe_dump(value, sort_keys=False, allow_unicode=True, default_flow_style=False)


def _date_add(value: str, days: int = 0) -> str:
    return (_dt.date.fromisoformat(str(value)[:10]) + _dt.timedelta(days=int(days))).isoformat()


def _days_between(later: str, earlier: str) -> int:
    """Whole days from `earlier` to `later` (both YYYY-MM-DD)."""
    return (_dt.date.fromisoformat(str(later)[:10]) - _dt.date.fromisoformat(str(earlier)[:10])).days


def _weekday(value: str) -> str:
    return _dt.date.fromisoformat(str(value)[:10]).strftime("%A")


def _money(value: float, places: int = 2) -> str:
    return f"{float(value):,.{places}f}"


def _fmt(value: Any, spec: str) -> str:
    return format(value, spec)


def _sum_by(items: list[dict], key: str, value: str) -> dict:
    """Group `items` by `key` and total `value`, rounded to cents: {'travel': 120.5, ...}."""
    out: dict = {}
    for item in items:
        out[item[key]] = out.get(item[key], 0) + item[value]
    return {k: round(v, 2) for k, v in sorted(out.items())}


def _count_by(items: list[dict], key: str) -> dict:
    out: dict = {}
    for item in items:
        out[item[key]] = out.get(item[key], 0) + 1
    return dict(sorted(out.items()))


class SpecEnvironment(SandboxedEnvironment):
    """Sandboxed Jinja where `mapping.name` means the key when there is one, so a var named `items`
    or `keys` is the value the author defined, not the dict method."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        kind = type(obj)
        if kind is dict and attribute in obj:  # plain data: no sandbox check needed
            return obj[attribute]
        if kind is Namespace:
            attrs = object.__getattribute__(obj, "_Namespace__attrs")
            if attribute in attrs:
                return attrs[attribute]
        if isinstance(obj, dict) and attribute in obj:
            return obj[attribute]
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        if type(obj) is dict and argument in obj:
            return obj[argument]
        return super().getitem(obj, argument)


@lru_cache(maxsize=1)
def environment() -> SandboxedEnvironment:
    """The one Jinja environment: sandboxed, strict about undefined names, no autoescape."""
    env = SpecEnvironment(
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        tojson=_tojson,
        toyaml=_toyaml,
        date_add=_date_add,
        days_between=_days_between,
        weekday=_weekday,
        money=_money,
        fmt=_fmt,
        sum_by=_sum_by,
        count_by=_count_by,
    )
    env.globals.update(
        zip=zip,
        enumerate=enumerate,
        sorted=sorted,
        min=min,
        max=max,
        abs=abs,
        round=round,
        len=len,
        int=int,
        float=float,
        str=str,
    )
    return env


_CACHE_VERSION = "1"  # bump when the environment's parse options change


def _cache_dir() -> Path | None:
    """Where compiled templates are kept between runs (CLAWGYM_CACHE_DIR=off disables it)."""
    root = os.environ.get("CLAWGYM_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "clawgym"
    )
    if root == "off":
        return None
    tag = f"jinja-{jinja2.__version__}-py{sys.version_info[0]}{sys.version_info[1]}-v{_CACHE_VERSION}"
    return Path(root) / tag


@lru_cache(maxsize=4096)
def _template(source: str) -> jinja2.Template:
    """Compile a template once per process, and once per machine through a bytecode cache."""
    env = environment()
    folder = _cache_dir()
    path = folder / (hashlib.sha256(source.encode()).hexdigest() + ".bin") if folder else None
    code = None
    if path is not None and path.is_file():
        try:
            code = marshal.loads(path.read_bytes())
        except (OSError, ValueError, EOFError, TypeError):
            code = None
    if code is None:
        code = env.compile(source)
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                write_bytes_atomic(path, marshal.dumps(code), fsync=False)
            except OSError:
                pass  # a read-only home only costs speed
    return env.template_class.from_code(env, code, env.make_globals(None))


@lru_cache(maxsize=4096)
def _expression(source: str) -> Callable[..., Any]:
    return environment().compile_expression(source, undefined_to_none=False)


def render_text(source: str, context: dict) -> str:
    """Render a text template. Raises RenderError."""
    if not is_template(source):
        return source
    try:
        return _template(source).render(context)
    except Exception as exc:  # noqa: BLE001 - every template failure becomes a RenderError
        raise _explain(exc, context, source) from None


def render_value(source: Any, context: dict) -> Any:
    """Render a value template: a lone `{{ expr }}` keeps its native type; otherwise text."""
    if not is_template(source):
        return source
    match = _SINGLE_EXPR.match(source)
    if not match:
        text = render_text(source, context)
        if text.strip()[:1] in ("[", "{"):  # a block template that builds JSON gives its value
            try:
                return json.loads(text)
            except ValueError:
                pass
        return text
    try:
        value = _expression(match.group("expr").strip())(**context)
    except Exception as exc:  # noqa: BLE001
        raise _explain(exc, context, source) from None
    if isinstance(value, jinja2.Undefined):
        try:
            str(value)
        except Exception as exc:  # noqa: BLE001
            raise _explain(exc, context, source) from None
    hole = _undefined_inside(value)
    if hole is not None:  # e.g. map(attribute='emial') over rows: a list of undefined values
        raise _undefined_member(hole)
    return value


def _undefined_inside(value: Any, depth: int = 0) -> jinja2.Undefined | None:
    """The first undefined value inside a rendered list or mapping, or None."""
    if isinstance(value, jinja2.Undefined):
        return value
    if depth > 4:
        return None
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
    for item in items:
        found = _undefined_inside(item, depth + 1)
        if found is not None:
            return found
    return None


def _undefined_member(hole: jinja2.Undefined) -> RenderError:
    """Explain an undefined value found inside a result: which key was missing, and on what."""
    name = getattr(hole, "_undefined_name", None)
    owner = getattr(hole, "_undefined_obj", jinja2.utils.missing)
    if name is None:
        return RenderError("undefined value in template", hint="check the spelling against params, vars and data")
    if isinstance(owner, dict):
        keys = sorted(map(str, owner))
        near = did_you_mean(str(name), keys)
        return RenderError(
            f"undefined attribute {name!r} in template: the mappings it is read from have no key {name!r}",
            hint=f"{near + ' ' if near else ''}they have: {', '.join(keys)}",
        )
    return RenderError(
        f"undefined variable {name!r} in template", hint="check the spelling against params, vars and data"
    )


def _explain(exc: Exception, context: dict, source: str = "") -> RenderError:
    if isinstance(exc, jinja2.TemplateSyntaxError):
        return RenderError(
            f"template syntax error: {exc.message}", hint="check the {{ }} and {% %} pairs", template_line=exc.lineno
        )
    if isinstance(exc, jinja2.UndefinedError):
        msg = str(exc)
        m = re.match(r"'(\w+)' is undefined", msg)
        if m:
            hint = did_you_mean(m.group(1), context) or f"defined names: {', '.join(sorted(context))}"
            return RenderError(f"undefined variable {m.group(1)!r} in template", hint=hint)
        m = re.search(r"has no attribute '([^']+)'", msg)
        if m:
            attr = m.group(1)
            dotted = missing_attribute(source, attr, context) if source else None
            if dotted:
                return RenderError(f"undefined name {dotted[0]!r} in template", hint=dotted[1])
            rows = row_keys(context)
            if attr not in rows and rows:  # a loop variable or map(attribute=) over generated rows
                hint = did_you_mean(attr, rows) or f"the generated rows have: {', '.join(sorted(rows))}"
            else:
                hint = (
                    did_you_mean(attr, _nested_keys(context) - {attr})
                    or "check the spelling against params, vars and data"
                )
            return RenderError(f"undefined variable in template: no attribute {attr!r}", hint=hint)
        return RenderError(f"undefined variable in template: {msg}")
    if isinstance(exc, jinja2.exceptions.SecurityError):
        return RenderError(f"template not allowed: {exc}", hint="templates run sandboxed; compute values with filters")
    return RenderError(f"template failed: {type(exc).__name__}: {exc}")


def _nested_keys(context: dict, depth: int = 3) -> set[str]:
    keys: set[str] = set()
    stack = [(context, 0)]
    while stack:
        obj, level = stack.pop()
        if isinstance(obj, dict) and level < depth:
            for k, v in obj.items():
                keys.add(str(k))
                stack.append((v, level + 1))
    return keys


def problem(exc: RenderError, where: dict) -> Problem:
    """Turn a RenderError into a Problem at `where` (file/line/key)."""
    what = exc.what
    if exc.template_line and exc.template_line > 1:
        what += f" (template line {exc.template_line})"
    return Problem(what, hint=exc.hint, **where)
