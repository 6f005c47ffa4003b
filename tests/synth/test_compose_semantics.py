"""What composed tasks compute means something, and their grading cannot be had without the work:
over a thousand candidates composed in process (fixed seeds), no sum or share of a number that does
not add up, no table where every group has one value, no step asked for that no graded value shows,
no message check that its header lines and the request's own numbers satisfy, no order check that
reordered rows pass, no JSON lookup that pays the unfiltered input; and the catalog says what every
number is."""

from __future__ import annotations

import copy
import csv
import io
import json
import re
import shutil
from pathlib import Path

import pytest

from clawgym.checks.context import CheckContext
from clawgym.errors import SpecError
from clawgym.synth.compose import build, route, scenarios
from clawgym.synth.compose.catalog import load_catalog
from clawgym.synth.compose.deliver import DELIVERABLES, MESSAGE
from clawgym.synth.compose.delivered import cell_rx, number_rx
from clawgym.synth.compose.message import MAX_NUMBERS, count_rx
from clawgym.synth.compose.state import fmt, rounding_ties
from clawgym.synth.compose.model import NUMBER_TYPES, ROLES
from clawgym.synth.compose.heldout import Region
from clawgym.synth.compose.ops import OPERATIONS
from clawgym.synth.dedup import DedupSettings
from clawgym.synth.filters import FilterSettings
from clawgym.synth.mutations.steps import declared_steps, without_step
from clawgym.synth.sample import Candidate
from clawgym.verify.grade import run_checks

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "specs" / "synth" / "compose"
CANDIDATES = 1000
SUMMARIES = ("group_aggregate", "group_json", "report_md", "share_of_total", "pivot", "totals_json")


class Case:
    """One composed task with what built it: the rows as read, the chain kept, the deliverables."""

    def __init__(self, spec, fresh, steps, deliveries):
        self.spec, self.fresh, self.steps, self.deliveries = spec, fresh, steps, deliveries

    def final(self):
        st = self.fresh()
        for name, p in self.steps:
            OPERATIONS[name].apply(st, copy.deepcopy(p))
        return st

    def delivered(self, name: str, p: dict):
        return (MESSAGE if name == MESSAGE.name else DELIVERABLES[name]).deliver(self.final(), copy.deepcopy(p))


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    cat = load_catalog(str(CATALOG))
    names = sorted(cat.domains)
    out, last = [], {}
    original = build._observed

    def spy(fresh, steps, deliveries):
        kept = original(fresh, steps, deliveries)
        last["call"] = (fresh, kept, deliveries)
        return kept

    build._observed = spy
    try:
        for seed in range(CANDIDATES):
            d = cat.domains[names[seed % len(names)]]
            try:
                c = build.compose(
                    cat,
                    d.name,
                    d.scenarios[seed % len(d.scenarios)],
                    d.personas[seed % len(d.personas)],
                    seed,
                    ROOT,
                    f"s-{seed}",
                )
            except ValueError:
                continue
            out.append(Case(c.spec, *last["call"]))
    finally:
        build._observed = original
    # a draw is refused when no story fits it (a split no specific reason asks for, a promise the
    # chain does not keep): about 1 in 3 composes, and synthesis draws again
    assert len(out) >= CANDIDATES // 4, f"only {len(out)} of {CANDIDATES} candidates composed"
    return out


def _grade(tmp: Path, files: dict[str, str], checks: list[dict]) -> dict[str, float]:
    shutil.rmtree(tmp, ignore_errors=True)
    for rel, text in files.items():
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / rel).write_text(text, encoding="utf-8")
    return {c["name"]: r.score for c, r in zip(checks, run_checks(checks, CheckContext(tmp, None, None, {})))}


def _named(spec: dict, path: str) -> list[dict]:
    return [
        {**c, "name": c.get("name") or f"{c['type']} {i}"}
        for i, c in enumerate(spec["checks"])
        if c.get("path") == path
    ]


# ---------------------------------------------------------------------------------------------
# What is computed


def test_sums_shares_and_running_totals_only_over_quantities(cases):
    checked = 0
    for case in cases:
        final = case.final()
        summed = [p["field"] for n, p in case.steps if n == "running_total"]
        for name, p in case.deliveries:
            if name in ("group_aggregate", "group_json", "report_md") and p["how"] in ("sum", "mean", "max", "min"):
                role = final.role(p["col"])
                wanted = {"sum": ("quantity",), "mean": ("quantity", "measure", "duration")}.get(p["how"])
                assert role in (wanted or ("quantity", "measure", "duration", "year")), (name, p, role)
                checked += 1
            if (
                name == "share_of_total"
                or (name == "totals_json" and p.get("total"))
                or (name == MESSAGE.name and p["col"])
            ):
                summed.append(p["col"])
            if name == "totals_json" and p.get("average"):
                assert final.role(p["col"]) in ("quantity", "measure", "duration"), p
        for col in summed:
            assert final.role(col) == "quantity", (case.spec["name"], col, final.role(col))
            checked += 1
    assert checked >= 100


def test_distinct_counts_count_labels_that_vary(cases):
    seen = 0
    for case in cases:
        final = case.final()
        for name, p in case.deliveries:
            if name in ("group_aggregate", "group_json") and p["how"] == "distinct":
                seen += 1
                groups = {}
                for r in final.rows:
                    groups.setdefault(r[p["group"]], set()).add(r[p["col"]])
                assert len({len(v) for v in groups.values()}) > 1, p
                assert final.types[p["col"]] == "person" or final.labels(p["col"]), p
                assert {v.lower() for v in groups} - {"yes", "no", "true", "false", "partial"}, p
    assert seen >= 1  # a guard that the property was exercised at all (splits now need a reason)


def test_no_group_table_has_one_value_everywhere(cases):
    tables = 0
    for case in cases:
        for name, p in case.deliveries:
            if name not in SUMMARIES:
                continue
            for figure in case.delivered(name, p).figures:
                if len(figure.rows) >= 2:
                    tables += 1
                    assert len(set(figure.rows.values())) > 1, (case.spec["name"], figure)
    assert tables >= 50


def test_every_step_asked_for_changes_a_graded_value(cases):
    asked = 0
    for case in cases:
        full = build._outcome(case.fresh, case.steps, case.deliveries, set())
        for i, (name, _) in enumerate(case.steps):
            if name not in build.ALWAYS_SEEN:
                asked += 1
                assert build._outcome(case.fresh, case.steps, case.deliveries, {i}) != full, (case.spec["name"], name)
    assert asked >= 200


def test_every_file_exists_check_is_a_gate_worth_nothing(cases):
    for case in cases:
        for c in case.spec["checks"]:
            if c["type"] == "file_exists":
                assert c.get("gate") is True and c.get("weight") == 0, c


# ---------------------------------------------------------------------------------------------
# Lazy answers do not pay


def test_headers_and_the_requests_numbers_do_not_satisfy_a_message(cases, tmp_path):
    messages = 0
    for case in cases:
        for name, p in case.deliveries:
            if name != MESSAGE.name:
                continue
            messages += 1
            noun = case.final().domain.noun[1]
            request = re.sub(r"(?m)^\d+\. ", "", case.spec["instruction"])  # not a list's item numbers
            said = re.findall(r"(?<![\w.:/-])\d[\d,]*(?:\.\d+)?(?![\w:/-])", request)  # not a date's parts
            body = "".join(f"{n} {noun}\n{n}\n" for n in said)
            text = f"To: {p['name']} <{p['email']}>\nSubject: {p['subject']}\n\n{body}"
            checks = _named(case.spec, p["path"])
            scores = _grade(tmp_path, {p["path"]: text}, checks)
            assert scores["addressed as asked"] == 1.0, scores
            assert scores["the body gives the numbers"] == 0.0, (case.spec["instruction"], text)
    assert messages >= 20


def _csv(rows: list[dict]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def test_order_checks_fail_on_reordered_rows(cases, tmp_path):
    tried = 0
    for case in cases:
        for name, p in case.deliveries:
            if name not in ("write_rows", "markdown_table"):
                continue
            checks = _named(case.spec, p["path"])
            ordered = [c for c in checks if " order" in c["name"] and not c.get("gate")]
            assert ordered, checks
            if name == "write_rows":
                rows = next(c["expected"] for c in ordered)
                right, wrong = _csv(rows), _csv(rows[::-1])
            else:
                fig = case.delivered(name, p).figures[0]
                lines = [f"| {k} | " + " | ".join(v) + " |" for k, v in fig.rows.items()]
                rows = lines
                head = f"# {p['title']}\n\n| " + " | ".join(p["columns"]) + " |\n|" + "---|" * len(p["columns"]) + "\n"
                right, wrong = head + "\n".join(lines) + "\n", head + "\n".join(lines[::-1]) + "\n"
            if len(rows) < 2 or rows[0] == rows[-1]:
                continue
            tried += 1
            good, bad = _grade(tmp_path, {p["path"]: right}, checks), _grade(tmp_path, {p["path"]: wrong}, checks)
            assert all(v == 1.0 for v in good.values()), (name, good)
            for c in ordered:
                assert bad[c["name"]] < 1.0, (name, c["name"], bad)
    assert tried >= 30


def test_a_json_lookup_pays_nothing_to_the_unfiltered_input(cases, tmp_path):
    tried = 0
    for case in cases:
        for name, p in case.deliveries:
            if name not in ("write_json", "group_json"):
                continue
            checks = [c for c in _named(case.spec, p["path"]) if c["type"] == "json_field_equals"]
            exact = next(c["expected"] for c in checks if c.get("field") == "")
            surplus = {f"{k}-extra": v for k, v in list(exact.items())[:3]}  # entries nobody asked for
            weights = sum(c["weight"] for c in checks)

            def share(data: dict) -> float:
                scores = _grade(tmp_path, {p["path"]: json.dumps(data)}, checks)
                return sum(c["weight"] * scores[c["name"]] for c in checks) / weights

            tried += 1
            assert share(exact) == 1.0
            assert share({**exact, **surplus}) == 0.0, (name, share({**exact, **surplus}))
    assert tried >= 20


# ---------------------------------------------------------------------------------------------
# Stated conventions: a number in any of its forms


@pytest.mark.parametrize(
    "value, written, found",
    [
        ("506.93", "506.9300", True),
        ("506.93", "506,93", True),
        ("116.0", "116", True),
        ("116", "116.00", True),
        ("1253.50", "1,253.5", True),
        ("43.86", "43.857", True),
        ("43.86", "43.87", False),
        ("7", "17", False),
        ("7", "2026-03-07", False),
        ("5", "-5", False),
    ],
)
def test_a_graded_number_is_found_in_any_of_its_forms(value, written, found):
    assert bool(re.search(number_rx(value), f"total: {written} |")) is found


@pytest.mark.parametrize(
    "value, written, found",
    [
        ("0 2 * * *", "0 2 * * *", True),
        ("0 2 * * *", "`0 2 * * *`", True),
        ("0 2 * * *", r"0 2 \* \* \*", True),
        ("Front desk", "**Front desk**", True),
        ("crew", "Crew", True),
        ("db_backup", r"db\_backup", True),
        ("5.88", "5,88", True),
        ("5.88", "`5.88`", True),
        ("db_backup", "dbbackup", False),
        ("0 2 * * *", "0 3 * * *", False),
    ],
)
def test_a_table_cell_is_found_marked_up_or_escaped(value, written, found):
    assert bool(re.fullmatch(cell_rx(value), written)) is found


@pytest.mark.parametrize(
    "text, found",
    [
        ("There are 21 results left.", True),
        ("16 titles remain; twenty-one of them are new.", True),
        ("Results: 21, 84,807 ms between them.", True),
        ("There are 27 results, 84,807 ms in total.", False),
        ("Thirty-one books remain.", False),
        ("Release 2.21 shipped on 2026-04-21.", False),
    ],
)
def test_a_message_count_is_found_whatever_words_surround_it(text, found):
    assert bool(re.search(count_rx("21"), text)) is found


def test_a_message_listing_guesses_scores_nothing(tmp_path):
    """The count check reads the body whatever its wording, so a body that lists many numbers
    cannot buy the count: past MAX_NUMBERS different numbers (dates and list markers aside) it
    scores 0."""
    check = {
        "type": "text_matches",
        "name": "count",
        "path": "note.txt",
        "pattern": [count_rx("21")],
        "body_only": True,
        "max_numbers": MAX_NUMBERS,
    }
    head = "To: Tom <tom@x.org>\nSubject: Results\n\n"
    honest = head + "21 results are left after 2026-04-01 (84,807 ms), see:\n1. the w2 runs\n2. the w3 runs\n"
    spray = head + " ".join(f"{n} results?" for n in range(10, 30)) + "\n"
    assert _grade(tmp_path, {"note.txt": honest}, [check])["count"] == 1.0
    assert _grade(tmp_path, {"note.txt": spray}, [check])["count"] == 0.0


def test_figures_on_a_rounding_tie_are_never_asked_for():
    """7.125 to two decimals is 7.13 to a person and 7.12 to Python: no chain or deliverable that
    rounds a figure on such a tie is used."""
    with rounding_ties() as tied:
        assert fmt(57 / 8, "money") == "7.12" and fmt(5.25, "hours") == "5.2" and fmt(2.5, "int") == "2"
        fmt(7.126, "money")
    assert tied == [57 / 8, 5.25, 2.5]
    assert fmt(57 / 8, "money") == "7.12"  # nobody listening: nothing kept
    cat = load_catalog(str(CATALOG))
    made, refused = 0, []
    for dom in ("study_sessions", "shifts", "cron_jobs", "grades", "timesheets", "survey"):
        d = cat.domains[dom]
        for seed in range(15):
            try:
                with rounding_ties() as outer:
                    build.compose(cat, dom, d.scenarios[seed % len(d.scenarios)], d.personas[0], seed, ROOT, "t")
                made += 1
                assert not outer  # compose listens on its own
            except ValueError as e:
                refused += [str(e)] if "rounding tie" in str(e) else []
    assert made >= 20 and refused, (made, refused)


# ---------------------------------------------------------------------------------------------
# The catalog


def test_every_number_field_says_what_it_is():
    cat = load_catalog(str(CATALOG))
    for d in cat.domains.values():
        for f in d.fields:
            if f.type in NUMBER_TYPES:
                assert f.role in ROLES, (d.name, f.name)
        assert all(x.role in ROLES for x in d.derived), d.name


def test_a_number_without_a_role_is_refused_with_its_line(tmp_path):
    shutil.copy(CATALOG / "operations.yaml", tmp_path / "operations.yaml")
    (tmp_path / "domains.yaml").write_text(
        "apiVersion: clawgym/v1\nkind: ComposeDomains\nname: pets\ndomains:\n  pets:\n    noun: [pet, pets]\n"
        "    files: [pets]\n    folders: [data]\n    scenarios: [planning/household routines]\n"
        "    personas: [family-organizer]\n    rows: [8, 12]\n    key: pet_id\n"
        "    fields:\n      pet_id: {type: id, prefix: P}\n      weight: {type: int, min: 1, max: 40}\n"
        "      born: {type: money, role: year}\n",
        encoding="utf-8",
    )
    load_catalog.cache_clear()
    with pytest.raises(SpecError) as err:
        load_catalog(str(tmp_path))
    text = "\n".join(p.format() for p in err.value.problems)
    assert "domains.yaml:15: domains.pets.fields.weight: field 'weight' (int) needs a `role`" in text, text
    assert "quantity: an amount that adds up" in text
    assert (
        "domains.yaml:16: domains.pets.fields.born.role: field 'born': a money field cannot have the role year" in text
    )


def test_a_scenario_no_chain_over_the_domain_can_serve_is_refused_with_its_line(tmp_path):
    """'time tracking' promises a figure of time logged: a domain with no column of time is refused."""
    shutil.copy(CATALOG / "operations.yaml", tmp_path / "operations.yaml")
    (tmp_path / "domains.yaml").write_text(
        "apiVersion: clawgym/v1\nkind: ComposeDomains\nname: trips\ndomains:\n  trips:\n    noun: [trip, trips]\n"
        "    files: [trips]\n    folders: [data]\n    scenarios: [analysis/budget analysis, analysis/time tracking]\n"
        "    personas: [wedding-planner]\n    rows: [8, 12]\n    key: trip_id\n"
        "    fields:\n      trip_id: {type: id, prefix: T}\n      miles: {type: int, min: 1, max: 40, role: quantity}\n"
        "      parking: {type: money, min: 1, max: 9, role: quantity}\n",
        encoding="utf-8",
    )
    load_catalog.cache_clear()
    with pytest.raises(SpecError) as err:
        load_catalog(str(tmp_path))
    text = "\n".join(p.format() for p in err.value.problems)
    assert (
        "domains.yaml:9: domains.trips.scenarios[1]: scenario analysis/time tracking: 'time tracking' promises" in text
    )
    assert "no column of the domain holds one" in text and "budget analysis" not in text.split("promises")[0]
    load_catalog.cache_clear()


# ---------------------------------------------------------------------------------------------
# What the task says it is


def test_every_composed_task_does_what_its_subcategory_promises(cases):
    """A subcategory that promises an activity (data quality: validating or cleaning; financial
    reconciliation: matching another copy; budget analysis: a figure of money, ...) is only given to
    a chain that does it, and the subcategory is one of the domain's scenarios in the drawn category."""
    cat = load_catalog(str(CATALOG))
    promised = 0
    for case in cases:
        spec = case.spec
        domain = cat.domains[spec["tags"][1]]
        assert (spec["category"], spec["subcategory"]) in domain.scenarios, spec["name"]
        final = case.final()
        work = build._work(final, case.steps, [(n, None, p) for n, p in case.deliveries])
        assert scenarios.keeps(spec["subcategory"], work), (spec["name"], spec["subcategory"], work)
        promised += spec["subcategory"] in scenarios.PROMISES
    assert promised >= 100


def test_a_chain_is_filed_under_a_scenario_it_serves_or_drawn_again():
    cleaning = scenarios.Work(frozenset({"dedupe", "write_rows"}), frozenset({"list"}), frozenset())
    listing = scenarios.Work(frozenset({"filter_equals", "write_rows"}), frozenset({"list"}), frozenset())
    money = scenarios.Work(frozenset({"group_aggregate"}), frozenset({"summary"}), frozenset({"money"}))
    survey = (("analysis", "survey analysis"), ("analysis", "data quality"))
    assert scenarios.file_under(("analysis", "data quality"), survey, cleaning) == ("data quality", "")
    sub, why = scenarios.file_under(("analysis", "data quality"), survey, money)
    assert sub == "survey analysis" and "promises validating or cleaning the records" in why and "filed under" in why
    with pytest.raises(ValueError, match="^scenario: analysis/data quality promises"):
        scenarios.file_under(("analysis", "data quality"), survey, listing)
    # another category's scenario is never taken: the category balance holds
    mixed = (("analysis", "budget analysis"), ("planning", "travel itineraries"))
    with pytest.raises(ValueError):
        scenarios.file_under(("analysis", "budget analysis"), mixed, listing)
    assert scenarios.file_under(("planning", "travel itineraries"), mixed, listing) == ("travel itineraries", "")


def test_the_route_records_why_a_scenario_was_not_kept(tmp_path, monkeypatch):
    """A draw whose chain breaks its scenario's promise is drawn again, and the manifest says why
    (`source.rescoped`), as it does for the wording."""
    fam = route.ComposeFamily("survey", "analysis", "data quality", ("data-journalist",), "csv", str(CATALOG))
    real = route.compose
    calls = []

    def once(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise ValueError("scenario: analysis/data quality promises validating or cleaning the records, which not")
        return real(*args, **kwargs)

    monkeypatch.setattr(route, "compose", once)
    persona = load_catalog(str(CATALOG)).domains["survey"].personas[0]
    c = Candidate("persona", fam.name, persona, 5, "analysis", "data quality")
    made = route.make_from_compose(
        c, fam, Region(), "train", tmp_path, "tasks", FilterSettings(trials=False), DedupSettings()
    )
    assert made.error is None, made.error
    rescoped = made.meta["source"]["rescoped"]
    assert rescoped[0].endswith(": drawn again") and "promises validating or cleaning" in rescoped[0]
    assert made.meta["subcategory"] in ("data quality", "survey analysis")


# ---------------------------------------------------------------------------------------------
# The reference declares its steps


def test_every_reference_declares_its_steps_in_either_layout(cases):
    """The step-mutation gate finds every step of a composed reference: a `# step: <operation>` line
    before each block of a script, a function per step called from main() otherwise; removing a
    script's step leaves code that still parses."""
    scripts = 0
    for case in cases:
        code = case.spec["solution"][0]["python"]
        found, why = declared_steps(code)
        assert found, (case.spec["name"], why)
        chain = [n for n, _ in case.steps if n != "merge_inputs"] + [n for n, _ in case.deliveries]
        if "def main():" in code:
            assert len(found) == len(chain), (case.spec["name"], [s.name for s in found], chain)
            continue
        scripts += 1
        assert [s.name for s in found] == chain, case.spec["name"]
        reader = code.splitlines()[: found[0].first]
        assert not any(ln.startswith("# step") for ln in reader)
        for step in found:
            compile(without_step(code, step), "reference", "exec")
    assert scripts >= 100


@pytest.mark.parametrize(
    "value,text,found",
    [
        ("6", "There are six blocked action items.", True),
        ("6", "There are 6 blocked action items.", True),
        ("6", "There are sixty blocked action items.", False),
        ("6", "There are thirty-six blocked action items.", False),
        ("21", "Twenty-one items are blocked.", True),
        ("2", "Theo has two chores.", True),
        ("2", "Theo has twelve chores.", False),
    ],
)
def test_a_count_in_a_message_may_be_written_in_words(value, text, found):
    assert bool(re.search(count_rx(value), text)) is found


def test_a_message_is_addressed_by_its_address_with_or_without_the_name(cases, tmp_path):
    for case in cases:
        gate = next((c for c in case.spec["checks"] if c.get("name") == "addressed as asked"), None)
        if gate is None:
            continue
        to = re.search(r"<([^>]+)>", case.spec["instruction"]).group(1)
        body = f"To: {to}\nSubject: x\n\nhello\n"
        pattern = gate["pattern"][0]
        assert re.search(pattern, body) and re.search(pattern, body.replace(to, f"Someone <{to}>"))
        assert not re.search(pattern, body.replace(to, "someone@else.example"))
        return
    pytest.fail("no composed message in the cases")


def test_a_cleaning_step_that_mends_only_dropped_rows_is_never_asked_for():
    """A "$" price repaired only on rows of a maker the request leaves out is never graded (a
    solver who filters first never meets it): such a chain is drawn again, with the reason."""
    cat = load_catalog(str(CATALOG))
    refused = []
    for dom, d in sorted(cat.domains.items()):
        for seed in range(8):
            scenario, persona = d.scenarios[seed % len(d.scenarios)], d.personas[seed % len(d.personas)]
            try:
                build.compose(cat, dom, scenario, persona, seed, ROOT, "t")
            except ValueError as e:
                refused += [str(e)] if "mends only rows the chain drops" in str(e) else []
    assert len(refused) >= 3, refused
