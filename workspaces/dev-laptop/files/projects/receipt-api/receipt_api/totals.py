"""Pull the grand total out of OCR'd receipt text."""

import re

_TOTAL = re.compile(r"(?im)^\s*(?:grand\s+)?total\s*[:=]?\s*\$?\s*([0-9]+(?:[.,][0-9]{2})?)\s*$")


def extract_total(text: str) -> float | None:
    """The last 'Total' line's amount, or None."""
    found = _TOTAL.findall(text)
    if not found:
        return None
    return float(found[-1].replace(",", "."))
