"""One figure of the report's plots: the matplotlib figure and axes at the report's size, its tooltips
(element id -> text) and notes, axes with round ticks, value labels that fit their bar, and its SVG."""

from __future__ import annotations

import io
from typing import Any, Sequence

from .plot_scale import FONT, fmt_ticks, text_width, wrap
from .plot_svg import inline_svg

AX_W, AX_H = 340.0, 140.0  # the plotting area in points (= SVG units, about CSS pixels in the page)
LEFT, RIGHT, TOP, BOTTOM = 50.0, 14.0, 26.0, 48.0
SMALL = 8.0  # value labels and notes
ZERO_MARK = 3.0  # height in points of the mark a zero bar gets under the baseline


class Plot:
    """One figure with its tooltips (element id -> text) and notes."""

    def __init__(self, name: str, title: str, *, ax_h: float = AX_H, grid: str = "y") -> None:
        from matplotlib.figure import Figure

        self.name, self.title, self.ax_h = name, title, ax_h
        w, h = LEFT + AX_W + RIGHT, TOP + ax_h + BOTTOM
        self.fig = Figure(figsize=(w / 72, h / 72), dpi=72)
        self.ax = self.fig.add_axes((LEFT / w, BOTTOM / h, AX_W / w, ax_h / h))
        self.ax.spines[["top", "right"]].set_visible(False)
        self.ax.set_axisbelow(True)
        self.ax.grid(axis=grid, color="#e4e4e4", linewidth=0.8)
        self.tips: dict[str, str] = {}
        self.notes: list[str] = []
        self.label_room = 0.0  # points the tallest value label needs above its bar

    def tip(self, artist: Any, gid: str, text: str) -> None:
        artist.set_gid(gid)
        self.tips[gid] = text

    def y_axis(self, ticks: Sequence[float], label: str, headroom: float = 0.14) -> None:
        from matplotlib.ticker import FixedFormatter, FixedLocator

        top = ticks[-1]
        self.ax.set_ylim(0, top * (1 + headroom))
        self.ax.yaxis.set_major_locator(FixedLocator(list(ticks)))
        self.ax.yaxis.set_major_formatter(FixedFormatter(fmt_ticks(ticks)))
        self.ax.set_ylabel(label)
        self.ax.spines["left"].set_bounds(0, top)

    def x_ticks(self, ticks: Sequence[float]) -> None:
        from matplotlib.ticker import FixedFormatter, FixedLocator

        self.ax.xaxis.set_major_locator(FixedLocator(list(ticks)))
        self.ax.xaxis.set_major_formatter(FixedFormatter(fmt_ticks(ticks)))

    def points_to_y(self, points: float) -> float:
        lo, hi = self.ax.get_ylim()
        return points / self.ax_h * (hi - lo)

    def value_label(self, x: float, y: float, text: str, bar_width_pt: float, gid: str) -> None:
        """`text` above (x, y): horizontal if it fits over the bar, else turned upright."""
        width = text_width(text, SMALL)
        upright = width > bar_width_pt + 3
        self.label_room = max(self.label_room, (width if upright else SMALL * 1.25) + 3)
        self.ax.annotate(
            text,
            (x, y),
            xytext=(0, 2),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=SMALL,
            color="#333333",
            rotation=90 if upright else 0,
            gid=gid,
            annotation_clip=False,
        )

    def message(self, text: str) -> None:
        """A message in the middle of an empty plot."""
        self.ax.text(
            0.5,
            0.5,
            text,
            transform=self.ax.transAxes,
            ha="center",
            va="center",
            color="#777777",
            fontsize=FONT + 1,
            gid="empty",
        )

    def finish(self) -> None:
        if self.notes:
            lines = wrap("; ".join(self.notes), AX_W, SMALL, max_lines=4) or ["; ".join(self.notes)]
            self.ax.text(
                0,
                1.0,
                "\n".join(lines),
                transform=self.ax.transAxes,
                ha="left",
                va="bottom",
                fontsize=SMALL,
                color="#555555",
                gid="note",
                linespacing=1.25,
            )

    def svg(self) -> str:
        from matplotlib.backends.backend_svg import FigureCanvasSVG

        self.finish()
        FigureCanvasSVG(self.fig)
        buf = io.StringIO()
        self.fig.savefig(
            buf,
            format="svg",
            bbox_inches="tight",
            pad_inches=0.04,
            metadata={"Creator": None, "Date": None, "Format": None, "Type": None},
        )
        return inline_svg(buf.getvalue(), self.name, self.title)
