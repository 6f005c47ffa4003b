"""The benchmark's instances, `bench add`, `bench calibrate`, the partial agents and the lock,
on small temporary benchmarks built from the synth fixtures and the shipped task families."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from clawgym.bench import partial_agent
from clawgym.bench.importer import add, sources
from clawgym.bench.layout import find_instances, read_lock
from clawgym.bench.rubrics import TEMPLATES, rubric_for
from clawgym.cli.main import main
from clawgym.synth.dedup import DedupSettings
from clawgym.synth.families import load_family
from clawgym.synth.filters import FilterSettings
from clawgym.synth.make import make_from_family
from clawgym.synth.sample import Candidate

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "synth" / "families"
FAMILIES = ROOT / "specs" / "synth" / "families"
BENCH = ROOT / "specs" / "bench"
PUBLISHED = {"productivity": 44, "systems": 42, "analysis": 35, "content": 28, "planning": 26, "software": 25}


@pytest.fixture(autouse=True)
def _repo_library(monkeypatch):
    """Temporary benchmarks use the repository's personas, skills and workspaces."""
    monkeypatch.chdir(ROOT)


def concrete(family: Path, seed: int, out: Path) -> Path:
    """A concrete spec of `family` at `seed`, as `clawgym synth` writes it (no filters run)."""
    fam = load_family(str(family))
    c = Candidate("persona", fam.name, fam.personas[0], seed, fam.category, fam.subcategory)
    made = make_from_family(
        c, str(family), out, "src", FilterSettings(trials=False, paths_mentioned=False), DedupSettings()
    )
    assert made.text, made.error
    path = out / made.path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(made.text, encoding="utf-8")
    return path


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output  # stdout and stderr together


def bench_of(tmp_path: Path, specs: list[Path]) -> Path:
    bench = tmp_path / "bench"
    add(sources([str(p) for p in specs]), bench)
    return bench


def calibration(bench: Path, name: str) -> dict:
    [inst] = [i for i in find_instances(bench) if i.name == name]
    return yaml.safe_load(inst.calibration.read_text())


# --- bench add -----------------------------------------------------------------------------------


def test_add_places_instances_with_stable_names_and_skips_duplicates(tmp_path):
    a = concrete(FIXTURES / "good-tally.yaml", 1000001, tmp_path)
    b = concrete(FIXTURES / "good-shopping.yaml", 1000001, tmp_path)
    bench = tmp_path / "bench"
    code, out = run("bench", "add", str(a), str(b), "--bench", str(bench))
    assert code == 0, out
    assert sorted(i.spec.relative_to(bench).as_posix() for i in find_instances(bench)) == [
        "analysis/good-tally-1/task.yaml",
        "planning/good-shopping-1/task.yaml",
    ]
    text = (bench / "analysis/good-tally-1/task.yaml").read_text()
    assert "\nname: good-tally-1\n" in text
    assert "# Benchmark instance good-tally-1, added by `clawgym bench add` from" in text
    assert "from task family good-tally" in text and "seed 1000001" in text  # synth provenance kept
    assert str(tmp_path) not in text  # no machine paths
    # the same content again is skipped; another seed of the family gets the next number
    c = concrete(FIXTURES / "good-tally.yaml", 1000002, tmp_path)
    code, out = run("bench", "add", str(a), str(c), "--bench", str(bench))
    assert code == 0, out
    assert "analysis/good-tally-1: skipped (already in the benchmark as good-tally-1)" in out
    assert "analysis/good-tally-2: added" in out


def test_add_reads_a_synth_dataset_in_manifest_order(tmp_path):
    data = tmp_path / "ds"
    rows = []
    for seed in (1000003, 1000001):
        path = concrete(FIXTURES / "good-tally.yaml", seed, data)
        rows.append(
            {
                "path": path.relative_to(data).as_posix(),
                "name": f"good-tally-{seed:05d}",
                "seed": seed,
                "category": "analysis",
                "source": {"family": "good-tally"},
            }
        )
    (data / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    added = add(sources([str(data)]), tmp_path / "bench")
    assert [(a.name, a.category) for a in added] == [("good-tally-1", "analysis"), ("good-tally-2", "analysis")]
    assert "seed 1000001" in (tmp_path / "bench/analysis/good-tally-1/task.yaml").read_text()  # lowest seed first


def test_add_refuses_a_spec_with_params(tmp_path):
    code, out = run("bench", "add", str(FIXTURES / "good-tally.yaml"), "--bench", str(tmp_path / "b"))
    assert code == 2
    assert (
        "good-tally.yaml:1: params: benchmark instances must be concrete specs, and this one has params or vars" in out
    )


def test_hybrid_caps_the_rubrics_and_spreads_them_over_categories(tmp_path):
    specs = [
        concrete(FAMILIES / "productivity" / "meeting-followup-drafts.yaml", seed, tmp_path / "p")
        for seed in (1000001, 1000002, 1000003)
    ]
    specs.append(concrete(FAMILIES / "software" / "release-from-commit-log.yaml", 1000001, tmp_path / "s"))
    added = add(sources([str(p) for p in specs]), tmp_path / "bench", hybrid=2)
    assert sum(a.hybrid for a in added) == 2
    assert {a.category for a in added if a.hybrid} == {"productivity", "software"}  # one from each
    more = add(
        sources([str(concrete(FAMILIES / "productivity" / "meeting-followup-drafts.yaml", 1000009, tmp_path / "q"))]),
        tmp_path / "bench",
        hybrid=2,
    )
    assert [a.hybrid for a in more] == [False]  # the benchmark already holds two


def test_hybrid_families_get_a_rubric_from_their_content(tmp_path):
    spec = concrete(FAMILIES / "productivity" / "meeting-followup-drafts.yaml", 1000002, tmp_path)
    [added] = add(sources([str(spec)]), tmp_path / "bench")
    data = yaml.safe_load(added.folder.joinpath("task.yaml").read_text())
    assert added.hybrid and data["rubric_weight"] == 0.3
    criteria = [c["criterion"] for c in data["rubric"]]
    owners = next(c for c in data["checks"] if c.get("name", "").startswith("one follow-up"))["headings"]
    assert len(criteria) == 4 and all(o in criteria[1] for o in owners)
    persona = yaml.safe_load((ROOT / "personas" / f"{data['persona']}.yaml").read_text())
    assert persona["full_name"] in criteria[2]


@pytest.mark.parametrize("family", sorted(TEMPLATES))
def test_every_rubric_template_fits_its_family(family, tmp_path):
    [path] = list(FAMILIES.glob(f"*/{family}.yaml"))
    for seed in (1000000, 1000001, 1000002):
        spec = yaml.safe_load(concrete(path, seed, tmp_path).read_text())
        rubric = rubric_for(family, spec, ROOT)
        assert 3 <= len(rubric) <= 5 and all("{" not in c["criterion"] for c in rubric)
    assert rubric_for("good-tally", spec, ROOT) is None


# --- partial agents ------------------------------------------------------------------------------


def test_units_of_work_follow_the_instruction_and_skip_incidental_files():
    effects = [partial_agent.Effect("write", p) for p in ("b/out.md", "a/first.csv", "__pycache__/x.pyc", "c/x.json")]
    effects.append(partial_agent.Effect("delete", "old/one.log"))
    units, incidental = partial_agent.units_of_work(
        effects,
        {"side_effects": {"outbox": [{"message": "hi"}]}},
        "Write a/first.csv, then c/x.json, then b/out.md. Prune old/.",
        graded=["old/**"],
    )
    assert [u.label() for u in units] == [
        "write a/first.csv",
        "write c/x.json",
        "write b/out.md",
        "delete old/one.log",
        "outbox #1",
    ]
    assert [e.path for e in incidental] == ["__pycache__/x.pyc"]
    assert [partial_agent.count_for(f, 3) for f in partial_agent.FRACTIONS] == [0, 0, 1, 2, 3]
    assert partial_agent.monotone({0.0: 0, 0.5: 0.4, 1.0: 1}) and not partial_agent.monotone(
        {0.0: 0, 0.5: 0.6, 1.0: 0.5}
    )


# --- calibrate -----------------------------------------------------------------------------------


def test_calibrate_passes_good_instances_and_fails_broken_ones_with_reasons(tmp_path, bwrap):
    specs = [
        concrete(FAMILIES / "productivity" / "meeting-followup-drafts.yaml", 1000002, tmp_path),
        concrete(FIXTURES / "good-tally.yaml", 1000001, tmp_path),
    ]
    specs += [concrete(FIXTURES / f"{bad}.yaml", 0, tmp_path) for bad in ("bad-nop", "bad-tamper", "bad-paths")]
    bench = bench_of(tmp_path, specs)
    assert run("bench", "lock", "--bench", str(bench))[0] == 0
    code, out = run("bench", "calibrate", "--bench", str(bench), "-j", "2")
    assert code == 1
    lines = [" ".join(line.split()) for line in out.splitlines()]
    assert "FAIL analysis/bad-nop-1" in lines
    assert "- nop: doing nothing scores 1.000 > 0.1 (passing: text_contains data/list.csv)" in lines
    assert "FAIL analysis/bad-tamper-1" in lines
    assert (
        "- tamper: truncating the inputs and answering for what is left scores 1.000, more than doing nothing "
        "(0.000); passing: text_contains out/header.txt"
    ) in lines
    assert "FAIL analysis/bad-paths-1" in lines
    assert "- paths: the instruction never mentions out/secret_count.txt" in lines
    assert "5 instance(s) calibrated" in out and "2 passed, 3 failed" in out
    good = calibration(bench, "meeting-followup-drafts-1")
    assert good["passed"] and good["failures"] == [] and good["hash"] == read_lock(bench)["instances"][good["instance"]]
    assert good["checks"]["oracle"] == 1.0 and good["checks"]["nop"] == 0.0
    assert good["checks"]["determinism"] == {"regradings": 3, "same": True}
    assert good["checks"]["tamper"] == {"reward": 0.0, "input_gate": True}
    assert good["rubric"]["scored"] is False and "pass --judge" in good["rubric"]["note"]
    assert good["review"]["status"] == "none" and any(w.startswith("review:") for w in good["warnings"])
    assert good["difficulty"]["basis"] == "partial agents only"
    # partial agents: reward rises with the share of the work done, and only all of it scores 1.0
    rewards = good["partial"]["rewards"]
    assert list(rewards) == ["0%", "25%", "50%", "75%", "100%"]
    values = list(rewards.values())
    assert values == sorted(values) and values[0] == 0.0 and values[-1] == 1.0 and values[-2] < 1.0
    assert len(good["partial"]["units"]) == 3
    assert not calibration(bench, "bad-nop-1")["passed"]


def test_partial_work_scoring_as_complete_is_a_failure(tmp_path, bwrap):
    spec = concrete(FIXTURES / "good-tally.yaml", 1000001, tmp_path)
    text = spec.read_text()
    # the request gains an output nobody grades: half of the work then scores as much as all of it
    text = text.replace("and leave data/ untouched.", "and leave data/ untouched. Also note the date in out/when.txt.")
    text = text.replace("solution:\n", "solution:\n- exec: mkdir -p out && date +%F > out/when.txt\n")
    spec.write_text(text)
    bench = bench_of(tmp_path, [spec])
    code, out = run("bench", "calibrate", "--bench", str(bench), "--only", "good-tally-1")
    assert code == 1
    reason = calibration(bench, "good-tally-1")["failures"]
    assert reason == [
        "partial: 1 of 2 units of work (write out/totals.json) already score 1.000, as much as all "
        "of them: write out/when.txt is not graded"
    ]


def test_agent_results_reviews_and_difficulty(tmp_path, bwrap):
    bench = bench_of(tmp_path, [concrete(FIXTURES / "good-tally.yaml", 1000001, tmp_path)])
    [inst] = find_instances(bench)
    run("bench", "calibrate", "--bench", str(bench), "--only", inst.name)
    current = calibration(bench, inst.name)["hash"]
    runs = tmp_path / "runs" / "model"
    for i, (reward, h) in enumerate([(1.0, current), (0.0, current), (0.5, "an-older-version")]):
        rec = {
            "trial_id": f"t{i}",
            "task": {"name": inst.name, "hash": h},
            "agent": {"type": "claw", "name": "sft"},
            "status": "passed" if reward == 1 else "failed",
            "reward": reward,
        }
        (runs / "trials" / f"t{i}").mkdir(parents=True)
        (runs / "trials" / f"t{i}" / "record.json").write_text(json.dumps(rec))
    (inst.folder / "review.yaml").write_text(
        yaml.safe_dump(
            {
                "reviews": [
                    {
                        "decision": "accept",
                        "reviewer": "Ada",
                        "date": "2026-01-02T10:00:00Z",
                        "hash": current,
                        "comment": "",
                    }
                ]
            }
        )
    )
    code, out = run(
        "bench",
        "calibrate",
        "--bench",
        str(bench),
        "--only",
        inst.name,
        "--agents",
        str(runs),
        "--agents",
        f"before={runs}",
    )
    assert code == 0, out
    cal = calibration(bench, inst.name)
    assert cal["agents"]["sft"] == {"trials": 2, "errors": 0, "mean_reward": 0.5, "pass_rate": 0.5}
    assert set(cal["agents"]) == {"sft", "before"}
    assert "agents: 1 result(s) of sft are for another version of this instance, ignored" in cal["warnings"]
    assert cal["review"] == {
        "file": "review.yaml",
        "status": "accept",
        "llm_reviews": 0,
        "reviewer": "Ada",
        "date": "2026-01-02T10:00:00Z",
    }
    components = cal["difficulty"]["components"]
    assert components["agent:sft"] == 0.5 and "partial" in components
    assert cal["difficulty"]["score"] == round(sum(components.values()) / 3, 4)
    # agent results stay in the record while the instance is unchanged
    run("bench", "calibrate", "--bench", str(bench), "--only", inst.name)
    assert set(calibration(bench, inst.name)["agents"]) == {"sft", "before"}


def test_judge_scores_the_rubric_of_the_reference(tmp_path, bwrap):
    spec = concrete(FAMILIES / "systems" / "uptime-sla-check.yaml", 1000001, tmp_path)
    bench = bench_of(tmp_path, [spec])
    [inst] = find_instances(bench)
    answer = json.dumps({"scores": [{"criterion": k, "score": 1, "reason": "ok"} for k in range(1, 5)]})
    judge = json.dumps({"type": "scripted", "turns": [answer]})
    code, out = run("bench", "calibrate", "--bench", str(bench), "--only", inst.name, "--judge", judge)
    assert code == 0, out
    rubric = calibration(bench, inst.name)["rubric"]
    assert rubric["scored"] and rubric["score"] == 1.0 and rubric["hybrid_reward"] == 1.0


# --- lock and version ----------------------------------------------------------------------------


def test_lock_detects_changes_and_the_version_follows_every_instance(tmp_path, bwrap):
    specs = [
        concrete(FIXTURES / "good-tally.yaml", 1000001, tmp_path),
        concrete(FIXTURES / "good-shopping.yaml", 1000001, tmp_path),
    ]
    bench = bench_of(tmp_path, specs)
    code, out = run("bench", "calibrate", "--bench", str(bench))
    assert code == 1 and f"{bench}/bench.lock.json is stale: the benchmark has no bench.lock.json" in out
    code, out = run("bench", "lock", "--bench", str(bench))
    v1 = read_lock(bench)["version"]
    assert code == 0 and f"benchmark version {v1}: 2 instances" in out and v1.startswith("1.")
    assert run("bench", "version", "--bench", str(bench))[1].startswith(v1 + "  (2 instances")
    assert run("bench", "calibrate", "--bench", str(bench))[0] == 0
    # change one instance: calibrate names it and says how to fix it
    task = bench / "analysis/good-tally-1/task.yaml"
    task.write_text(task.read_text().replace("Total the quantities", "Please total the quantities"))
    code, out = run("bench", "calibrate", "--bench", str(bench))
    assert code == 1 and "is stale: changed since the lock: good-tally-1" in out and "clawgym bench lock" in out
    assert run("bench", "version", "--bench", str(bench), "--check")[0] == 1
    run("bench", "lock", "--bench", str(bench))
    v2 = read_lock(bench)["version"]
    assert v2 != v1
    # add one: new, not yet locked; --only still calibrates it (the lock comes after review)
    add(sources([str(concrete(FIXTURES / "good-tally.yaml", 1000002, tmp_path))]), bench)
    code, out = run("bench", "calibrate", "--bench", str(bench), "--only", "good-tally-2")
    assert code == 0 and "note" in out and "not in the lock (added): good-tally-2" in out
    code, out = run("bench", "lock", "--bench", str(bench))
    assert "not in the lock (added): good-tally-2" in out and f"(was {v2})" in out
    v3 = read_lock(bench)["version"]
    # remove one
    import shutil

    shutil.rmtree(bench / "planning/good-shopping-1")
    code, out = run("bench", "calibrate", "--bench", str(bench), "-j", "1")
    assert code == 1 and "in the lock but gone (removed): good-shopping-1" in out
    run("bench", "lock", "--bench", str(bench))
    assert len({v1, v2, v3, read_lock(bench)["version"]}) == 4


def test_unknown_instance_is_a_user_error(tmp_path):
    bench = bench_of(tmp_path, [concrete(FIXTURES / "good-tally.yaml", 1000001, tmp_path)])
    code, out = run("bench", "calibrate", "--bench", str(bench), "--only", "good-taly-1")
    assert code == 2 and "no benchmark instance named good-taly-1" in out and "did you mean 'good-tally-1'" in out


# --- the shipped benchmark -----------------------------------------------------------------------


@pytest.mark.skipif(not BENCH.is_dir(), reason="no specs/bench in this checkout")
def test_shipped_benchmark_is_complete_calibrated_and_locked():
    from clawgym.bench.lock import current_hashes

    instances = find_instances(BENCH)
    assert Counter(i.category for i in instances) == PUBLISHED
    hashes = current_hashes(instances)
    lock = read_lock(BENCH)
    assert lock["instances"] == hashes, "run: clawgym bench lock"
    hybrid = 0
    for inst in instances:
        cal = yaml.safe_load(inst.calibration.read_text())
        assert cal["passed"] and cal["hash"] == hashes[inst.name], f"run: clawgym bench calibrate --only {inst.name}"
        spec = yaml.safe_load(inst.spec.read_text())
        assert spec["name"] == inst.name and "params" not in spec
        hybrid += bool(spec.get("rubric"))
    assert 40 <= hybrid <= 48


# --- synthesis for the benchmark: far seeds, de-duplicated against training seeds ----------------


def test_bench_synth_seeds_start_far_from_training(tmp_path):
    from clawgym.synth.families import family_files, load_families
    from clawgym.synth.sample import Balancer
    from clawgym.synth.spec import load_synth_spec

    spec = load_synth_spec(ROOT / "specs" / "synth" / "bench.yaml")
    assert spec.count == 200 and spec.seed_start >= 1_000_000
    assert spec.category_shares == PUBLISHED
    assert {"path": "families/**/*.yaml", "seeds": "0-999"} in spec.dedup_against
    families = load_families(family_files(["*.yaml"], FIXTURES))
    b = Balancer(families, {"persona": 1}, {}, seed=1, seed_start=spec.seed_start)
    assert min(b.next().seed for _ in range(20)) == spec.seed_start


def test_dedup_against_family_seeds_is_cached_and_skips_seeds_that_do_not_compile(tmp_path, monkeypatch):
    from clawgym.synth import against

    monkeypatch.setenv("CLAWGYM_CACHE_DIR", str(tmp_path / "cache"))
    bad = tmp_path / "fam" / "sometimes.yaml"
    bad.parent.mkdir()
    # a family that cannot be compiled on odd seeds: those made no task, so they are skipped
    bad.write_text(
        (FIXTURES / "good-tally.yaml")
        .read_text()
        .replace("name: good-tally", "name: sometimes")
        .replace("rows: {int: [6, 12]}", "rows: {int: [0, 1]}")
        .replace(
            "checks:\n",
            "checks:\n  - {type: markdown_section, path: out/totals.md, "
            "headings: \"{{ data.orders | map(attribute='id') | list }}\"}\n",
        )
    )
    raw = [{"path": "fam/*.yaml", "seeds": "0-9"}, os.path.relpath(FIXTURES / "good-tally.yaml", tmp_path)]
    first = against.against_signatures(raw, tmp_path, DedupSettings(), jobs=1)
    names = sorted(k for k, _ in first)
    assert [n for n in names if "good-tally" in n] == [
        "against:good-tally@0",
        "against:good-tally@1",
        "against:good-tally@2",
    ]
    kept = [n for n in names if "sometimes" in n]
    assert 0 < len(kept) < 10
    assert len(list((tmp_path / "cache" / "synth-against").glob("*.npz"))) == 2
    again = against.against_signatures(raw, tmp_path, DedupSettings(), jobs=1)
    assert sorted(k for k, _ in again) == names


def test_against_compares_what_synthesis_compares(tmp_path, monkeypatch):
    """A task already in the benchmark, synthesized again, is an exact duplicate (similarity 1)."""
    from clawgym.synth import against
    from clawgym.synth.dedup import signature
    from clawgym.synth.make import spec_dedup_text

    monkeypatch.setenv("CLAWGYM_CACHE_DIR", "off")
    spec = concrete(FAMILIES / "productivity" / "meeting-followup-drafts.yaml", 1000002, tmp_path)
    [(key, sig)] = against.against_signatures([{"path": str(spec), "seeds": [0]}], tmp_path, DedupSettings())
    assert key.endswith("@0")
    assert (sig == signature(spec_dedup_text(yaml.safe_load(spec.read_text())), DedupSettings())).all()
