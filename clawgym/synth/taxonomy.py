"""The scenario taxonomy: category → subcategory, with descriptions and example intents."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import Problem, SpecError, did_you_mean
from ..spec.load import load_file
from ..spec.validate import validate_document


@dataclass(frozen=True)
class Scenario:
    category: str
    subcategory: str
    description: str
    intents: tuple[str, ...]


@dataclass(frozen=True)
class Taxonomy:
    path: str
    scenarios: tuple[Scenario, ...]

    @property
    def categories(self) -> list[str]:
        return list(dict.fromkeys(s.category for s in self.scenarios))

    def subcategories(self, category: str) -> list[str]:
        return [s.subcategory for s in self.scenarios if s.category == category]

    def scenario(self, category: str, subcategory: str) -> Scenario | None:
        for s in self.scenarios:
            if s.category == category and s.subcategory == subcategory:
                return s
        return None

    def subcategory_problems(self, category: str, subcategory: str, where: dict) -> list[Problem]:
        if self.scenario(category, subcategory):
            return []
        known = self.subcategories(category)
        return [
            Problem(
                f"subcategory {subcategory!r} is not in the taxonomy for category {category!r}",
                **where,
                hint=did_you_mean(subcategory, known) or f"use one of: {', '.join(known)} (or add it to {self.path})",
            )
        ]


def load_taxonomy(path: str | Path) -> Taxonomy:
    doc = load_file(path)
    problems = validate_document(doc, expected_kind="Taxonomy")
    if problems:
        raise SpecError(problems)
    scenarios = []
    for category, body in doc.data["categories"].items():
        for sub, info in body["subcategories"].items():
            scenarios.append(Scenario(category, sub, info.get("description", ""), tuple(info.get("intents", []))))
    return Taxonomy(str(path), tuple(scenarios))
