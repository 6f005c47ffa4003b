"""`clawgym synth stats`: what a synthesized dataset covers, and how close it is to its targets."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ..errors import ClawgymError
from .dataset import MANIFEST, SETTINGS, Dataset

DIMENSIONS = (
    "category",
    "subcategory",
    "persona",
    "skill",
    "primary_skill",
    "operation",
    "route",
    "split",
    "family",
    "files",
    "checks",
    "expected_steps",
)


def _targets(root: Path) -> dict[str, float]:
    """The category shares the dataset's synth spec asked for (normalised), if the spec is still there."""
    try:
        settings = json.loads((root / SETTINGS).read_text(encoding="utf-8"))
        from .spec import load_synth_spec

        shares = load_synth_spec(settings["spec_file"]).category_shares
    except Exception:  # noqa: BLE001 - targets are a nicety; the counts stand on their own
        return {}
    total = sum(shares.values())
    return {k: v / total for k, v in shares.items()} if total else {}


def dataset_stats(root: Path) -> dict[str, Any]:
    """Counts per dimension over the accepted tasks, plus rejection reasons and category targets."""
    if not (root / MANIFEST).is_file():
        raise ClawgymError(f"{root} has no {MANIFEST}", hint="pass a folder written by 'clawgym synth'")
    dataset = Dataset(root)
    records = dataset.accepted()
    counts: dict[str, Counter] = {d: Counter() for d in DIMENSIONS}
    for r in records:
        counts["category"][r["category"]] += 1
        counts["subcategory"][f"{r['category']}/{r['subcategory']}"] += 1
        counts["persona"][r["persona"]] += 1
        for skill in r.get("skills", []):
            counts["skill"][skill] += 1
        if r.get("skills"):
            counts["primary_skill"][r["skills"][0]] += 1
        for op in r.get("operations", []):
            counts["operation"][op] += 1
        counts["route"][r["route"]] += 1
        counts["split"][r.get("split", "-")] += 1
        counts["family"][(r.get("source") or {}).get("family") or (r.get("source") or {}).get("model", "?")] += 1
        for dim in ("files", "checks", "expected_steps"):
            counts[dim][str(r.get(dim, 0))] += 1
    rejected = Counter(str(r.get("reason", "?")).split(":", 1)[0] for r in dataset.rejected())
    return {
        "tasks": len(records),
        "counts": {d: dict(c.most_common()) for d, c in counts.items()},
        "distinct": {d: len(c) for d, c in counts.items()},
        "rejected": dict(rejected.most_common()),
        "category_targets": _targets(root),
    }


def print_stats(stats: dict[str, Any], console: Console) -> None:
    n = stats["tasks"] or 1
    distinct = stats["distinct"]
    console.print(
        f"[bold]{stats['tasks']}[/bold] tasks: {distinct['category']} categories, "
        f"{distinct['subcategory']} subcategories, {distinct['persona']} personas, {distinct['skill']} skills, "
        f"{distinct['operation']} operations, {distinct['family']} families"
    )
    table = Table(title="By category")
    for col in ("category", "tasks", "share", "target"):
        table.add_column(col, justify="left" if col == "category" else "right")
    targets = stats["category_targets"]
    for cat, c in stats["counts"]["category"].items():
        table.add_row(cat, str(c), f"{c / n:.1%}", f"{targets[cat]:.1%}" if cat in targets else "-")
    console.print(table)
    for dim in (
        "subcategory",
        "persona",
        "primary_skill",
        "operation",
        "route",
        "split",
        "files",
        "checks",
        "expected_steps",
    ):
        items = stats["counts"][dim]
        if dim in ("files", "checks", "expected_steps"):
            items = dict(sorted(items.items(), key=lambda kv: int(kv[0])))
        values = list(items.values())
        spread = f" (min {min(values)}, max {max(values)})" if values else ""
        text = ", ".join(f"{k} {v}" for k, v in items.items())
        console.print(f"[bold]{dim}[/bold] ({len(items)}){spread}: {text}", highlight=False)
    if stats["rejected"]:
        console.print(
            "[bold]rejected[/bold]: " + ", ".join(f"{k} {v}" for k, v in stats["rejected"].items()), highlight=False
        )
