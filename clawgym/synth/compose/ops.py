"""The registry of the atomic row operations of compositional synthesis, by name, and the groups a
chain draws them from. The operations live by kind: the cleaning steps in cleaning.py, filters in
filtering.py, enrichments in enriching.py, selections in selecting.py; each computes, adds its
fragment of the reference solution, and fills its phrasings (operations.yaml) with its words.

Every operation works on a `State`: rows as the input reads back (strings), the columns and their
types. `plan` draws the parameters from the seed (None where the operation does not apply),
`prepare` may alter the clean rows before they are written (the duplicates a de-duplication needs,
the odd dates a repair needs), `apply` computes, and `code` gives the reference solution's lines
over the rows variable (`s.var`, one row is `s.it`). The expected outputs therefore come from
running the same pipeline the reference solution spells out.
"""

from __future__ import annotations

from .cleaning import Dedupe, DropInvalid, MergeInputs, Normalise, RepairAmounts, RepairDates
from .enriching import (
    Bucket,
    CompareFields,
    DeriveDate,
    DeriveDays,
    DeriveProduct,
    Formula,
    Join,
    Month,
    RunningTotal,
    Weekday,
)
from .filtering import ExcludeValue, FilterDates, FilterEquals, FilterIn, FilterText, FilterThreshold
from .selecting import RankTop, TopPerGroup
from .state import Op


OPERATIONS: dict[str, Op] = {
    op.name: op
    for op in (
        MergeInputs(),
        Normalise(),
        Dedupe(),
        RepairDates(),
        RepairAmounts(),
        DropInvalid(),
        FilterEquals(),
        ExcludeValue(),
        FilterIn(),
        FilterThreshold(),
        FilterDates(),
        FilterText(),
        Join(),
        DeriveProduct(),
        Formula(),
        DeriveDays(),
        DeriveDate(),
        Month(),
        Weekday(),
        Bucket(),
        CompareFields(),
        RunningTotal(),
        RankTop(),
        TopPerGroup(),
    )
}
CLEANING = ("dedupe", "drop_invalid", "normalise", "repair_dates", "repair_amounts")  # the order they apply in
FILTERS = ("filter_equals", "exclude_value", "filter_in", "filter_threshold", "filter_dates", "filter_text")
ENRICHING = (
    "formula",
    "formula",
    "derive_product",
    "derive_days",
    "derive_date",
    "month",
    "weekday",
    "bucket",
    "compare_fields",
)
SELECTING = ("rank_top", "top_per_group", "running_total")
