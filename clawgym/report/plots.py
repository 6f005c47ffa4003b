"""The HTML report's plots: SVG drawn by matplotlib (imported lazily), made safe to inline in the page.

Four plots: the reward distribution, mean reward per category with its 95% CI, tokens per trial and
model turns per trial, one colour per series (agent, or run · agent for several runs). This module
builds them from the report's data; the histograms are in `plot_histograms`, the category plot in
`plot_categories`, the figure they draw on in `plot_figure` and the SVG clean-up in `plot_svg`.

What the plots promise:
- Round ticks: 1, 2 or 5 × 10^k steps from matplotlib's `MaxNLocator`, integers on count axes; the top
  tick is at or above the largest bar, so a bar of 1 ends exactly on the "1" grid line.
- Zero is visible and is not "no data": a zero bar is a mark just outside the axis with its value label;
  a group without graded trials shows "no data".
- Labels fit: category names are wrapped under their bars, or, when they cannot be (many categories,
  long words), each category becomes a row with its name beside it; the full name is in the tooltip.
- Outliers do not flatten the rest: when the largest value is far beyond Tukey's far-out fence
  (Q3 + 3 IQR) of the others, the axis is cut after the last ordinary value, the outliers go to one
  hatched bar on the right, and the plot says so.

Record strings (agent, run and category names) never reach the SVG markup: category labels are drawn as
glyph outlines, names are only in the tooltips, which the page's code adds as text from its JSON data.
Only numbers and the plot modules' own words are SVG text. The markup has no style attributes or
elements (the page's Content-Security-Policy allows only its own styles): they become presentation
attributes.
"""

from __future__ import annotations

import warnings
from typing import Any, Mapping, Sequence

from .plot_categories import category_plot
from .plot_histograms import reward_plot, usage_plot
from .plot_scale import FONT

PALETTE = [
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#ff7f0e",
    "#9467bd",
    "#17becf",
    "#8c564b",
    "#e377c2",
    "#bcbd22",
    "#7f7f7f",
]  # matplotlib's tab10, blue and red first
PLOTS = ("reward", "category", "tokens", "turns")

_RC = {
    "svg.fonttype": "none",
    "svg.hashsalt": "clawgym-report",
    "font.size": FONT,
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Bitstream Vera Sans", "Verdana", "Arial", "Helvetica"],
    "axes.edgecolor": "#888888",
    "axes.labelcolor": "#333333",
    "xtick.color": "#555555",
    "ytick.color": "#555555",
    "axes.linewidth": 0.8,
    "hatch.linewidth": 0.8,
}


def build_plots(
    index: Mapping[str, Sequence[Any]],
    stats: Mapping[str, Sequence[Mapping[str, Any]]],
    runs: Sequence[str],
    category_labels: Mapping[str, str],
    has_trajectory: Sequence[bool],
) -> dict[str, Any]:
    """{"svg": {plot id: SVG element}, "tips": {element id: text}, "series": [{"name", "color"}]}.

    `index` has the report's columns (run, agent, cat, reward, tokens, turns); `stats` the summary rows
    per run. Tips and series names are record text: the page shows them only as text. Raises ImportError
    without matplotlib.
    """
    import matplotlib

    multi = len(runs) > 1
    names: list[str] = []
    pos: dict[str, int] = {}
    series: list[int] = []
    for run, agent in zip(index["run"], index["agent"]):
        name = f"{run} · {agent}" if multi else str(agent)
        if name not in pos:
            pos[name] = len(names)
            names.append(name)
        series.append(pos[name])
    colors = [PALETTE[i % len(PALETTE)] for i in range(len(names))]
    cats = sorted({str(row["category"]) for r in runs for row in stats.get(r, []) if row.get("category") != "all"})
    rows: dict[tuple[int, int], Mapping[str, Any]] = {}
    for r in runs:
        for row in stats.get(r, []):
            name = f"{r} · {row['agent']}" if multi else str(row["agent"])
            if row.get("category") == "all" or name not in pos:
                continue
            rows[(pos[name], cats.index(str(row["category"])))] = row
    with matplotlib.rc_context(_RC), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # glyphs missing from the font are drawn as boxes
        plots = [
            reward_plot(index["reward"], series, names, colors),
            category_plot(cats, [category_labels.get(c, c) for c in cats], rows, names, colors),
            usage_plot(
                "plot-tokens",
                "Tokens per trial",
                index["tokens"],
                has_trajectory,
                series,
                names,
                colors,
                "tokens",
                "tokens per trial (prompt + completion)",
            ),
            usage_plot(
                "plot-turns",
                "Model turns per trial",
                index["turns"],
                has_trajectory,
                series,
                names,
                colors,
                "turns",
                "model turns per trial",
            ),
        ]
        svgs = {p.name: p.svg() for p in plots}
    tips = {f"{p.name}-{gid}": text for p in plots for gid, text in p.tips.items()}
    return {"svg": svgs, "tips": tips, "series": [{"name": n, "color": c} for n, c in zip(names, colors)]}
