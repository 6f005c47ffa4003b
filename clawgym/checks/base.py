"""Check base classes, the safe file-access context and shared helpers.

A check is configured by a plain dict (already validated and template-rendered by the compiler)
and scored against a *final* workspace plus a pristine copy of the *original* one. Everything it
reads goes through `CheckContext`, which refuses paths that escape the folder (absolute paths,
`..`, symlinks pointing outside), non-regular files, oversized and binary files; such problems
surface as `CheckFailure`, which the runner records as score 0 with the message as reason.
"""

from __future__ import annotations

import math
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from .original_files import OriginalFiles

MAX_BYTES = 20_000_000
MAX_ENTRIES = 100_000
MAX_REASON = 2000
SCHEMA_DRAFT = "https://json-schema.org/draft/2020-12/schema"


class CheckFailure(Exception):
    """Raised by checks and helpers: the check scores 0 with this message as reason."""


# ---------------------------------------------------------------------------------------------
# Results


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
# Context: safe access to the workspace folders


def has_magic(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


def _segment_regex(seg: str) -> str:
    out, i = "", 0
    while i < len(seg):
        c = seg[i]
        if c == "*":
            out += "[^/]*"
        elif c == "?":
            out += "[^/]"
        elif c == "[" and seg.find("]", i + 2) != -1:
            j = seg.find("]", i + 2)
            body = seg[i + 1 : j]
            if body.startswith("!"):
                body = "^" + body[1:]
            out += "[" + body.replace("\\", "\\\\") + "]"
            i = j
        else:
            out += re.escape(c)
        i += 1
    return out


def glob_regex(pattern: str) -> re.Pattern:
    """Compile a glob (`*`, `?`, `[..]` within a segment; `**` across segments) to a regex."""
    segs = [s for s in pattern.strip("/").split("/") if s not in ("", ".")]
    out = ""
    for i, seg in enumerate(segs):
        last = i == len(segs) - 1
        if seg == "**":
            out += ".*" if last else "(?:.*/)?"
        else:
            out += _segment_regex(seg) + ("" if last else "/")
    return re.compile(out + r"\Z", re.S)


def check_rel(rel: Any, where: str = "workspace") -> str:
    """Validate a relative path lexically: a non-empty string, not absolute, no `..`, no NUL."""
    if not isinstance(rel, str) or not rel.strip():
        raise CheckFailure(f"invalid path: {rel!r}")
    if "\x00" in rel:
        raise CheckFailure(f"invalid path: {rel!r}")
    if rel.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", rel):
        raise CheckFailure(f"absolute paths are not allowed: {rel}")
    if ".." in re.split(r"[/\\]", rel):
        raise CheckFailure(f"path escapes the {where}: {rel}")
    return rel


@dataclass
class CheckContext:
    """What a check may look at. All file access goes through the safe helpers below."""

    workspace: Path
    original: Path | None  # None with `original_files`: a private folder is made if a check needs one
    task_dir: Path | None
    params: dict
    trajectory: dict | None = None
    sandbox: dict | None = None
    mount: str | None = None  # where the task's workspace appears inside a sandbox
    # The pristine files in memory (`original` is then where they are written if a check needs a folder).
    original_files: "OriginalFiles | None" = None
    # The workspace's listing ({relative path: kind}) when the caller already walked it within the
    # grading limits (the verifier does, to measure it): `entries()` then needs no walk of its own.
    workspace_entries: dict[str, str] | None = None
    _walk_cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    _scratch: Path | None = field(default=None, init=False, repr=False, compare=False)
    _root: Path | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.workspace_entries is not None:
            self._walk_cache[False] = self.workspace_entries

    def root(self, *, original: bool = False) -> Path:
        if original:
            return self.original_folder()
        if self._root is None:  # the final workspace does not move while it is graded
            self._root = Path(self.workspace).resolve()
        return self._root

    def original_folder(self) -> Path:
        """The pristine workspace as a folder (pristine files held in memory are written on first use)."""
        if self.original_files is not None and self.original is None:
            from ..files.tempdirs import make_temp

            self._scratch = make_temp("verify")
            self.original = self._scratch / "original"
        if self.original_files is not None and not Path(self.original).exists():
            self.original_files.write_to(Path(self.original))
        if self.original is None:
            raise ValueError("a check context needs an original folder or original files")
        return Path(self.original).resolve()

    def close(self) -> None:
        """Remove the folder the pristine files were written to, if a check needed one."""
        scratch, self._scratch = self._scratch, None
        if scratch is not None:
            from ..files import safefs

            safefs.remove_tree(scratch)

    def path(self, rel: str, *, original: bool = False) -> Path:
        """Resolve `rel` inside the (original) workspace; CheckFailure if it would escape."""
        where = "original workspace" if original else "workspace"
        check_rel(rel, where)
        root = self.root(original=original)
        try:
            resolved = (root / rel).resolve()
        except (OSError, RuntimeError) as e:
            raise CheckFailure(f"cannot resolve {rel}: {e}") from None
        if resolved != root and not resolved.is_relative_to(root):
            raise CheckFailure(f"symlink points outside the {where}: {rel}")
        return resolved

    def lexists(self, rel: str, *, original: bool = False) -> bool:
        """True if `rel` exists (a dangling or escaping symlink counts as existing)."""
        check_rel(rel)
        if original and self.original_files is not None:
            return self.original_files.kind(rel) is not None
        head, tail = os.path.split(rel.strip().rstrip("/"))
        parent = self.path(head, original=original) if head else self.root(original=original)
        return os.path.lexists(parent / tail)

    def read_bytes(self, rel: str, *, original: bool = False, max_bytes: int = MAX_BYTES) -> bytes:
        """Read a regular file inside the folder, at most `max_bytes`; CheckFailure otherwise."""
        if original and self.original_files is not None:
            return self._read_original(rel, max_bytes)
        p = self.path(rel, original=original)
        try:
            st = p.stat()
        except FileNotFoundError:
            raise CheckFailure(f"file not found: {rel}") from None
        except OSError as e:
            raise CheckFailure(f"cannot read {rel}: {e.strerror or e}") from None
        if stat.S_ISDIR(st.st_mode):
            raise CheckFailure(f"is a directory, not a file: {rel}")
        if not stat.S_ISREG(st.st_mode):
            raise CheckFailure(f"not a regular file: {rel}")
        if st.st_size > max_bytes:
            raise CheckFailure(f"file too large: {rel} ({st.st_size} bytes > {max_bytes} limit)")
        try:
            fd = os.open(p, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
            with os.fdopen(fd, "rb") as f:
                data = f.read(max_bytes + 1)
        except OSError as e:
            raise CheckFailure(f"cannot read {rel}: {e.strerror or e}") from None
        if len(data) > max_bytes:
            raise CheckFailure(f"file too large: {rel} (> {max_bytes} bytes)")
        return data

    def _read_original(self, rel: str, max_bytes: int) -> bytes:
        assert self.original_files is not None
        check_rel(rel, "original workspace")
        kind, data = self.original_files.kind(rel), self.original_files.data(rel)
        if kind is None:
            raise CheckFailure(f"file not found: {rel}")
        if kind == "dir" or data is None:
            raise CheckFailure(f"is a directory, not a file: {rel}")
        if len(data) > max_bytes:
            raise CheckFailure(f"file too large: {rel} ({len(data)} bytes > {max_bytes} limit)")
        return data

    def read_text(self, rel: str, *, original: bool = False, max_bytes: int = MAX_BYTES) -> str:
        """Read a UTF-8 text file (BOM dropped, newlines normalised to `\\n`)."""
        data = self.read_bytes(rel, original=original, max_bytes=max_bytes)
        if b"\x00" in data:
            raise CheckFailure(f"binary file, expected text: {rel}")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise CheckFailure(f"not UTF-8 text: {rel} (bad byte at offset {e.start})") from None
        return text.replace("\r\n", "\n").replace("\r", "\n")

    def entries(self, *, original: bool = False) -> dict[str, str]:
        """Every entry below the folder as {relative posix path: kind}, never following symlinks.

        kind is one of "file", "dir", "link", "other". Capped at MAX_ENTRIES.
        """
        key = bool(original)
        if key in self._walk_cache:
            return self._walk_cache[key]
        if original and self.original_files is not None:
            self._walk_cache[key] = dict(self.original_files.kinds)
            return self._walk_cache[key]
        from ..files import safefs

        out: dict[str, str] = {}
        limits = safefs.TreeLimits(
            entries=MAX_ENTRIES, depth=safefs.GRADING_LIMITS.depth, apparent_bytes=1 << 62, data_bytes=1 << 62
        )
        try:
            for entry in safefs.walk(self.root(original=original), limits):
                out[entry.rel] = entry.kind
        except safefs.TreeTooLarge as e:
            raise CheckFailure(f"the workspace is too large to list: {e}") from None
        except OSError as e:
            raise CheckFailure(f"cannot list the workspace: {e.strerror or e}") from None
        self._walk_cache[key] = out
        return out

    def glob(self, pattern: str, *, original: bool = False) -> list[str]:
        """Sorted relative paths matching `pattern`. A plain directory name matches everything in it."""
        check_rel(pattern)
        pattern = pattern.strip().rstrip("/")
        table = self.entries(original=original)
        if not has_magic(pattern):
            pattern = pattern[2:] if pattern.startswith("./") else pattern
            if table.get(pattern) == "dir":
                pattern += "/**"
            else:
                return [pattern] if pattern in table else []
        rx = glob_regex(pattern)
        return sorted(p for p in table if rx.match(p))


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


def merge_schema(type_name: str, own: dict, doc: str = "") -> dict:
    """A check's full JSON Schema: its own params plus the common keys, closed to others."""
    props = {"type": {"const": type_name, "description": f"Selects the `{type_name}` check."}}
    props.update(COMMON_PROPERTIES)
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

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        if "schema" in cls.__dict__ and cls.__dict__.get("type"):
            own = cls.__dict__["schema"]
            doc = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())
            cls.params_schema = own
            cls.schema = merge_schema(cls.type, own, doc)

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
        self.weight = float(self.get("weight"))
        self.gate = bool(self.get("gate"))
        self.name = str(self.config.get("name") or self.default_name())

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


def parse_number(value: Any) -> float | None:
    """A float from a number or numeric string ("1,234.50", "$12", "12%"); None if not numeric."""
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
    s = _NUM_JUNK.sub("", value.strip())
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
