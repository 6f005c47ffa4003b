"""The committed reference is exactly what the schemas generate, so docs cannot drift from code."""

from pathlib import Path

from clawgym.cli.docgen import reference_markdown

ROOT = Path(__file__).resolve().parents[1]


def test_reference_is_up_to_date():
    committed = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    assert committed == reference_markdown(), "run: clawgym docs --out docs/reference.md"


def test_reference_covers_every_field_and_plugin():
    text = reference_markdown()
    for needle in ("## Task", "## Persona", "## Skill", "## Workspace", "## Run", "`instruction`",
                   "### `csv_rows_equal`", "### `python`", "### `csv_ledger`", "### `oracle`", "### `local`"):
        assert needle in text
