import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from receipt_api.totals import extract_total  # noqa: E402


class TotalsTest(unittest.TestCase):
    def test_total(self):
        self.assertEqual(extract_total("Coffee 3.50\nTOTAL: $12.40\n"), 12.40)

    def test_last_total_wins(self):
        self.assertEqual(extract_total("Subtotal 10.00\nTotal 11.00\nGrand total 12,50\n"), 12.5)

    def test_none(self):
        self.assertIsNone(extract_total("no totals here"))


if __name__ == "__main__":
    unittest.main()
