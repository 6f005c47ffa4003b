"""Small hand-written tasks for the lazy-agent gate: one request over a table of orders, graded by
a lazy-proof set of checks or by sets with one known weakness each.

`task(checks)` builds the compiled Task directly (no sandbox needed), `reference(folder)` writes the
reference's final workspace, and `write_spec(folder, checks)` the same task as a spec file for
the fixture library (tests/fixtures/lib) for the wiring tests that compile and run it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from clawgym.compile.workspace import materialize
from clawgym.spec.task import Task

ORDERS = """order_id,customer,region,amount
O1,Ann,north,120.50
O2,Bob,south,180.25
O3,Cid,north,40.00
O4,Dee,east,133.00
O5,Eve,south,15.75
O6,Fay,north,9.10
"""
INSTRUCTION = (
    "Please read shop/orders.csv and write out/north.csv (order_id, customer, amount of every order from "
    "the north region), out/totals.json (the total amount per region), out/flagged.json (how many orders "
    "over 100 each region has) and out/summary.txt (how many north orders there are and their total)."
)
NORTH = [
    {"order_id": "O1", "customer": "Ann", "amount": 120.5},
    {"order_id": "O3", "customer": "Cid", "amount": 40.0},
    {"order_id": "O6", "customer": "Fay", "amount": 9.1},
]
OUTPUTS = {
    "out/north.csv": "order_id,customer,amount\nO1,Ann,120.50\nO3,Cid,40.00\nO6,Fay,9.10\n",
    "out/totals.json": json.dumps({"east": 133.0, "north": 169.6, "south": 196.0}, indent=2) + "\n",
    "out/flagged.json": json.dumps({"east": 1, "north": 1, "south": 1}, indent=2) + "\n",
    "out/summary.txt": "North orders: 3\nNorth total: 169.60\n",
    "out/over.csv": "order_id,customer,amount,over_100\nO1,Ann,120.50,20.50\nO2,Bob,180.25,80.25\n"
    "O3,Cid,40.00,0.00\nO4,Dee,133.00,33.00\nO5,Eve,15.75,0.00\nO6,Fay,9.10,0.00\n",
}
SOLUTION = """import os
os.makedirs("out", exist_ok=True)
import csv
rows = list(csv.DictReader(open("shop/orders.csv")))
north = [r for r in rows if r["region"] == "north"]
with open("out/north.csv", "w", newline="") as fh:
    w = csv.writer(fh, lineterminator="\\n")
    w.writerow(["order_id", "customer", "amount"])
    w.writerows([r["order_id"], r["customer"], f"{float(r['amount']):.2f}"] for r in north)
import json
totals, flagged = {}, {}
for r in rows:
    totals[r["region"]] = round(totals.get(r["region"], 0) + float(r["amount"]), 2)
    flagged[r["region"]] = flagged.get(r["region"], 0) + (float(r["amount"]) > 100)
json.dump(dict(sorted(totals.items())), open("out/totals.json", "w"), indent=2)
json.dump(dict(sorted(flagged.items())), open("out/flagged.json", "w"), indent=2)
total = sum(float(r["amount"]) for r in north)
open("out/summary.txt", "w").write(f"North orders: {len(north)}\\nNorth total: {total:.2f}\\n")
"""
NORTH_GATE = {"type": "file_exists", "path": "out/north.csv", "gate": True, "weight": 0}
INPUT_GATE = {"type": "unchanged", "name": "orders untouched", "paths": ["shop/**"], "gate": True, "weight": 0}
TOTALS = {
    "type": "json_field_equals",
    "name": "totals per region",
    "path": "out/totals.json",
    "fields": {"east": 133.0, "north": 169.6, "south": 196.0},
    "tolerance": 0.01,
}
NORTH_ROWS = {
    "type": "csv_rows_equal",
    "name": "north orders",
    "path": "out/north.csv",
    "key": "order_id",
    "expected": NORTH,
    "tolerance": 0.01,
}

# every lazy agent scores 0: the computed totals are a gate, the rows are graded by key
GOOD = [NORTH_GATE, {**TOTALS, "gate": True, "weight": 1}, {**NORTH_ROWS, "weight": 2}, INPUT_GATE]
# a weighted existence check: `empty` earns it
EXISTS_PAYS = [{"type": "file_exists", "name": "north file", "path": "out/north.csv", "weight": 1}, TOTALS, INPUT_GATE]
# a check that the CSV has the right header: `skeleton` earns it
HEADER_PAYS = [
    NORTH_GATE,
    {"type": "text_contains", "name": "north columns", "path": "out/north.csv", "contains": "order_id,customer,amount"},
    TOTALS,
    INPUT_GATE,
]
# the count is stated in the instruction and graded as a lone number: `instruction_numbers` earns it
GIVEN_AWAY = " There are 3 north orders."
NUMBER_PAYS = [
    {"type": "file_exists", "path": "out/summary.txt", "gate": True, "weight": 0},
    {"type": "text_contains", "name": "north count", "path": "out/summary.txt", "contains": "3"},
    {"type": "text_contains", "name": "north total", "path": "out/summary.txt", "contains": "169.60"},
    INPUT_GATE,
]
# a computed column that is 0 on half the rows, graded row by row: `input_with_zeros` earns those rows
OVER = [{"order_id": f"O{i}", "over_100": v} for i, v in enumerate([20.5, 80.25, 0, 33.0, 0, 0], 1)]
DEFAULT_PAYS = [
    {"type": "file_exists", "path": "out/over.csv", "gate": True, "weight": 0},
    {
        "type": "csv_rows_equal",
        "name": "amount over 100",
        "path": "out/over.csv",
        "key": "order_id",
        "columns": ["order_id", "over_100"],
        "expected": OVER,
        "tolerance": 0.01,
    },
]
# every group has the same expected value: `constant_guess` (constant 1) earns it
SAME_VALUES = [
    {"type": "file_exists", "path": "out/flagged.json", "gate": True, "weight": 0},
    {
        "type": "json_field_equals",
        "name": "orders over 100",
        "path": "out/flagged.json",
        "fields": {"east": 1, "north": 1, "south": 1},
    },
    INPUT_GATE,
]
# partial credit for the rows that are right among all the input's: `unfiltered_input` earns it
UNFILTERED_PAYS = [NORTH_GATE, NORTH_ROWS, INPUT_GATE]
LIMITS = {"turns": 30, "seconds": 60, "memory_mb": 2048, "pids": 256, "output_bytes": 1_000_000}


def task(checks: list[dict[str, Any]], instruction: str = INSTRUCTION) -> Task:
    """The compiled task with these checks (built directly, as a compiler would)."""
    return Task(
        name="north-orders",
        category="analysis",
        seed=0,
        params={},
        persona="ada",
        skills=(),
        workspace="plain",
        instruction=instruction,
        files={"shop/orders.csv": ORDERS.encode()},
        executables=frozenset(),
        solution=({"python": SOLUTION},),
        checks=tuple(checks),
        limits=LIMITS,
    )


def reference(t: Task, folder: Path) -> Path:
    """The reference's final workspace: the inputs and every output it writes."""
    materialize(t, folder)
    for rel, text in OUTPUTS.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


def write_spec(folder: Path, name: str, checks: list[dict[str, Any]], instruction: str = INSTRUCTION) -> Path:
    """The task as a spec file for the fixture library (persona ada, skill notes, workspace plain)."""
    spec = {
        "apiVersion": "clawgym/v1",
        "kind": "Task",
        "name": name,
        "category": "analysis",
        "persona": "ada",
        "skills": ["notes"],
        "workspace": "plain",
        "files": [{"path": "shop/orders.csv", "content": ORDERS}],
        "instruction": instruction,
        "solution": [{"python": SOLUTION}],
        "checks": checks,
    }
    path = folder / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(spec, sort_keys=False, width=200))
    return path
