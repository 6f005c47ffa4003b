"""`clawgym import clawgym-hf FILE.jsonl --out DIR`: the published ClawGym source rows → task specs.

The 13.5K-task source set on the Hugging Face hub stores one task per JSONL row:
`{prompt, hook_code, input_files: [{file_path, content}], rule, origin_template}`. Each row is laid
out as a published task folder (`data_entry.json`, `input_files/`, `reward/` with the grader and the
published `reward.sh`) and imported by the same machinery as `clawgym import clawgym`: the same
restore decisions, the same one-off grader run in a grading sandbox, the same report. On top:

- the grader is what `input_files` holds under `reward/` (check.py and its helpers); `hook_code`,
  when given, is the grader itself (`reward/check.py`) unless the row ships one under reward/;
- `rule`, an LLM rubric, becomes the task's `rubric` (one criterion a bullet or line), with the
  published hybrid weighting (0.7 code + 0.3 rubric);
- `origin_template`'s YAML front matter gives the category (and subcategory, difficulty) and the
  persona when present; a persona named there is written into the output library.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any, Iterator

from ..errors import ClawgymError
from ..spec.load import load_text
from ..spec.write import dump_spec
from ..files.tempdirs import work_root
from .clawgym_format import DATA_ENTRY, DEFAULT_MOUNT, INPUTS, REWARD, REWARD_SH
from .clawgym_import import Outcome, run_imports
from .folders import spec_name
from .library import ensure_library
from .outcomes import finish_import, print_reasons

REPORT = "import-report.jsonl"
HYBRID_RUBRIC_WEIGHT = 0.3
_FRONT = re.compile(r"\A\s*---\s*\n(.*?)\n---\s*(?:\n|\Z)", re.S)
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_MOUNT_PREFIXES = (DEFAULT_MOUNT.rstrip("/") + "/", "~/.openclaw/workspace/", "./")


class BadRow(Exception):
    """A row that cannot become a task; the message says which field and why."""


def front_matter(template: Any) -> dict[str, Any]:
    """The YAML front matter of `origin_template` (markdown), or {} when there is none or it is not a mapping."""
    if not isinstance(template, str):
        return {}
    m = _FRONT.match(template)
    if not m:
        return {}
    try:
        data = load_text(m.group(1), "origin_template").data
    except ClawgymError:
        return {}
    return data if isinstance(data, dict) else {}


def rubric_of(rule: Any) -> list[dict[str, Any]]:
    """`rule` as rubric criteria: one per bullet or non-empty line (a paragraph is one criterion)."""
    if isinstance(rule, list):
        items = [str(r).strip() for r in rule if str(r).strip()]
    elif isinstance(rule, str) and rule.strip():
        lines = [ln for ln in rule.strip().splitlines() if ln.strip()]
        bullets = [ln for ln in lines if _BULLET.match(ln)]
        if len(bullets) >= 2:
            items = [_BULLET.sub("", ln).strip() for ln in bullets]
        elif len(lines) > 1 and all(len(ln) < 300 for ln in lines):
            items = [ln.strip() for ln in lines]
        else:
            items = [" ".join(rule.split())]
    else:
        items = []
    return [{"criterion": text} for text in items if text]


def _relative(path: Any, index: int) -> str:
    if not isinstance(path, str) or not path.strip():
        raise BadRow(f"input_files[{index}].file_path is {path!r}, expected a relative path")
    rel = path.strip()
    for prefix in _MOUNT_PREFIXES:
        if rel.startswith(prefix):
            rel = rel[len(prefix) :]
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if rel.startswith("/") or not parts or ".." in parts:
        raise BadRow(f"input_files[{index}].file_path {path!r} leaves the workspace")
    return "/".join(parts)


def lay_out(row: dict[str, Any], folder: Path, task_id: str) -> dict[str, Any]:
    """Write `row` as a published task folder; returns what the spec adds (rubric, persona, category)."""
    prompt = row.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise BadRow(f"`prompt` is {'missing' if prompt is None else repr(prompt)[:40]}, expected the instruction")
    files = row.get("input_files") or []
    if not isinstance(files, list):
        raise BadRow("`input_files` is not a list of {file_path, content}")
    meta = front_matter(row.get("origin_template"))
    inputs, grader = {}, {}
    for i, item in enumerate(files):
        if not isinstance(item, dict):
            raise BadRow(f"input_files[{i}] is not an object with file_path and content")
        rel = _relative(item.get("file_path"), i)
        content = item.get("content")
        if not isinstance(content, str):
            raise BadRow(f"input_files[{i}] ({rel}): `content` is not text")
        (grader if rel.split("/", 1)[0] == REWARD else inputs)[rel] = content
    hook = row.get("hook_code")
    if f"{REWARD}/check.py" not in grader and isinstance(hook, str) and hook.strip():
        grader[f"{REWARD}/check.py"] = hook
    if f"{REWARD}/check.py" not in grader:
        raise BadRow("no grader: neither input_files under reward/ nor hook_code hold check.py")
    grader.setdefault(f"{REWARD}/reward.sh", REWARD_SH)
    for rel, content in inputs.items():
        _write(folder / INPUTS / rel, content)
    for rel, content in grader.items():
        _write(folder / rel, content, executable=rel.endswith(".sh"))
    rubric = rubric_of(row.get("rule"))
    category = meta.get("category")
    entry = {"task_id": task_id, "user_query": prompt}
    if inputs:
        entry["input_mount_dir"] = DEFAULT_MOUNT
    entry["metadata"] = {
        "category": str(category) if category else "",
        "grading_type": "hybrid" if rubric else "automated",
    }
    (folder / DATA_ENTRY).write_text(json.dumps(entry, indent=2, ensure_ascii=False), encoding="utf-8")
    extra: dict[str, Any] = {}
    if rubric:
        extra["rubric"] = rubric
        extra["rubric_weight"] = HYBRID_RUBRIC_WEIGHT
    for key in ("subcategory", "difficulty"):
        if isinstance(meta.get(key), str) and meta[key].strip():
            extra[key] = meta[key].strip()
    persona = meta.get("persona")
    if persona:
        extra["persona"] = persona
    return extra


def _write(path: Path, content: str, executable: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8")
    if executable:
        path.chmod(0o755)


def persona_spec(persona: Any) -> tuple[str, dict[str, Any]] | None:
    """A persona spec from the front matter's `persona` (a name, a one-line description, or a mapping)."""
    if isinstance(persona, dict):
        full = str(persona.get("name") or persona.get("full_name") or "").strip()
        role = str(persona.get("role") or persona.get("description") or persona.get("occupation") or "").strip()
        bio = str(persona.get("bio") or persona.get("background") or "").strip()
    elif isinstance(persona, str) and persona.strip():
        text = " ".join(persona.split())
        full, role, bio = "", text[:200], text if len(text) > 200 else ""
    else:
        return None
    role = role or "The person whose workspace this is"
    name = spec_name(f"hf-{full or role}")[:64].strip("-")
    full = full or "Alex Morgan"
    spec: dict[str, Any] = {
        "apiVersion": "clawgym/v1",
        "kind": "Persona",
        "name": name,
        "full_name": full,
        "role": role,
    }
    if bio:
        spec["bio"] = bio
    return name, spec


def read_rows(path: Path) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    """(line number, row or None, problem or None) for every non-empty line of the JSONL file."""
    try:
        handle = path.open(encoding="utf-8")
    except OSError as e:
        raise ClawgymError(f"cannot read {path}: {e.strerror or e}", hint="give a .jsonl file of source rows") from None
    with handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as e:
                yield number, None, f"not JSON ({e})"
                continue
            if not isinstance(row, dict):
                yield number, None, f"a JSON {type(row).__name__}, expected an object"
                continue
            yield number, row, None


def import_hf(
    path: Path, out: Path, *, jobs: int | None = None, smoke: bool = True, quiet: bool = False, console: Any = None
) -> list[Outcome]:
    """The CLI: import every row of `path` into `out`, print warnings and rejections, write the report."""
    out.mkdir(parents=True, exist_ok=True)
    ensure_library(out)
    outcomes: dict[int, Outcome] = {}
    work: list[tuple] = []
    seen: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="clawgym-hf-", dir=work_root()) as tmp:
        for number, row, problem in read_rows(path):
            source = f"{path.name}:{number}"
            if row is None:
                outcomes[number] = Outcome(source=source, task_id=None, status="rejected", reasons=[str(problem)])
                continue
            laid = _lay_out_row(row, number, Path(tmp) / f"row-{number}", out, seen, smoke)
            if isinstance(laid, Outcome):
                laid.source = source
                outcomes[number] = laid
            else:
                work.append((number, laid))
        for (number, args), outcome in zip(work, run_imports([args for _, args in work], jobs, smoke)):
            outcome.source = f"{path.name}:{number}"
            outcomes[number] = outcome
    ordered = [outcomes[n] for n in sorted(outcomes)]
    if not ordered:
        raise ClawgymError(f"{path} holds no rows", hint="one JSON object a line: prompt, hook_code, input_files, ...")
    for outcome in ordered:
        print_reasons(console, outcome, quiet)
    finish_import(ordered, out, REPORT, "row", console)
    return ordered


def _lay_out_row(
    row: dict[str, Any], number: int, folder: Path, out: Path, seen: dict[str, int], smoke: bool
) -> tuple | Outcome:
    """The arguments of `import_one` for this row (its folder laid out), or its rejection."""
    task_id = str(row.get("task_id") or row.get("id") or f"hf-{number:05d}")
    try:
        extra = lay_out(row, folder, task_id)
    except BadRow as e:
        return Outcome(source=str(number), task_id=task_id, status="rejected", reasons=[str(e)])
    base = spec_name(task_id)
    seen[base] = seen.get(base, 0) + 1
    name = base if seen[base] == 1 else f"{base[:60]}-{seen[base]}"
    persona = persona_spec(extra.pop("persona", None))
    if persona is not None:
        target = out / "personas" / f"{persona[0]}.yaml"
        if not target.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(
                dump_spec(persona[1], "A persona from a ClawGym source row's origin_template."), encoding="utf-8"
            )
        extra["persona"] = persona[0]
    return (folder, out, name, smoke, extra)
