"""Structured-data checks: JSON/YAML fields, JSON Schema validation and single numbers."""

from __future__ import annotations

import datetime
import json
import re
from typing import Any

from ..registry import register
from .base import Check, CheckContext, CheckFailure, close, parse_number, short, tolerance_of
from .number_text import bare_number

_PATH = {
    "type": "string",
    "minLength": 1,
    "x-template": "text",
    "description": "File to read, relative to the workspace.",
}
TOLERANCE = {
    "oneOf": [
        {"type": "number", "minimum": 0},
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "abs": {"type": "number", "minimum": 0, "description": "Absolute tolerance."},
                "rel": {"type": "number", "minimum": 0, "description": "Relative tolerance (fraction of |expected|)."},
            },
        },
    ],
    "description": "Numeric tolerance: a number (absolute) or `{abs, rel}`; "
    "|got - expected| <= max(abs, rel * |expected|).",
}
_FIELD_DOC = (
    "Dotted path with list indices (`totals.by_category.travel`, `items[0].id`, "
    '`a["key.with.dots"]`) or a JSON Pointer starting with `/`.'
)

_MISSING = object()
_TOKEN = re.compile(r"""\s*(?:\[\s*(-?\d+)\s*\]|\[\s*(["'])(.*?)\2\s*\]|\.?([^.\[\]]+))""")


def parse_field(path: str) -> list[str | int]:
    """Split a field path into keys (str) and list indices (int)."""
    if path.startswith("/"):
        return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]
    out: list[str | int] = []
    pos = 0
    while pos < len(path):
        m = _TOKEN.match(path, pos)
        if not m or m.end() == pos:
            raise CheckFailure(f"cannot parse field path {path!r} at position {pos}")
        idx, _, quoted, plain = m.groups()
        out.append(int(idx) if idx is not None else quoted if quoted is not None else plain.strip())
        pos = m.end()
        if pos < len(path) and path[pos] == ".":
            pos += 1 if path[pos + 1 : pos + 2] == "[" else 0
    return out


def lookup(data: Any, path: str) -> Any:
    """The value at `path` in `data`, or _MISSING."""
    cur = data
    for key in parse_field(path):
        if isinstance(cur, dict):
            if key in cur:
                cur = cur[key]
            elif str(key) in cur:
                cur = cur[str(key)]
            else:
                return _MISSING
        elif isinstance(cur, list):
            try:
                cur = cur[int(key)]
            except (ValueError, IndexError):
                return _MISSING
        else:
            return _MISSING
    return cur


def surplus_entries(data: Any, fields: list[str]) -> tuple[int, list[str]]:
    """(how many top-level entries the field paths name, the top-level entries they do not name)."""
    firsts = {str(parse_field(f)[0]) for f in fields if parse_field(f)}
    if isinstance(data, dict):
        return len(firsts), [str(k) for k in data if str(k) not in firsts]
    if isinstance(data, list):
        named = set()
        for f in firsts:
            try:
                named.add(int(f) % len(data) if data else int(f))
            except ValueError:
                continue
        return len(firsts), [f"[{i}]" for i in range(len(data)) if i not in named]
    return len(firsts), []


def values_equal(
    actual: Any,
    expected: Any,
    tol: tuple[float, float] = (0.0, 0.0),
    *,
    coerce: bool = False,
    ignore_case: bool = False,
    strip: bool = True,
) -> bool:
    """Deep equality with numeric tolerance; `coerce` also accepts values in looser forms.

    No hidden format: a number equals every plain way of writing it, as a number or a string
    (116, "116", "116.0"; "1,253.50", "1253,50", "1934.70" and 1253.5 or 1934.7), whichever side
    is the string, with or without `coerce`; a string that is not only a number ("about 1900",
    "0116", a code with a leading zero) never equals a number. `coerce` adds the looser forms:
    "23.1%", "$12", "(5)" and "0116" as numbers, true/false and yes/no (any case) for an expected
    boolean (nothing else: an expected string such as "yes" is compared as text), a blank string
    for null. A boolean written for an expected yes/no or true/false string equals it (true = "yes"):
    a JSON or YAML output may type the input's flags. Dates compare as ISO text ("2026-04-03")."""
    if expected is None:
        return actual is None or (coerce and isinstance(actual, str) and not actual.strip())
    if isinstance(expected, bool):
        if isinstance(actual, bool):
            return actual == expected
        return (
            coerce
            and isinstance(actual, str)
            and actual.strip().lower() in (("true", "yes") if expected else ("false", "no"))
        )
    if isinstance(expected, (int, float)):
        if isinstance(actual, str):
            a = parse_number(actual) if coerce or _plain_number(actual) else None
        else:
            a = parse_number(actual)  # None for a boolean, null, list or mapping
        return a is not None and close(a, float(expected), *tol)
    if isinstance(expected, (datetime.date, datetime.time)):
        expected = expected.isoformat()
    if isinstance(expected, str):
        if isinstance(actual, (datetime.date, datetime.time)):
            actual = actual.isoformat()
        if isinstance(actual, str):
            a, e = (actual.strip(), expected.strip()) if strip else (actual, expected)
            if ignore_case:
                a, e = a.casefold(), e.casefold()
            if a == e:
                return True
        elif isinstance(actual, bool):  # a JSON/YAML boolean is the typed form of the file's yes/no
            return expected.strip().lower() in (("yes", "true") if actual else ("no", "false"))
        elif not isinstance(actual, (int, float)):
            return False
        if coerce or _plain_number(expected) and (not isinstance(actual, str) or _plain_number(actual)):
            na, ne = parse_number(actual), parse_number(expected)
            return na is not None and ne is not None and close(na, ne, *tol)
        return False
    kw = {"coerce": coerce, "ignore_case": ignore_case, "strip": strip}
    if isinstance(expected, dict):
        return (
            isinstance(actual, dict)
            and set(map(str, actual)) == set(map(str, expected))
            and all(values_equal(actual.get(k, actual.get(str(k))), v, tol, **kw) for k, v in expected.items())
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(values_equal(a, e, tol, **kw) for a, e in zip(actual, expected))
        )
    return actual == expected


def _plain_number(text: str) -> bool:
    """A string that is only a number ("116", "116.0", "1,253.50"), not a code with a leading zero."""
    bare = bare_number(text)
    return bare is not None and not re.match(r"[+-]?0\d", bare)


def load_data(ctx: CheckContext, rel: str, fmt: str) -> Any:
    """Parse a JSON or YAML file (fmt "auto" picks by extension); CheckFailure on bad content."""
    text = ctx.read_text(rel)
    if fmt == "auto":
        fmt = "yaml" if rel.lower().endswith((".yaml", ".yml")) else "json"
    try:
        if fmt == "yaml":
            import yaml

            try:
                return yaml.safe_load(text)
            except yaml.YAMLError as e:
                raise CheckFailure(f"malformed YAML in {rel}: {short(str(e), 200)}") from None
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise CheckFailure(f"malformed JSON in {rel}: {e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        raise CheckFailure(f"{rel} is nested too deeply") from None
    except ValueError as e:  # e.g. an integer literal past Python's digit limit
        raise CheckFailure(f"malformed JSON in {rel}: {short(str(e), 200)}") from None


class _FieldEquals(Check):
    fmt = "json"
    reads_only = True
    reads_trajectory = False

    @classmethod
    def make_schema(cls, what: str) -> dict:
        return {
            "type": "object",
            "required": ["path"],
            "oneOf": [{"required": ["field", "expected"]}, {"required": ["fields"]}],
            "properties": {
                "path": {**_PATH, "description": f"{what} file to read, relative to the workspace."},
                "field": {"type": "string", "x-template": "text", "description": _FIELD_DOC},
                "expected": {
                    "x-template": "value",
                    "description": "Expected value (any type; dicts and lists compare deeply).",
                },
                "fields": {
                    "type": "object",
                    "minProperties": 1,
                    "x-template": "value",
                    "additionalProperties": {"x-template": "value"},
                    "description": "Mapping of field path → expected value; score = fraction of fields that match.",
                },
                "tolerance": TOLERANCE,
                "coerce": {
                    "type": "boolean",
                    "default": False,
                    "description": "Also accept looser forms. Without it a number already equals a string "
                    'that is only that number in a plain form and vice versa (`"1934.70"`, `"1,934.70"` and '
                    '`"1934,70"` equal 1934.7; `"116"` equals 116), while other strings (`"about 1900"`, '
                    '`"0116"`) do not; with it, `"23.1%"`, `"$12"` and `"0116"` read as numbers, `yes`/`no` '
                    "and `true`/`false` strings as booleans, and a blank string as null.",
                },
                "ignore_case": {
                    "type": "boolean",
                    "default": False,
                    "description": "Compare strings case-insensitively.",
                },
                "extra_entries": {
                    "type": "boolean",
                    "default": True,
                    "description": "Allow top-level entries (keys of the top-level object, items of a "
                    "top-level list) that no field path starts with. `false` (a lookup keyed by id that "
                    "must hold only the records asked for): each surplus entry costs credit the way a "
                    "surplus row does in `csv_rows_equal`, score = fraction of fields matched × named "
                    "entries / (named + surplus entries), so the unfiltered input (30 entries where 6 "
                    "were asked for) scores at most 0.2.",
                },
            },
        }

    def run(self, ctx: CheckContext) -> tuple:
        data = load_data(ctx, self.get("path"), self.fmt)
        if "fields" in self.config:
            wanted = dict(self.config["fields"])
        else:
            wanted = {self.get("field"): self.config.get("expected")}
        tol = tolerance_of(self.get("tolerance"))
        problems, found = [], {}
        for field, expected in wanted.items():
            actual = lookup(data, str(field))
            if actual is _MISSING:
                problems.append(f"{field} not found")
                continue
            found[field] = short(actual, 120)
            if not values_equal(actual, expected, tol, coerce=self.get("coerce"), ignore_case=self.get("ignore_case")):
                problems.append(f"{field} expected {short(expected, 60)}, got {short(actual, 60)}")
        n = len(wanted)
        score = (n - len(problems)) / n
        head = f"all {n} field(s) match" if not problems else f"{n - len(problems)}/{n} field(s) match"
        if not self.get("extra_entries"):
            named, surplus = surplus_entries(data, [str(f) for f in wanted])
            if surplus:
                score *= named / (named + len(surplus))
                shown = ", ".join(short(k, 30) for k in surplus[:3]) + (", …" if len(surplus) > 3 else "")
                problems.append(f"{len(surplus)} entr{'y' if len(surplus) == 1 else 'ies'} not asked for ({shown})")
        if not problems:
            return score, head, {"values": found}
        more = f"; +{len(problems) - 3} more" if len(problems) > 3 else ""
        return score, f"{head}: " + "; ".join(problems[:3]) + more, {"values": found}


@register("check", "json_field_equals")
class JsonFieldEquals(_FieldEquals):
    """A field (or several) of a JSON file equals the expected value, with numeric tolerance.

    A number and a string that is only that number in a plain form ("1934.70", "1,934.70",
    "1934,70") are equal either way round (see `values_equal`)."""

    type = "json_field_equals"
    fmt = "json"
    schema = _FieldEquals.make_schema("JSON")


@register("check", "yaml_field_equals")
class YamlFieldEquals(_FieldEquals):
    """A field (or several) of a YAML file equals the expected value, with numeric tolerance.

    A number and a string that is only that number in a plain form ("1934.70", "1,934.70",
    "1934,70") are equal either way round (see `values_equal`)."""

    type = "yaml_field_equals"
    fmt = "yaml"
    schema = _FieldEquals.make_schema("YAML")


@register("check", "json_schema")
class JsonSchema(Check):
    """A JSON (or YAML) file validates against an inline JSON Schema (draft 2020-12)."""

    type = "json_schema"
    reads_only = True
    reads_trajectory = False
    schema = {
        "type": "object",
        "required": ["path", "schema"],
        "properties": {
            "path": _PATH,
            "schema": {"type": "object", "description": "The JSON Schema the file must satisfy."},
            "format": {
                "enum": ["auto", "json", "yaml"],
                "default": "auto",
                "description": "How to parse the file; `auto` goes by extension.",
            },
        },
    }

    def run(self, ctx: CheckContext) -> tuple:
        import jsonschema

        data = load_data(ctx, self.get("path"), self.get("format"))
        schema = self.get("schema")
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        try:
            cls.check_schema(schema)
        except jsonschema.SchemaError as e:
            raise CheckFailure(f"invalid schema in the check: {short(e.message, 200)}") from None
        errors = []
        for err in cls(schema).iter_errors(data):
            errors.append(f"{err.json_path}: {short(err.message, 160)}")
            if len(errors) >= 5:
                break
        if not errors:
            return 1.0, f"{self.get('path')} matches the schema"
        return 0.0, f"{self.get('path')} does not match the schema: " + "; ".join(errors[:3]), {"errors": errors}


@register("check", "numeric_close")
class NumericClose(Check):
    """A number read from a file is close to the expected value.

    The number comes from a JSON/YAML `field`, from the first match of a regex `pattern`
    (group 1 if it has groups), or from the whole file.
    """

    type = "numeric_close"
    reads_only = True
    reads_trajectory = False
    schema = {
        "type": "object",
        "required": ["path", "expected"],
        "not": {"required": ["field", "pattern"]},
        "properties": {
            "path": _PATH,
            "field": {
                "type": "string",
                "x-template": "text",
                "description": "Field of a JSON/YAML file (by extension). " + _FIELD_DOC,
            },
            "pattern": {
                "type": "string",
                "x-template": "text",
                "description": "Regex; the number is group 1 (or the whole match) of the first match.",
            },
            "expected": {"type": ["number", "string"], "x-template": "value", "description": "Expected number."},
            "abs": {"type": "number", "minimum": 0, "default": 0, "description": "Absolute tolerance."},
            "rel": {
                "type": "number",
                "minimum": 0,
                "default": 1e-9,
                "description": "Relative tolerance (fraction of |expected|).",
            },
        },
    }

    def run(self, ctx: CheckContext) -> tuple:
        rel = self.get("path")
        expected = parse_number(self.config["expected"])
        if expected is None:
            raise CheckFailure(f"expected value is not a number: {short(self.config['expected'])}")
        if self.get("field"):
            raw = lookup(load_data(ctx, rel, "auto"), self.get("field"))
            if raw is _MISSING:
                return 0.0, f"{self.get('field')} not found in {rel}"
            where = f"{rel}:{self.get('field')}"
        elif self.get("pattern"):
            try:
                rx = re.compile(self.get("pattern"), re.M)
            except re.error as e:
                raise CheckFailure(f"invalid regex {self.get('pattern')!r}: {e}") from None
            m = rx.search(ctx.read_text(rel))
            if not m:
                return 0.0, f"pattern {self.get('pattern')!r} not found in {rel}"
            raw = m.group(1) if rx.groups else m.group(0)
            where = f"{rel} /{self.get('pattern')}/"
        else:
            raw, where = ctx.read_text(rel, max_bytes=1000).strip(), rel
        got = parse_number(raw)
        if got is None:
            return 0.0, f"not a number in {where}: {short(raw, 60)}"
        a, r = float(self.get("abs")), float(self.get("rel"))
        ok = close(got, expected, a, r)
        tol = max(a, r * abs(expected))
        return (1.0 if ok else 0.0), f"got {got:g}, expected {expected:g} ± {tol:g}", {"value": got}
