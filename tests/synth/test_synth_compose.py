"""Compositional synthesis: the catalog, the engine's tasks (valid, verified by running them),
the compose route in `clawgym synth`, and the held-out region training never draws from."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from clawgym.compile.compiler import compile_task, load_task_spec
from clawgym.errors import SpecError
from clawgym.spec.load import load_text
from clawgym.spec.write import dump_spec, literal
from clawgym.synth.compose.build import compose
from clawgym.synth.compose.catalog import load_catalog
from clawgym.synth.compose.deliver import DELIVERABLES
from clawgym.synth.compose.formats import FORMATS
from clawgym.synth.compose.heldout import load_region
from clawgym.synth.compose.ops import OPERATIONS
from clawgym.synth.filters import FilterSettings, run_filters

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "specs" / "synth" / "compose"


def _catalog():
    return load_catalog(str(CATALOG))


def _compile(spec: dict, tmp: Path):
    spec = dict(spec)
    for key in ("files", "instruction", "solution", "checks"):
        spec[key] = literal(spec[key])
    doc = load_text(dump_spec(spec), str(ROOT / "datasets" / "compose-test" / f"{spec['name']}.yaml"))
    return compile_task(load_task_spec(doc.file, doc), 0)


def _composed(cat, domain: str, seed: int, name: str = "t"):
    d = cat.domains[domain]
    return compose(
        cat, domain, d.scenarios[seed % len(d.scenarios)], d.personas[seed % len(d.personas)], seed, ROOT, name
    )


def test_every_implemented_operation_and_format_is_declared_and_used():
    cat = _catalog()
    assert set(OPERATIONS) | set(DELIVERABLES) | {"draft_email"} == set(cat.operations)
    used = {f for d in cat.domains.values() for f in d.formats}
    assert used == set(FORMATS), f"formats no domain uses: {set(FORMATS) - used}"
    categories = {c for d in cat.domains.values() for c, _ in d.scenarios}
    assert categories == {"productivity", "systems", "analysis", "content", "planning", "software"}


def test_a_broken_catalog_names_file_line_and_key(tmp_path):
    shutil.copy(CATALOG / "operations.yaml", tmp_path / "operations.yaml")
    (tmp_path / "domains.yaml").write_text(
        "apiVersion: clawgym/v1\nkind: ComposeDomains\nname: pets\ndomains:\n  pets:\n    noun: [pet, pets]\n"
        "    files: [pets]\n    folders: [data]\n    scenarios: [planning/household routines]\n"
        "    personas: [family-organizer]\n    rows: [8, 12]\n    key: pet_id\n    formats: [csv, xml]\n"
        "    fields:\n      pet_id: {type: id, prefix: P}\n      weight: {type: kilograms}\n",
        encoding="utf-8",
    )
    with pytest.raises(SpecError) as err:
        load_catalog(str(tmp_path))
    text = "\n".join(p.format() for p in err.value.problems)
    assert "domains.yaml:16: domains.pets.fields.weight.type" in text and "'kilograms' is not one of" in text
    assert "domains.yaml:13: domains.pets.formats[1]" in text and "'xml' is not one of" in text
    # past the schema: the key must be a field, an operation's skill must exist
    fixed = (tmp_path / "domains.yaml").read_text(encoding="utf-8").replace("csv, xml", "csv")
    (tmp_path / "domains.yaml").write_text(
        fixed.replace("kilograms", "int").replace("key: pet_id", "key: pet"), encoding="utf-8"
    )
    ops = (CATALOG / "operations.yaml").read_text(encoding="utf-8").replace("csv.read_rows", "csv.read_rowz", 1)
    (tmp_path / "operations.yaml").write_text(ops, encoding="utf-8")
    load_catalog.cache_clear()
    with pytest.raises(SpecError) as err:
        load_catalog(str(tmp_path))
    text = "\n".join(p.format() for p in err.value.problems)
    assert "domains.yaml:12: domains.pets.key: key 'pet' is not one of the fields" in text
    assert "operations.merge_inputs.skill: skill 'csv' has no operation 'read_rowz'" in text


def test_composing_is_deterministic_and_the_chain_fits():
    cat = _catalog()
    for domain in sorted(cat.domains)[:6]:
        for seed in range(4):
            try:
                a = _composed(cat, domain, seed)
            except ValueError:
                continue
            b = _composed(cat, domain, seed)
            assert a.spec == b.spec
            assert 2 <= len(a.chain) <= 6
            assert (
                a.spec["checks"][0]["type"] == "file_exists"
                or a.chain[-1] == "organise"
                or a.spec["checks"][0]["type"] == "files_count"
            )


def test_composed_tasks_compile_and_pass_every_filter(tmp_path):
    """The reference solution (written from the chain) scores 1.0 in a real sandbox on the expected
    values (computed from the chain): the two agree; doing nothing and the tamper attack score 0.
    A draw a lazy agent pays (a small count the first rows also give, values that repeat down a
    column) is refused by the lazy gate and synthesis draws again: each domain passes within its
    first three draws, and few domains need a second one."""
    cat = _catalog()
    rng = random.Random(7)
    tried = 0
    redrawn = []
    fmts, ops = set(), set()
    for domain in sorted(cat.domains):
        made, passed = 0, False
        for seed in rng.sample(range(400), 80):  # the first seeds that compose (a draw may be refused)
            if passed or made == 3:
                break
            try:
                c = _composed(cat, domain, seed, f"t-{tried}")
            except ValueError:
                continue
            made += 1
            task = _compile(c.spec, tmp_path)
            report = run_filters(task, FilterSettings())
            if not report.passed and report.failed == "lazy":
                redrawn.append((domain, seed, report.reason[:120]))
                continue
            assert report.passed, (domain, seed, c.chain, report.failed, report.reason)
            assert report.results["oracle"] == 1.0 and report.results["nop"] == 0.0
            passed = True
            fmts.add(c.fmt)
            ops.update(c.chain)
            tried += 1
        assert passed, (domain, redrawn[-3:])
    assert tried >= len(cat.domains)
    assert len(redrawn) <= 3, redrawn
    assert len(fmts) >= 4 and len(ops) >= 15, (fmts, ops)  # lines and records: about 1 draw in 20


def test_a_wrong_answer_fails_the_composed_checks(tmp_path):
    """The checks grade the computation: the reference with one filter dropped does not pass."""
    cat = _catalog()
    for seed in range(60):
        try:
            c = _composed(cat, "expenses", seed)
        except ValueError:
            continue
        code = c.spec["solution"][0]["python"]
        filters = [ln for ln in code.splitlines() if " if " in ln and ln.startswith("expense")]
        if not filters or c.chain[-1] in ("organise", "reconcile"):
            continue
        spec = dict(c.spec, solution=[{"python": code.replace(filters[0] + "\n", "")}])
        report = run_filters(_compile(spec, tmp_path), FilterSettings(tamper=False))
        assert report.failed == "oracle", (c.chain, report.to_dict())
        return
    pytest.fail("no composed expenses task with a filter in 60 seeds")


def test_records_and_lines_inputs_read_back_as_the_rows(tmp_path):
    cat = _catalog()
    seen = set()
    for domain, d in sorted(cat.domains.items()):
        for seed in range(30):
            if seen >= {"records", "lines"}:
                return
            try:
                c = _composed(cat, domain, seed)
            except ValueError:
                continue
            if c.fmt in ("records", "lines") and c.fmt not in seen:
                report = run_filters(_compile(c.spec, tmp_path), FilterSettings())
                assert report.passed, (domain, seed, c.fmt, report.reason)
                seen.add(c.fmt)
    assert seen >= {"records", "lines"}


# ---------------------------------------------------------------------------------------------
# The route and the held-out region


def _synth(spec_file: Path, out: Path, count: int):
    from clawgym.synth.pipeline import synthesize
    from clawgym.synth.spec import load_synth_spec

    spec = load_synth_spec(spec_file, count=count, out=str(out))
    return synthesize(spec), [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def default_draw(tmp_path_factory):
    """60 tasks drawn with the default (training) spec, shared by the tests below."""
    return _synth(ROOT / "specs/synth/default.yaml", tmp_path_factory.mktemp("ds") / "ds", 60)


def test_the_default_spec_draws_mostly_composed_tasks_in_proportion(default_draw):
    summary, records = default_draw
    assert summary.accepted == 60
    accepted = [r for r in records if r["filters"].get("passed")]
    composed = [r for r in accepted if "compose" in r["source"]]
    assert len(composed) >= 40, len(composed)
    assert all(r.get("chain") and 2 <= len(r["chain"]) <= 6 for r in composed)
    cats = {r["category"] for r in accepted}
    assert cats == {"productivity", "systems", "analysis", "content", "planning", "software"}


def test_training_never_draws_from_the_held_out_region(default_draw):
    """The default (training) spec's families exclude every held-out domain and family, and the
    chains its workers accept never hold a reserved combination."""
    from clawgym.synth.pipeline import all_families
    from clawgym.synth.spec import load_synth_spec
    from clawgym.synth.taxonomy import load_taxonomy

    spec = load_synth_spec(ROOT / "specs/synth/default.yaml")
    region = load_region(spec.heldout)
    assert region.domains and region.combinations and region.families
    families = all_families(spec, load_taxonomy(spec.taxonomy), None)
    assert not {getattr(f, "domain", None) for f in families} & region.domains
    assert not {f.name for f in families} & region.families
    _, records = default_draw
    for r in records:
        chain = r.get("chain") or []
        assert r["source"].get("compose") not in region.domains and r["source"]["family"] not in region.families, r[
            "name"
        ]
        assert not any(combo <= set(chain) for combo in region.combinations), (r["name"], chain)


def test_the_benchmark_spec_draws_only_from_the_held_out_region(tmp_path):
    spec_file = ROOT / "specs/synth/bench-v2.yaml"
    _, records = _synth(spec_file, tmp_path / "b", 12)
    from clawgym.synth.spec import load_synth_spec

    region = load_region(load_synth_spec(spec_file).heldout)
    accepted = [r for r in records if r["filters"].get("passed")]
    assert len(accepted) == 12
    for r in accepted:
        src = r["source"]
        assert src.get("compose") in region.domains or src["family"] in region.families, r["name"]


def test_every_asked_step_reaches_a_check():
    """A step whose effect no output shows (trimming a column no file holds) is never asked for."""
    from clawgym.synth.compose import build

    cat, seen, asked = _catalog(), [], 0
    original = build._observed

    def spy(fresh, steps, deliveries):
        kept = original(fresh, steps, deliveries)
        seen.append((fresh, kept, deliveries))
        return kept

    build._observed = spy
    try:
        for i, dom in enumerate(sorted(cat.domains)[:20]):
            d = cat.domains[dom]
            try:
                build.compose(cat, dom, d.scenarios[0], d.personas[0], i, ROOT, f"c-{i}")
            except ValueError:
                continue
    finally:
        build._observed = original
    for fresh, kept, deliveries in seen:
        full = build._outcome(fresh, kept, deliveries, set())
        for j, (name, _) in enumerate(kept):
            if name not in build.ALWAYS_SEEN:
                asked += 1
                assert build._outcome(fresh, kept, deliveries, {j}) != full, f"{name} is asked for but never graded"
    assert asked >= 10


def test_family_option_respects_the_held_out_region(tmp_path):
    from click.testing import CliRunner

    from clawgym.cli.main import main

    spec = str(ROOT / "specs" / "synth" / "default.yaml")
    result = CliRunner().invoke(
        main, ["synth", spec, "--family", "fix-failing-helper", "--count", "1", "--out", str(tmp_path / "held")]
    )
    assert result.exit_code != 0
    assert "family 'fix-failing-helper' lies on the heldout side of the held-out region" in result.output


def _first_with(cat, deliverable: str, tmp_path: Path):
    """The first composed task (domains in order, seeds 0-39) whose chain ends in `deliverable`, compiled."""
    for domain in sorted(cat.domains):
        for seed in range(40):
            try:
                c = _composed(cat, domain, seed, "t-" + deliverable.replace("_", "-"))
            except ValueError:
                continue
            if c.chain[-1] == deliverable:
                return c, _compile(c.spec, tmp_path)
    raise AssertionError(f"no composed task ends in {deliverable}")


def _kept_reference(task, tmp_path: Path):
    """The reference's final workspace (the oracle's trial, kept) and a grader of a workspace."""
    from clawgym.compile.workspace import materialize
    from clawgym.run.lint import grade_here
    from clawgym.run.trial import Trial, run_trial

    kept, pristine = tmp_path / "kept", tmp_path / "pristine"
    assert run_trial(Trial(task, {"type": "oracle"}), keep_workspace=kept).record.reward == 1.0
    materialize(task, pristine)
    return kept, (lambda: grade_here(task, kept, pristine, None).reward)


def test_a_report_line_listed_for_every_guess_scores_nothing(tmp_path, bwrap):
    """'- ERROR: 0' ... '- ERROR: 59' for each label is no breakdown: the one-line-per-label gate."""
    import re

    c, task = _first_with(_catalog(), "report_md", tmp_path)
    path = next(ch["path"] for ch in c.spec["checks"] if ch.get("type") == "markdown_section")
    gate = next(ch for ch in c.spec["checks"] if str(ch.get("name", "")).startswith("one line per"))
    assert gate["gate"] and gate["max_count"] == 1
    kept, grade = _kept_reference(task, tmp_path)
    honest = (kept / path).read_text()
    assert grade() == 1.0
    labels = re.findall(r"(?m)^(- [^:\n]+|Total|Average over all [^:\n]+):", honest)
    assert labels
    (kept / path).write_text(
        honest.splitlines()[0] + "\n\n" + "".join(f"{x}: {n}\n" for x in labels for n in range(100))
    )
    assert grade() == 0.0


def test_a_message_listing_guessed_counts_scores_nothing(tmp_path, bwrap):
    """'32 strings, 33 strings, ...' is no count: at most three '<number> <things>' phrases."""
    c, task = _first_with(_catalog(), "draft_email", tmp_path)
    path = next(ch["path"] for ch in c.spec["checks"] if str(ch.get("name", "")).endswith("stated once"))
    kept, grade = _kept_reference(task, tmp_path)
    head, _, body = (kept / path).read_text().partition("\n\n")
    assert grade() == 1.0
    noun = task.instruction.split("(as '<number> ", 1)[1].split("'", 1)[0]
    guesses = ", ".join(f"{n} {noun}" for n in range(1, 13))
    (kept / path).write_text(f"{head}\n\nThere are {guesses}.\n{body}")
    assert grade() == 0.0
    (kept / path).write_text(f"{head}\n\nOf these, 2 {noun} stand out.\n{body}")
    assert grade() == 1.0  # the count and one more counted phrase are fine
