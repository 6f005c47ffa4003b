"""The committed reference is exactly what the schemas generate, so docs cannot drift from code."""

from pathlib import Path

from clawgym.cli.docgen import reference_markdown

ROOT = Path(__file__).resolve().parents[2]


def test_reference_is_up_to_date():
    committed = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    assert committed == reference_markdown(), "run: clawgym docs --out docs/reference.md"


def test_reference_covers_every_field_and_plugin():
    text = reference_markdown()
    for needle in (
        "## Task",
        "## Persona",
        "## Skill",
        "## Workspace",
        "## Run",
        "`instruction`",
        "### `csv_rows_equal`",
        "### `python`",
        "### `csv_ledger`",
        "### `oracle`",
        "### `local`",
    ):
        assert needle in text


def test_every_generator_shows_the_data_rows_it_produces():
    """Each generator's section has an example of `data.<name>` and of the file, made by running it."""
    import json
    import re

    from clawgym.generators import GENERATORS

    text = reference_markdown()
    for name in GENERATORS:
        section = text.split(f"### `{name}`", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
        assert f"Example (`generate: {{type: {name}" in section, name
        example = re.search(r"```json\n(.*?)\n```", section, re.S)
        assert example and json.loads(example.group(1)), name
    table = text.split("### `csv_table`", 1)[1]
    rows = json.loads(re.search(r"```json\n(.*?)\n```", table, re.S).group(1))
    assert len(rows) == 2 and {"id", "name", "email"} <= set(rows[0])
