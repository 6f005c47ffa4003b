"""The words of composed requests (issue 38): the wording check catches the sentences reviewers
rejected, thousands of generated requests pass it, the compose route redraws a request that fails
it, reasons fit what the chain does, and categories, personas and systems fit the domain."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import yaml

from clawgym.errors import SpecError
from clawgym.synth.compose import route
from clawgym.synth.compose.build import compose
from clawgym.synth.compose.catalog import load_catalog
from clawgym.synth.compose.heldout import Region
from clawgym.synth.compose.lexicon import Facts, Lexicon, default_noun, fits, plural
from clawgym.synth.compose.model import Reason
from clawgym.synth.compose.wording import Hit, Vocabulary, answers, check, check_spec
from clawgym.synth.dedup import DedupSettings
from clawgym.synth.filters import FilterSettings
from clawgym.synth.sample import Candidate

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "specs" / "synth" / "compose"


def _catalog():
    return load_catalog(str(CATALOG))


# -- the rules ------------------------------------------------------------------------------------
# (domain, sentence the review rejected, the rule that must catch it)
REJECTED = [
    ("mileage_log", "Anything with a miles below 50.", "bare-name"),
    ("ci_builds", "Keep anything with a seconds at most 1200.", "bare-name"),
    ("donations", "Leave out the no donations (receipt sent).", "value-as-noun"),
    ("tickets", "Then just the low ones (priority).", "value-as-noun"),
    ("chores", "I only care about repeats monthly.", "name-value"),
    ("backups", "Everything except keep days 365.", "field-label"),
    ("backups", "Keep the 3 runs with the lowest age days.", "field-label"),
    ("podcast_episodes", "Write the total downloads per sponsored by.", "field-label"),
    ("citations", "Work out each progress's total.", "bare-name"),
    ("volunteer_events", "Give the number of different under cover values per role.", "field-label"),
    ("mileage_log", "Write the total distance per claimed.", "bare-name"),
    ("donations", "Summarise the amounts by receipted.", "bare-name"),
    ("donations", "Save it as out/list.csv (I need to send the confirmation emails).", "dangling-aside"),
    ("ci_builds", "Tell me the number of builds (36 here).", "stated-count"),
    ("expenses", "Keep only the the approved claims.", "doubled-word"),
    ("citations", "Keep the ones with a added on date after May.", "article"),
    ("expenses", "Keep only the expenses whose {field} is travel.", "unfilled-slot"),
    ("itinerary", "Give me the total per booked.", "per-adjective"),
    # headings and subject lines asked for word for word: the output carries them, so they must read right
    ("mileage_log", "Write out/r.md with a '# Reimbursed breakdown' heading.", "title-name"),
    ("purchase_orders", "A note titled '# Po status breakdown': a bullet per order status.", "title-name"),
    ("backups", "Write a short report with a '# Backup runs by status' heading.", "title-name"),
    ("expenses", "Make a Markdown page with the heading '# Claims by claim_status'.", "raw-name"),
    (
        "podcast_episodes",
        "Work out each band of the number of downloads in the last 30 days's total runtime.",
        "possessive-phrase",
    ),
]
# what the generator writes instead: none of these may be caught
ACCEPTED = [
    ("mileage_log", "Keep only the journeys whose distance in miles is below 50."),
    ("mileage_log", "Drop the journeys that have not been claimed yet and keep the rest."),
    ("donations", "Leave out the donations that have had no receipt yet."),
    (
        "donations",
        "Give me the total amount per receipt status in out/by_receipt.csv (columns receipted,total_amount).",
    ),
    ("tickets", "Keep only the tickets whose priority is low."),
    ("chores", "Keep only the chores whose frequency is monthly."),
    ("backups", "Add an expires_on column: the run date plus the retention period in days, as YYYY-MM-DD."),
    ("podcast_episodes", "Write the total number of downloads in the last 30 days per sponsor to out/s.json."),
    ("citations", "I only need the 6 references with the highest publication year (ties broken by the DOI)."),
    ("citations", "Cross-tabulate the reading status against the journal: first column reading_status."),
    ("expenses", "Add an age_days column, then save them with the columns claim_id, amount, status."),
    ("ci_builds", "Then write Ann Lee a note with the number of builds and their total duration in seconds."),
    ("mileage_log", "Write out/r.md with a '# Claim status breakdown' heading."),
    ("purchase_orders", "A note titled '# Purchase orders by supplier': a bullet per supplier."),
    ("podcast_episodes", "Work out the total runtime in minutes for each sponsor and its share of the overall total."),
    ("chores", "Count the days from each one's due date to 2026-05-06 in a days_since column."),
]


@pytest.mark.parametrize("domain,text,rule", REJECTED)
def test_the_check_catches_what_the_review_rejected(domain, text, rule):
    hits = check(text, Vocabulary.of(_catalog(), domain))
    assert rule in {h.rule for h in hits}, (text, hits)


@pytest.mark.parametrize("domain,text", ACCEPTED)
def test_the_check_passes_what_the_generator_writes_instead(domain, text):
    assert check(text, Vocabulary.of(_catalog(), domain)) == []


def test_a_graded_figure_in_the_request_is_caught_but_a_parameter_is_not():
    checks = [
        {"type": "json_field_equals", "path": "out/t.json", "fields": {'["total_amount"]': 1234.5, '["rows"]': 7}},
        {"type": "text_contains", "path": "out/r.md", "contains": ["# Report", "- travel: 642.18"]},
    ]
    graded = answers(checks)
    assert {"1234.5", "7", "642.18"} <= set(graded)
    leaked = check("Write the total (1234.50 last time) to out/t.json.", None, graded)
    assert [h.rule for h in leaked] == ["given-answer"]
    assert check("Travel came to 642.18, I think.", None, graded)[0].rule == "given-answer"
    # a small count given as a parameter ("the 7 with") and a rate ("at 642.18") are not answers
    assert check("Keep the 7 expenses with the highest amount.", None, graded) == []
    assert check("Price it at 642.18 an hour.", None, graded) == []


# -- the generator ------------------------------------------------------------------------------
def _requests(n: int):
    """`n` composed tasks over every domain, scenario and persona (in process)."""
    cat = _catalog()
    doms = sorted(cat.domains)
    vocabs = {d: Vocabulary.of(cat, d) for d in doms}
    made, i = [], 0
    while len(made) < n:
        dom = doms[i % len(doms)]
        d = cat.domains[dom]
        i += 1
        try:
            c = compose(cat, dom, d.scenarios[i % len(d.scenarios)], d.personas[i % len(d.personas)], i, ROOT, "t")
        except ValueError:
            continue
        made.append((dom, c, vocabs[dom]))
    return made


def _assert_read_right(n: int) -> None:
    start = time.monotonic()
    made = _requests(n)
    bad = [(dom, str(h)) for dom, c, v in made for h in check_spec(c.spec, v)]
    assert not bad, f"{len(bad)} wording hits in {n} requests, e.g. {bad[:5]}"
    ops = {op for _, c, _ in made for op in c.chain}
    assert len(ops) >= 25, sorted(ops)  # the requests cover (nearly) every operation's phrasing
    assert len({c.spec["instruction"] for _, c, _ in made}) == n
    assert time.monotonic() - start < 60 * max(1, n // 300)


def test_composed_requests_read_right():
    _assert_read_right(300)


@pytest.mark.heavy  # 20 s or more on two cores; the default run reads 300 (above)
def test_two_thousand_composed_requests_read_right():
    _assert_read_right(2000)


_KEEP_OR_DROP = (
    r"(?:keep only|only need|only want|narrow it down to|work only with|leave out|drop|keep everything except|skip)"
)


def test_filters_name_the_records_kept_or_dropped_in_words():
    """Every filter reads "keep only the <records> <clause>" or "drop/leave out/skip the <records>
    <clause>": which records stay is never left to guess."""
    seen = 0
    for dom, c, _ in _requests(300):
        noun = _catalog().domains[dom].noun[1]
        for op in ("filter_equals", "exclude_value", "filter_in", "filter_threshold"):
            if op in c.chain:
                seen += 1
                said = rf"(?i)\b{_KEEP_OR_DROP} the {re.escape(noun)} (?:that|whose) "
                assert re.search(said, c.spec["instruction"]), (op, c.spec["instruction"])
    assert seen >= 30


def test_the_route_draws_again_when_a_request_reads_wrong(tmp_path, monkeypatch):
    cat = _catalog()
    fam = route.ComposeFamily("expenses", "analysis", "budget analysis", ("finance-analyst",), "csv", str(CATALOG))
    calls = []

    def strict_once(spec, vocab):
        calls.append(spec["instruction"])
        return [Hit("bare-name", "per claimed")] if len(calls) == 1 else []

    monkeypatch.setattr(route, "check_spec", strict_once)
    c = Candidate("persona", fam.name, "finance-analyst", 3, "analysis", "budget analysis")
    made = route.make_from_compose(
        c, fam, Region(), "train", tmp_path, "tasks", FilterSettings(trials=False), DedupSettings()
    )
    assert made.error is None, made.error
    assert made.meta["source"]["reworded"] == ["bare-name: 'per claimed'"]
    assert made.meta["source"]["try"] >= 1 and len(calls) == 2
    assert cat.domains["expenses"].noun[1] in made.text

    monkeypatch.setattr(route, "check_spec", lambda spec, vocab: [Hit("article", "a added")])
    made = route.make_from_compose(
        c, fam, Region(), "train", tmp_path, "tasks", FilterSettings(trials=False), DedupSettings()
    )
    assert made.error is not None and "drawn again for their wording, e.g. article: 'a added'" in made.error


# -- the story ----------------------------------------------------------------------------------
def _facts(
    kinds=("list",), uses=(), ops=(), persona="devops-engineer", values=None, selects=(), groups=(), shown=None
) -> Facts:
    shown = None if shown is None else set(shown)
    return Facts(set(kinds), set(uses), set(ops), persona, values or {}, set(selects), set(groups), shown)


def test_a_reason_fits_only_the_chains_it_serves():
    red = Reason("the main branch keeps going red", keeps={"result": "failed"}, some={"branch": "main"})
    failing_on_main = {"result": {"failed"}, "branch": {"main", "develop"}}
    assert fits(red, _facts(values=failing_on_main))
    assert not fits(red, _facts(values={"result": {"failed", "passed"}, "branch": {"main"}}))  # not only failures
    assert not fits(red, _facts(values={"result": {"failed"}, "branch": {"develop"}}))  # main's are not kept
    expiry = Reason("a certificate expired last month", ops=("derive_date",))
    assert fits(expiry, _facts(ops=("derive_date", "write_rows")))
    assert not fits(expiry, _facts(ops=("filter_equals", "write_rows")))
    budget = Reason("the trustees want the campaign totals", deliver=("total",), uses=("campaign",))
    assert fits(budget, _facts(kinds=("summary", "total"), uses=("campaign", "amount")))
    assert not fits(budget, _facts(kinds=("list",), uses=("campaign",)))
    kids = Reason("the kids complained it is always pasta", who=("family-organizer",))
    assert fits(kids, _facts(persona="family-organizer")) and not fits(kids, _facts(persona="retired-traveler"))
    slow = Reason("I'm deciding which slow tests to split up", uses=("duration_ms",))
    assert not fits(slow, _facts(kinds=("reconcile",), uses=("duration_ms",)))  # a reconciliation serves its own
    # "the ferry times changed" is about a chain that works on the transport, not any chain with a ferry in it
    ferry = Reason("the ferry times changed", some={"transport": "ferry"})
    stops = {"transport": {"ferry", "train"}}
    assert fits(ferry, _facts(uses=("transport",), values=stops))
    assert not fits(ferry, _facts(kinds=("summary", "total"), uses=("cost", "city"), values=stops))
    assert not fits(ferry, _facts(kinds=("reconcile",), uses=("transport",), values=stops))


def test_the_generated_story_fits_the_chain():
    """Over many composed CI tasks, "the main branch keeps going red" is only given when the chain
    kept failed builds, and each reason of the catalog is one the chain's facts fit."""
    cat = _catalog()
    dom = cat.domains["ci_builds"]
    red = 0
    for seed in range(160):
        try:
            c = compose(
                cat, "ci_builds", dom.scenarios[seed % 2], dom.personas[seed % len(dom.personas)], seed, ROOT, "t"
            )
        except ValueError:
            continue
        text = c.spec["instruction"]
        if "main branch keeps going red" in text:
            red += 1
            assert re.search(r"the builds (?:that failed|whose build result is failed)", text) or "failed" in text
            assert any(op in c.chain for op in ("filter_equals", "exclude_value", "filter_in")), c.chain
    assert red >= 1


def test_receiving_systems_fit_the_domain():
    """A column-renaming request names a system of the domain (a literature review's headers go to
    the reference manager, never to a payroll system)."""
    cat = _catalog()
    found = 0
    for seed in range(400):
        d = cat.domains["citations"]
        try:
            c = compose(cat, "citations", d.scenarios[seed % 3], d.personas[seed % 2], seed, ROOT, "t")
        except ValueError:
            continue
        m = re.search(r"they go into ([^:]+): use the headers", c.spec["instruction"])
        if m:
            found += 1
            assert m.group(1) in d.systems, m.group(1)
    assert found >= 3


def test_personas_and_their_facts_fit_the_domain():
    """Every domain's personas exist; reasons about people a persona may not have are theirs only."""
    cat = _catalog()
    people = {
        "kids": {"family-organizer"},
        "my sister": {"family-organizer"},
        "the CEO": {"executive-assistant"},
        "my supervisor": {"phd-student"},
        "thesis": {"phd-student"},
        "my editor": {"data-journalist"},
    }
    for dom in cat.domains.values():
        for persona in dom.personas:
            assert (ROOT / "personas" / f"{persona}.yaml").is_file(), (dom.name, persona)
        for r in dom.reasons:
            for words, allowed in people.items():
                if words in r.say:
                    who = set(r.who or dom.personas)
                    assert who <= allowed, (dom.name, r.say, who)
    assert set(cat.domains["meal_plan"].personas) == {"family-organizer"}  # "the kids" cook in its data
    assert "office-manager" not in cat.domains["mileage_log"].personas  # the trips are to wedding venues


def test_categories_say_what_a_composed_task_does():
    """No composed table task is filed under a category that promises code, and every category
    stays reachable by the compose route."""
    cat = _catalog()
    promises_code = {"bug fixing", "test writing", "feature implementation", "refactoring", "deployment scripts"}
    scenarios = {s for d in cat.domains.values() for s in d.scenarios}
    assert not {sub for _, sub in scenarios} & promises_code
    assert {c for c, _ in scenarios} == {"productivity", "systems", "analysis", "content", "planning", "software"}
    taxonomy = yaml.safe_load((ROOT / "specs" / "synth" / "taxonomy.yaml").read_text(encoding="utf-8"))
    for category, sub in scenarios:
        assert sub in taxonomy["categories"][category]["subcategories"], (category, sub)


# -- the catalog's words --------------------------------------------------------------------------
def test_the_lexicon_names_columns_by_the_catalog_and_the_chain():
    cat = _catalog()
    lex = Lexicon(
        cat, cat.domains["mileage_log"], [("derive_days", {"field": "date", "ref": "2026-05-01", "new": "age_days"})]
    )
    assert str(lex.said("miles")) == "distance in miles" and lex.said("miles").col == "miles"
    assert lex.said("claimed").which(["no"]) == "that have not been claimed yet"
    assert lex.said("vehicle").which(["own car", "hire car"]) == "whose vehicle is own car or hire car"
    assert str(lex.said("age_days")) == "number of days since the trip date"
    assert plural("payment method") == "payment methods" and plural("person who deployed") == "people who deployed"
    assert plural("category") == "categories" and plural("distance in miles") == "distances in miles"
    assert default_noun("claim_id", "id") == "claim ID" and default_noun("invoice", "id") == "invoice ID"


def test_the_catalog_words_are_checked_with_file_and_line(tmp_path):
    (tmp_path / "operations.yaml").write_text(
        (CATALOG / "operations.yaml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    (tmp_path / "domains.yaml").write_text(
        "apiVersion: clawgym/v1\nkind: ComposeDomains\nname: pets\ndomains:\n  pets:\n    noun: [pet, pets]\n"
        "    files: [pets]\n    folders: [data]\n    scenarios: [planning/household routines]\n"
        "    personas: [family-organizer]\n"
        "    reasons:\n      - {say: the vet asked, uses: [weight_kg]}\n      - {say: for the kids, who: [teacher]}\n"
        "    say:\n      colour: fur colour\n"
        "    rows: [8, 12]\n    key: pet_id\n"
        "    fields:\n      pet_id: {type: id, prefix: P}\n      name: {type: text, values: [Rex]}\n"
        "      vaccinated: {type: choice, values: ['yes', 'no'], names: [jabbed]}\n",
        encoding="utf-8",
    )
    load_catalog.cache_clear()
    with pytest.raises(SpecError) as err:
        load_catalog(str(tmp_path))
    text = "\n".join(p.format() for p in err.value.problems)
    assert "domains.yaml:12: domains.pets.reasons[0]: reason 1: weight_kg is not a column of the domain" in text
    assert "reason 2: who names personas the domain does not have (teacher)" in text
    assert "domains.pets.say.colour: say: 'colour' is not a field or derived column" in text
    assert "say: field 'vaccinated' holds yes/no values: give the clause each value states about a record" in text
    assert "a domain whose columns go by other names needs `systems`" in text
    load_catalog.cache_clear()


# -- what the outputs and the inputs are called -------------------------------------------------
def test_headings_and_check_names_use_the_catalog_words():
    """A report's heading (which the output must carry word for word) and the checks' names name
    each column by the catalog's phrase, never by its file name ("# Reimbursed breakdown")."""
    headings = 0
    for dom, c, vocab in _requests(300):
        for check_ in c.spec["checks"]:
            heading = check_.get("heading")
            if heading:
                headings += 1
                assert heading in c.spec["instruction"]
                assert check(f"Write it under a '# {heading}' heading.", vocab) == [], (dom, heading)
            name = str(check_.get("name") or "")
            assert not re.search(r"\b[a-z]+_[a-z_]+\b", name), (dom, name)  # no raw column names
    assert headings >= 20


def test_two_input_files_are_described_once_and_read_in_the_order_asked():
    """A request over an input split in two says the files' format once ("A and B (plain CSV
    exports)"), never names a program the domain does not use, and the merge step names the files in
    the order the reference reads them."""
    cat = _catalog()
    merged = 0
    for seed in range(900):
        dom = sorted(cat.domains)[seed % len(cat.domains)]
        d = cat.domains[dom]
        try:
            c = compose(
                cat, dom, d.scenarios[seed % len(d.scenarios)], d.personas[seed % len(d.personas)], seed, ROOT, "t"
            )
        except ValueError:
            continue
        text = c.spec["instruction"]
        assert "accounting tool writes" not in text
        if "merge_inputs" not in c.chain:
            continue
        merged += 1
        for said in ("decimal comma", "decimal mark", "one JSON object per line", "plain CSV export", "Markdown table"):
            assert text.count(said) <= 1, (said, text)
        m = re.search(
            r"split over two files, (\S+) and (\S+);|ombine (\S+) with (\S+) \(in that order\)|oth (\S+) and (\S+) count",
            text,
        )
        assert m is not None, text
        first, second = [g for g in m.groups() if g]
        code = c.spec["solution"][0]["python"]
        assert code.index(first) < code.index(second), (first, second)  # the order asked is the order read
    assert merged >= 15


def test_a_story_accounts_for_every_selection_and_grouping():
    """A reason with conditions names every column the chain selects rows by, its first `uses`
    column is worked on and a summary groups only by columns it uses; a plain sentence fits any chain."""
    audience = Reason("I want to see which episodes pulled the biggest audience", uses=("downloads_30d",))
    assert fits(audience, _facts(uses=("downloads_30d",)))
    assert not fits(audience, _facts(uses=("downloads_30d", "status"), selects={"status"}))  # kept: the unreleased
    sponsor = Reason("the sponsor report is due on Monday", uses=("sponsor", "downloads_30d"))
    assert not fits(sponsor, _facts(uses=("downloads_30d", "runtime_min")))  # nothing about sponsors
    assert fits(sponsor, _facts(uses=("sponsor", "downloads_30d"), groups={"sponsor"}))
    campaign = Reason("the trustees want the campaign totals", deliver=("total",), uses=("campaign",))
    assert not fits(campaign, _facts(kinds=("total",), uses=("campaign", "receipted"), groups={"receipted"}))
    cost = Reason("I want to know what the trip will cost before I book", uses=("cost",))
    assert fits(cost, _facts(uses=("cost",), shown=("cost", "city")))
    assert not fits(cost, _facts(uses=("cost", "city"), shown=("city",), selects={"cost"}))  # filtered, not shown
    books = Reason("I want to stop buying books I already own", deliver=("list",))
    assert fits(books, _facts()) and not fits(books, _facts(selects={"genre"}))
    assert fits(Reason("I'm tidying up before the audit"), _facts(selects={"genre"}))


def test_composed_messages_go_to_the_personas_own_contacts():
    cat = _catalog()
    sent = 0
    for name in ("chores", "donations", "podcast_episodes"):
        dom = cat.domains[name]
        for seed in range(60):
            persona = dom.personas[seed % len(dom.personas)]
            try:
                c = compose(cat, name, dom.scenarios[seed % len(dom.scenarios)], persona, seed, ROOT, "t")
            except ValueError:
                continue
            m = re.search(r"([A-Z][a-z]+ [A-Z][\w'-]+) <([^>]+@[^>]+)>", c.spec["instruction"])
            if m:
                sent += 1
                data = yaml.safe_load((ROOT / "personas" / f"{persona}.yaml").read_text(encoding="utf-8"))
                assert (m.group(1), m.group(2)) in {(p["name"], p["email"]) for p in data["contacts"]}, m.group(0)
    assert sent >= 3


def _composed(domain: str, seeds: int):
    """The tasks composed over `domain` (its first persona, scenarios in turn) for seeds 0..seeds-1."""
    cat = _catalog()
    dom = cat.domains[domain]
    for seed in range(seeds):
        try:
            yield compose(cat, dom.name, dom.scenarios[seed % len(dom.scenarios)], dom.personas[0], seed, ROOT, "t")
        except ValueError:
            continue


def test_a_summary_over_records_with_no_value_says_they_are_a_group():
    said = 0
    for c in _composed("podcast_episodes", 200):
        if 'make a group of their own, "none"' in c.spec["instruction"]:
            said += 1
            assert "none" in yaml.safe_dump(c.spec["checks"])  # the group the request names is the one graded
    assert said >= 1


def test_keys_numbered_in_varying_width_are_ordered_by_their_number():
    from types import SimpleNamespace

    from clawgym.synth.compose.delivered import ordered_by, sort_code

    rows = [{"stop": s} for s in ("L10", "L7", "L1", "L9")]
    state = SimpleNamespace(order=None, rows=rows, domain=SimpleNamespace(key="stop"), var="stops", it="s")
    assert [r["stop"] for r in ordered_by(state)] == ["L1", "L7", "L9", "L10"]
    stops = [dict(r) for r in rows]
    exec("\n".join(sort_code(state)), {"stops": stops})
    assert [r["stop"] for r in stops] == ["L1", "L7", "L9", "L10"]  # the reference sorts the same way
    state.rows = [{"stop": s} for s in ("B2", "A10", "A3")]  # two prefixes: text order, as before
    assert [r["stop"] for r in ordered_by(state)] == ["A10", "A3", "B2"]


def test_a_request_ordered_by_numbered_keys_says_it_is_by_their_number():
    """M1 ... M23 sorted as text put M10 before M2: the request that orders by such a key says so."""
    cat = _catalog()
    said = 0
    for dom in ("meal_plan", "grades", "chores"):
        d = cat.domains[dom]
        for seed in range(30):
            try:
                c = compose(cat, dom, d.scenarios[seed % len(d.scenarios)], d.personas[0], seed, ROOT, "t")
            except ValueError:
                continue
            m = re.search(r", by its number \((\w+) before (\w+)\)", c.spec["instruction"])
            said += bool(m)
            if m:
                assert int(re.sub(r"\D", "", m.group(1))) < int(re.sub(r"\D", "", m.group(2)))
                assert len(m.group(1)) < len(m.group(2))
    assert said >= 2


def test_content_scenarios_deliver_something_written_to_be_read():
    from clawgym.synth.compose.scenarios import Work, keeps

    csv_only = Work(frozenset({"dedupe", "write_rows"}), frozenset({"list"}), frozenset())
    page = Work(frozenset({"dedupe", "markdown_table"}), frozenset({"list"}), frozenset())
    for sub in ("newsletter assembly", "social media planning", "blog writing", "recipes and menus"):
        assert not keeps(sub, csv_only) and keeps(sub, page), sub
    listed = Work(frozenset({"filter_equals", "write_rows"}), frozenset({"list"}), frozenset())
    assert keeps("contact management", csv_only) and not keeps("contact management", listed)  # nothing kept right


def test_a_total_over_cancelled_records_says_they_count():
    """A figure summed over sign-ups some of which are cancelled or waitlisted says every one counts
    (whatever its status), unless the chain filters or groups by that status."""
    said = sum(
        "count every sign-up whatever its sign-up status" in c.spec["instruction"]
        for c in _composed("volunteer_signups", 80)
    )
    assert said >= 3
