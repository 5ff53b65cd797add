"""A book's report and comparison: each quoted symbol's figures and the book's, on a simulated
book of three quoted symbols hedged on their leader, and on the shared recording's pair quoted
together without a hedge."""

from __future__ import annotations

import pytest
from support.book_backtest import BOOK_QUOTED, book_spec
from support.recordings import shared_spot

from engine.laya.decide import QuoteGate
from engine.tools.backtest.plan import run_specs
from engine.tools.backtest.report import compare_json, compare_text, metrics_json, session_text


def test_a_book_is_reported_per_quoted_symbol_and_as_a_whole(compared_book_runs):
    """Every quoted symbol quotes: the book's quote fills, markouts and resting time are all of
    theirs, each has its own line, and the book's net is the paper account's."""
    run = next(run for run in compared_book_runs if run.label == QuoteGate.NONE.value)
    assert (run.quoted, run.hedge) == (BOOK_QUOTED, "BTCUSDT")
    makers = {symbol: run.result(symbol).maker_fills for symbol in BOOK_QUOTED}
    assert all(makers.values()), makers  # each quoted symbol's quotes traded
    assert run.quote_fills == sum(makers.values())
    assert run.quote_fill_markouts[0].count == sum(
        quoting.quote_fill_markouts[0].count for quoting in run.quoting
    )
    assert [quoting.symbol for quoting in run.quoting] == list(BOOK_QUOTED)
    for side in ("bid", "ask"):
        sides = [quoting.uptime[side] for quoting in run.quoting]
        assert run.uptime[side] == pytest.approx(sum(sides) / len(sides))
    assert run.net == pytest.approx(sum(result.net for result in run.symbols))
    text = session_text(run)
    assert "BTCUSDT (hedge)" in text and "the book's quotes' fills" in text
    assert "quotes resting (the mean of the 3 quoted symbols)" in text
    table = text.partition("quoted symbol  ")[2].split("\n\n")[0].splitlines()[1:]
    assert [line.split()[0] for line in table] == list(BOOK_QUOTED)
    for line, symbol in zip(table, BOOK_QUOTED, strict=True):
        assert line.split()[1] == f"{run.result(symbol).net:+,.2f}"
        assert line.split()[3] == f"{makers[symbol]:,}"


def test_a_books_comparison_is_per_quoted_symbol_and_for_the_book(compared_book_runs):
    """Each gate against no gate's on each quoted symbol (its net, its quotes' fills), and
    on the book (the nets summed with the hedge's, every quoted symbol's quote fills)."""
    shown = compare_json(compared_book_runs)
    ungated = next(run for run in compared_book_runs if run.label == QuoteGate.NONE.value)
    for gate, run in zip(shown["gates"], compared_book_runs, strict=True):
        assert gate["net"] == pytest.approx(run.net)
        assert gate["quote_fills"] == sum(run.result(s).maker_fills for s in BOOK_QUOTED)
    assert [item["symbol"] for item in shown["symbols"]] == list(BOOK_QUOTED)
    for item in shown["symbols"]:
        symbol = item["symbol"]
        for gate, run in zip(item["gates"], compared_book_runs, strict=True):
            assert gate["gate"] == run.label
            assert gate["net"] == pytest.approx(run.result(symbol).net)
            assert gate["quote_fills"] == run.result(symbol).maker_fills
            base = ungated.result(symbol).maker_fills
            lost = None if run is ungated else (base - gate["quote_fills"]) / base
            assert gate["quote_fills_lost"] == lost
    text = compare_text(compared_book_runs)
    assert "quote fills: the quoted symbols' maker fills" in text
    rows = text.partition("per quoted symbol: ")[2].splitlines()[2:]
    assert [row.split()[:2] for row in rows] == [
        [symbol, run.label] for symbol in BOOK_QUOTED for run in compared_book_runs
    ]


def test_a_book_without_a_hedge_names_its_leader_and_has_no_net_of_the_hedge(simulated_book):
    (run,) = run_specs(
        [book_spec(simulated_book, BOOK_QUOTED, None, QuoteGate.NONE, leader="BTCUSDT")], 1
    )
    assert run.hedge is None and run.result("BTCUSDT").fills == 0  # watched, not traded
    assert run.quote_fills == run.fill_count > 0  # every fill a quote's
    assert (run.series.net_delta == run.series.book_delta).all()
    text = session_text(run)
    assert "BTCUSDT (leader)" in text and "the quoted symbols, not hedged" in text
    assert "with the hedge" not in text and "hedge fills" not in text
    assert metrics_json(run)["hedge"] is None


def test_the_shared_recordings_pair_quoted_together_is_a_book_of_two():
    """The shared recordings hold BTCUSDT and ETHUSDT: a book there is both quoted, unhedged,
    ETHUSDT's cross features reading BTCUSDT's (the last symbol leads)."""
    spec = book_spec(shared_spot(), ("ETHUSDT", "BTCUSDT"), None, QuoteGate.NONE)
    (run,) = run_specs([spec], 1)
    assert run.quoted == ("ETHUSDT", "BTCUSDT") and run.hedge is None
    makers = [run.result(symbol).maker_fills for symbol in run.quoted]
    assert all(makers) and run.quote_fills == sum(makers)
    assert run.net == pytest.approx(sum(result.net for result in run.symbols))
    text = session_text(run)
    assert "quotes resting (the mean of the 2 quoted symbols)" in text
    assert "(hedge)" not in text and "(leader)" not in text
