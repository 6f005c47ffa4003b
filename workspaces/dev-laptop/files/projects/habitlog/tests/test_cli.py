import contextlib
import io
import os
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from habitlog.cli import main  # noqa: E402

LOG = """date,habit,minutes
2024-03-04,meditation,10
2024-03-04,running,30
2024-03-05,meditation,15
"""


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


class CliTest(unittest.TestCase):
    def setUp(self):
        fd, self.path = tempfile.mkstemp(suffix=".csv")
        with os.fdopen(fd, "w") as fh:
            fh.write(LOG)

    def tearDown(self):
        os.unlink(self.path)

    def test_summary(self):
        code, out, _ = run("summary", self.path)
        self.assertEqual(code, 0)
        lines = out.splitlines()
        self.assertTrue(lines[0].startswith("habit"))
        self.assertIn("meditation", lines[1])
        self.assertEqual(lines[1].split(), ["meditation", "2", "25", "12.5"])
        self.assertEqual(lines[-1].split(), ["total", "3", "55"])

    def test_summary_one_habit(self):
        code, out, _ = run("summary", self.path, "--habit", "Running")
        self.assertEqual(code, 0)
        self.assertEqual(out.splitlines()[1].split(), ["running", "1", "30", "30.0"])

    def test_streaks(self):
        code, out, _ = run("streaks", self.path, "--today", "2024-03-05")
        self.assertEqual(code, 0)
        self.assertEqual(out.splitlines()[1].split(), ["meditation", "2", "2"])

    def test_weekly(self):
        code, out, _ = run("weekly", self.path)
        self.assertEqual(code, 0)
        self.assertEqual(out.split(), ["2024-W10", "55"])

    def test_missing_file(self):
        code, _, err = run("summary", self.path + ".nope")
        self.assertEqual(code, 1)
        self.assertIn("habitlog: error:", err)

    def test_bad_today(self):
        code, _, _ = run("streaks", self.path, "--today", "tomorrow")
        self.assertEqual(code, 2)


if __name__ == "__main__":
    unittest.main()
