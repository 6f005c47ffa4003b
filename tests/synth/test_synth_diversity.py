"""`clawgym synth stats --diversity`: MinHash clusters and nearest neighbours per view."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from clawgym.cli.main import main
from clawgym.synth.diversity import Item, check_targets, clusters, measure, signatures, similarity

pytest.importorskip("datasketch")
ROOT = Path(__file__).resolve().parents[2]
WORDS = (
    "ledger invoice shift roster ticket booking inventory grade module changelog calendar contact expense "
    "sprint backlog tenant lease harvest recipe pantry mileage fleet warranty vendor"
).split()


def _text(i: int) -> str:
    rng = np.random.default_rng(i)
    return " ".join(rng.choice(WORDS, size=40))


def test_digits_count_as_one_symbol_and_case_is_ignored():
    sig = signatures(
        [
            "Send invoice 1042 to Ada by 2026-03-01 please",
            "send INVOICE 7 to ada by 1999-12-31 please",
            "a completely different request about the fleet",
        ]
    )
    sim = similarity(sig, sig)
    assert sim[0, 1] == 1.0 and sim[0, 2] < 0.1


def test_clusters_are_connected_groups_at_the_link():
    sim = np.array([[1, 0.5, 0, 0], [0.5, 1, 0.35, 0], [0, 0.35, 1, 0], [0, 0, 0, 1]], dtype=np.float32)
    assert clusters(sim) == [[0, 1, 2], [3]]
    assert len(clusters(sim, link=0.4)) == 3


def test_skeletons_cluster_and_distinct_tasks_do_not():
    same = [
        Item(
            f"s{i}",
            {
                "instruction": f"Total the receipts of {i} in input/receipts.csv for travel",
                "solution": "python3 total.py",
                "operations": "csv.read filter sum",
            },
        )
        for i in range(20)
    ]
    distinct = [
        Item(f"d{i}", {"instruction": _text(i), "solution": _text(1000 + i), "operations": _text(2000 + i)})
        for i in range(20)
    ]
    low = measure(same)
    assert (
        low["views"]["instruction"]["clusters"] == 1
        and low["views"]["instruction"]["nearest_neighbour"]["median"] == 1.0
    )
    high = measure(distinct, against=same)
    assert high["views"]["solution"]["clusters"] == 20
    assert high["views"]["instruction"]["against"]["share_linked"] == 0.0
    targets = check_targets(high, {"instruction": {"min_cluster_share": 0.9, "max_median_nn": 0.2}})
    assert [t["met"] for t in targets] == [True, True]
    assert [t["met"] for t in check_targets(low, {"instruction": {"min_cluster_share": 0.9}})] == [False]


def test_the_command_on_spec_folders():
    result = CliRunner().invoke(
        main,
        [
            "synth",
            "stats",
            str(ROOT / "specs" / "tasks"),
            "--diversity",
            "--json",
            "--against",
            str(ROOT / "specs" / "tasks"),
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["tasks"] == 24 and report["views"]["instruction"]["clusters"] == 24
    assert report["views"]["instruction"]["against"]["share_linked"] == 1.0  # every task's twin is itself


def test_solutions_are_read_as_their_code_and_spec_folders_keep_composed_chains(tmp_path):
    from clawgym.synth.diversity import load_set

    spec = ROOT / "specs" / "bench-v2"
    if not spec.is_dir():
        pytest.skip("benchmark v2 is not built")
    composed = next(p for p in sorted(spec.rglob("task.yaml")) if "/compose-" in str(p))
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "task.yaml").write_text(composed.read_text(encoding="utf-8"), encoding="utf-8")
    [item] = load_set(tmp_path)
    assert item.texts["solution"].startswith("import ") and "{'python'" not in item.texts["solution"]
    header = composed.read_text(encoding="utf-8").split("apiVersion:")[0]
    chain = header.split("# operations ")[1].split(";")[0].split(" -> ")
    assert item.texts["operations"] == " ".join(chain)


def test_targets_come_from_a_named_spec_for_a_spec_folder():
    result = CliRunner().invoke(
        main,
        [
            "synth",
            "stats",
            str(ROOT / "specs" / "tasks"),
            "--diversity",
            "--against",
            str(ROOT / "specs" / "tasks"),
            "--targets",
            str(ROOT / "specs" / "synth" / "bench-v2.yaml"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "target instruction.max_share_linked 0.05: 1.0 (NOT met)" in result.output
