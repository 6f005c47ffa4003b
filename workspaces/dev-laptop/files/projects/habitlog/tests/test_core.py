import datetime as dt
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from habitlog.core import (Entry, LogError, average_session, current_streak, habits,  # noqa: E402
                           longest_streak, parse_log, select, totals, week_label, weekly_minutes)

D = dt.date

SAMPLE = """date,habit,minutes,note
# morning routine
2024-03-04,meditation,10,
2024-03-04,running,30,easy 5k

2024-03-05,meditation,15,
2024-03-06,meditation,20,long one
2024-03-08,running,45,
"""


class ParseTest(unittest.TestCase):
    def test_parses_and_sorts(self):
        entries = parse_log(SAMPLE)
        self.assertEqual(len(entries), 5)
        self.assertEqual(entries[0], Entry(D(2024, 3, 4), "meditation", 10, ""))
        self.assertEqual(entries[1].note, "easy 5k")

    def test_missing_column(self):
        with self.assertRaises(LogError):
            parse_log("date,habit\n2024-03-04,running\n")

    def test_bad_date(self):
        with self.assertRaises(LogError):
            parse_log("date,habit,minutes\n2024-13-04,running,10\n")

    def test_negative_minutes(self):
        with self.assertRaises(LogError):
            parse_log("date,habit,minutes\n2024-03-04,running,-5\n")

    def test_empty(self):
        self.assertEqual(parse_log("# nothing yet\n\n"), [])


class StatsTest(unittest.TestCase):
    def setUp(self):
        self.entries = parse_log(SAMPLE)

    def test_habits(self):
        self.assertEqual(habits(self.entries), ["meditation", "running"])

    def test_totals(self):
        self.assertEqual(totals(self.entries), {"meditation": {"sessions": 3, "minutes": 45},
                                                "running": {"sessions": 2, "minutes": 75}})

    def test_select(self):
        self.assertEqual(len(select(self.entries, "running")), 2)
        self.assertEqual(len(select(self.entries, None)), 5)

    def test_average(self):
        self.assertEqual(average_session(self.entries, "running"), 37.5)
        self.assertEqual(average_session(self.entries, "yoga"), 0.0)

    def test_longest_streak(self):
        self.assertEqual(longest_streak(self.entries, "meditation"), 3)
        self.assertEqual(longest_streak(self.entries, "running"), 1)
        self.assertEqual(longest_streak(self.entries, "yoga"), 0)

    def test_current_streak_logged_today(self):
        self.assertEqual(current_streak(self.entries, "meditation", D(2024, 3, 6)), 3)
        self.assertEqual(current_streak(self.entries, "running", D(2024, 3, 8)), 1)

    def test_current_streak_broken(self):
        self.assertEqual(current_streak(self.entries, "meditation", D(2024, 3, 10)), 0)

    def test_week_label(self):
        self.assertEqual(week_label(D(2024, 3, 4)), "2024-W10")
        self.assertEqual(week_label(D(2024, 3, 10)), "2024-W10")

    def test_weekly_minutes(self):
        self.assertEqual(weekly_minutes(self.entries), {"2024-W10": 120})
        self.assertEqual(weekly_minutes(self.entries, "running"), {"2024-W10": 75})


if __name__ == "__main__":
    unittest.main()
