"""Lazy agents: final workspaces written without any analysis, to show that a task does not pay them.

Each variant looks at what a lazy or guessing agent could see (the instruction, the input files)
plus the reference's outputs' names and shapes, and writes a candidate workspace: the pristine
inputs with its own versions of the outputs. A good task scores every variant at most 0.1.

- `empty`: every output created empty;
- `skeleton`: every output with its name and format and no content (a CSV's header, `{}`, the
  headings of a Markdown file, the To:/Subject: lines of a mail);
- `instruction_numbers`: the skeleton filled with the numbers the instruction states;
- `constant_guess`: the reference's shape (keys, row keys) with every number one constant known
  without analysis (0, 1, an input's row count, the input column's max or min);
- `unfiltered_input`: the input tables poured into the outputs' columns, nothing filtered;
- `first_rows`: the reference solution run on inputs cut to a header and two rows;
- `wrong_content`: the reference's values moved between its rows (the right set, wrong pairing).

Variants only write files; nothing they wrote is ever run. `lazy_scores` grades each candidate
with the grading function it is given (the callers grade in process, as they grade doing nothing)
and keeps each variant's best score with the checks that paid.
"""

from __future__ import annotations

import fnmatch
import itertools
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterator, Mapping, Protocol, Sequence

from ..compile.workspace import snapshot
from ..errors import InfraError
from ..files import safefs
from ..files.tempdirs import make_temp
from ..sandbox import SandboxLimits, create_sandbox
from ..spec.task import Task
from . import lazy_formats as fmt
from .oracle import OracleAgent
from .tamper import input_files, truncate_inputs

MAX = 0.1
EPS = 1e-9
FIX = (
    "make the checks depend on the computed content: no weight on a file's existence or on untouched inputs, "
    "no lone number, no partial credit for the unfiltered input"
)
FIRST_ROWS = 2  # data rows the `first_rows` agent reads of each input table
MAX_NUMBERS = 8  # instruction numbers each tried as a constant
TRAJECTORY_CHECKS = ("message_sent", "cron_job")  # read the trajectory, no file
WHAT = {
    "empty": "every output created empty",
    "skeleton": "every output with its name and format, no content",
    "instruction_numbers": "the instruction's numbers where the reference has numbers",
    "constant_guess": "the reference's shape with one constant for every number",
    "unfiltered_input": "the input tables copied into the outputs",
    "first_rows": "the reference run on each input table's header and first rows",
    "wrong_content": "the reference's values moved to the wrong rows",
    "number_spray": "prose that lists every whole number from 0 to 100",
    "input_with_zeros": "the input rows copied, every column the input lacks set to 0, in input or key order",
}


class Graded(Protocol):
    """What a grading function returns (a Verdict): the reward and each check's result."""

    @property
    def reward(self) -> float: ...

    @property
    def results(self) -> Sequence[Any]: ...  # each with name, score, weight


@dataclass(frozen=True)
class Candidate:
    """One lazy final workspace: the pristine inputs with `files` written over them (None: absent)."""

    variant: str
    guess: str
    files: Mapping[str, bytes | None]


@dataclass(frozen=True)
class LazyScore:
    """A variant's best candidate: its reward and the checks that paid it (name, score)."""

    variant: str
    reward: float
    guess: str = ""
    paying: tuple[tuple[str, float], ...] = ()

    def describe(self) -> str:
        """'constant_guess (the reference's shape ...; constant 0) scores 0.400; paying: totals 1.000'."""
        how = WHAT.get(self.variant, "") + (f"; {self.guess}" if self.guess and self.guess != self.variant else "")
        paid = ", ".join(f"{name} {score:.3f}" for name, score in self.paying[:4])
        more = f" and {len(self.paying) - 4} more" if len(self.paying) > 4 else ""
        return f"{self.variant} ({how}) scores {self.reward:.3f}; paying: {paid + more or 'none'}"


@dataclass
class Reference:
    """What the lazy agents start from: the task, its pristine inputs and the reference's outputs."""

    task: Task
    pristine: Path
    final: Path
    paths: list[str]
    sandbox: dict | None = None
    outputs: list[fmt.Output] = field(default_factory=list)
    known: fmt.Known = field(default_factory=fmt.Known)
    inputs: dict[str, fmt.Table] = field(default_factory=dict)
    scratch: Path | None = None

    @classmethod
    def read(
        cls, task: Task, pristine: Path, final: Path, paths: Sequence[str], sandbox: dict | None = None
    ) -> "Reference":
        after, before = snapshot(final), snapshot(pristine)
        keys = _csv_keys(task)
        ref = cls(task, pristine, final, [p for p in paths if _safe(p)], sandbox)
        ref.outputs = [fmt.read_output(p, raw, keys.get(p, ())) for p in ref.paths if (raw := after.get(p)) is not None]
        ref.known = fmt.Known.of(task.instruction)
        for rel in input_files(task):
            raw = before.get(rel)
            table = fmt.input_table(rel, raw) if raw is not None else None
            if table is not None and table.rows:
                ref.inputs[rel] = table
        return ref


def output_paths(task: Task, pristine: Path, final: Path) -> list[str]:
    """Files the reference created or changed that a check reads (every such file when a check
    reads files it does not name, such as a `command` or `python` check)."""
    before, after = snapshot(pristine), snapshot(final)
    changed = [p for p, data in sorted(after.items()) if data is not None and before.get(p) != data]
    patterns, everything = [], False
    for check in task.checks:
        named = [v for k in ("path", "paths", "pattern") for v in _as_list(check.get(k))]
        patterns += named
        everything = everything or (not named and check.get("type") not in TRAJECTORY_CHECKS)
    return changed if everything else [p for p in changed if any(_matches(p, pat) for pat in patterns)]


def _as_list(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else [v for v in value or () if isinstance(v, str)]


def _matches(path: str, pattern: str) -> bool:
    folder = pattern.rstrip("/")
    return fnmatch.fnmatchcase(path, pattern) or path == folder or path.startswith(folder + "/")


def _safe(rel: str) -> bool:
    parts = PurePosixPath(rel).parts
    return bool(parts) and not rel.startswith("/") and ".." not in parts


def _csv_keys(task: Task) -> dict[str, list[str]]:
    """The `key` columns csv_rows_equal checks pair rows by, per path."""
    out: dict[str, list[str]] = {}
    for check in task.checks:
        if check.get("type") == "csv_rows_equal" and check.get("key") and isinstance(check.get("path"), str):
            out.setdefault(check["path"], _as_list(check["key"]))
    return out


# --- the variants -------------------------------------------------------------------------------


def _each(ref: Reference, variant: str, guess: str, write: Callable[[fmt.Output], str]) -> Candidate:
    return Candidate(variant, guess, {o.path: write(o).encode() for o in ref.outputs})


def empty(ref: Reference) -> Iterator[Candidate]:
    """Every output the reference writes, created empty."""
    if ref.outputs:
        yield Candidate("empty", "empty", {o.path: b"" for o in ref.outputs})


def skeleton(ref: Reference) -> Iterator[Candidate]:
    """Every output with its name and format and no content."""
    known = ref.known
    if ref.outputs:
        yield _each(ref, "skeleton", "skeleton", lambda o: fmt.skeleton(o, known))


def instruction_numbers(ref: Reference) -> Iterator[Candidate]:
    """The skeleton with the instruction's numbers where the reference has numbers: all of them in
    turn, then each one everywhere (in JSON, under the keys the instruction names)."""
    known, numbers = ref.known, list(ref.known.numbers)
    if not numbers or not ref.outputs:
        return
    listed = _with_numbers(ref, lambda: itertools.cycle(numbers), known, numbers)
    yield _each(ref, "instruction_numbers", "the instruction's numbers in turn", listed)
    for n in numbers[:MAX_NUMBERS]:
        yield _each(
            ref, "instruction_numbers", f"{n} everywhere", _with_numbers(ref, lambda: itertools.repeat(n), known, [n])
        )


def _with_numbers(
    ref: Reference, source: Callable[[], Iterator[str]], known: fmt.Known, listed: list[str]
) -> Callable[[fmt.Output], str]:
    def write(out: fmt.Output) -> str:
        numbers = source()
        if out.kind == "csv" and out.table is not None:
            rows = [[next(numbers) if fmt.is_number(c) else "" for c in r] for r in out.table.rows]
            return fmt.write_table(fmt.Table(out.table.header, rows, out.table.delimiter))
        if out.kind in ("json", "yaml") and isinstance(out.data, (dict, list)):
            filled = fmt.reshape(out.data, lambda _: fmt.as_value(next(numbers)), False, known=known)
            return fmt.dump(out.kind, filled)
        if out.kind == "markdown":
            body = fmt.rewrite_markdown(
                out,
                known,
                lambda _, t, k: [next(numbers) if fmt.is_number(c) else "" for c in t.rows[k]],
                lambda _: None,
            )
            return body + "".join(f"- {n}\n" for n in listed)
        if out.kind == "text":
            return "".join(line + "\n" for line in fmt.skeleton_lines(out, known) + listed)
        return fmt.skeleton(out, known)

    return write


SPRAY = [str(n) for n in range(101)]


def number_spray(ref: Reference) -> Iterator[Candidate]:
    """Every prose output (a message, a note, a Markdown report) as its skeleton plus a list
    numbered 1 to 100, then a line for every whole number from 0 to 100, in digits and beside the
    words a count takes: a count or a small figure checked anywhere in prose is bought by listing
    them all."""
    prose = [o for o in ref.outputs if o.kind in ("text", "markdown")]
    if not prose:
        return
    lines = SPRAY + [f"{n} items, {n} rows, {n} in total" for n in SPRAY]
    numbered = [f"{n}. item" for n in SPRAY[1:]]  # a numbered list: its markers are not counts
    yield _each(
        ref,
        "number_spray",
        "a list numbered 1 to 100",
        _with_numbers(ref, lambda: itertools.repeat("0"), ref.known, numbered),
    )
    yield _each(
        ref, "number_spray", "0 to 100 listed", _with_numbers(ref, lambda: itertools.repeat("0"), ref.known, lines)
    )


def constant_guess(ref: Reference) -> Iterator[Candidate]:
    """The reference's shape (keys, rows' key cells) with every number one constant that needs no
    analysis: 0, 1, an input's row count, or each column's max or min in the input."""
    if not any(o.kind in ("csv", "json", "yaml") or o.tables for o in ref.outputs):
        return
    constants: dict[str, Callable[[str], str]] = {"0": lambda _: "0", "1": lambda _: "1"}
    for table in ref.inputs.values():
        constants.setdefault(str(len(table.rows)), _fixed(str(len(table.rows))))
    if ref.inputs:
        constants["column max"] = lambda col: _column_extreme(ref, col, max)
        constants["column min"] = lambda col: _column_extreme(ref, col, min)
    for guess, value in constants.items():
        label = guess if guess.startswith("column") else f"constant {guess}"
        yield _each(ref, "constant_guess", label, _constant(ref, value))


def _fixed(value: str) -> Callable[[str], str]:
    return lambda _: value


def _column_extreme(ref: Reference, column: str, pick: Callable[..., float]) -> str:
    for table in ref.inputs.values():
        i = table.column(column)
        if i is not None:
            values = [fmt.as_value(r[i]) for r in table.rows if fmt.is_number(r[i])]
            if values:
                return str(pick(values))
    return "0"


def _constant(ref: Reference, value: Callable[[str], str]) -> Callable[[fmt.Output], str]:
    known = ref.known

    def write(out: fmt.Output) -> str:
        if out.kind == "csv" and out.table is not None:
            table, keys = out.table, {out.table.column(k) for k in out.keys}
            rows = [
                [c if i in keys else value(_name(table, i)) if fmt.is_number(c) else "" for i, c in enumerate(r)]
                for r in table.rows
            ]
            return fmt.write_table(fmt.Table(table.header, rows, table.delimiter))
        if out.kind in ("json", "yaml") and isinstance(out.data, (dict, list)):
            return fmt.dump(out.kind, fmt.reshape(out.data, lambda key: fmt.as_value(value(key)), True))
        if out.kind == "markdown" and out.tables:

            def row(_: int, t: fmt.Table, k: int) -> list[str]:
                cells = t.rows[k]
                return cells[:1] + [value(_name(t, i)) if fmt.is_number(c) else "" for i, c in enumerate(cells) if i]

            return fmt.rewrite_markdown(out, known, row, lambda _: None)
        return fmt.skeleton(out, known)

    return write


def _name(table: fmt.Table, i: int) -> str:
    """The header of column `i` ("" for a cell past the header)."""
    return table.header[i] if i < len(table.header) else ""


def unfiltered_input(ref: Reference) -> Iterator[Candidate]:
    """The input tables copied into the outputs, columns matched by name, no row left out."""
    if not ref.inputs:
        return
    known = ref.known
    poured = False

    def write(out: fmt.Output) -> str:
        nonlocal poured
        header = _header_of(out)
        matches = [
            (sum(t.column(h) is not None for h in header), len(t.rows), rows)
            for t in ref.inputs.values()
            if header is not None and (rows := fmt.pour(t, header)) is not None
        ]
        if header is not None and matches:
            poured = True
            return _in_format(out, header, max(matches, key=lambda m: m[:2])[2], known)
        if (lookup := _poured_lookup(ref, out)) is not None:
            poured = True
            return lookup
        if out.kind == "text":
            poured = True
            dumped = [", ".join(r) for t in ref.inputs.values() for r in [t.header, *t.rows]]
            return "".join(line + "\n" for line in fmt.skeleton_lines(out, known) + dumped)
        return fmt.skeleton(out, known)

    candidate = _each(ref, "unfiltered_input", "every input row", write)
    if poured:
        yield candidate


def input_with_zeros(ref: Reference) -> Iterator[Candidate]:
    """The input rows copied into each table output, every computed column (one the input lacks)
    set to 0, the value of "0 if within it" columns on most rows: no computation done. Twice: in the input's order and sorted by the first column (tables are often asked for in
    key order)."""
    if not ref.inputs:
        return
    known = ref.known

    def writer(by_key: bool) -> Callable[[fmt.Output], str]:
        def write(out: fmt.Output) -> str:
            header = _header_of(out)
            best = None
            for t in ref.inputs.values():
                rows = fmt.pour(t, header) if header is not None else None
                missing = [i for i, h in enumerate(header or []) if t.column(h) is None]
                if rows is not None and missing and (best is None or len(missing) < best[0]):
                    best = (len(missing), [[("0" if i in missing else c) for i, c in enumerate(r)] for r in rows])
            if best is None:
                return fmt.skeleton(out, known)
            rows = sorted(best[1], key=lambda r: r[0]) if by_key else best[1]
            return _in_format(out, list(header or []), rows, known)

        return write

    for by_key in (False, True):
        yield _each(
            ref, "input_with_zeros", "input rows, computed columns 0" + (", by key" if by_key else ""), writer(by_key)
        )


def _poured_lookup(ref: Reference, out: fmt.Output) -> str | None:
    """A JSON or YAML lookup (record key -> its fields, or -> one value) filled from every input
    row: the input table whose column holds most of the reference's keys gives the keys, its columns
    named like the reference's fields the values. None when the output is no such lookup."""
    data = out.data
    if out.kind not in ("json", "yaml") or not isinstance(data, dict) or not data:
        return None
    keys = {str(k) for k in data}
    best: tuple[int, fmt.Table, int] | None = None
    for table in ref.inputs.values():
        for i in range(len(table.header)):
            hits = len(keys & {row[i] for row in table.rows if i < len(row)})
            if hits and (best is None or hits > best[0]):
                best = (hits, table, i)
    if best is None:
        return None
    _, table, key = best
    values = list(data.values())
    if all(isinstance(v, dict) for v in values):
        fields = list(dict.fromkeys(str(f) for v in values for f in v))
        cols = {f: table.column(f) for f in fields}
        lookup: dict[str, Any] = {
            row[key]: {f: fmt.as_value(row[c]) if c is not None and c < len(row) else "" for f, c in cols.items()}
            for row in table.rows
            if key < len(row)
        }
    else:  # key -> one value: the first other column holding numbers, else the next column
        other = next((i for i in range(len(table.header)) if i != key), None)
        if other is None:
            return None
        lookup = {row[key]: fmt.as_value(row[other]) for row in table.rows if max(key, other) < len(row)}
    return fmt.dump(out.kind, lookup)


def _header_of(out: fmt.Output) -> list[str] | None:
    """The columns of a tabular output: a CSV's header, a list of objects' keys, a Markdown table's."""
    if out.table is not None:
        return out.table.header
    if isinstance(out.data, list) and out.data and all(isinstance(r, dict) for r in out.data):
        return list(dict.fromkeys(str(k) for r in out.data for k in r))
    tables = out.tables
    return tables[0].header if tables else None


def _in_format(out: fmt.Output, header: list[str], rows: list[list[str]], known: fmt.Known) -> str:
    if out.table is not None:
        return fmt.write_table(fmt.Table(header, rows, out.table.delimiter))
    if out.kind in ("json", "yaml"):
        return fmt.dump(out.kind, [{h: fmt.as_value(c) for h, c in zip(header, r)} for r in rows])
    first = fmt.markdown_tables(out.text)[0][2]
    lines = [line for line in fmt.skeleton_lines(out, known) if not line.lstrip().startswith("|")]
    table = [fmt.markdown_row(first.header), fmt.markdown_row(["---"] * len(first.header))]
    return "\n".join(lines + table + [fmt.markdown_row(r) for r in rows]) + "\n"


def wrong_content(ref: Reference) -> Iterator[Candidate]:
    """The reference's tables (CSV, JSON objects and records, Markdown tables) with values moved
    between rows: the same header and set of values, each on the wrong row. Prose and files where
    nothing can move are left a skeleton."""
    known = ref.known
    moved = False

    def write(out: fmt.Output) -> str:
        nonlocal moved
        if out.kind == "csv" and out.table is not None:
            table = fmt.rotate_table(out.table, out.keys)
            if table is not None:
                moved = True
                return fmt.write_table(table)
        elif out.kind in ("json", "yaml") and isinstance(out.data, (dict, list)):
            data, any_moved = fmt.rotate_data(out.data)
            if any_moved:
                moved = True
                return fmt.dump(out.kind, data)
        elif out.kind == "markdown":
            tables = [fmt.rotate_table(t, t.header[:1]) for t in out.tables]
            if any(tables):
                moved = True
                return fmt.rewrite_markdown(out, known, lambda n, t, k: (tables[n] or t).rows[k], lambda _: None)
        return fmt.skeleton(out, known)

    candidate = _each(ref, "wrong_content", "values on the wrong rows", write)
    if moved:
        yield candidate


def first_rows(ref: Reference) -> Iterator[Candidate]:
    """The reference solution run on inputs cut to their header and first rows (a reader of the
    first screenful); its outputs beside the untouched inputs."""
    cut = [rel for rel in ref.inputs if len(ref.inputs[rel].rows) > FIRST_ROWS]
    if not ref.task.solution or not cut or not ref.outputs:
        return
    root = ref.scratch or make_temp("lazy")
    work = root / "first-rows"
    try:
        safefs.remove_tree(work)
        shutil.copytree(ref.pristine, work, symlinks=True)
        for rel in cut:
            _cut(work, rel)
        _run_reference(ref.task, work, ref.sandbox)
        after, final = snapshot(work), snapshot(ref.final)
    finally:
        safefs.remove_tree(work if ref.scratch is not None else root)
    # an output the cut rows do not change was not read from them: the agent has no such file for free
    files = {o.path: after.get(o.path) for o in ref.outputs if after.get(o.path) != final.get(o.path)}
    if files:
        files.update({o.path: fmt.skeleton(o, ref.known).encode() for o in ref.outputs if o.path not in files})
        yield Candidate("first_rows", f"header + {FIRST_ROWS} rows of {len(cut)} input table(s)", files)


def _cut(folder: Path, rel: str) -> None:
    """Keep an input's header and its first rows (JSON: the first records)."""
    path = folder / rel
    if rel.lower().endswith(".json"):
        records = json.loads(path.read_text(encoding="utf-8"))
        path.write_text(json.dumps(records[:FIRST_ROWS], indent=2) + "\n", encoding="utf-8")
        return
    keep = FIRST_ROWS if rel.lower().endswith(".jsonl") else FIRST_ROWS + 1
    lines = len(path.read_bytes().splitlines())
    truncate_inputs(folder, [rel], keep=(keep + 0.5) / lines)


def _run_reference(task: Task, workspace: Path, sandbox: dict | None) -> None:
    lim = task.limits
    limits = SandboxLimits(
        wall_seconds=float(lim["seconds"]),
        memory_mb=int(lim["memory_mb"]),
        pids=int(lim["pids"]),
        output_bytes=int(lim["output_bytes"]),
    )
    with create_sandbox(sandbox, workspace, limits=limits, network=task.network, mount=task.mount) as box:
        trajectory = OracleAgent({"type": "oracle"}).run(task, box)
    if trajectory.outcome == "error":
        raise InfraError(trajectory.error or "the reference solution reported an infrastructure error")


Variant = Callable[[Reference], Iterator[Candidate]]
VARIANTS: dict[str, Variant] = {
    "empty": empty,
    "skeleton": skeleton,
    "instruction_numbers": instruction_numbers,
    "constant_guess": constant_guess,
    "unfiltered_input": unfiltered_input,
    "first_rows": first_rows,
    "wrong_content": wrong_content,
    "number_spray": number_spray,
    "input_with_zeros": input_with_zeros,
}


# --- grading ------------------------------------------------------------------------------------


def lazy_scores(
    task: Task,
    pristine: Path,
    final: Path,
    outputs: Sequence[str],
    grade: Callable[[Path], Graded],
    *,
    sandbox: dict | None = None,
    variants: Sequence[str] | None = None,
) -> list[LazyScore]:
    """Each applicable variant's best score on `task`: its candidates are written over copies of
    `pristine` and graded with `grade(workspace)`; the same files are graded once."""
    ref = Reference.read(task, pristine, final, outputs, sandbox)
    ref.scratch = make_temp("lazy")
    seen: dict[tuple, LazyScore] = {}
    best: dict[str, LazyScore] = {}
    try:
        for name in variants or list(VARIANTS):
            for candidate in VARIANTS[name](ref):
                ident = tuple(sorted(candidate.files.items()))
                if ident not in seen:
                    seen[ident] = _grade(ref, candidate, grade)
                score = seen[ident]
                score = LazyScore(name, score.reward, candidate.guess, score.paying)
                if name not in best or score.reward > best[name].reward + EPS:
                    best[name] = score
    finally:
        safefs.remove_tree(ref.scratch)
    return list(best.values())


def _grade(ref: Reference, candidate: Candidate, grade: Callable[[Path], Graded]) -> LazyScore:
    assert ref.scratch is not None
    target = ref.scratch / "candidate"
    safefs.remove_tree(target)
    shutil.copytree(ref.pristine, target, symlinks=True)
    try:
        for rel, content in candidate.files.items():
            dest = target / rel
            if dest.is_symlink() or dest.is_file():
                dest.unlink()
            if content is not None:
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(content)
        verdict = grade(target)
    finally:
        safefs.remove_tree(target)
    paying = tuple(
        (r.name, round(float(r.score), 6))
        for r in verdict.results
        if float(r.score) > EPS and float(r.weight) > 0 and verdict.reward > EPS
    )
    return LazyScore(candidate.variant, round(float(verdict.reward), 6), candidate.guess, paying)


def worst(scores: Sequence[LazyScore]) -> LazyScore | None:
    """The variant that scores highest (None when no variant applied)."""
    return max(scores, key=lambda s: s.reward, default=None)


def summary(scores: Sequence[LazyScore]) -> dict[str, Any]:
    """`{best, variant, scores: {variant: reward}}`, as recorded in reports."""
    top = worst(scores)
    return {
        "best": top.reward if top else 0.0,
        "variant": top.variant if top else None,
        "scores": {s.variant: s.reward for s in scores},
    }
