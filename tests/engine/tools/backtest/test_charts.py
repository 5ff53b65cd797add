"""The terminal's charts: each figure's titles, axes and runs, colour only on a terminal without
NO_COLOR, two charts to a row on a wide one, and what a chart without data says."""

from __future__ import annotations

import dataclasses
import io
import re

import pytest
from test_metrics import record

from engine.tools.backtest.charts import (
    chart_size,
    figures_text,
    report_figures,
    run_figure,
    wants_colour,
)
from engine.tools.backtest.metrics import session_metrics
from engine.tools.backtest.report import RunGroup, run_groups

ESCAPE = re.compile(r"\x1b\[")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_each_figure_has_its_titles_axes_and_runs(compared_runs):
    text = figures_text(report_figures(run_groups(compared_runs, 3)), 100, 16, colour=False)
    assert text.startswith("compare on simulated.bitget.gz\n")
    for title in (
        "net PnL, marked to market at the mid, after fees (USDT)",
        "BTCUSDT position (BTC)",
        "BTCUSDT quotes' fills: mean markout (bps)",
        "BTCUSDT mid and our fills (USDT)",
    ):
        assert title in text
    assert "100 ms" in text and "30 s" in text and "time after the fill" in text
    assert re.search(r"market time \(UTC\) from \d{4}-\d\d-\d\d \d\d:\d\d:\d\d", text)
    for run in compared_runs:
        assert f"simulated.bitget.gz [{run.label}]" in text  # its mid and fills
        assert f"{run.label} ({run.net:+,.2f})" in text  # its equity line's legend
        buys = sum(f.side == "buy" for f in run.fills if f.symbol == run.quoted[0])
        assert f"our buys ({buys})" in text
    assert not ESCAPE.search(text)
    assert max(len(line) for line in text.splitlines()) <= 100


def test_a_books_figures_show_its_net_delta_and_each_runs_delta_before_and_after_the_hedge(
    compared_book_runs,
):
    text = figures_text(report_figures(run_groups(compared_book_runs, 3)), 100, 16, colour=False)
    assert "the book's net delta (USDT)" in text and " position (" not in text
    assert "the book's quotes' fills: mean markout (bps)" in text
    assert text.count("the book's delta (USDT)") == len(compared_book_runs)  # one a run
    assert "the quoted symbols" in text and "net, with the hedge BTCUSDT" in text


def test_colour_only_on_a_terminal_and_never_with_no_color(compared_runs):
    assert wants_colour(_Terminal(), environ={})
    assert not wants_colour(_Terminal(), environ={"NO_COLOR": "1"})
    assert not wants_colour(io.StringIO(), environ={})
    figures = report_figures(run_groups(compared_runs[:1], 1))
    assert ESCAPE.search(figures_text(figures, 100, 16, colour=True))


def test_a_wide_terminal_draws_two_charts_a_row(compared_runs):
    text = figures_text(report_figures(run_groups(compared_runs, 3)), 160, 16, colour=False)
    (row,) = [line for line in text.splitlines() if "net PnL" in line]
    assert "BTCUSDT position (BTC)" in row
    assert max(len(line) for line in text.splitlines()) <= 160


@pytest.mark.parametrize(
    ("terminal", "size"),
    [((80, 24), (80, 12)), ((40, 10), (60, 12)), ((300, 120), (200, 20)), ((150, 48), (150, 16))],
)
def test_the_charts_fit_the_terminal_within_bounds(terminal, size):
    assert chart_size(*terminal) == size


def test_a_session_without_fills_says_so_and_still_draws_the_mid():
    metrics = session_metrics(record([]))
    text = figures_text(report_figures([RunGroup((metrics,), False)]), 100, 14, colour=False)
    assert "BTCUSDT quotes' fills: mean markout (bps): no fills of the quotes" in text
    mid_chart = text[text.index("BTCUSDT mid and our fills (USDT)") :]
    assert "┌" in mid_chart and "mid" in mid_chart.split("\n")[2]  # drawn, with its legend
    assert "our buys" not in mid_chart  # no marks to show


def test_a_run_figure_is_named_for_a_file(compared_runs):
    label = "laya trading.strategy.half_spread_bps=2, risk.hedge_ratio_band=[0.6, 1.0]"
    figure = run_figure(3, dataclasses.replace(compared_runs[0], label=label))
    assert (
        figure.name == "run-3-laya-trading.strategy.half_spread_bps-2-risk.hedge_ratio_band-0.6-1.0"
    )
    assert figure.title == f"simulated.bitget.gz [{label}]"
