"""How distinct the tasks of a set are: clusters and nearest neighbours by MinHash, per view.

The metric (the one the published ClawGym data is compared on): a text is lower-cased, every run
of digits becomes one symbol, its words form 3-word shingles, and MinHash with 128 permutations
estimates the Jaccard similarity J of two texts. Two tasks are linked when J >= 0.3; clusters are
the connected groups. Each task's nearest neighbour is the other task of highest J. Three views of a
task are measured, since diversity in the wording alone is not diversity:

- `instruction`: the rendered instruction;
- `solution`: the reference solution (every step's text);
- `operations`: the chain of operations it is built from (synth manifests record it; for other
  tasks, the types of its checks stand in).

`--against` measures, for each task, its closest match in another set (a benchmark against its
training data, say), and the share of tasks with a match at or above the link threshold.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from ..errors import ClawgymError
from .dataset import MANIFEST, Dataset

VIEWS = ("instruction", "solution", "operations")
LINK = 0.3
NUM_PERM = 128
SHINGLE = 3
_WORD = re.compile(r"\w+")
_DIGITS = re.compile(r"\d+")


@dataclass
class Item:
    """One task of a set: its name and the text of each view."""

    name: str
    texts: dict[str, str] = field(default_factory=dict)


def normalise(text: str) -> list[str]:
    return _WORD.findall(_DIGITS.sub("0", text.lower()))


def signatures(texts: list[str]) -> np.ndarray:
    """MinHash signatures (N × NUM_PERM) of `texts`, as the metric defines them."""
    from .dedup import datasketch_module

    ds = datasketch_module()
    out = np.zeros((len(texts), NUM_PERM), dtype=np.uint64)
    for i, text in enumerate(texts):
        words = normalise(text)
        grams = {" ".join(words[j : j + SHINGLE]).encode() for j in range(max(1, len(words) - SHINGLE + 1))}
        m = ds.MinHash(num_perm=NUM_PERM, seed=1)
        m.update_batch(list(grams) or [b""])
        out[i] = m.hashvalues
    return out


def similarity(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Estimated Jaccard similarity of every row of `a` with every row of `b` (N × M)."""
    out = np.zeros((len(a), len(b)), dtype=np.float32)
    block = max(1, int(2e7 // max(1, len(b) * a.shape[1])))  # about 20 MB of comparisons at a time
    for start in range(0, len(a), block):
        chunk = a[start : start + block]
        out[start : start + block] = (chunk[:, None, :] == b[None, :, :]).mean(axis=2)
    return out


def clusters(sim: np.ndarray, link: float = LINK) -> list[list[int]]:
    """Connected groups of a square similarity matrix, linked at `link` or more."""
    n = len(sim)
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    rows, cols = np.nonzero(np.triu(sim >= link, k=1))
    for i, j in zip(rows.tolist(), cols.tolist()):
        parent[root(i)] = root(j)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(root(i), []).append(i)
    return sorted(groups.values(), key=len, reverse=True)


def _quantiles(values: np.ndarray) -> dict[str, float]:
    if not len(values):
        return {}
    q = np.quantile(values, [0.1, 0.25, 0.5, 0.75, 0.9])
    return {
        "p10": round(float(q[0]), 3),
        "p25": round(float(q[1]), 3),
        "median": round(float(q[2]), 3),
        "p75": round(float(q[3]), 3),
        "p90": round(float(q[4]), 3),
        "max": round(float(values.max()), 3),
    }


def measure(items: list[Item], against: list[Item] | None = None, link: float = LINK) -> dict[str, Any]:
    """Per view: clusters, the nearest-neighbour distribution and, with `against`, closest matches."""
    report: dict[str, Any] = {"tasks": len(items), "link": link, "views": {}}
    for view in VIEWS:
        texts = [it.texts.get(view, "") for it in items]
        if not any(texts):
            continue
        sig = signatures(texts)
        sim = similarity(sig, sig)
        np.fill_diagonal(sim, 0.0)
        groups = clusters(sim, link)
        nearest = sim.max(axis=1) if len(items) > 1 else np.zeros(len(items))
        entry: dict[str, Any] = {
            "clusters": len(groups),
            "largest_cluster": len(groups[0]) if groups else 0,
            "nearest_neighbour": _quantiles(nearest),
            "largest": [[items[i].name for i in g[:5]] for g in groups[:3] if len(g) > 1],
        }
        if against:
            other = [it.texts.get(view, "") for it in against]
            if any(other):
                cross = similarity(sig, signatures(other))
                best = cross.argmax(axis=1)
                score = cross.max(axis=1)
                entry["against"] = {
                    "tasks": len(against),
                    "closest": _quantiles(score),
                    "share_linked": round(float((score >= link).mean()), 4),
                    "examples": [
                        {"task": items[i].name, "closest": against[int(best[i])].name, "j": round(float(score[i]), 3)}
                        for i in np.argsort(-score)[:5].tolist()
                    ],
                }
        report["views"][view] = entry
    return report


# ---------------------------------------------------------------------------------------------
# Reading sets of tasks


def _solution_text(steps: Iterable[Any]) -> str:
    parts = []
    for step in steps or []:
        if isinstance(step, Mapping):  # compiled steps are read-only mappings
            parts += [
                " ".join(map(str, v)) if isinstance(v, list) else str(v)  # an argv: its words, not its repr
                for k, v in step.items()
                if k in ("exec", "python", "script", "write", "content", "message")
            ]
        else:
            parts.append(str(step))
    return "\n".join(parts)


def _from_task(name: str, task: Any, operations: list[str] | None) -> Item:
    ops = operations if operations else [str(c.get("type")) for c in task.checks]
    return Item(
        name,
        {
            "instruction": task.instruction,
            "solution": _solution_text(task.solution),
            "operations": " ".join(o.replace(".", " ") for o in ops),
        },
    )


def load_set(root: Path, sample: int | None = None, seed: int = 0) -> list[Item]:
    """The tasks of a synth dataset (its manifest) or of any folder of task specs (seed 0 of each)."""
    from ..compile.compiler import compile_task, load_task_spec
    from ..errors import SpecError

    if (root / MANIFEST).is_file():
        records = Dataset(root).accepted()
        if sample and len(records) > sample:
            records = random.Random(seed).sample(records, sample)
        entries = [(root / r["path"], r.get("chain") or r.get("operations")) for r in records]
    else:
        files = sorted(p for p in root.rglob("*.yaml") if _is_task(p))
        if not files:
            raise ClawgymError(
                f"{root} holds neither a synth manifest nor task specs",
                hint="pass a folder written by 'clawgym synth', or one of task specs",
            )
        if sample and len(files) > sample:
            files = sorted(random.Random(seed).sample(files, sample))
        entries = [(p, _chain_of(p)) for p in files]
    items = []
    for path, ops in entries:
        try:
            spec = load_task_spec(path)
            task = compile_task(spec, 0)
        except SpecError:
            continue
        if not ops and isinstance(spec.data.get("operations"), list):  # a family's declared skill operations
            ops = [str(o) for o in spec.data["operations"]]
        items.append(
            _from_task(
                str(path.relative_to(root)) if path.is_relative_to(root) else str(path),
                task,
                list(ops) if ops else None,
            )
        )
    return items


_CHAIN = re.compile(r"^# operations (.+?); catalog", re.M)


def _chain_of(path: Path) -> list[str] | None:
    """The operation chain a composed spec's provenance comment records (as its manifest does)."""
    try:
        head = path.read_text(encoding="utf-8")[:2000]
    except (OSError, UnicodeDecodeError):
        return None
    match = _CHAIN.search(head)
    return [op.strip() for op in match.group(1).split("->")] if match else None


def _is_task(path: Path) -> bool:
    try:
        head = path.read_text(encoding="utf-8", errors="replace")[:2000]
    except OSError:
        return False
    return re.search(r"(?m)^kind:\s*Task\s*$", head) is not None


# ---------------------------------------------------------------------------------------------
# Targets and printing


def check_targets(report: dict[str, Any], targets: dict[str, Any]) -> list[dict[str, Any]]:
    """Each declared target (`min_cluster_share`, `max_median_nn`, `max_share_linked` per view) met or not."""
    out = []
    n = report["tasks"] or 1
    for view, goals in (targets or {}).items():
        got = report["views"].get(view)
        if got is None:
            continue
        for goal, value in goals.items():
            if goal == "min_cluster_share":
                actual = got["clusters"] / n
                met = actual >= value
            elif goal == "max_median_nn":
                actual = got["nearest_neighbour"].get("median", 0.0)
                met = actual <= value
            elif goal == "max_share_linked" and "against" in got:
                actual = got["against"]["share_linked"]
                met = actual <= value
            else:
                continue
            out.append({"view": view, "target": goal, "value": value, "actual": round(actual, 4), "met": met})
    return out


def print_report(report: dict[str, Any], console: Any, targets: list[dict[str, Any]] | None = None) -> None:
    from rich.table import Table

    from ..files.textsafe import printable

    table = Table(
        title=f"Diversity of {report['tasks']} tasks (MinHash, {SHINGLE}-word shingles, digits as one "
        f"symbol, linked at J >= {report['link']})"
    )
    for col in ("view", "clusters", "largest", "nearest J p10", "median", "p90", "vs other: linked", "closest median"):
        table.add_column(col, justify="left" if col == "view" else "right")
    for view, v in report["views"].items():
        nn, against = v["nearest_neighbour"], v.get("against")
        table.add_row(
            view,
            f"{v['clusters']} of {report['tasks']}",
            str(v["largest_cluster"]),
            str(nn.get("p10", "-")),
            str(nn.get("median", "-")),
            str(nn.get("p90", "-")),
            f"{against['share_linked']:.1%}" if against else "-",
            str(against["closest"].get("median", "-")) if against else "-",
        )
    console.print(table)
    for view, v in report["views"].items():
        for group in v.get("largest", [])[:1]:
            console.print(f"  largest {view} cluster, e.g.: " + ", ".join(printable(g) for g in group), markup=False)
    for t in targets or []:
        mark = "met" if t["met"] else "NOT met"
        console.print(f"target {t['view']}.{t['target']} {t['value']}: {t['actual']} ({mark})", markup=False)


def diversity_command(
    dataset: Path,
    against: Path | None,
    sample: int | None,
    seed: int,
    as_json: bool,
    console: Any,
    targets_spec: Path | None = None,
) -> dict[str, Any]:
    items = load_set(dataset, sample, seed)
    other = load_set(against, None, seed) if against else None
    report = measure(items, other)
    if targets_spec is not None:
        from .spec import load_synth_spec

        declared = dict(load_synth_spec(targets_spec).doc.data.get("diversity") or {})
    else:
        declared = _declared_targets(dataset)
    targets = check_targets(report, declared)
    report["targets"] = targets
    if as_json:
        console.print_json(json.dumps(report))
    else:
        print_report(report, console, targets)
    return report


def _declared_targets(root: Path) -> dict[str, Any]:
    """The `diversity:` targets of the synth spec a dataset was made with (when it is still there)."""
    try:
        settings = json.loads((root / "synth.json").read_text(encoding="utf-8"))
        from .spec import load_synth_spec

        return dict(load_synth_spec(settings["spec_file"]).doc.data.get("diversity") or {})
    except Exception:  # noqa: BLE001 - targets are optional
        return {}
