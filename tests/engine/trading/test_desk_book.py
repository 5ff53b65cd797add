"""TradingDesk with a book on the paper venue: quotes per symbol, EMERGENCY per symbol, and
one hedge on the book's beta-weighted net delta."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from market_frames import MarketScript
from support.waiting import eventually

from engine.book import OrderBook
from engine.journal import Journal, JournalConfig
from engine.laya.decide import QuoteIntent
from engine.market.instruments import BTCUSDT, ETHUSDT, Instrument
from engine.pipeline import EventLog
from engine.risk.limits import RiskGatewayConfig, SymbolLimits
from engine.trading.config import (
    HedgeConfig,
    PaperVenueConfig,
    QuotingStrategyConfig,
    TradingConfig,
    TradingMode,
    default_risk_config,
)
from engine.trading.desk import TradingDesk
from engine.trading.paper_venue import PaperVenue

KEEP = QuoteIntent.KEEP_QUOTING
SOLUSDT = Instrument("SOLUSDT", tick_size=0.01, size_step=0.1)
MARKETS = {
    "BTCUSDT": ([(64_000.0, 0.5)], [(64_000.2, 0.5)]),
    "SOLUSDT": ([(150.00, 50.0)], [(150.02, 50.0)]),
    "ETHUSDT": ([(3_400.00, 20.0)], [(3_400.02, 20.0)]),
}


def book_risk(**changes) -> RiskGatewayConfig:
    """The default pair's limits with SOLUSDT added, at a beta of 1.5 to the book."""
    pair = default_risk_config()
    sol = SymbolLimits("SOLUSDT", max_position=10.0, max_notional=2_000, max_order_size=5.0)
    return dataclasses.replace(
        pair,
        limits=dataclasses.replace(pair.limits, symbols=(*pair.limits.symbols, sol)),
        bounds=dataclasses.replace(
            pair.bounds, max_position={**pair.bounds.max_position, "SOLUSDT": 20.0}
        ),
        **{"betas": {"SOLUSDT": 1.5}, "max_mark_age_ms": 60_000, **changes},
    )


def book_config(tmp_path, **changes) -> TradingConfig:
    config = TradingConfig(
        mode=TradingMode.PAPER,
        strategies=(
            QuotingStrategyConfig("BTCUSDT", quote_size=0.002, emergency_cooldown_ms=300),
            QuotingStrategyConfig("SOLUSDT", quote_size=1.0, emergency_cooldown_ms=300),
        ),
        hedge=HedgeConfig("ETHUSDT"),
        risk=book_risk(),
        paper=PaperVenueConfig(round_trip_ms=1.0, reaction_us=0.0),
        instruments=(BTCUSDT, SOLUSDT, ETHUSDT),
        journal_path=tmp_path / "journal.sqlite",
    )
    return dataclasses.replace(config, **changes)


class BookDesk:
    """A desk quoting BTCUSDT and SOLUSDT (beta 1.5) and hedging on ETHUSDT, on paper."""

    def __init__(self, tmp_path) -> None:
        self.config = book_config(tmp_path)
        self.journal = Journal(JournalConfig(self.config.resolved_journal_path()))
        self.venue = PaperVenue(self.config.paper, self.config.instruments)
        self.books = {symbol: OrderBook(symbol) for symbol in MARKETS}
        self.market = MarketScript(tuple(MARKETS))
        self.desk = TradingDesk(self.config, self.venue, self.journal, EventLog(10_000), self.books)

    def book(self, symbol, bids=None, asks=None, intent=KEEP):
        default_bids, default_asks = MARKETS[symbol]
        snapshot = self.market.book(symbol, bids or default_bids, asks or default_asks)
        self.books[symbol].apply(snapshot)
        self.desk.on_book(snapshot, intent)

    def quote_all(self) -> None:
        for symbol in MARKETS:
            self.book(symbol)

    def resting(self, symbol):
        return sorted(
            (order.side.value, order.price, order.size)
            for order in self.venue.engines[symbol].open_orders()
        )


@pytest.fixture
async def book_desk(tmp_path):
    desk = BookDesk(tmp_path)
    desk.journal.start()
    await desk.desk.start()
    yield desk
    await desk.desk.stop()
    desk.journal.stop()


async def test_each_quoted_symbol_rests_its_own_quotes_and_the_hedge_none(book_desk):
    book_desk.quote_all()
    await eventually(lambda: len(book_desk.resting("SOLUSDT")) == 2, 3.0)
    await eventually(lambda: len(book_desk.resting("BTCUSDT")) == 2, 3.0)
    # SOL: microprice 150.01, 0.5 bps either side, one whole SOL each.
    assert book_desk.resting("SOLUSDT") == [
        ("buy", pytest.approx(150.0), 1.0),
        ("sell", pytest.approx(150.02), 1.0),
    ]
    assert book_desk.resting("ETHUSDT") == []
    assert set(book_desk.desk.status().cooldowns_ms) == {"BTCUSDT", "SOLUSDT"}


async def test_an_emergency_on_one_symbol_cools_down_that_symbol_alone(book_desk):
    book_desk.quote_all()
    await eventually(lambda: len(book_desk.resting("BTCUSDT")) == 2, 3.0)
    await eventually(lambda: len(book_desk.resting("SOLUSDT")) == 2, 3.0)
    book_desk.book("SOLUSDT", intent=QuoteIntent.CANCEL_ALL)
    # One cancel-all pulls every symbol's orders, the fastest way there is ...
    await eventually(lambda: not book_desk.resting("BTCUSDT"), 3.0)
    assert not book_desk.resting("SOLUSDT")
    cooldowns = book_desk.desk.status().cooldowns_ms
    assert cooldowns["SOLUSDT"] > 0 and cooldowns["BTCUSDT"] == 0
    # ... then BTC quotes again on its next book while SOL waits out its cooldown.
    book_desk.quote_all()
    await eventually(lambda: len(book_desk.resting("BTCUSDT")) == 2, 3.0)
    await asyncio.sleep(0.05)
    assert book_desk.resting("SOLUSDT") == []
    await asyncio.sleep(0.3)
    book_desk.book("SOLUSDT")
    await eventually(lambda: len(book_desk.resting("SOLUSDT")) == 2, 3.0)


async def test_the_hedge_emergency_cools_down_every_quoted_symbol(book_desk):
    book_desk.quote_all()
    await eventually(lambda: len(book_desk.resting("BTCUSDT")) == 2, 3.0)
    book_desk.book("ETHUSDT", intent=QuoteIntent.CANCEL_ALL)
    cooldowns = book_desk.desk.status().cooldowns_ms
    assert cooldowns["SOLUSDT"] > 0 and cooldowns["BTCUSDT"] > 0
    await eventually(lambda: not book_desk.resting("BTCUSDT"), 3.0)
    book_desk.quote_all()
    await asyncio.sleep(0.05)
    assert book_desk.resting("BTCUSDT") == [] and book_desk.resting("SOLUSDT") == []


async def test_the_hedge_offsets_the_books_beta_weighted_delta(book_desk):
    book_desk.quote_all()
    await eventually(lambda: len(book_desk.resting("BTCUSDT")) == 2, 3.0)
    await eventually(lambda: len(book_desk.resting("SOLUSDT")) == 2, 3.0)
    # The market trades through both bids: long 0.002 BTC (128 USDT) and 1 SOL (150 USDT,
    # counted 1.5 times: 225). The book's delta 353 USDT is sold in ETH: 353 / 3400 -> 0.10.
    book_desk.book("BTCUSDT", bids=[(63_990.0, 0.5)], asks=[(63_996.0, 0.5)])
    book_desk.book("SOLUSDT", bids=[(149.90, 50.0)], asks=[(149.95, 50.0)])
    gateway = book_desk.desk.gateway

    def positions():
        return {p.symbol: p.size for p in gateway.snapshot().positions}

    await eventually(lambda: positions()["ETHUSDT"] == pytest.approx(-0.10), 3.0)
    assert positions()["BTCUSDT"] == pytest.approx(0.002)
    assert positions()["SOLUSDT"] == pytest.approx(1.0)
    risk = gateway.snapshot()
    assert abs(risk.net_delta) <= book_desk.config.hedge.deadband_usdt
    book_delta = gateway.book_delta()
    assert book_delta == pytest.approx(0.002 * 63_993.0 + 1.5 * 1.0 * 149.925)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"strategies": (QuotingStrategyConfig("BTCUSDT"), QuotingStrategyConfig("BTCUSDT"))},
            "BTCUSDT is quoted twice",
        ),
        (
            {"strategies": (QuotingStrategyConfig("BTCUSDT"), QuotingStrategyConfig("ETHUSDT"))},
            "ETHUSDT is the hedge and cannot also be quoted",
        ),
        ({"strategies": ()}, "must quote at least one symbol"),
        (
            {"strategies": (QuotingStrategyConfig("DOGEUSDT"),)},
            "DOGEUSDT has no risk limits",
        ),
    ],
)
def test_a_book_that_is_not_one_is_refused_in_one_line(tmp_path, changes, message):
    with pytest.raises(ValueError, match=message) as excinfo:
        book_config(tmp_path, **changes)
    assert "\n" not in str(excinfo.value)


@pytest.mark.parametrize(
    ("betas", "message"),
    [
        ({"ETHUSDT": 1.2}, "a beta for ETHUSDT, which is not a quoted symbol"),
        ({"XRPUSDT": 1.2}, "a beta for XRPUSDT, which is not a quoted symbol"),
        ({"SOLUSDT": 0.0}, r"SOLUSDT beta must be within \(0, 10\]"),
        ({"SOLUSDT": float("nan")}, "SOLUSDT beta must be within"),
    ],
)
def test_a_beta_for_no_quoted_symbol_or_out_of_range_is_refused(betas, message):
    with pytest.raises(ValueError, match=message):
        book_risk(betas=betas)


def test_the_book_delta_is_unknown_while_a_position_has_no_mark():
    from engine.risk.gateway import RiskGateway

    gateway = RiskGateway(book_risk())
    assert gateway.book_delta() == 0.0
    gateway.on_position_sync("SOLUSDT", 2.0, 150.0, 1)
    assert gateway.book_delta() is None  # SOL's mid is not known yet
    gateway.on_mark("SOLUSDT", 150.01, 150.01, 150.0, 150.02, 2)
    assert gateway.book_delta() == pytest.approx(1.5 * 2.0 * 150.01)
