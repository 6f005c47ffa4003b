"""`clawgym report --html`: one self-contained static page for one or more run folders.

The page has the results table (with CIs), plots (reward distribution, mean reward per category,
tokens and turns per trial; SVG drawn by matplotlib in `clawgym.report.plots`) and a trial browser:
a virtualised list with filters (run, agent, category, status, text) and, for the selected trial, its
trajectory step by step (messages with tool calls and results, sandbox steps with their output, the
verdict's checks, the workspace diff).

Everything is in the file: the data as JSON in `<script type="application/json">` blocks, plain
JavaScript, the plots as inline SVG (with no record text in them: names reach the page only as data);
nothing is fetched. The list index is parsed at load; the per-trial details are parsed only when a
trial is first opened, so the page opens fast at 10,000 trials. Long strings that repeat across
trials (system prompts, tool schemas) are stored once; very long strings are cut.

Agent data is hostile: in the JSON blocks `<`, `>`, `&`, U+2028 and U+2029 are escaped so nothing can
close a block early; every string shown has its control characters and bidi overrides made visible
(`clawgym.files.textsafe.printable`); the page's code inserts data only as text, and a
Content-Security-Policy allows no script but the page's own (by hash).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import time
from pathlib import Path
from typing import Any, Sequence

from .summary import agent_name, run_labels, summarize
from ..records.outcomes import INFRASTRUCTURE, normalize
from ..run.runner import run_rules
from .plots import PLOTS, build_plots
from .stats import DEFAULT_KS
from ..spec.task import CATEGORY_LABELS
from ..files.textsafe import printable

MAX_STRING = 20_000  # characters kept of one message, output, reason...
MAX_DIFF = 100_000  # characters kept of one workspace diff
INTERN_MIN = 160  # strings at least this long are stored once in a shared table
TEMPLATE = Path(__file__).parent.parent / "templates" / "report.html"


def _cut(text: str, limit: int = MAX_STRING) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… [{len(text) - limit} more characters not shown]"


class _Strings:
    """A table of long strings: each is stored once and referenced as {"@": index}."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.index: dict[str, int] = {}

    def ref(self, text: Any, limit: int = MAX_STRING) -> Any:
        """`text` (non-strings as JSON text), cut to `limit`; long strings as a reference."""
        if text is None:
            return None
        if not isinstance(text, str):
            text = _short(text, limit)
        text = _cut(text, limit)
        if len(text) < INTERN_MIN:
            return text
        i = self.index.get(text)
        if i is None:
            i = self.index[text] = len(self.items)
            self.items.append(text)
        return {"@": i}


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


def _num(value: Any) -> float | None:
    """A number for the page's columns, or None (anything else would break its formatting)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if value == value and abs(value) != float("inf") else None


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError, OverflowError):
        return 0


def _shown(text: str, multiline: bool = True) -> str:
    """A string as the page shows it: control characters visible; line breaks and tabs kept if `multiline`."""
    return printable(text.replace("\r\n", "\n"), multiline=True) if multiline else printable(text)


# In JSON text (non-ASCII kept): what `_shown` could change. Escaped backslashes can match too: that only
# costs the slow path.
_MAYBE_UNSAFE = re.compile(
    r"\\[rbf]|\\u00[01]"
    r"|[\x7f-\x9f\xad\u061c\u180e\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff"
    r"\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f]"
)
_MAYBE_UNSAFE_LINE = re.compile(_MAYBE_UNSAFE.pattern + r"|\\[nt]")


def _visible(value: Any, multiline: bool = True) -> Any:
    """`value` with every string (keys too) passed through `_shown`."""
    if isinstance(value, (dict, list)):
        probe = _MAYBE_UNSAFE if multiline else _MAYBE_UNSAFE_LINE
        if not probe.search(json.dumps(value, ensure_ascii=False, default=str)):
            return value  # the common case: nothing to change, decided by one fast scan
        return _visible_walk(value, multiline)
    return _visible_walk(value, multiline)


def _visible_walk(value: Any, multiline: bool) -> Any:
    if isinstance(value, str):
        return _shown(value, multiline)
    if isinstance(value, dict):
        return {_shown(str(k), multiline): _visible_walk(v, multiline) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_visible_walk(v, multiline) for v in value]
    return value


def _short(value: Any, limit: int = 2000) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return _cut(text, limit)


def _message(msg: dict[str, Any], s: _Strings) -> dict[str, Any]:
    content = msg.get("content")
    if isinstance(content, list):  # multi-part content: keep the text parts
        content = "\n".join(str(p.get("text", p)) if isinstance(p, dict) else str(p) for p in content)
    out: dict[str, Any] = {"role": msg.get("role", "?"), "content": s.ref(content if content is not None else "")}
    calls = []
    for call in msg.get("tool_calls") or []:
        fn = call.get("function") or {}
        calls.append(
            {
                "id": call.get("id"),
                "name": fn.get("name", call.get("name", "?")),
                "arguments": s.ref(_short(fn.get("arguments", call.get("arguments", "")), MAX_STRING)),
            }
        )
    if calls:
        out["tool_calls"] = calls
    for key in ("tool_call_id", "name"):
        if msg.get(key):
            out[key] = msg[key]
    return out


def _step(step: dict[str, Any], s: _Strings) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in step.items():
        if isinstance(value, str):
            out[key] = s.ref(value)
        elif isinstance(value, (int, float, bool)) or value is None:
            out[key] = value
        else:
            out[key] = s.ref(_short(value, MAX_STRING))
    return out


def _check(result: dict[str, Any], s: _Strings) -> dict[str, Any]:
    details = {k: v for k, v in (result.get("details") or {}).items() if k != "duration_s"}
    return {
        "name": s.ref(str(result.get("name", ""))),
        "type": s.ref(result.get("type")),
        "score": _num(result.get("score")),
        "weight": _num(result.get("weight")),
        "gate": bool(result.get("gate")),
        "passed": result.get("passed"),
        "reason": s.ref(result.get("reason") or ""),
        "details": s.ref(_short(details)) if details else None,
    }


def trial_usage(traj: dict[str, Any] | None) -> tuple[int, int]:
    """(tokens, turns) of a trajectory: prompt + completion tokens, model turns; 0 without a model."""
    if not traj:
        return 0, 0
    usage = traj.get("usage") or {}
    turns = traj.get("turns") or []
    if not isinstance(usage, dict) or not isinstance(turns, list):
        return 0, 0
    tokens = _int(usage.get("prompt_tokens")) + _int(usage.get("completion_tokens"))
    if not tokens and turns:
        tokens = sum(_int(((t.get("usage") if isinstance(t, dict) else None) or {}).get("total_tokens")) for t in turns)
    return tokens, _int(usage.get("turns") or len(turns))


def _detail(rec: dict[str, Any], traj: dict[str, Any] | None, diff: str | None, s: _Strings) -> dict[str, Any]:
    verdict = rec.get("verdict") or {}
    task = rec.get("task") or {}
    out: dict[str, Any] = {
        "task": _visible({k: task.get(k) for k in ("name", "id", "seed", "category", "persona", "hash")}, False),
        "params": s.ref(_short(task.get("params") or {}, MAX_STRING)),
        "agent": s.ref(_short(rec.get("agent") or {}, MAX_STRING)),
        "error": s.ref(rec.get("error")),
        "traceback": s.ref(rec.get("traceback")),
        "outcome": normalize(rec.get("outcome"), status=rec.get("status"), error=rec.get("error")),
        "note": s.ref(rec.get("note")),
        "timings": rec.get("timings") or {},
        "verdict": {
            "reward": _num(verdict.get("reward")),
            "passed": verdict.get("passed"),
            "gate_failed": verdict.get("gate_failed"),
            "error": s.ref(verdict.get("error")),
            "checks": [_check(r, s) for r in verdict.get("results") or []],
        }
        if verdict
        else None,
        "diff": s.ref(diff, MAX_DIFF) if diff else "",
    }
    if traj:
        out.update(
            final_message=s.ref(traj.get("final_message")),
            messages=[_message(m, s) for m in traj.get("messages") or []],
            steps=[_step(st, s) for st in traj.get("steps") or []],
            turns=[
                {k: t.get(k) for k in ("index", "finish_reason", "usage", "latency_s")} for t in traj.get("turns") or []
            ],
            usage=traj.get("usage") or {},
            tools=[(t.get("function") or t).get("name", "?") for t in traj.get("tools") or []],
            side_effects=s.ref(_short(traj.get("side_effects"), MAX_STRING))
            if traj.get("side_effects") and any(traj["side_effects"].values())
            else None,
        )
    return out


def build_report_data(run_dirs: Sequence[Path], *, ks: Sequence[int] = DEFAULT_KS) -> dict[str, Any]:
    """The page's data: `index` (columns for the list and plots), `details` (one per trial), stats."""
    labels = run_labels(run_dirs)
    s = _Strings()
    cols: dict[str, list] = {
        k: []
        for k in ("id", "run", "agent", "cat", "status", "reward", "tokens", "turns", "task", "seed", "attempt", "secs")
    }
    details: list[dict[str, Any]] = []
    has_trajectory: list[bool] = []
    stats: dict[str, list] = {}
    for run_dir, label in zip(run_dirs, labels):
        records = []
        for path in sorted((Path(run_dir) / "trials").glob("*/record.json")):
            rec = _read_json(path)
            if not isinstance(rec, dict) or "task" not in rec or "trial_id" not in rec:
                continue
            records.append(rec)
            traj = _read_json(path.parent / "trajectory.json")
            traj = traj if isinstance(traj, dict) else None
            diff_path = path.parent / "workspace.diff"
            try:
                diff = diff_path.read_text(encoding="utf-8", errors="replace") if diff_path.is_file() else None
            except OSError:
                diff = None
            tokens, turns = trial_usage(traj)
            has_trajectory.append(traj is not None)
            task = rec["task"]
            cols["id"].append(rec["trial_id"])
            cols["run"].append(label)
            cols["agent"].append(agent_name(rec))
            cols["cat"].append(task.get("category", "?"))
            cols["status"].append(rec.get("status", "error"))
            cols["reward"].append(_num(rec.get("reward")))
            cols["tokens"].append(tokens)
            cols["turns"].append(turns)
            cols["task"].append(task.get("name", "?"))
            cols["seed"].append(task.get("seed"))
            cols["attempt"].append(rec.get("attempt", 0))
            cols["secs"].append(round(_num((rec.get("timings") or {}).get("total_s")) or 0.0, 3))
            details.append(_detail(rec, traj, diff, s))
        stats[label] = summarize(records, ks=ks, rules=run_rules(Path(run_dir))) if records else []
    try:
        plots = build_plots(cols, stats, labels, CATEGORY_LABELS, has_trajectory)
        svgs = plots.pop("svg")
    except ImportError as exc:  # matplotlib missing: the page says so where the plots would be
        plots, svgs = {"error": f"plots need matplotlib ({exc}): pip install matplotlib"}, {}
    # Names, ids and labels are one line each; messages, outputs and diffs keep their line breaks.
    one_line = _visible(
        {
            "runs": labels,
            "run_dirs": [str(d) for d in run_dirs],
            "stats": stats,
            "index": cols,
            "plots": plots,
            "infra": sorted(INFRASTRUCTURE),
        },
        multiline=False,
    )
    return {
        **one_line,
        "ks": list(ks),
        "categories": CATEGORY_LABELS,
        "details": [_visible(d) for d in details],
        "strings": _visible(s.items),
        "generated_at": time.strftime("%Y-%m-%d %H:%M:%S"),
        "plot_svg": svgs,
    }


# In a <script> block only "</script" (and "<!--") can end the data early; the rest keeps old
# parsers and JavaScript string rules (U+2028/9 were line ends before ES2019) from surprises.
_JSON_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)
_PLACEHOLDER = re.compile(r"\{\{(TITLE|DATA|CSP|PLOT-\w+)\}\}")
_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)
_INLINE_STYLE = re.compile(r"<style>(.*?)</style>", re.DOTALL)


def json_script(element_id: str, data: Any) -> str:
    """`data` as a JSON data block that no string inside it can close or break out of."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str).translate(_JSON_ESCAPES)
    return f'<script type="application/json" id="{html.escape(element_id)}">{text}</script>'


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def content_security_policy(page: str) -> str:
    """A policy for `page` that runs only its own inline scripts and styles (by hash), loads nothing.

    Data blocks (`<script type="application/json">`) are never run, so they need no hash.
    """
    scripts = " ".join(_sha256(m) for m in _INLINE_SCRIPT.findall(page)) or "'none'"
    styles = " ".join(_sha256(m) for m in _INLINE_STYLE.findall(page)) or "'none'"
    return (
        f"default-src 'none'; script-src {scripts}; style-src {styles}; img-src data:; "
        "base-uri 'none'; form-action 'none'"
    )


def render_html(data: dict[str, Any]) -> str:
    """The page: the template with the title, the data blocks and the security policy filled in."""
    head = {k: v for k, v in data.items() if k not in ("details", "strings", "plot_svg")}
    title = "ClawGym report: " + ", ".join(printable(str(r)) for r in data["runs"])
    template = TEMPLATE.read_text(encoding="utf-8")
    csp = html.escape(content_security_policy(template), quote=False).replace('"', "&quot;")
    values = {
        "TITLE": html.escape(title),
        "CSP": csp,
        "DATA": json_script("data-index", head)
        + "\n"
        + json_script("data-details", {"details": data["details"], "strings": data["strings"]}),
    }
    svgs = data.get("plot_svg") or {}
    for name in PLOTS:  # the SVG is markup made here from numbers and our own words (see plots.py)
        values[f"PLOT-{name}"] = svgs.get(f"plot-{name}") or '<p class="muted">no plot</p>'
    # One pass, so text put in for one placeholder is never taken for another.
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def write_html(run_dirs: Sequence[Path], out: Path, *, ks: Sequence[int] = DEFAULT_KS) -> dict[str, Any]:
    """Write the page for these run folders; returns {"trials", "bytes", "seconds"}."""
    t0 = time.monotonic()
    data = build_report_data(run_dirs, ks=ks)
    text = render_html(data)
    out = Path(out)
    if out.parent and not out.parent.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return {
        "trials": len(data["index"]["id"]),
        "bytes": len(text.encode("utf-8")),
        "seconds": round(time.monotonic() - t0, 3),
    }
