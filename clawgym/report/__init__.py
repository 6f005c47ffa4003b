"""Report: the terminal summary (`summary.py`), statistics with bootstrap CIs (`stats.py`) and
the static HTML report (`html.py`).
"""

from ..moved import forwarder

# `clawgym.report` was one module until 0.2; its names still resolve here, with a warning
__getattr__ = forwarder(
    __name__,
    "clawgym.report.summary",
    [
        "agent_name",
        "category_label",
        "compare_rows",
        "compare_table",
        "fmt_ci",
        "plain",
        "print_summary",
        "row_ks",
        "run_labels",
        "summarize",
        "summary_table",
    ],
)
