"""Signatures of the tasks a synth run must not duplicate (`filters.dedup.against`).

An entry is a task spec glob (instances of seeds 0, 1 and 2) or `{path: GLOB, seeds: "0-999"}`:
a benchmark is kept disjoint from training data by listing the task families with every seed
training draws from. That can be tens of thousands of instances, so they are compiled in worker
processes (only the small signatures come back) and cached per entry in the user's cache folder,
keyed by the seeds, the content of every matched file, the dedup settings and the code that
compiles them: the next run (a resume, another benchmark addition) reuses what did not change.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from ..errors import SpecError
from .dedup import DedupSettings, signature
from .families import family_files

CHUNK = 50  # seeds per worker job
_CODE = ("compile", "generators", "spec", "synth/against.py", "synth/emit.py")  # what signatures depend on


def cache_dir() -> Path | None:
    """Where signatures are kept between runs (CLAWGYM_CACHE_DIR=off disables it): the training
    families at 1,000 seeds each are compiled once per machine, not once per synth run."""
    root = os.environ.get("CLAWGYM_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "clawgym"
    )
    return None if root == "off" else Path(root) / "synth-against"


def entries(raw: list[str | dict[str, Any]]) -> list[tuple[str, list[int]]]:
    """(glob, seeds) for every `against` entry."""
    from ..run.plan import parse_seeds

    out = []
    for item in raw:
        if isinstance(item, str):
            out.append((item, [0, 1, 2]))
        else:
            out.append((str(item["path"]), parse_seeds(item.get("seeds", "0-2"))))
    return out


def _jobs(paths: list[Path], seeds: list[int]) -> Iterator[tuple[str, list[int]]]:
    for path in paths:
        for i in range(0, len(seeds), CHUNK):
            yield str(path), seeds[i : i + CHUNK]


def _signatures(path: str, seeds: list[int], settings: DedupSettings) -> tuple[list[tuple[str, np.ndarray]], list]:
    """Compile one spec for some seeds: (task id, signature) pairs, and the spec's problems. A file
    that is not a task (a calibration record) gives nothing; a seed a family cannot be compiled
    on (its data leaves a check empty) made no task anywhere, so it is skipped, as synthesis does."""
    from ..compile.compiler import compile_task, load_task_spec
    from ..spec.load import load_file

    try:
        doc = load_file(path)
        if not isinstance(doc.data, dict) or doc.data.get("kind") != "Task":
            return [], []
        spec = load_task_spec(path, doc)
    except SpecError as exc:
        return [], exc.problems
    pairs = []
    for seed in seeds:
        try:
            task = compile_task(spec, seed)
        except SpecError:
            continue
        pairs.append((task.id, signature(own_text(task, doc.data, Path(path).parent), settings)))
    return pairs, []


def own_text(task: Any, data: dict[str, Any], folder: Path) -> str:
    """What synthesis compares for a candidate (`make.spec_dedup_text` of its concrete spec), from a
    compiled task: the instruction and the files the task adds to what its workspace, persona and
    skills give on their own. Comparing anything else (e.g. all input files, workspace template
    included) would make the same task look less similar to itself than the threshold."""
    from .emit import BOOTSTRAP_NAMES, bare_spec
    from .make import baseline_references

    base, _ = baseline_references(str(folder), json.dumps(bare_spec(data, task), sort_keys=True))
    parts = [task.instruction]
    for rel in sorted(task.files):
        if (
            base.get(rel) == task.files[rel]
            or rel in BOOTSTRAP_NAMES
            or rel == "MEMORY.md"
            or (rel.startswith("memory/") and rel.count("/") == 1 and rel.endswith(".md"))
        ):
            continue
        parts.append(rel + "\n" + task.files[rel].decode("utf-8", "replace")[:4096])
    return "\n".join(parts)


def _code_digest() -> bytes:
    package = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for name in _CODE:
        for path in sorted((package / name).rglob("*.py")) if (package / name).is_dir() else [package / name]:
            h.update(path.read_bytes())
    return h.digest()


def _key(paths: list[Path], seeds: list[int], settings: DedupSettings) -> str:
    h = hashlib.sha256(json.dumps(settings.__dict__, sort_keys=True).encode() + _code_digest())
    h.update(json.dumps(seeds).encode())
    for path in paths:
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def _load(cache: Path | None) -> list[tuple[str, np.ndarray]] | None:
    if cache is None or not cache.is_file():
        return None
    try:
        data = np.load(cache)
        return list(zip((str(k) for k in data["names"]), data["sigs"]))
    except (OSError, ValueError, KeyError):
        return None


def _save(cache: Path | None, pairs: list[tuple[str, np.ndarray]]) -> None:
    if cache is None or not pairs:
        return
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(f".{cache.stem}.{os.getpid()}.npz")
        np.savez(tmp, names=np.array([k for k, _ in pairs]), sigs=np.stack([s for _, s in pairs]))
        os.replace(tmp, cache)
    except OSError:
        pass  # a cache that cannot be written only costs time


def against_signatures(
    raw: list[str | dict[str, Any]], base: Path, settings: DedupSettings, *, jobs: int = 0
) -> list[tuple[str, np.ndarray]]:
    """(key, signature) for every instance the entries name (compiled in parallel, cached per entry)."""
    where = cache_dir()
    groups = []
    for pattern, seeds in entries(raw):
        paths = family_files([pattern], base)
        groups.append((paths, seeds, where / f"{_key(paths, seeds, settings)}.npz" if where else None))
    done = {i: found for i, (_, _, cache) in enumerate(groups) if (found := _load(cache)) is not None}
    work = [(i, job) for i, (paths, seeds, _) in enumerate(groups) if i not in done for job in _jobs(paths, seeds)]
    if len(work) <= 2:
        parts = [_signatures(p, s, settings) for _, (p, s) in work]
    else:
        workers = jobs or (os.cpu_count() or 1)
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork")) as pool:
            parts = list(pool.map(_signatures, *zip(*(job for _, job in work)), [settings] * len(work), chunksize=1))
    problems = [p for _, found_problems in parts for p in found_problems]
    if problems:
        raise SpecError(problems)
    fresh: dict[int, list] = {}
    for (i, _), (pairs, _) in zip(work, parts):
        fresh.setdefault(i, []).extend((f"against:{task_id}", sig) for task_id, sig in pairs)
    for i, pairs in fresh.items():
        _save(groups[i][2], pairs)
    out: dict[str, np.ndarray] = {}
    for i in range(len(groups)):
        out.update(done.get(i) or fresh.get(i) or [])
    return list(out.items())
