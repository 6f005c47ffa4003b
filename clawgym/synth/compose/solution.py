"""The reference solution of a composed task: the names its rows variables take, and the script
(or, in style `functions`, a function per step called from main()) made of the reader, each
operation's lines and each deliverable's lines, with the imports those lines use."""

from __future__ import annotations

import re
from typing import Any

from .ops import OPERATIONS
from .state import State

# local names the operations' code uses: a rows variable must not shadow them
RESERVED = frozenset(
    {
        "issues",
        "ours",
        "theirs",
        "kept",
        "lookup",
        "result",
        "figures",
        "lines",
        "table",
        "header",
        "rules",
        "rejects",
        "valid_rows",
        "across",
        "grand_total",
        "running",
        "as_of",
        "renamed",
        "for_import",
        "labels",
        "pattern",
        "exported",
        "how_many",
        "total",
        "name",
        "value",
        "target",
        "numeric",
        "bad",
        "record",
        "row",
        "writer",
        "out",
        "fh",
        "line",
        "match",
        "card",
        "sep",
        "group",
        "values",
        "k",
        "v",
        "field",
        "main",
        "valid",
        "date",
        "datetime",
        "timedelta",
        "csv",
        "json",
        "os",
        "re",
        "glob",
        "shutil",
        "path",
        "defaultdict",
        "label",
        "shown",
        "overall",
        "others",
        "wanted",
        "best",
        "seen",
        "unique",
        "counts",
        "x",
        "col",
        "kind",
        "rows",
        "at_key",
        "at_value",
        "mine",
        "other",
        "cleaned",
        "raw",
        "pattern",
        "SHAPES",
        "checks",
        "failing",
        "first_problem",
        "list",
        "dict",
        "set",
        "str",
        "int",
        "float",
        "sum",
        "len",
        "max",
        "min",
        "sorted",
        "filter",
        "open",
        "round",
    }
)


def snake(text: str) -> str:
    """The words of `text` as a snake_case Python name."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def row_names(stem: str, noun: str) -> tuple[str, str]:
    """The solution's rows variable and one-row variable, named after the input file and the domain's
    noun, apart from each other and from the names the solution's own steps use."""
    var, it = snake(stem), snake(noun)
    if var == it:
        var = f"all_{var}"
    if var in RESERVED or var[:1].isdigit():  # a name the solution's own steps use
        var = f"{var}_rows"
    if it in RESERVED or it[:1].isdigit():
        it = f"{it}_row"
    return var, it


def _step_name(op_name: str, p: dict[str, Any]) -> str:
    if p.get("new"):
        return f"add_{p['new']}"
    if p.get("field"):
        return f"{op_name}_{p['field']}"
    return op_name


def _as_functions(var: str, blocks: list[tuple[str, list[str], bool]]) -> list[str]:
    """Each named block as a function of the rows (returning them when it changes them), and main()."""
    out: list[str] = []
    calls: list[str] = []
    used: set[str] = set()
    for i, (name, lines, returns) in enumerate(blocks):
        if not name:
            calls += lines
            continue
        while name in used:
            name += "_again"
        used.add(name)
        if i == 0:
            out += [f"def {name}():"] + ["    " + ln for ln in lines] + [f"    return {var}", "", ""]
            calls.append(f"{var} = {name}()")
        else:
            out += [f"def {name}({var}):"] + ["    " + ln for ln in lines]
            out += ([f"    return {var}"] if returns else []) + ["", ""]
            calls.append(f"{var} = {name}({var})" if returns else f"{name}({var})")
    return out + ["def main():"] + ["    " + c for c in calls] + ["", "", "if __name__ == '__main__':", "    main()"]


_IMPORTS = (
    ("csv.", "import csv"),
    ("glob.", "import glob"),
    ("json.", "import json"),
    ("os.", "import os"),
    ("re.", "import re"),
    ("shutil.", "import shutil"),
)


def reference_solution(s: State, reader: list[str], steps: list, delivered: list) -> list[str]:
    """The reference solution: the reader, each operation's lines, each deliverable's lines; as one
    script whose every step opens with a `# step: <operation>` line (the step-mutation gate removes
    each in turn, mutations/steps.py), or (style `functions`) a function per step called from main()."""
    blocks: list[tuple[str, list[str], bool]] = [(f"load_{s.var}", list(reader), True)]
    ops: list[str] = [""]  # the operation of each block ("": the reader, or setup that is no step)
    for op_name, p in steps:
        lines = OPERATIONS[op_name].code(s, p)
        if lines:
            blocks.append((_step_name(op_name, p), lines, True))
            ops.append(op_name)
    if any(not d.moves_input for _, d in delivered):
        blocks.append(("", [s.style.mkdir(s.out_dir)], False))
        ops.append("")
    for d_name, d in delivered:
        blocks.append(
            (
                f"write_{snake(d.path.rstrip('/').rsplit('/', 1)[-1].split('.')[0])}"
                if d_name != "organise"
                else f"organise_{s.var}",
                list(d.code),
                False,
            )
        )
        ops.append(d_name)
    body = _as_functions(s.var, blocks) if s.style.layout == "functions" else _as_script(blocks, ops)
    text = "\n".join(body)
    imports = [line for token, line in _IMPORTS if re.search(r"(?<![\w.])" + re.escape(token), text)]
    names = [n for n in ("date", "datetime", "timedelta") if re.search(rf"(?<![\w.]){n}[.(]", text)]
    if names:
        imports.append(f"from datetime import {', '.join(names)}")
    if re.search(r"(?<![\w.])defaultdict\(", text):
        imports.append("from collections import defaultdict")
    if re.search(r"(?<![\w.])Path\(", text):
        imports.append("from pathlib import Path")
    return imports + [""] + body


def _as_script(blocks: list[tuple[str, list[str], bool]], ops: list[str]) -> list[str]:
    """One script: the reader and the setup that is no step (making the output folder) first, then
    each step's lines under a `# step: <operation>` line, so that removing a step's block (up to the
    next mark) removes that step and nothing else."""
    out = list(blocks[0][1])
    out += [ln for (name, lines, _), op in zip(blocks[1:], ops[1:]) if not op for ln in lines]
    for (_, lines, _), op in zip(blocks[1:], ops[1:]):
        if op:
            out += [f"# step: {op}", *lines]
    return out
