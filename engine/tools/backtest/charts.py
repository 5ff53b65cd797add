"""A backtest's charts: what each one shows (`Figure`, `Chart`), drawn for the terminal here
with plotext, and as PNG for the HTML report with matplotlib (html_report.py).

For each group of runs (the gates compared on one recording, or one recording's runs): the net
PnL with what is open marked to the mid and the quoted symbol's position over the session, a
line per run, and the markout curve of the quotes' fills (the mean at each horizon). For each
run: the quoted symbol's mid with our buys and sells on it. A book of several quoted symbols
shows its net delta instead of a position, and for each run its delta before and after the
hedge. Time is market time, in UTC.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

import numpy as np
import plotext as plt

from engine.tools.backtest.metrics import HORIZONS_MS, SessionMetrics
from engine.tools.backtest.report import RunGroup, horizon_label

LINES_AT_MOST = 8
"""A chart of a bigger group shows its runs with the best net PnL."""
PALETTE = (
    ("blue", "#1f77b4"),
    ("orange", "#ff7f0e"),
    ("magenta", "#9467bd"),
    ("cyan", "#17becf"),
    ("yellow", "#bcbd22"),
    ("gray", "#7f7f7f"),
    ("red", "#d62728"),
    ("green", "#2ca02c"),
)
"""A run's colour, the same in the terminal (plotext's name) and in the PNGs."""
BUY_COLOUR = ("green", "#2ca02c")
SELL_COLOUR = ("red", "#d62728")
MID_COLOUR = ("gray", "#555555")
_PLAIN_MARKERS = ("braille", "•", "+", "x", "*", "o", "#", "=")
"""Without colour, lines tell apart by their marker."""
_TICK_STEPS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600)
_SIDE_BY_SIDE_WIDTH = 140
"""From this many columns, a figure's charts are drawn two to a row."""


@dataclass(frozen=True, slots=True, eq=False)
class Series:
    label: str
    x: np.ndarray
    """Market epoch ns on a time chart, else the index of the x label."""
    y: np.ndarray
    kind: str = "line"
    """'line', 'step' (a level held until the next point), 'buy' or 'sell' (fills: marks)."""
    colour: tuple[str, str] = PALETTE[0]

    def finite(self) -> Series:
        keep = np.isfinite(self.y)
        return Series(self.label, self.x[keep], self.y[keep], self.kind, self.colour)


@dataclass(frozen=True, slots=True, eq=False)
class Chart:
    title: str
    unit: str
    """Of the y axis."""
    series: tuple[Series, ...]
    x_labels: tuple[str, ...] = ()
    """Named x positions (0, 1, ...) instead of market time."""
    x_title: str = "market time (UTC)"
    zero_line: bool = False
    empty: str = "nothing to draw"
    """Said instead of the chart when no series has a point."""

    @property
    def time_axis(self) -> bool:
        return not self.x_labels

    def drawable(self) -> tuple[Series, ...]:
        return tuple(finite for finite in (s.finite() for s in self.series) if len(finite.y))


@dataclass(frozen=True, slots=True, eq=False)
class Figure:
    name: str
    """A file name's stem."""
    title: str
    charts: tuple[Chart, ...]


def report_figures(groups: Sequence[RunGroup]) -> list[Figure]:
    """One figure for each group, in order, then one for each run."""
    figures = [group_figure(number, group) for number, group in enumerate(groups, 1)]
    runs = [run for group in groups for run in group.runs]
    return figures + [run_figure(number, run) for number, run in enumerate(runs, 1)]


def group_figure(number: int, group: RunGroup) -> Figure:
    runs = list(group.runs)
    note = ""
    if len(runs) > LINES_AT_MOST:
        runs = sorted(runs, key=lambda run: run.net, reverse=True)[:LINES_AT_MOST]
        note = f" (the best {LINES_AT_MOST} of {len(group.runs)} by net PnL)"
    first = runs[0]
    colours = [PALETTE[index % len(PALETTE)] for index in range(len(runs))]
    equity = Chart(
        f"net PnL, marked to market at the mid, after fees{note}",
        _quote_coin(first),
        tuple(
            Series(
                f"{run.label} ({run.net:+,.2f})", run.series.at_ns, run.series.equity, colour=colour
            )
            for run, colour in zip(runs, colours, strict=True)
        ),
        zero_line=True,
    )
    if first.is_book:
        position = Chart(
            "the book's net delta",
            _quote_coin(first),
            tuple(
                Series(run.label, run.series.at_ns, run.series.net_delta, "step", colour)
                for run, colour in zip(runs, colours, strict=True)
            ),
            zero_line=True,
        )
        quotes = "the book's"
    else:
        quotes = first.quoted[0]
        position = Chart(
            f"{quotes} position",
            first.result(quotes).base_coin if first.symbols else "",
            tuple(
                Series(run.label, run.series.at_ns, run.series.position, "step", colour)
                for run, colour in zip(runs, colours, strict=True)
            ),
            zero_line=True,
        )
    markouts = Chart(
        f"{quotes} quotes' fills: mean markout",
        "bps",
        tuple(
            Series(
                f"{run.label} ({run.quote_fill_markouts[0].count:,} quote fills)",
                np.arange(len(HORIZONS_MS)),
                np.asarray([stats.mean_bps for stats in run.quote_fill_markouts]),
                colour=colour,
            )
            for run, colour in zip(runs, colours, strict=True)
        ),
        x_labels=tuple(horizon_label(horizon) for horizon in HORIZONS_MS),
        x_title="time after the fill",
        zero_line=True,
        empty="no fills of the quotes",
    )
    return Figure(f"overview-{number}", group.title, (equity, position, markouts))


def run_figure(number: int, run: SessionMetrics) -> Figure:
    chart = _delta_chart(run) if run.is_book else _fills_chart(run)
    slug = re.sub(r"[^A-Za-z0-9._]+", "-", run.label).strip("-")[:80]
    return Figure(f"run-{number}-{slug}", f"{Path(run.recording).name} [{run.label}]", (chart,))


def _delta_chart(run: SessionMetrics) -> Chart:
    """A book's delta before the hedge and, hedged, after it."""
    series = [Series("the quoted symbols", run.series.at_ns, run.series.book_delta, "step")]
    if run.hedge is not None:
        series.append(
            Series(
                f"net, with the hedge {run.hedge}",
                run.series.at_ns,
                run.series.net_delta,
                "step",
                PALETTE[1],
            )
        )
    return Chart("the book's delta", _quote_coin(run), tuple(series), zero_line=True)


def _fills_chart(run: SessionMetrics) -> Chart:
    quoted = run.quoted[0]
    fills = [fill for fill in run.fills if fill.symbol == quoted]
    marks = []
    for side, colour in (("buy", BUY_COLOUR), ("sell", SELL_COLOUR)):
        mine = [fill for fill in fills if fill.side == side]
        marks.append(
            Series(
                f"our {side}s ({len(mine):,})",
                np.asarray([fill.at_ns for fill in mine], np.int64),
                np.asarray([fill.price for fill in mine], float),
                side,
                colour,
            )
        )
    return Chart(
        f"{quoted} mid and our fills",
        _quote_coin(run),
        (Series("mid", run.series.at_ns, run.series.mid, colour=MID_COLOUR), *marks),
        empty="no books of the quoted symbol",
    )


def _quote_coin(run: SessionMetrics) -> str:
    return run.symbols[0].quote_coin if run.symbols else "USDT"


def time_text(at_ns: int) -> str:
    return f"{datetime.fromtimestamp(at_ns / 1e9, UTC):%Y-%m-%d %H:%M:%S}"


def wants_colour(stream: TextIO, environ: Mapping[str, str] = os.environ) -> bool:
    """Colour on a terminal only, and never with NO_COLOR set (no-color.org)."""
    return stream.isatty() and not environ.get("NO_COLOR")


def chart_size(columns: int, lines: int) -> tuple[int, int]:
    """A chart's width and height in a terminal of `columns` x `lines`."""
    return min(max(columns, 60), 200), min(max(lines // 3, 12), 20)


def figures_text(figures: Sequence[Figure], width: int, height: int, colour: bool) -> str:
    """Each figure's title and its charts, two to a row from `_SIDE_BY_SIDE_WIDTH` columns."""
    paired = width >= _SIDE_BY_SIDE_WIDTH
    half = (width - 2) // 2
    blocks = []
    for figure in figures:
        rows = [figure.title]
        charts = list(figure.charts)
        while charts:
            if paired and len(charts) > 1:
                left, right = (chart_text(chart, half, height, colour) for chart in charts[:2])
                rows.append(_side_by_side(left, right, half))
                charts = charts[2:]
            else:
                chart = charts.pop(0)
                # A lone markout curve has four points: half the width shows them as well.
                wide = half if paired and not chart.time_axis else width
                rows.append(chart_text(chart, wide, height, colour))
        blocks.append("\n".join(rows))
    return "\n\n".join(blocks)


def chart_text(chart: Chart, width: int, height: int, colour: bool) -> str:
    drawable = chart.drawable()
    title = f"{chart.title} ({chart.unit})" if chart.unit else chart.title
    if not drawable:
        return f"{title}: {chart.empty}"
    plt.clear_figure()
    plt.theme("clear")  # the terminal's own foreground and background
    plt.plotsize(width, height)
    plt.title(title)
    origin_ns = min(int(series.x.min()) for series in drawable) if chart.time_axis else 0
    for index, series in enumerate(drawable):
        x = (series.x - origin_ns) / 1e9 if chart.time_axis else series.x
        if series.kind in ("buy", "sell"):
            marker = "▲" if series.kind == "buy" else "▼"
            plt.scatter(x, series.y, marker=marker, color=series.colour[0], label=series.label)
        else:
            marker = "braille" if colour else _PLAIN_MARKERS[index % len(_PLAIN_MARKERS)]
            plt.plot(x, series.y, marker=marker, color=series.colour[0], label=series.label)
    if chart.zero_line:
        plt.hline(0.0, "gray")
    if chart.time_axis:
        end_ns = max(int(series.x.max()) for series in drawable)
        ticks = _time_ticks(origin_ns, end_ns, max(2, width // 16))
        plt.xticks([(at - origin_ns) / 1e9 for at, _ in ticks], [label for _, label in ticks])
        plt.xlabel(f"{chart.x_title} from {time_text(origin_ns)}")
    else:
        plt.xticks(list(range(len(chart.x_labels))), list(chart.x_labels))
        plt.xlabel(chart.x_title)
    text = plt.build()
    plt.clear_figure()
    if not colour:
        text = plt.uncolorize(text)
    return "\n".join(line.rstrip() for line in text.splitlines())


def _time_ticks(start_ns: int, end_ns: int, at_most: int) -> list[tuple[int, str]]:
    """Round times of day between the two, at most `at_most` of them: (epoch ns, label)."""
    span_s = max(1.0, (end_ns - start_ns) / 1e9)
    step = next((step for step in _TICK_STEPS_S if span_s / step <= at_most), None)
    if step is None:
        step = math.ceil(span_s / at_most / 86_400) * 86_400
    first = math.ceil(start_ns / 1e9 / step) * step
    form = "%H:%M:%S" if step < 60 else "%H:%M"
    return [
        (int(second * 1_000_000_000), f"{datetime.fromtimestamp(second, UTC):{form}}")
        for second in range(first, int(end_ns // 1_000_000_000) + 1, step)
    ]


def _side_by_side(left: str, right: str, width: int) -> str:
    """Two drawn charts in one block; ANSI colour codes take no columns."""
    left_lines, right_lines = left.split("\n"), right.split("\n")
    rows = max(len(left_lines), len(right_lines))
    left_lines += [""] * (rows - len(left_lines))
    right_lines += [""] * (rows - len(right_lines))
    return "\n".join(
        (line + " " * (width - _visible_length(line)) + "  " + other).rstrip()
        for line, other in zip(left_lines, right_lines, strict=True)
    )


def _visible_length(line: str) -> int:
    return len(re.sub(r"\x1b\[[0-9;]*m", "", line))
