"""The market generator: determinism, book sanity and the statistical properties promised."""

from __future__ import annotations

import dataclasses
import itertools
from typing import NamedTuple

import numpy as np
import pytest

from engine.bitget.checksum import book_checksum
from engine.bitget.orders import OrderSide
from engine.sim.contracts import sim_instruments
from engine.sim.frames import DepthPublisher, format_levels, trade_frame
from engine.sim.market import (
    InformedBurst,
    MarketGenerator,
    MarketGeneratorConfig,
    SimTrade,
    SymbolConfig,
    sim_market,
)

START_MS = 1_726_000_000_000


def render(generator: MarketGenerator, trades: list[SimTrade], push_ms: int) -> list[str]:
    frames = []
    for symbol in generator.symbols:
        book = generator.book(symbol)
        instrument = generator.instrument(symbol)
        publisher = DepthPublisher(symbol)
        publisher.publish(
            format_levels(book.bid_prices, book.bid_sizes, instrument),
            format_levels(book.ask_prices, book.ask_sizes, instrument),
            book.ts_ms,
        )
        frames.append(publisher.snapshot_frame("books15", push_ms))
        own = [trade for trade in trades if trade.symbol == symbol]
        frames.append(trade_frame(symbol, reversed(own), instrument, action="update", push_ms=0))
    return frames


def frames_for(seed: int, step_pattern: list[int]) -> list[str]:
    generator = MarketGenerator(MarketGeneratorConfig(seed=seed, start_ms=START_MS))
    frames: list[str] = []
    t = START_MS
    for step in step_pattern:
        t += step
        frames.extend(render(generator, generator.advance_to(t), t))
    return frames


def test_same_seed_gives_identical_frames() -> None:
    pattern = [150] * 40
    assert frames_for(11, pattern) == frames_for(11, pattern)


def test_different_seed_gives_different_frames() -> None:
    pattern = [150] * 40
    assert frames_for(11, pattern) != frames_for(12, pattern)


def test_market_does_not_depend_on_how_the_clock_is_advanced() -> None:
    one_call = MarketGenerator(MarketGeneratorConfig(seed=5, start_ms=START_MS))
    many_calls = MarketGenerator(MarketGeneratorConfig(seed=5, start_ms=START_MS))
    trades_at_once = one_call.advance_to(START_MS + 20_000)
    trades_in_pieces: list[SimTrade] = []
    for t in range(START_MS + 7, START_MS + 20_001, 37):
        trades_in_pieces.extend(many_calls.advance_to(t))
    trades_in_pieces.extend(many_calls.advance_to(START_MS + 20_000))
    assert trades_at_once == trades_in_pieces
    for symbol in one_call.symbols:
        a, b = one_call.book(symbol), many_calls.book(symbol)
        assert np.array_equal(a.bid_prices, b.bid_prices)
        assert np.array_equal(a.ask_sizes, b.ask_sizes)


def test_books_stay_sane_over_simulated_minutes() -> None:
    generator = MarketGenerator(
        MarketGeneratorConfig(seed=3, start_ms=START_MS, burst_rate_per_min=4)
    )
    trade_ids: dict[str, int] = {}
    for t in range(START_MS + 50, START_MS + 180_000, 50):
        for trade in generator.advance_to(t):
            assert trade.size > 0 and trade.price > 0
            assert trade.trade_id > trade_ids.get(trade.symbol, 0)
            trade_ids[trade.symbol] = trade.trade_id
        for symbol in generator.symbols:
            book = generator.book(symbol)
            instrument = generator.instrument(symbol)
            assert len(book.bid_prices) >= 50 and len(book.ask_prices) >= 50
            assert book.bid_prices[0] < book.ask_prices[0], "crossed book"
            assert np.all(np.diff(book.bid_prices) < 0) and np.all(np.diff(book.ask_prices) > 0)
            assert np.all(book.bid_sizes > 0) and np.all(book.ask_sizes > 0)
            for prices, step in (
                (book.bid_prices, instrument.tick_size),
                (book.ask_sizes, instrument.size_step),
            ):
                units = prices / step
                assert np.allclose(units, np.rint(units), rtol=0, atol=1e-6)
            spread_ticks = round((book.ask_prices[0] - book.bid_prices[0]) / instrument.tick_size)
            assert spread_ticks <= 40
    assert generator.bursts, "bursts at 4/min over 3 minutes must have happened"


def test_book_sizes_are_thin_at_the_touch_and_grow_with_depth() -> None:
    generator = MarketGenerator(
        MarketGeneratorConfig(seed=8, start_ms=START_MS, burst_rate_per_min=0)
    )
    touch, deep = [], []
    for t in range(START_MS + 1000, START_MS + 120_000, 1000):
        generator.advance_to(t)
        book = generator.book("BTCUSDT")
        touch.append(book.bid_sizes[:3].mean())
        deep.append(book.bid_sizes[40:50].mean())
    assert np.median(deep) > 2.5 * np.median(touch)


def test_spread_is_usually_one_to_a_few_ticks() -> None:
    generator = MarketGenerator(
        MarketGeneratorConfig(seed=9, start_ms=START_MS, burst_rate_per_min=0)
    )
    spreads = []
    for t in range(START_MS + 100, START_MS + 120_000, 100):
        generator.advance_to(t)
        book = generator.book("ETHUSDT")
        spreads.append(round((book.best_ask - book.best_bid) / 0.01))
    spreads_array = np.array(spreads)
    assert np.mean(spreads_array == 1) > 0.5
    assert np.mean(spreads_array <= 4) > 0.97


class Sample(NamedTuple):
    """A long run sampled every 100 ms (traded symbol unless named)."""

    ts_ms: np.ndarray
    log_mid: np.ndarray
    hedge_log_mid: np.ndarray
    depth_imbalance: np.ndarray
    """(bid - ask) / (bid + ask) over the top 5 levels."""
    near_bid: np.ndarray
    near_ask: np.ndarray
    """Displayed size within 15 ticks of the mid, per side."""
    signed_volume: np.ndarray
    """Aggressor-signed traded size in each 100 ms interval."""
    trades: list[SimTrade]
    bursts: list[InformedBurst]
    beta: float


SAMPLE_MS = 100
SPREAD_HALF_LIFE_S = 5.0
PER_SECOND = 1000 // SAMPLE_MS


@pytest.fixture(scope="module")
def long_run() -> Sample:
    config = MarketGeneratorConfig(
        seed=2024, start_ms=START_MS, burst_rate_per_min=2.0, spread_half_life_s=SPREAD_HALF_LIFE_S
    )
    generator = MarketGenerator(config)
    rows = []
    trades: list[SimTrade] = []
    for t in range(START_MS + SAMPLE_MS, START_MS + 15 * 60_000, SAMPLE_MS):
        new = [trade for trade in generator.advance_to(t) if trade.symbol == "BTCUSDT"]
        trades.extend(new)
        book = generator.book("BTCUSDT")
        hedge = generator.book("ETHUSDT")
        bid5, ask5 = book.bid_sizes[:5].sum(), book.ask_sizes[:5].sum()
        near = 15 * 0.1 + 1e-9
        rows.append(
            (
                t,
                np.log(book.mid),
                np.log(hedge.mid),
                (bid5 - ask5) / (bid5 + ask5),
                book.bid_sizes[book.mid - book.bid_prices <= near].sum(),
                book.ask_sizes[book.ask_prices - book.mid <= near].sum(),
                sum(trade.size * trade.side.sign for trade in new),
            )
        )
    columns = np.array(rows).T
    return Sample(
        columns[0].astype(np.int64), *columns[1:], trades, list(generator.bursts), config.hedge_beta
    )


def test_order_flow_imbalance_predicts_the_next_second(long_run: Sample) -> None:
    future = long_run.log_mid[PER_SECOND:] - long_run.log_mid[:-PER_SECOND]
    depth = long_run.depth_imbalance[:-PER_SECOND]
    flow = np.convolve(long_run.signed_volume, np.ones(PER_SECOND))[: len(long_run.signed_volume)]
    flow = flow[:-PER_SECOND]
    assert np.corrcoef(depth, future)[0, 1] > 0.1
    assert np.corrcoef(flow, future)[0, 1] > 0.15
    # The signal is about the future: shuffling it in time destroys it.
    shuffled = np.random.default_rng(0).permutation(depth)
    assert abs(np.corrcoef(shuffled, future)[0, 1]) < 0.05


def test_informed_bursts_precede_jumps(long_run: Sample) -> None:
    bursts = long_run.bursts
    assert len(bursts) >= 15
    one_second = long_run.log_mid[PER_SECOND:] - long_run.log_mid[:-PER_SECOND]
    sigma = np.median(np.abs(one_second)) / 0.6745  # robust: ignores the jumps themselves
    trade_ts = np.array([trade.ts_ms for trade in long_run.trades])
    trade_signed = np.array([trade.size * trade.side.sign for trade in long_run.trades])
    median_near = {
        OrderSide.BUY: np.median(long_run.near_bid),
        OrderSide.SELL: np.median(long_run.near_ask),
    }
    drained, jumped = 0, 0
    for burst in bursts:
        direction = burst.side.sign
        lead = (trade_ts >= burst.start_ms) & (trade_ts < burst.jump_start_ms)
        with_side = (trade_signed[lead] * direction).clip(min=0).sum()
        assert with_side > 0.8 * np.abs(trade_signed[lead]).sum(), burst
        before_jump = np.searchsorted(long_run.ts_ms, burst.jump_start_ms - SAMPLE_MS)
        hit_side = burst.side.opposite
        near = long_run.near_bid if hit_side is OrderSide.BUY else long_run.near_ask
        drained += near[before_jump] < 0.5 * median_near[hit_side]
        start = np.searchsorted(long_run.ts_ms, burst.start_ms) - 1
        after = np.searchsorted(long_run.ts_ms, burst.jump_start_ms + 1000)
        if after < len(long_run.log_mid):
            jumped += direction * (long_run.log_mid[after] - long_run.log_mid[start]) > 3 * sigma
    assert drained >= 0.8 * len(bursts)
    assert jumped >= 0.8 * len(bursts)
    # Conversely, 5-sigma one-second moves come from bursts.
    burst_starts = np.array([burst.start_ms for burst in bursts])
    big = np.flatnonzero(np.abs(one_second) > 5 * sigma)
    assert len(big) > 0
    explained = [
        np.any(
            (burst_starts <= long_run.ts_ms[i + PER_SECOND])
            & (burst_starts >= long_run.ts_ms[i] - 2000)
        )
        for i in big
    ]
    assert np.mean(explained) > 0.9


def test_hedge_is_cointegrated_with_the_traded_symbol(long_run: Sample) -> None:
    every_2s = 2 * PER_SECOND
    spread = (long_run.hedge_log_mid - long_run.beta * long_run.log_mid)[::every_2s]
    spread = spread - spread.mean()
    # Dickey-Fuller regression of the change on the level: far below the 1% critical value
    # (about -3.4), where a random walk would sit near zero.
    change, level = np.diff(spread), spread[:-1]
    slope = (level @ change) / (level @ level)
    residual = change - slope * level
    t_stat = slope / np.sqrt(residual.var() / (level @ level))
    assert t_stat < -4.0
    lag1 = np.corrcoef(spread[:-1], spread[1:])[0, 1]
    assert lag1 < 0.95
    half_life_s = -2.0 * np.log(2.0) / np.log(lag1)
    assert SPREAD_HALF_LIFE_S / 2 < half_life_s < SPREAD_HALF_LIFE_S * 3
    # Bounded: the spread varies far less than the traded price over the run, and its variance
    # does not grow from the first half to the second.
    traded = long_run.log_mid[::every_2s]
    assert spread.std() < 0.5 * (traded - traded.mean()).std()
    halves = np.array_split(spread, 2)
    assert halves[1].var() < 3 * halves[0].var() and halves[0].var() < 3 * halves[1].var()


def test_checksum_of_generated_book_matches_recomputation() -> None:
    generator = MarketGenerator(MarketGeneratorConfig(seed=4, start_ms=START_MS))
    generator.advance_to(START_MS + 2000)
    book = generator.book("BTCUSDT")
    instrument = generator.instrument("BTCUSDT")
    bids = format_levels(book.bid_prices, book.bid_sizes, instrument)
    asks = format_levels(book.ask_prices, book.ask_sizes, instrument)
    assert all(
        len(price.split(".")[1]) == 1 and len(size.split(".")[1]) == 3 for price, size in bids
    )
    publisher = DepthPublisher("BTCUSDT")
    delta = publisher.publish(bids, asks, book.ts_ms)
    assert delta is not None
    assert delta.checksum == book_checksum(bids, asks) != 0


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"step_ms": 0}, "step_ms"),
        ({"volatility_1s": -1.0}, "volatility_1s"),
        ({"burst_lead_ms": 5}, "burst_lead_ms"),
        ({"hedge_beta": float("nan")}, "hedge_beta"),
    ],
)
def test_invalid_generator_config_is_refused(changes: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MarketGeneratorConfig(**changes)  # type: ignore[arg-type]


def test_symbol_config_refuses_shallow_books_and_off_tick_prices() -> None:
    traded = MarketGeneratorConfig().traded
    with pytest.raises(ValueError, match="levels"):
        SymbolConfig(traded.instrument, 64000.0, 0.5, 0.02, levels=20)
    with pytest.raises(ValueError, match="tick"):
        SymbolConfig(traded.instrument, 64000.05, 0.5, 0.02)


@pytest.mark.parametrize("symbol", list(sim_instruments()))
def test_every_contract_of_the_table_generates_books_and_trades_on_its_grid(symbol: str) -> None:
    config = sim_market((symbol,), seed=4)
    generator = MarketGenerator(dataclasses.replace(config, start_ms=START_MS))
    assert generator.symbols[0] == symbol
    traded: dict[str, int] = {}
    for t in range(START_MS + 500, START_MS + 60_000, 500):
        for trade in generator.advance_to(t):
            instrument = generator.instrument(trade.symbol)
            assert instrument.is_on_tick(trade.price) and instrument.is_on_step(trade.size)
            traded[trade.symbol] = traded.get(trade.symbol, 0) + 1
        for shown in generator.symbols:
            book = generator.book(shown)
            instrument = generator.instrument(shown)
            assert book.best_bid < book.best_ask, "crossed book"
            for price in (*book.bid_prices, *book.ask_prices):
                assert instrument.is_on_tick(price), f"{shown} price {price} off its tick"
            for size in (*book.bid_sizes, *book.ask_sizes):
                assert instrument.is_on_step(size), f"{shown} size {size} off its lot"
    assert set(traded) == set(generator.symbols)
    start = config.traded.start_price
    assert abs(generator.book(symbol).mid / start - 1) < 0.05, "the price stays in its scale"


def test_a_large_tick_book_quotes_one_tick_over_deep_queues_and_moves_a_tick_at_a_time() -> None:
    config = sim_market(("ADAUSDT", "DOGEUSDT"), seed=5)
    generator = MarketGenerator(dataclasses.replace(config, start_ms=START_MS))
    tick = generator.instrument("ADAUSDT").tick_size
    assert tick / config.traded.start_price * 1e4 >= 3.0, "a tick of several bps"
    spreads, bids, touch = [], [], []
    for t in range(START_MS + 100, START_MS + 300_000, 100):
        generator.advance_to(t)
        book = generator.book("ADAUSDT", 1)
        spreads.append(round((book.best_ask - book.best_bid) / tick))
        bids.append(round(book.best_bid / tick))
        touch.append(book.bid_sizes[0])
    assert np.mean(np.array(spreads) == 1) > 0.9
    moves = np.diff(np.array(bids))
    moved = moves[moves != 0]
    assert len(moved) >= 10, "the price moves"
    assert np.mean(np.abs(moved) == 1) > 0.9
    # The touch moves once the fair price is well past it: few moves undone in the next second.
    at = np.flatnonzero(moves)
    undone = sum(1 for i, j in itertools.pairwise(at) if j - i <= 10 and moves[i] == -moves[j])
    assert undone / len(moved) < 0.35
    assert np.median(touch) > 20 * config.traded.median_trade_size, "deep queues"


def test_a_symbol_the_simulator_has_not_is_one_line_naming_those_it_has() -> None:
    with pytest.raises(ValueError) as refused:
        sim_market(("BTCUSDT", "NEXOUSDT"), seed=1)
    assert str(refused.value) == (
        "the simulator has no NEXOUSDT: it runs BTCUSDT, ETHUSDT, SOLUSDT, XRPUSDT, DOGEUSDT, "
        "ADAUSDT, TRXUSDT, LINKUSDT, AVAXUSDT, DOTUSDT"
    )


def test_one_symbol_alone_is_hedged_with_another_of_the_table() -> None:
    assert MarketGenerator(sim_market(("DOGEUSDT",), seed=1)).symbols == ("DOGEUSDT", "BTCUSDT")
    assert MarketGenerator(sim_market(("BTCUSDT",), seed=1)).symbols == ("BTCUSDT", "ETHUSDT")
