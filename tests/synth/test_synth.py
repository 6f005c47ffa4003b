"""Task synthesis: families expanded into concrete specs, filters, dedup, balance, splits, resume."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from clawgym.cli.main import main
from clawgym.compile.compiler import compile_task, load_task_spec
from clawgym.sandbox.host import cgroup_parent
from clawgym.synth.dataset import Dataset
from clawgym.synth.dedup import DedupIndex, DedupSettings, signature
from clawgym.synth.families import load_family
from clawgym.synth.filters import FilterSettings, graded_paths, mentioned
from clawgym.synth.make import make_from_family
from clawgym.synth.pipeline import synthesize
from clawgym.synth.sample import Balancer, Candidate
from clawgym.synth.spec import load_synth_spec
from clawgym.synth.split import assign_splits
from clawgym.synth.stats import dataset_stats

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "synth"
FAMILIES = FIX / "families"


@pytest.fixture
def dataset(tmp_path):
    out = tmp_path / "ds"
    Dataset.create(out, {}, ROOT, resume=False)
    return out


def _make(name: str, out: Path, seed: int = 0):
    path = str(FAMILIES / f"{name}.yaml")
    fam = load_family(path)
    c = Candidate("persona", fam.name, fam.personas[0], seed, fam.category, fam.subcategory)
    return make_from_family(c, path, out, "tasks/x", FilterSettings(), DedupSettings())


def test_good_family_becomes_a_concrete_reviewable_spec(dataset, bwrap):
    made = _make("good-tally", dataset, seed=3)
    assert made.ok, made.error
    assert made.filters == {
        "valid": True,
        "passed": True,
        "paths": True,
        "oracle": 1.0,
        "determinism": True,
        "nop": 0.0,
        "tamper": 0.0,
        "tamper_by": "input gate",
        "lazy": 0.0,
        "lazy_by": "empty",
        "mutations": True,
    }
    spec = yaml.safe_load(made.text)
    assert "params" not in spec and "vars" not in spec
    assert "{{" not in made.text and "{%" not in made.text
    assert [f["path"] for f in spec["files"]] == ["data/orders.csv"]  # workspace files stay a reference
    assert spec["operations"] == ["csv.read_rows", "csv.group_totals", "json-data.write_json"]
    # the written spec compiles to the same task as the family instance
    target = dataset / made.path
    target.parent.mkdir(parents=True)
    target.write_text(made.text)
    task = compile_task(load_task_spec(target), 0)
    instance = load_family(str(FAMILIES / "good-tally.yaml")).instance(made.candidate.persona, 3)
    assert task.instruction == instance.instruction and dict(task.files) == dict(instance.files)
    assert task.checks == instance.checks


@pytest.mark.parametrize(
    "family, failed, reason",
    [
        ("bad-nop", "nop", "doing nothing scores 1.000 > 0.1 (passing: text_contains data/list.csv)"),
        (
            "bad-tamper",
            "tamper",
            "truncating the inputs and answering for what is left scores 1.000, more than "
            "doing nothing (0.000); passing: text_contains out/header.txt",
        ),
        ("bad-paths", "paths", "the instruction never mentions out/secret_count.txt"),
        (
            "bad-oracle",
            "oracle",
            "the reference solution failed: solution step 1 (python: import csv) exited with code 1",
        ),
    ],
)
def test_each_filter_rejects_its_problem_with_a_reason(dataset, bwrap, family, failed, reason):
    made = _make(family, dataset)
    assert not made.ok
    assert made.filters["failed"] == failed
    assert made.filters["reason"].startswith(reason)
    assert made.error.startswith(f"{failed}: {reason}")


def test_graded_paths_and_mentions():
    task = load_family(str(FAMILIES / "good-tally.yaml")).instance("teacher", 0)
    assert graded_paths(task) == ["out/totals.json", "data/**"]
    assert mentioned("data/**", "leave data/ alone") and mentioned("out/a.json", "write out/a.json")
    assert not mentioned("out/b.json", "write out/a.json")
    assert mentioned("**/*.md", "anything")  # a glob over the whole workspace names no folder


def test_dedup_finds_near_duplicates_and_keeps_distinct_tasks():
    settings = DedupSettings(threshold=0.8)
    index = DedupIndex(settings)
    base = (
        "Please total the quantities per product in data/orders.csv counting only rows with qty of at "
        "least three and write out/totals.json with one key per product, sorted by name. "
    ) * 2
    index.add("a", signature(base, settings))
    assert index.find(signature(base, settings))[0] == "a"
    near = base.replace("sorted by name", "sorted by the name")
    found = index.find(signature(near, settings))
    assert found and found[0] == "a" and found[1] >= 0.8
    other = "Draft a reply to every meeting request in inbox/ and put holds in calendar/holds.ics for them."
    assert index.find(signature(other, settings)) is None


def test_balancer_spreads_categories_personas_and_routes():
    families = [load_family(str(FAMILIES / f"{n}.yaml")) for n in ("good-tally", "good-shopping")]
    b = Balancer(families, {"persona": 1, "skill": 1}, {"analysis": 3, "planning": 1}, seed=5)
    picks = [b.next() for _ in range(400)]
    cats = Counter(c.category for c in picks)
    assert abs(cats["analysis"] - 300) <= 1 and abs(cats["planning"] - 100) <= 1
    routes = Counter(c.route for c in picks)
    assert abs(routes["persona"] - routes["skill"]) <= 1
    personas = Counter(c.persona for c in picks if c.category == "analysis")
    assert max(personas.values()) - min(personas.values()) <= 2
    assert len({c.key for c in picks}) == 400  # never the same family and seed twice


def test_splits_never_share_a_family_and_cover_every_category():
    groups = [(f"{cat}-{i}", cat) for cat in ("a", "b", "c") for i in range(8)]
    split = assign_splits(groups, {"train": 0.8, "validation": 0.1, "test": 0.1}, seed=0)
    assert set(split) == {g for g, _ in groups}
    for cat in ("a", "b", "c"):
        mine = Counter(split[f"{cat}-{i}"] for i in range(8))
        assert mine["validation"] == 1 and mine["test"] == 1 and mine["train"] == 6
    assert assign_splits(groups, {"train": 0.8, "validation": 0.1, "test": 0.1}, seed=0) == split


def test_synthesize_end_to_end_with_split_stats_and_run(tmp_path, bwrap, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = load_synth_spec(FIX / "synth.yaml", count=12, out=str(tmp_path / "ds"), split=True)
    spec.jobs = 2
    summary = synthesize(spec)
    assert summary.accepted == 12 and summary.rejected == 0
    found = cgroup_parent()
    if found is not None:  # the workers' memory cgroups (and their verifiers' inside them) are gone
        assert sorted(p.name for p in found[0].glob("clawgym-synth-*")) == []
    records = [json.loads(line) for line in (tmp_path / "ds" / "manifest.jsonl").read_text().splitlines()]
    assert len(records) == 12 and len({r["name"] for r in records}) == 12
    for r in records:
        assert r["filters"]["passed"] and r["filters"]["dedup"] and r["filters"]["tamper"] == 0.0
        assert r["path"].startswith(f"tasks/{r['split']}/{r['category']}/")
        assert (tmp_path / "ds" / r["path"]).is_file()
        assert r["source"]["family"] in ("good-tally", "good-shopping") and len(r["source"]["template_sha256"]) == 64
    by_family = {}
    for r in records:
        by_family.setdefault(r["source"]["family"], set()).add(r["split"])
    assert all(len(s) == 1 for s in by_family.values())  # no family in two splits
    assert Counter(r["category"] for r in records) == {"analysis": 6, "planning": 6}
    stats = dataset_stats(tmp_path / "ds")
    assert stats["tasks"] == 12 and stats["distinct"]["category"] == 2
    assert stats["counts"]["operation"]["csv.read_rows"] == 12
    # the dataset is consumed as it is: static validation, then a run of one task
    result = CliRunner().invoke(main, ["validate", "--static", str(tmp_path / "ds" / "tasks")])
    assert result.exit_code == 0, result.output
    one = tmp_path / "ds" / records[0]["path"]
    result = CliRunner().invoke(main, ["run", str(one), "--agent", "oracle", "--quiet", "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    record = json.loads(next((tmp_path / "r").rglob("record.json")).read_text())
    assert record["reward"] == 1.0


def test_synth_refuses_an_existing_dataset_without_resume(tmp_path, bwrap):
    out = tmp_path / "ds"
    args = ["synth", str(FIX / "synth.yaml"), "--count", "2", "--out", str(out), "--quiet", "-j", "1"]
    assert CliRunner().invoke(main, args).exit_code == 0
    result = CliRunner().invoke(main, args)
    assert result.exit_code != 0
    assert f"{out} already holds a synth dataset (add --resume to continue it" in result.output


def test_unknown_family_and_bad_spec_give_clear_errors(tmp_path):
    result = CliRunner().invoke(
        main, ["synth", str(FIX / "synth.yaml"), "--family", "good-taly", "--out", str(tmp_path / "x")]
    )
    assert result.exit_code == 2
    assert "no task family named 'good-taly' (did you mean 'good-tally'?)" in result.output
    bad = tmp_path / "bad.yaml"
    bad.write_text((FIX / "synth.yaml").read_text().replace("count: 10", "count: many"))
    result = CliRunner().invoke(main, ["synth", str(bad)])
    assert result.exit_code == 2
    assert f"{bad}:4: count: expected integer, got a string 'many'" in result.output


def test_killed_synth_loses_nothing_and_resumes(tmp_path, bwrap):
    out = tmp_path / "ds"
    cmd = [
        sys.executable,
        "-m",
        "clawgym.cli.main",
        "synth",
        str(FIX / "synth.yaml"),
        "--count",
        "14",
        "--out",
        str(out),
        "--quiet",
        "-j",
        "2",
    ]
    proc = subprocess.Popen(
        cmd, cwd=tmp_path, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    manifest = out / "manifest.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if manifest.is_file() and len(manifest.read_text().splitlines()) >= 3:
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = {json.loads(line)["name"] for line in manifest.read_text().splitlines() if line.endswith("}")}
    assert 3 <= len(before) < 14
    with open(manifest, "a") as fh:
        fh.write('{"path": "tasks/torn')  # a line torn by the kill
    result = subprocess.run(cmd + ["--resume"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr + result.stdout
    assert "resuming" in result.stdout
    records = [json.loads(line) for line in manifest.read_text().splitlines()]
    names = [r["name"] for r in records]
    assert len(names) == 14 and len(set(names)) == 14 and before <= set(names)
    on_disk = {p.relative_to(out).as_posix() for p in (out / "tasks").rglob("*.yaml")}
    assert on_disk == {r["path"] for r in records}  # no orphan spec files


def test_ctrl_c_stops_quickly_and_keeps_what_was_accepted(tmp_path, bwrap):
    out = tmp_path / "ds"
    cmd = [
        sys.executable,
        "-m",
        "clawgym.cli.main",
        "synth",
        str(FIX / "synth.yaml"),
        "--count",
        "200",
        "--out",
        str(out),
        "-j",
        "2",
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=tmp_path,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # as in a terminal
    manifest = out / "manifest.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (manifest.is_file() and manifest.read_text().count("\n") >= 2):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole process group
    started = time.monotonic()
    output, _ = proc.communicate(timeout=60)
    assert time.monotonic() - started < 15
    assert proc.returncode == 130, output
    assert "interrupted; every accepted task is saved in" in output
    kept = [json.loads(line) for line in manifest.read_text().splitlines()]
    assert kept and all((out / r["path"]).is_file() for r in kept)


def test_validate_checks_synth_specs_and_their_families(tmp_path):
    result = CliRunner().invoke(main, ["validate", "--static", str(FIX / "synth.yaml"), str(FIX / "taxonomy.yaml")])
    assert result.exit_code == 0, result.output
    bad_family = tmp_path / "families" / "f.yaml"
    bad_family.parent.mkdir()
    text = (FAMILIES / "good-tally.yaml").read_text()
    bad_family.write_text(
        text.replace("subcategory: sales analytics", "subcategory: sales analytic").replace(
            "csv.group_totals", "csv.group_total"
        )
    )
    shutil.copy(FIX / "taxonomy.yaml", tmp_path / "taxonomy.yaml")
    (tmp_path / "synth.yaml").write_text(
        (FIX / "synth.yaml").read_text().replace("families/good-*.yaml", "families/*.yaml")
    )
    result = CliRunner().invoke(main, ["validate", "--static", str(tmp_path / "synth.yaml")])
    assert result.exit_code == 2
    assert "skill 'csv' has no operation 'group_total' (did you mean 'group_totals'?)" in result.output


def test_llm_route_runs_through_the_same_pipeline(tmp_path, bwrap, monkeypatch):
    monkeypatch.chdir(ROOT)  # the library (personas/, skills/, workspaces/) of the repository
    (tmp_path / "families").mkdir()
    family = (FAMILIES / "good-tally.yaml").read_text()
    (tmp_path / "families" / "tally.yaml").write_text(
        family.replace(
            "persona: [bakery-owner, teacher, finance-analyst, freelance-designer]", "persona: [bakery-owner]"
        )
    )
    shutil.copy(FIX / "taxonomy.yaml", tmp_path / "taxonomy.yaml")
    answer = (ROOT / "tests" / "fixtures" / "synth_llm" / "good.md").read_text()
    spec = {
        "apiVersion": "clawgym/v1",
        "kind": "Synth",
        "name": "llm-test",
        "taxonomy": "taxonomy.yaml",
        "families": ["families/*.yaml"],
        "filters": {"dedup": {"threshold": 0.8}},
        "llm": {"policy": {"type": "scripted", "turns": [answer]}, "share": 1, "repair_rounds": 0},
    }
    (tmp_path / "synth.yaml").write_text(yaml.safe_dump(spec))
    summary = synthesize(load_synth_spec(tmp_path / "synth.yaml", count=1, out=str(tmp_path / "ds")))
    assert summary.accepted == 1, (tmp_path / "ds" / "rejected.jsonl").read_text() if summary.rejected else ""
    record = json.loads((tmp_path / "ds" / "manifest.jsonl").read_text())
    assert record["route"] == "llm" and record["name"] == "llm-analysis-sales-analytics-00000"
    assert record["source"]["model"]["type"] == "scripted" and len(record["source"]["prompt_sha256"]) == 64
    assert record["filters"]["passed"] and record["filters"]["tamper"] == 0.0
    assert (tmp_path / "ds" / record["path"]).is_file()


SHIPPED_FAMILIES = sorted((ROOT / "specs" / "synth" / "families").rglob("*.yaml"))


def test_shipped_synth_spec_taxonomy_and_families_agree():
    from clawgym.synth.check import check_synth_spec

    assert check_synth_spec(ROOT / "specs" / "synth" / "default.yaml") == len(SHIPPED_FAMILIES) >= 48
    families = [load_family(str(p)) for p in SHIPPED_FAMILIES]
    assert len({(f.category, f.subcategory) for f in families}) >= 40
    assert len({op for f in families for op in f.operations}) >= 25
    assert all(len(f.personas) >= 4 for f in families)


# every family's first draw in the default run; its second (another seed and persona) with -m heavy
FAMILY_DRAWS = [
    pytest.param(
        path, draw, id=f"{path.stem}" if draw == 0 else f"{path.stem}-second", marks=[pytest.mark.heavy] * draw
    )
    for path in SHIPPED_FAMILIES
    for draw in (0, 1)
]


@pytest.mark.parametrize("path, draw", FAMILY_DRAWS)
def test_every_shipped_family_passes_every_filter(path, draw, bwrap, tmp_path):
    out = tmp_path / "ds"
    Dataset.create(out, {}, ROOT, resume=False)
    fam = load_family(str(path))
    persona = fam.personas[0] if draw == 0 else fam.personas[-1]
    c = Candidate("persona", fam.name, persona, draw, fam.category, fam.subcategory)
    made = make_from_family(c, str(path), out, f"tasks/{fam.category}", FilterSettings(), DedupSettings())
    assert made.ok, made.error


def test_duplicates_are_dropped_before_any_trial_runs(tmp_path, bwrap, monkeypatch):
    monkeypatch.chdir(ROOT)
    (tmp_path / "families").mkdir()
    (tmp_path / "families" / "same.yaml").write_text("""\
apiVersion: clawgym/v1
kind: Task
name: always-the-same
category: analysis
subcategory: data quality
persona: [teacher]
skills: [csv]
operations: [csv.read_rows]
workspace: home-office
files:
  - {path: data/list.csv, content: "name,score\\nann,7\\nbob,8\\ncid,9\\n"}
instruction: Count the data rows of data/list.csv and write the number to out/count.txt; leave data/ alone.
solution:
  - exec: mkdir -p out && tail -n +2 data/list.csv | wc -l > out/count.txt
checks:
  - {type: text_matches, path: out/count.txt, pattern: '^\\s*3\\s*$', gate: true}
  - {type: unchanged, paths: ["data/**"], gate: true}
""")
    shutil.copy(FIX / "taxonomy.yaml", tmp_path / "taxonomy.yaml")
    spec = {
        "apiVersion": "clawgym/v1",
        "kind": "Synth",
        "name": "dups",
        "taxonomy": "taxonomy.yaml",
        "families": ["families/*.yaml"],
    }
    (tmp_path / "synth.yaml").write_text(yaml.safe_dump(spec))
    summary = synthesize(load_synth_spec(tmp_path / "synth.yaml", count=3, out=str(tmp_path / "ds")))
    assert summary.accepted == 1 and summary.duplicates == summary.rejected >= 38
    assert summary.exhausted == ["always-the-same"]
    assert summary.stopped == "every task family is exhausted (its recent candidates were all near-duplicates)"
    rejected = [json.loads(line) for line in (tmp_path / "ds" / "rejected.jsonl").read_text().splitlines()]
    kept = json.loads((tmp_path / "ds" / "manifest.jsonl").read_text())["name"]  # whichever finished first
    assert all(r["reason"].startswith(f"dedup: near-duplicate of {kept} (estimated similarity") for r in rejected)
    assert all("oracle" not in r["filters"] and r["filters"]["failed"] == "dedup" for r in rejected)
