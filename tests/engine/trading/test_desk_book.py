"""TradingDesk with a book on the paper venue: quotes per symbol, EMERGENCY per symbol, and
one hedge on the book's beta-weighted net delta."""

from __future__ import annotations

import asyncio
import dataclasses
import time

import pytest
from market_frames import MarketScript
from support.waiting import eventually

from engine.bitget.orders import OrderSide, OrderType
from engine.book import OrderBook
from engine.journal import EntryKind, Journal, JournalConfig, read_journal
from engine.laya.decide import QuoteIntent
from engine.market.instruments import BTCUSDT, ETHUSDT, Instrument
from engine.pipeline import EventLog
from engine.risk.intents import DenialReason, OrderIntent, Source
from engine.risk.limits import RiskGatewayConfig, SymbolLimits
from engine.risk.overrides import RiskOverrides
from engine.trading.commands import Command, SetLimits
from engine.trading.config import (
    HedgeConfig,
    PaperVenueConfig,
    QuotingStrategyConfig,
    TradingConfig,
    TradingMode,
    default_risk_config,
)
from engine.trading.desk import TradingDesk
from engine.trading.events import HedgeCapChanged
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
    book = {
        "limits": dataclasses.replace(pair.limits, symbols=(*pair.limits.symbols, sol)),
        "bounds": dataclasses.replace(
            pair.bounds, max_position={**pair.bounds.max_position, "SOLUSDT": 20.0}
        ),
        "betas": {"SOLUSDT": 1.5},
        "max_mark_age_ms": 60_000,
    }
    return dataclasses.replace(pair, **{**book, **changes})


PACED_LIMITS = dataclasses.replace(book_risk().limits, orders_per_second=3)
HEDGE_CAPPED_LIMITS = dataclasses.replace(
    book_risk().limits,
    symbols=tuple(
        dataclasses.replace(limits, max_position=0.05) if limits.symbol == "ETHUSDT" else limits
        for limits in book_risk().limits.symbols
    ),
)
"""The hedge may hold 0.05 ETH either way: about half the delta of a fill on each bid."""
HEDGE_NOTIONAL_CAPPED_LIMITS = dataclasses.replace(
    book_risk().limits,
    symbols=tuple(
        dataclasses.replace(limits, max_notional=170.0) if limits.symbol == "ETHUSDT" else limits
        for limits in book_risk().limits.symbols
    ),
)
"""The hedge may hold 170 USDT of ETH either way: its max notional binds, not its position."""


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

    def __init__(self, tmp_path, **risk) -> None:
        self.config = book_config(tmp_path, risk=book_risk(**risk))
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

    async def until_quoted(self, *symbols: str, timeout_s: float = 3.0) -> None:
        """Books for `symbols`, as the feed sends them, until both sides of each rest (a
        quote waits for room in the order rate, then goes on a later book)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while any(len(self.resting(symbol)) < 2 for symbol in symbols):
            assert loop.time() < deadline, f"not quoted on both sides: {symbols}"
            for symbol in symbols:
                self.book(symbol)
            await asyncio.sleep(0.02)

    def resting(self, symbol):
        return sorted(
            (order.side.value, order.price, order.size)
            for order in self.venue.engines[symbol].open_orders()
        )


async def started(desk: BookDesk):
    desk.journal.start()
    await desk.desk.start()
    yield desk
    await desk.desk.stop()
    desk.journal.stop()


@pytest.fixture
async def book_desk(tmp_path):
    async for desk in started(BookDesk(tmp_path)):
        yield desk


@pytest.fixture
async def hedge_capped_desk(tmp_path):
    async for desk in started(BookDesk(tmp_path, limits=HEDGE_CAPPED_LIMITS)):
        yield desk


@pytest.fixture
async def hedge_notional_capped_desk(tmp_path):
    async for desk in started(BookDesk(tmp_path, limits=HEDGE_NOTIONAL_CAPPED_LIMITS)):
        yield desk


@pytest.fixture
async def paced_desk(tmp_path):
    """The book at 3 orders a second: its four quotes do not fit in one."""
    async for desk in started(BookDesk(tmp_path, limits=PACED_LIMITS)):
        yield desk


async def test_each_quoted_symbol_rests_its_own_quotes_and_the_hedge_none(book_desk):
    book_desk.book("ETHUSDT")
    await book_desk.until_quoted("SOLUSDT", "BTCUSDT")
    # SOL: microprice 150.01, 0.5 bps either side, one whole SOL each.
    assert book_desk.resting("SOLUSDT") == [
        ("buy", pytest.approx(150.0), 1.0),
        ("sell", pytest.approx(150.02), 1.0),
    ]
    assert book_desk.resting("ETHUSDT") == []
    assert set(book_desk.desk.status().cooldowns_ms) == {"BTCUSDT", "SOLUSDT"}


async def test_an_emergency_on_one_symbol_cools_down_that_symbol_alone(book_desk):
    book_desk.book("ETHUSDT")
    await book_desk.until_quoted("BTCUSDT", "SOLUSDT")
    book_desk.book("SOLUSDT", intent=QuoteIntent.CANCEL_ALL)
    # One cancel-all pulls every symbol's orders, the fastest way there is ...
    await eventually(lambda: not book_desk.resting("BTCUSDT"), 3.0)
    assert not book_desk.resting("SOLUSDT")
    cooldowns = book_desk.desk.status().cooldowns_ms
    assert cooldowns["SOLUSDT"] > 0 and cooldowns["BTCUSDT"] == 0
    # ... then BTC quotes again on its next book while SOL waits out its cooldown.
    await book_desk.until_quoted("BTCUSDT")
    book_desk.book("SOLUSDT")
    await asyncio.sleep(0.05)
    assert book_desk.resting("SOLUSDT") == []
    await asyncio.sleep(0.3)
    await book_desk.until_quoted("SOLUSDT")


async def test_the_hedge_emergency_cools_down_every_quoted_symbol(book_desk):
    book_desk.book("ETHUSDT")
    await book_desk.until_quoted("BTCUSDT")
    book_desk.book("ETHUSDT", intent=QuoteIntent.CANCEL_ALL)
    cooldowns = book_desk.desk.status().cooldowns_ms
    assert cooldowns["SOLUSDT"] > 0 and cooldowns["BTCUSDT"] > 0
    await eventually(lambda: not book_desk.resting("BTCUSDT"), 3.0)
    book_desk.quote_all()
    await asyncio.sleep(0.05)
    assert book_desk.resting("BTCUSDT") == [] and book_desk.resting("SOLUSDT") == []


async def test_the_hedge_offsets_the_books_beta_weighted_delta(book_desk):
    book_desk.book("ETHUSDT")
    await book_desk.until_quoted("BTCUSDT", "SOLUSDT")
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


@pytest.fixture
async def beta_banded_desk(tmp_path):
    """The book with SOLUSDT's beta (1.5) free to move within 0.8..1.2 of it: 1.2..1.8."""
    async for desk in started(BookDesk(tmp_path, beta_band=(0.8, 1.2))):
        yield desk


async def test_an_operator_beta_moves_what_the_hedge_offsets(beta_banded_desk):
    """The risk dialog's beta: the desk refuses one outside its range and changes nothing,
    applies one inside, and the hedge sells the book's delta at the new beta."""
    desk = beta_banded_desk
    gateway = desk.desk.gateway
    desk.book("ETHUSDT")
    await desk.until_quoted("BTCUSDT", "SOLUSDT")
    desk.book("BTCUSDT", bids=[(63_990.0, 0.5)], asks=[(63_996.0, 0.5)])
    desk.book("SOLUSDT", bids=[(149.90, 50.0)], asks=[(149.95, 50.0)])
    await eventually(lambda: gateway.position("ETHUSDT") == pytest.approx(-0.10), 3.0)
    refused = await desk.desk.execute(Command(SetLimits(RiskOverrides(betas={"SOLUSDT": 2.0}))))
    assert (refused.ok, refused.message) == (
        False,
        "SOLUSDT beta must be within [1.2, 1.8], got 2.0",
    )
    assert gateway.snapshot().betas["SOLUSDT"] == 1.5
    applied = await desk.desk.execute(Command(SetLimits(RiskOverrides(betas={"SOLUSDT": 1.8}))))
    assert (applied.ok, applied.message) == (True, "beta SOLUSDT 1.8")
    desk.journal.flush()
    journaled = read_journal(desk.journal.config.path, kinds=[EntryKind.OPERATOR_COMMAND])
    assert [entry.payload["betas"] for entry in journaled] == [{"SOLUSDT": 2.0}, {"SOLUSDT": 1.8}]
    # 128 USDT of BTC and 1.8 x 150 of SOL: 398 USDT, 58 more than the 0.10 ETH sold.
    assert gateway.book_delta() == pytest.approx(0.002 * 63_993.0 + 1.8 * 149.925)
    await eventually(lambda: gateway.position("ETHUSDT") < -0.10 - 1e-9, 3.0)
    assert abs(gateway.snapshot().net_delta) <= desk.config.hedge.deadband_usdt


async def test_the_hedge_at_its_cap_is_sized_to_it_and_said_once_each_way(hedge_capped_desk):
    desk = hedge_capped_desk
    gateway = desk.desk.gateway
    desk.book("ETHUSDT")
    await desk.until_quoted("BTCUSDT", "SOLUSDT")
    # A fill on each bid: the book's delta 353 USDT wants 0.10 ETH sold; the cap allows 0.05.
    desk.book("BTCUSDT", bids=[(63_990.0, 0.5)], asks=[(63_996.0, 0.5)])
    desk.book("SOLUSDT", bids=[(149.90, 50.0)], asks=[(149.95, 50.0)])
    await eventually(lambda: gateway.position("ETHUSDT") == pytest.approx(-0.05), 3.0)
    await asyncio.sleep(0.5)  # the hedge checks again, every 200 ms, at its cap

    def said() -> list[HedgeCapChanged]:
        return [e for _, e in desk.desk.events.since(-1)[0] if type(e) is HedgeCapChanged]

    assert gateway.snapshot().denial_counts[DenialReason.POSITION_LIMIT] == 0
    (capped,) = said()
    unhedged = gateway.book_delta() - 0.05 * 3_400.01
    assert (capped.capped, capped.position_cap) == (True, 0.05)
    desk.journal.flush()
    (journaled, *_) = [
        entry.payload
        for entry in read_journal(desk.journal.config.path, kinds=[EntryKind.STATE_CHANGE])
        if "hedge_capped" in entry.payload
    ]
    assert journaled == {
        "hedge_capped": True,
        "symbol": "ETHUSDT",
        "position_cap": 0.05,
        "unhedged_usdt": capped.unhedged,
    }
    assert capped.unhedged == pytest.approx(unhedged)
    assert capped.text == (
        f"ETHUSDT hedge at its cap 0.05 ETH: {unhedged:+,.0f} USDT of the book's net delta "
        "left unhedged"
    )
    # The operator raises the cap: the hedge takes the rest and says it hedges fully again.
    raised = await desk.desk.execute(Command(SetLimits(RiskOverrides({"ETHUSDT": 0.6}))))
    assert raised.ok, raised.message
    await eventually(lambda: gateway.position("ETHUSDT") == pytest.approx(-0.10), 3.0)
    await eventually(lambda: len(said()) == 2, 3.0)
    assert said()[1].text == (
        "ETHUSDT hedge back under its cap 0.6 ETH: hedging the book's net delta fully"
    )
    assert gateway.snapshot().denial_counts[DenialReason.POSITION_LIMIT] == 0


async def test_the_hedge_is_sized_to_the_gateways_notional_cap_at_its_own_mark(
    hedge_notional_capped_desk,
):
    """170 USDT of ETH at the gateway's mark 3400.01 is 0.049999 ETH: the hedge sells 0.04.
    Its book has moved a dollar down meanwhile (the gateway has not had that mark yet); sized
    there, 0.05 ETH would be 170.0005 USDT at the gate's mark: denied."""
    desk = hedge_notional_capped_desk
    gateway = desk.desk.gateway
    desk.book("ETHUSDT")
    await desk.until_quoted("BTCUSDT", "SOLUSDT")
    desk.books["ETHUSDT"].apply(desk.market.book("ETHUSDT", [(3_399.0, 20.0)], [(3_399.02, 20.0)]))
    # A fill on each bid: 353 USDT of book delta, beyond what the cap lets the hedge take.
    desk.book("BTCUSDT", bids=[(63_990.0, 0.5)], asks=[(63_996.0, 0.5)])
    desk.book("SOLUSDT", bids=[(149.90, 50.0)], asks=[(149.95, 50.0)])
    await eventually(lambda: gateway.position("ETHUSDT") == pytest.approx(-0.04), 3.0)
    denials = gateway.snapshot().denial_counts
    assert denials[DenialReason.NOTIONAL_LIMIT] == denials[DenialReason.POSITION_LIMIT] == 0


async def test_a_risk_scale_that_leaves_the_notional_cap_under_a_lot_says_so(tmp_path):
    """BTCUSDT may hold 100 USDT: 0.0015625 BTC at 64000.1, one lot to quote. At risk scale 0.5
    its quote (0.001) and max position (0.01) are still a lot or more, its cap is not."""
    limits = dataclasses.replace(
        book_risk().limits,
        symbols=tuple(
            dataclasses.replace(limits, max_notional=100.0)
            if limits.symbol == "BTCUSDT"
            else limits
            for limits in book_risk().limits.symbols
        ),
    )
    async for desk in started(BookDesk(tmp_path, limits=limits)):
        desk.quote_all()
        halved = await desk.desk.execute(Command(SetLimits(RiskOverrides(risk_scale=0.5))))
        assert halved.ok
        assert halved.message == (
            f"risk scale 0.5; the quote size 0.001 or the position cap {50 / 64_000.1:g} BTCUSDT "
            "is now under one lot (0.001): BTCUSDT is not quoted until it is raised"
        )


async def test_quotes_wait_for_room_in_the_books_net_delta_instead_of_being_denied(tmp_path):
    """A net delta limit of 300 USDT holds one bid (BTC's 128 USDT or SOL's 225 at beta 1.5)
    and one ask, not two: the other waits, undenied, until the operator raises the limit."""
    limits = dataclasses.replace(book_risk().limits, max_net_delta=300.0)
    async for desk in started(BookDesk(tmp_path, limits=limits)):
        gateway = desk.desk.gateway
        desk.book("ETHUSDT")

        def resting_sides(desk: BookDesk = desk) -> list[str]:
            desk.quote_all()  # the feed goes on
            resting = desk.resting("BTCUSDT") + desk.resting("SOLUSDT")
            return sorted(side for side, _, _ in resting)

        # Until the limit's one bid and one ask rest (however slow the machine), then books
        # enough for a second bid to have gone, had the limit let it.
        await eventually(lambda: len(resting_sides()) >= 2, 3.0, interval_s=0.02)
        for _ in range(10):
            assert resting_sides() == ["buy", "sell"]
            await asyncio.sleep(0.02)
        assert gateway.snapshot().denial_counts[DenialReason.NET_DELTA_LIMIT] == 0
        raised = await desk.desk.execute(Command(SetLimits(RiskOverrides(max_net_delta=1_000))))
        assert raised.ok, raised.message
        await desk.until_quoted("BTCUSDT", "SOLUSDT")
        assert gateway.snapshot().denial_counts[DenialReason.NET_DELTA_LIMIT] == 0


async def test_requotes_wait_for_room_in_the_order_rate_and_leave_the_hedge_one(paced_desk):
    """At 3 orders a second the two symbols' four quotes do not fit: the quotes take two (one
    is the hedge's), the rest go a second later, and nothing is denied for the rate."""
    desk = paced_desk
    desk.book("ETHUSDT")
    for _ in range(20):
        desk.book("BTCUSDT")
        desk.book("SOLUSDT")
        await asyncio.sleep(0.01)
    await asyncio.sleep(1.0)
    await desk.until_quoted("BTCUSDT", "SOLUSDT")
    # Counted on the gateway's own clock (the approvals' stamps), not by what rests when the
    # loop above ends: a busy machine can stretch those 20 books past the window.
    desk.journal.flush()
    approved = [
        entry.at_ns
        for entry in read_journal(desk.journal.config.path, kinds=[EntryKind.ORDER_APPROVED])
        if entry.payload["role"] in ("bid", "ask")
    ]
    first = min(approved)
    assert sum(at < first + 1_000_000_000 for at in approved) == 2
    denials = desk.desk.gateway.snapshot().denial_counts
    assert denials[DenialReason.ORDER_RATE] == denials[DenialReason.ENDPOINT_RATE] == 0


async def test_a_drifted_quote_rests_until_its_replacement_has_room(paced_desk):
    desk = paced_desk
    desk.book("ETHUSDT")
    await desk.until_quoted("BTCUSDT")  # two orders: the second's room is the hedge's
    before = desk.resting("BTCUSDT")
    moved = [(64_003.0, 0.5)], [(64_003.2, 0.5)]  # past the requote threshold
    for _ in range(5):
        desk.book("BTCUSDT", *moved)
        await asyncio.sleep(0.01)
    assert desk.resting("BTCUSDT") == before  # kept, not pulled with nothing to follow
    await asyncio.sleep(1.0)

    def requoted() -> bool:
        desk.book("BTCUSDT", *moved)  # the feed goes on
        bids = [price for side, price, _ in desk.resting("BTCUSDT") if side == "buy"]
        return bool(bids) and bids[0] > 63_999.0

    await eventually(requoted, 3.0, interval_s=0.02)


async def test_the_hedge_waits_for_room_in_the_order_rate_instead_of_being_denied(paced_desk):
    desk = paced_desk
    gateway = desk.desk.gateway
    desk.book("ETHUSDT")
    await desk.until_quoted("BTCUSDT")
    # The market trades through our bid; a third order (a quote of SOL's) takes the room
    # the quotes left, before the hedge looks.
    desk.book("BTCUSDT", [(63_990.0, 0.5)], [(63_996.0, 0.5)])
    sol = OrderIntent(
        "SOLUSDT", OrderSide.BUY, 0.1, 140.0, OrderType.LIMIT, "own1", Source.OPERATOR
    )
    desk.book("SOLUSDT")
    assert gateway.check(sol, time.time_ns()).approved
    await eventually(lambda: gateway.position("BTCUSDT") > 0, 3.0)
    hedged = lambda: gateway.position("ETHUSDT") < 0  # noqa: E731
    await asyncio.sleep(0.3)
    denials = gateway.snapshot().denial_counts
    assert denials[DenialReason.ORDER_RATE] == denials[DenialReason.ENDPOINT_RATE] == 0
    await eventually(hedged, 3.0)  # a second later there is room


def test_room_in_the_order_rate_keeps_the_spare_and_follows_each_window():
    from engine.risk.gateway import RiskGateway

    gateway = RiskGateway(book_risk(limits=PACED_LIMITS))
    gateway.on_mark("BTCUSDT", 64_000.1, 64_000.1, 64_000.0, 64_000.2, 1)
    second = 1_000_000_000
    for k in range(2):
        order = OrderIntent(
            "BTCUSDT", OrderSide.BUY, 0.001, 63_990.0, OrderType.LIMIT, f"q{k}", Source.STRATEGY
        )
        assert gateway.has_order_room(10 + k, spare=1)
        assert gateway.check(order, 10 + k).approved
    assert gateway.has_order_room(20) and not gateway.has_order_room(20, spare=1)
    assert not gateway.has_order_room(20, spare=5)  # a spare past the window is all but one
    assert gateway.has_order_room(10 + second, spare=1)


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
