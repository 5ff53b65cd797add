"""`bench_reaction` and `bench_kill` on a small book of the simulator (two quoted symbols and
the hedge) beside the one-symbol book, in one run: what they measure and how they count, never
how fast (the figures are for a person to read on a quiet machine)."""

from __future__ import annotations

import socket

import pytest

from engine.bitget.orders import OrderSide
from engine.bitget.private_events import PositionEntry
from engine.tools.bench.trading import (
    BOOK_KILL_TARGET_P99_MS,
    BenchFailed,
    SimProcess,
    _kill_figures,
    _KillRun,
    bench_books,
    bench_kill,
    bench_reaction,
    format_kill,
    format_reaction,
    lane_p99_ratios,
    venue_holds,
)
from engine.trading.venue import VenueOrder, VenueSnapshot

ONE = ("ETHUSDT", "BTCUSDT")
BOOK = ("ETHUSDT", "SOLUSDT", "BTCUSDT")


def test_the_books_are_one_quoted_symbol_and_the_fast_path_benchs_book():
    assert bench_books(None) == {"one": ONE}
    assert bench_books(2) == {"one": ONE, "book": BOOK}


async def test_reaction_times_one_symbol_and_the_book_in_alternating_rounds(laya_model):
    lines: list[str] = []
    figures = await bench_reaction(
        bench_books(2), samples=3, runs=2, model=laya_model, report=lines.append
    )
    assert [book.symbols for book in figures.values()] == [ONE, BOOK]
    for book in figures.values():
        for path, item in (("lane", book.lane), ("client", book.client)):
            assert (item.path, item.samples) == (path, 6)
            assert len(item.run_p50_us) == len(item.run_p99_us) == 2
    assert [line.split(":")[0].split() for line in lines] == [
        ["run", str(run), quoted, "quoted", path]
        for run in (1, 2)
        for quoted in ("1", "2")
        for path in ("lane", "client")
    ]
    pooled, by_round = lane_p99_ratios(figures)
    assert pooled == figures["book"].lane.p99_us / figures["one"].lane.p99_us
    assert len(by_round) == 2
    table = format_reaction(figures)
    assert "1 quoted: ETHUSDT, hedge BTCUSDT; 2 quoted: ETHUSDT, SOLUSDT, hedge BTCUSDT" in table
    assert f"the book's lane p99 over one symbol's: x{pooled:.2f}" in table
    assert lane_p99_ratios({"one": figures["one"]}) is None


async def test_every_kill_starts_holding_every_symbol_and_ends_flat_on_each(laya_model):
    lines: list[str] = []
    figures = await bench_kill(
        bench_books(2), kill_runs=3, runs=2, model=laya_model, report=lines.append
    )
    for symbols, kill in zip((ONE, BOOK), figures.values(), strict=True):
        assert kill.symbols == symbols
        assert (kill.runs, kill.ok, kill.failures, len(kill.elapsed_ms)) == (3, 3, (), 3)
        # Each kill was pressed with a position on every symbol, the hedge included, and a
        # quote resting on every quoted one, as the venue reported them.
        assert kill.positions_at_kill == len(symbols)
        assert kill.quoted_at_kill == len(symbols) - 1
        assert kill.attempts_max >= 1
    # Two rounds of 2 and 1 kills, the books in turn.
    assert [line.split(":")[0].split() for line in lines] == [
        ["kill", number, quoted, "quoted"]
        for number, quoted in (
            ("1", "1"),
            ("2", "1"),
            ("1", "2"),
            ("2", "2"),
            ("3", "1"),
            ("3", "2"),
        )
    ]


def test_a_kill_not_confirmed_flat_is_counted_named_and_kept_in_the_figures():
    failure = "kill 2 (2 quoted): not confirmed flat; the venue still holds SOLUSDT +0.1 SOL"
    runs = [_KillRun(4.0, 1, 3, 2, None), _KillRun(10_000.0, 7, 3, 1, failure)]
    kill = _kill_figures(BOOK, runs)
    assert (kill.runs, kill.ok, kill.failures) == (2, 1, (failure,))
    assert (kill.max_ms, kill.p99_ms, kill.elapsed_ms) == (10_000.0, 10_000.0, (4.0, 10_000.0))
    assert (kill.positions_at_kill, kill.quoted_at_kill, kill.attempts_max) == (3, 1, 7)
    text = format_kill({"book": kill})
    assert "2 quoted: runs 2, confirmed flat 1," in text
    assert f"MISSES the target (p99 <= {BOOK_KILL_TARGET_P99_MS:g} ms" in text
    assert text.endswith(f"\n  {failure}")


def test_the_venue_holds_each_position_and_each_symbols_orders():
    orders = tuple(
        VenueOrder(symbol, str(number), f"hc{number}", OrderSide.BUY, 1.0, 1.0, 0.0, False)
        for number, symbol in enumerate(("XRPUSDT", "XRPUSDT", "ETHUSDT"))
    )
    positions = (
        PositionEntry("SOLUSDT", 0.1, 150.0, 150.0, 0.0),
        PositionEntry("BTCUSDT", -0.002, 64_000.0, 64_000.0, 0.0),
        PositionEntry("ETHUSDT", 0.0, 0.0, 3_400.0, 0.0),
    )
    snapshot = VenueSnapshot(orders, positions, 0, {})
    assert venue_holds(snapshot) == [
        "SOLUSDT +0.1 SOL",
        "BTCUSDT -0.002 BTC",
        "2 orders on XRPUSDT",
        "1 order on ETHUSDT",
    ]
    assert venue_holds(VenueSnapshot((), positions[2:], 0, {})) == []


async def test_an_exchange_that_cannot_start_fails_the_bench_in_one_line():
    with socket.socket() as taken:  # bound, not listening: the exchange cannot have its port
        taken.bind(("127.0.0.1", 0))
        sim = SimProcess(BOOK)
        sim.port = taken.getsockname()[1]
        with pytest.raises(BenchFailed, match=r"^the simulated exchange did not start$"):
            await sim.start()
