"""Verifier subprocess: `python -m clawgym.verify.worker` reads one JSON request on stdin and
writes one JSON answer on stdout.

Request: {"checks", "workspace", "original", "task_dir", "params", "trajectory", "sandbox",
"check_timeout"?}. Answer: {"results": [CheckResult dicts]} or {"error": msg, "kind": "infra" |
"prerequisite"}. Anything checks or their children print goes to stderr, never into the answer.
Only the checks package is imported (not every plugin), so the worker starts fast.
`answer_bytes` is the same for a process forked from the verifier server (`clawgym.verify.server`).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main() -> int:
    answer_fd = os.dup(1)
    os.dup2(2, 1)  # stray prints from checks and their children land on stderr
    sys.stdout = sys.stderr
    answer, code = _answer(sys.stdin.buffer.read())
    with os.fdopen(answer_fd, "w", encoding="utf-8") as out:
        out.write(json.dumps(answer, default=str))
    return code


def answer_bytes(request: bytes) -> bytes:
    """The JSON answer to one JSON request (used by processes forked from the verifier server)."""
    return json.dumps(_answer(request)[0], default=str).encode("utf-8")


def _answer(request: bytes) -> tuple[dict, int]:
    """(answer, exit code) for one JSON request; any failure is reported, never raised."""
    try:
        return handle(json.loads(request.decode("utf-8"))), 0
    except Exception as e:  # noqa: BLE001 - report, never hang the caller
        return {"error": f"verifier failed: {type(e).__name__}: {e}", "kind": "infra"}, 1


WARM_CHECKS: list[dict] = [  # one of each check that only reads files: their lazy imports and regexes load once
    {"type": "file_exists", "path": "x"},
    {"type": "files_count", "pattern": "*.csv", "min": 1},
    {"type": "unchanged", "paths": ["rows.csv"]},
    {"type": "csv_rows_equal", "path": "rows.csv", "expected": [{"id": "1", "amount": "2.50"}], "key": ["id"]},
    {"type": "json_field_equals", "path": "data.json", "field": "items[0].n", "expected": 1},
    {"type": "yaml_field_equals", "path": "data.yaml", "field": "n", "expected": 1},
    {
        "type": "json_schema",
        "path": "data.json",
        "schema": {"type": "object", "required": ["items"], "properties": {"items": {"type": "array"}}},
    },
    {"type": "numeric_close", "path": "data.json", "field": "total", "expected": 2.5, "abs": 0.01},
    {"type": "text_contains", "path": "notes.md", "contains": ["Total"]},
    {"type": "text_matches", "path": "notes.md", "pattern": "Total: ([0-9.]+)"},
    {"type": "markdown_section", "path": "notes.md", "heading": "Summary", "contains": ["Total"]},
    {"type": "line_count", "path": "notes.md", "min": 1},
]


def _write_warm_files(folder: Path) -> None:
    (folder / "x").write_text("x\n")
    (folder / "rows.csv").write_text("id,amount\n1,2.50\n")
    (folder / "data.json").write_text('{"items": [{"n": 1}], "total": 2.5}\n')
    (folder / "data.yaml").write_text("n: 1\n")
    (folder / "notes.md").write_text("# Summary\n\nTotal: 2.50\n")


def warm_up() -> None:
    """Import what `handle` needs and run one trivial request (for the forking server)."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory(prefix="clawgym-warm-") as folder:
        _write_warm_files(Path(folder))
        handle({"checks": WARM_CHECKS, "workspace": folder, "original": folder, "params": {}, "diff": True})
        try:  # the sandbox self-test, once here instead of in every command check's verifier
            from ..sandbox import create_sandbox

            with create_sandbox(None, Path(folder), network=False):
                pass
        except Exception:  # noqa: BLE001 - no sandbox here: command checks report it themselves
            pass


def handle(request: dict) -> dict:
    """Run the request's checks. With `original_files` ({path: base64}) the pristine files are held
    in memory (and written to the verifier's own temp folder only for a check that needs them as a
    folder); with `diff: true` the answer also carries the
    unified diff from the original files to the final workspace. A workspace past the grading
    limits (or with a `workspace_problem` the caller saw) fails one gate and runs no check."""
    import base64
    import time
    from pathlib import Path

    from ..files import safefs
    from ..checks.base import CheckContext
    from ..errors import InfraError, PrerequisiteError
    from .grade import run_checks
    from ..checks.original_files import OriginalFiles
    from ..compile.workspace import diff

    task_dir = request.get("task_dir")
    originals = request.get("original_files")
    workspace = Path(request["workspace"])
    deadline = time.monotonic() + float(request["budget_s"]) if request.get("budget_s") else None
    ctx = None
    try:
        in_memory, original = None, None
        if originals is not None:  # held in memory; written out only if a check needs a folder
            files = {rel: base64.b64decode(data) for rel, data in originals.items()}
            in_memory = OriginalFiles(files, request.get("executables") or ())
        else:
            files, original = None, Path(request["original"])
        problem = request.get("workspace_problem")
        listing: dict[str, tuple[str, int]] = {}
        if not problem:
            try:  # one walk within the grading limits, shared by the checks and the diff
                listing = {e.rel: (e.kind, e.st.st_size) for e in safefs.walk(workspace, safefs.GRADING_LIMITS)}
            except safefs.TreeTooLarge as e:
                problem = f"the final workspace is too large to grade: {e}"
        if problem:
            answer: dict = {"results": [r.to_dict() for r in refused(list(request["checks"]), problem)]}
        else:
            ctx = CheckContext(
                workspace=workspace,
                original=original,
                task_dir=Path(task_dir) if task_dir else None,
                params=request.get("params") or {},
                trajectory=request.get("trajectory"),
                sandbox=request.get("sandbox"),
                mount=request.get("mount"),
                original_files=in_memory,
                workspace_entries={rel: kind for rel, (kind, _) in listing.items()},
            )
            try:
                results = run_checks(
                    list(request["checks"]),
                    ctx,
                    deadline=deadline,
                    check_timeout=float(request.get("check_timeout") or 60),
                )
            except PrerequisiteError as e:
                return {"error": str(e), "kind": "prerequisite"}
            except InfraError as e:
                return {"error": str(e), "kind": "infra"}
            answer = {"results": [r.to_dict() for r in results]}
        if request.get("diff"):
            original_tree = files if files is not None else Path(request["original"])
            answer["diff"] = diff(original_tree, workspace, listing if not problem else None)
        return answer
    finally:
        if ctx is not None:
            ctx.close()


def refused(checks: list, problem: str) -> list:
    """The results of a workspace that cannot be graded: one failed gate with the reason, every check not run."""
    from ..checks.base import CheckResult

    out = [
        CheckResult(name="workspace can be graded", type="workspace", score=0.0, weight=0.0, gate=True, reason=problem)
    ]
    for i, config in enumerate(checks):
        config = config if isinstance(config, dict) else {}
        name = str(config.get("name") or f"{config.get('type', 'check')} #{i + 1}")
        out.append(
            CheckResult(
                name=name,
                type=str(config.get("type", "?")),
                score=0.0,
                weight=float(config.get("weight", 1) or 0),
                gate=bool(config.get("gate")),
                reason="not run: the workspace cannot be graded",
            )
        )
    return out


if __name__ == "__main__":
    sys.exit(main())
