"""Check base classes, results and shared helpers.

A check is configured by a plain dict (already validated and template-rendered by the compiler)
and scored against a *final* workspace plus a pristine copy of the *original* one. Everything it
reads goes through `CheckContext` (`context.py`, re-exported here with `CheckFailure` and the path
helpers), which refuses paths that escape the folder, non-regular, oversized and binary files.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from .context import MAX_BYTES as MAX_BYTES
from .context import MAX_ENTRIES as MAX_ENTRIES
from .context import CheckContext as CheckContext
from .context import CheckFailure as CheckFailure
from .context import check_rel as check_rel
from .context import glob_regex as glob_regex
from .context import has_magic as has_magic

MAX_REASON = 2000
FAILED = "grader_failed"  # in a result's details: why its grading process did not exit cleanly within its limits
SCHEMA_DRAFT = "https://json-schema.org/draft/2020-12/schema"


@dataclass
class CheckResult:
    """Outcome of one check: `score` in [0, 1], weighted by `weight`; a failed gate zeroes the reward."""

    name: str
    type: str
    score: float
    weight: float = 1.0
    gate: bool = False
    reason: str = ""
    details: dict | None = None

    @property
    def passed(self) -> bool:
        return self.score >= 1 - 1e-9

    @property
    def grader_failed(self) -> str | None:
        """Why this check's grading process failed (it then scored 0 whatever it printed); None if it did not."""
        why = (self.details or {}).get(FAILED)
        return None if why is None else str(why)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "type": self.type,
            "score": self.score,
            "weight": self.weight,
            "gate": self.gate,
            "reason": self.reason,
            "details": dict(self.details) if self.details is not None else None,
            "passed": self.passed,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "CheckResult":
        return cls(
            name=str(d["name"]),
            type=str(d["type"]),
            score=float(d["score"]),
            weight=float(d.get("weight", 1.0)),
            gate=bool(d.get("gate", False)),
            reason=str(d.get("reason", "")),
            details=d.get("details"),
        )


# ---------------------------------------------------------------------------------------------
# Check base class and schema merging

COMMON_PROPERTIES: dict[str, dict] = {
    "name": {
        "type": "string",
        "x-template": "text",
        "description": "Label shown in the verdict; defaults to the type and its target, "
        "e.g. `csv_rows_equal out/overdue.csv`.",
    },
    "weight": {
        "type": "number",
        "minimum": 0,
        "default": 1,
        "description": "Weight of this check in the weighted mean of scores.",
    },
    "gate": {
        "type": "boolean",
        "default": False,
        "description": "If true and this check does not fully pass, the whole reward is 0.",
    },
    "description": {"type": "string", "description": "Free-text note for task authors; not graded."},
}


_NAME_KEYS = ("path", "paths", "pattern", "script", "run", "field")


NO_CREDIT_ALONE = (
    "0 by default: whether a file exists earns no credit on its own; make this check a gate "
    "(`gate: true`) and grade the content with other checks."
)


def merge_schema(
    type_name: str, own: dict, doc: str = "", default_weight: float = 1.0, weight_note: str = NO_CREDIT_ALONE
) -> dict:
    """A check's full JSON Schema: its own params plus the common keys, closed to others."""
    props = {"type": {"const": type_name, "description": f"Selects the `{type_name}` check."}}
    props.update(COMMON_PROPERTIES)
    if default_weight != 1:
        desc = COMMON_PROPERTIES["weight"]["description"] + " " + weight_note
        default = int(default_weight) if float(default_weight).is_integer() else default_weight
        props["weight"] = {**COMMON_PROPERTIES["weight"], "default": default, "description": desc}
    props.update(own.get("properties", {}))
    out = {
        "$schema": SCHEMA_DRAFT,
        "title": type_name,
        "description": doc,
        "type": "object",
        "properties": props,
        "required": list(dict.fromkeys(["type", *own.get("required", [])])),
        "additionalProperties": False,
    }
    for k, v in own.items():
        if k not in ("properties", "required", "type", "additionalProperties", "$schema", "title"):
            out[k] = v
    return out


class Check:
    """Base class: subclasses set `type`, `schema` (their own params) and implement `run`.

    When a subclass is defined, its `schema` is replaced by the merged schema (own params plus
    the common keys `type`, `name`, `weight`, `gate`, `description`); the own part stays in
    `params_schema`. Defaults come from the schema's `default` values via `get`.
    """

    type: ClassVar[str] = ""
    schema: ClassVar[dict] = {"type": "object", "properties": {}}
    params_schema: ClassVar[dict] = {}
    base_budget: ClassVar[float] = 60.0
    # True for checks that only read the workspace, the original and the trajectory through the
    # safe helpers here (no process, no sandbox, no state kept): the verifier may grade them in a
    # reused worker process (`clawgym.verify.server`) instead of a fresh fork.
    reads_only: ClassVar[bool] = False
    # False for checks that never look at `ctx.trajectory`: a verifier whose checks are all such is
    # not sent the trajectory (encoding and decoding it is most of a small request).
    reads_trajectory: ClassVar[bool] = True
    # The weight a check gets when its config names none. 0 for checks that only test whether
    # files exist (`file_exists`, `file_absent`): an empty or skeleton file must earn nothing.
    default_weight: ClassVar[float] = 1.0
    weight_note: ClassVar[str] = NO_CREDIT_ALONE  # why the default weight is not 1, where it is not

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        if "schema" in cls.__dict__ and cls.__dict__.get("type"):
            own = cls.__dict__["schema"]
            doc = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())
            cls.params_schema = own
            cls.schema = merge_schema(cls.type, own, doc, cls.default_weight, cls.weight_note)

    def __init__(self, config: dict):
        if not isinstance(config, dict):
            raise TypeError(f"check config must be a mapping, got {type(config).__name__}")
        self.config = dict(config)
        props = self.schema["properties"]
        unknown = sorted(set(self.config) - set(props))
        if unknown:
            raise ValueError(f"unknown option(s) for {self.type}: {', '.join(map(str, unknown))}")
        missing = [k for k in self.schema.get("required", []) if k not in self.config and k != "type"]
        if missing:
            raise ValueError(f"{self.type} needs option(s): {', '.join(missing)}")
        weight = self.config.get("weight")
        self.weight = float(weight) if weight is not None else self.implied_weight(self.config)
        self.gate = bool(self.get("gate"))
        self.name = str(self.config.get("name") or self.default_name())

    @classmethod
    def implied_weight(cls, config: dict) -> float:
        """The weight of a config that names none (`default_weight`, unless the options say otherwise)."""
        return cls.default_weight

    @classmethod
    def static_problems(cls, config: dict) -> list[tuple[tuple, str, str]]:
        """What is wrong with a rendered config that can be told without a workspace, as
        (key path inside the check, what, how to fix); `clawgym validate --static` reports them."""
        return []

    @classmethod
    def full_schema(cls) -> dict:
        """The check's merged JSON Schema (same as `schema`)."""
        return cls.schema

    def get(self, key: str, default: Any = None) -> Any:
        """Config value, else the schema default, else `default`."""
        if key in self.config and self.config[key] is not None:
            return self.config[key]
        prop = self.schema["properties"].get(key, {})
        return prop.get("default", default)

    def default_name(self) -> str:
        for key in _NAME_KEYS:
            val = self.config.get(key)
            if val:
                val = ", ".join(map(str, val)) if isinstance(val, list) else str(val)
                return f"{self.type} {val}"[:100]
        return self.type

    def budget(self) -> float:
        """Seconds this check may take before the runner abandons it."""
        return self.base_budget

    def run(self, ctx: CheckContext) -> tuple:
        """Return (score, reason) or (score, reason, details)."""
        raise NotImplementedError

    @classmethod
    def graded_with(cls, config: dict) -> list[str]:
        """Files or folders of the task folder this check grades with (hashed into the task's identity)."""
        script = config.get("script")
        return [script] if isinstance(script, str) else []

    def expand(self, result: CheckResult) -> list[CheckResult]:
        """The results this check contributes to the verdict (one, unless it reports named parts)."""
        return [result]


# ---------------------------------------------------------------------------------------------
# Value helpers shared by checks

_NUM_JUNK = re.compile(r"[\s,_$€£¥]")
_CODES = "USD|EUR|GBP|SEK|NOK|DKK|CHF|JPY|CAD|AUD|NZD|ZAR|INR|PLN|CZK|HUF|MXN|BRL|SGD|HKD"
_CURRENCY_CODE = re.compile(rf"^(?:{_CODES})[ \u00a0]?(?=[\d(+-])|(?<=\d)[ \u00a0]?(?:{_CODES})$")
# a decimal comma, its thousands grouped by dots or spaces or not at all: 1253,50 / 1.253,50 / 1 253,50
_DECIMAL_COMMA = re.compile(
    r"[\s_$€£¥]*[+-]?[\s_$€£¥]*\(?(?:\d+|\d{1,3}(?:[.\s\u00a0\u202f]\d{3})+),\d{1,2}\)?%?[\s_$€£¥]*"
)


def parse_number(value: Any) -> float | None:
    """A float from a number or numeric string ("1,234.50", "$12", "12%", "GBP 7.06"); None if not numeric.

    A string with one comma followed by one or two digits, before it digits alone or grouped in
    threes by dots or spaces, uses a decimal comma ("1253,50", "1.253,50" and "1 253,50" are
    1253.5); any other comma separates thousands ("1,253" is 1253)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        try:
            f = float(value)
        except OverflowError:
            return None
        return f if math.isfinite(f) else None
    if not isinstance(value, str) or len(value) > 100:
        return None
    s = _CURRENCY_CODE.sub("", value.strip())  # "GBP 7.06" and "7.06 EUR" are the amounts they show
    if _DECIMAL_COMMA.fullmatch(s):
        s = s.replace(".", "").replace(",", ".")
    s = _NUM_JUNK.sub("", s)
    if s.endswith("%"):
        s = s[:-1]
    if s.startswith("(") and s.endswith(")"):
        s = "-" + s[1:-1]
    if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", s):
        return None
    f = float(s)
    return f if math.isfinite(f) else None


def tolerance_of(tol: Any) -> tuple[float, float]:
    """(abs, rel) from a number (absolute) or a mapping {abs, rel}."""
    if tol is None:
        return 0.0, 0.0
    if isinstance(tol, (int, float)) and not isinstance(tol, bool):
        return float(tol), 0.0
    if isinstance(tol, dict):
        return float(tol.get("abs", 0) or 0), float(tol.get("rel", 0) or 0)
    raise ValueError(f"bad tolerance: {tol!r}")


def close(actual: float, expected: float, abs_tol: float, rel_tol: float) -> bool:
    return abs(actual - expected) <= max(abs_tol, rel_tol * abs(expected)) + 1e-12


def short(value: Any, limit: int = 80) -> str:
    """A bounded repr, safe on huge or self-referential structures."""

    def rec(v: Any, depth: int, budget: list[int]) -> str:
        if budget[0] <= 0:
            return "…"
        if isinstance(v, dict):
            if depth > 3:
                return "{…}"
            parts = []
            for k, x in list(v.items())[:10]:
                parts.append(f"{k!r}: {rec(x, depth + 1, budget)}")
                budget[0] -= len(parts[-1])
                if budget[0] <= 0:
                    break
            return "{" + ", ".join(parts) + (", …" if len(v) > len(parts) else "") + "}"
        if isinstance(v, (list, tuple)):
            if depth > 3:
                return "[…]"
            parts = []
            for x in list(v[:10]):
                parts.append(rec(x, depth + 1, budget))
                budget[0] -= len(parts[-1])
                if budget[0] <= 0:
                    break
            return "[" + ", ".join(parts) + (", …" if len(v) > len(parts) else "") + "]"
        r = repr(v[: limit + 1] if isinstance(v, (str, bytes)) else v)
        return r

    s = rec(value, 0, [limit])
    return s if len(s) <= limit else s[: limit - 1] + "…"


def clip(text: str, limit: int = 120) -> str:
    """`text` on one line, cut to `limit` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def strings(description: str) -> dict:
    """Schema of a field holding one string or a list of strings (numbers are read as text).

    A lone `{{ expr }}` may yield the whole list (`x-template: value`); list items are text templates.
    """
    return {
        "type": ["string", "number", "array"],
        "items": {"type": ["string", "number"], "x-template": "text"},
        "x-template": "value",
        "description": description,
    }


def as_list(value: Any) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]
