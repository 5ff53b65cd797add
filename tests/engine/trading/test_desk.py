"""TradingDesk on the paper venue: quoting, Laya's intents, the hedge and the commands."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from market_frames import MarketScript
from support.waiting import eventually

from engine.bitget.orders import OrderSide
from engine.book import OrderBook
from engine.journal import EntryKind, Journal, JournalConfig, read_journal
from engine.laya.decide import QuoteIntent
from engine.pipeline import EventLog
from engine.risk.commands import KevAction
from engine.risk.events import TradingState
from engine.risk.intents import DenialReason, Source
from engine.risk.overrides import RiskOverrides
from engine.trading.commands import (
    Command,
    CommandSource,
    Flatten,
    KevOrder,
    Kill,
    Pause,
    PauseSymbol,
    Rearm,
    Resume,
    ResumeSymbol,
    SetLimits,
)
from engine.trading.config import (
    PaperVenueConfig,
    QuotingStrategyConfig,
    TradingConfig,
    TradingMode,
    default_risk_config,
)
from engine.trading.desk import TradingDesk
from engine.trading.events import CommandExecuted, VerdictActed
from engine.trading.paper_venue import PaperVenue

KEEP = QuoteIntent.KEEP_QUOTING
BTC_BIDS = [(64_000.0, 0.5), (63_999.9, 1.0)]
BTC_ASKS = [(64_000.2, 0.5), (64_000.3, 1.0)]
ETH_BIDS = [(3_400.00, 20.0)]
ETH_ASKS = [(3_400.02, 20.0)]


class Desk:
    """A desk on the paper venue, with the books and the market it is fed."""

    def __init__(self, tmp_path, **strategy) -> None:
        settings = {"half_spread_bps": 0.5, "emergency_cooldown_ms": 300}
        settings.update(strategy)
        self.config = TradingConfig(
            mode=TradingMode.PAPER,
            strategies=(QuotingStrategyConfig(**settings),),
            risk=dataclasses.replace(default_risk_config(), max_mark_age_ms=60_000),
            paper=PaperVenueConfig(round_trip_ms=1.0, reaction_us=0.0),
            journal_path=tmp_path / "journal.sqlite",
        )
        self.journal = Journal(JournalConfig(self.config.resolved_journal_path()))
        self.venue = PaperVenue(self.config.paper, self.config.instruments)
        self.books = {symbol: OrderBook(symbol) for symbol in ("BTCUSDT", "ETHUSDT")}
        self.events = EventLog(10_000)
        self.market = MarketScript()
        self.desk = TradingDesk(self.config, self.venue, self.journal, self.events, self.books)

    async def start(self) -> None:
        self.journal.start()
        await self.desk.start()
        self.book("ETHUSDT", ETH_BIDS, ETH_ASKS)

    async def stop(self) -> None:
        await self.desk.stop()
        self.journal.stop()

    def book(self, symbol="BTCUSDT", bids=BTC_BIDS, asks=BTC_ASKS, intent=KEEP):
        snapshot = self.market.book(symbol, bids, asks)
        self.books[symbol].apply(snapshot)
        self.desk.on_book(snapshot, intent)
        return snapshot

    def resting(self, symbol="BTCUSDT"):
        return sorted(
            (order.side.value, order.price, order.size)
            for order in self.venue.engines[symbol].open_orders()
        )

    def entries(self, kind):
        self.journal.flush()
        return [e.payload for e in read_journal(self.journal.config.path, kinds=[kind])]

    def logged(self, kind):
        return [event for _, event in self.events.since(-1)[0] if type(event) is kind]


@pytest.fixture
async def paper_desk(tmp_path):
    desk = Desk(tmp_path)
    await desk.start()
    yield desk
    await desk.stop()


async def test_quotes_rest_on_both_sides_around_the_microprice(paper_desk):
    # Touch 64000.0 / 64000.2, equal sizes: microprice 64000.1, 0.5 bps either side.
    paper_desk.book()
    await eventually(lambda: len(paper_desk.resting()) == 2, 3.0)
    assert paper_desk.resting() == [
        ("buy", pytest.approx(63_996.8), 0.002),
        ("sell", pytest.approx(64_003.4), 0.002),
    ]


async def test_quotes_follow_the_market_once_it_moves_past_the_threshold(paper_desk):
    paper_desk.book()
    await eventually(lambda: len(paper_desk.resting()) == 2, 3.0)
    paper_desk.book(bids=[(64_000.1, 0.5)], asks=[(64_000.3, 0.5)])  # 0.016 bps: kept
    await asyncio.sleep(0.02)
    assert paper_desk.resting()[0][1] == pytest.approx(63_996.8)
    # Up 3.0 (0.47 bps, past the 0.3 bps threshold) without touching our ask at 64003.4:
    # microprice 64003.1, new quotes 63999.8 / 64006.4.
    moved = [(64_003.0, 0.5)], [(64_003.2, 0.5)]
    paper_desk.book(bids=moved[0], asks=moved[1])
    await eventually(lambda: not paper_desk.resting(), 3.0)
    paper_desk.book(bids=moved[0], asks=moved[1])
    await eventually(lambda: len(paper_desk.resting()) == 2, 3.0)
    assert paper_desk.resting() == [
        ("buy", pytest.approx(63_999.8), 0.002),
        ("sell", pytest.approx(64_006.4), 0.002),
    ]


async def test_emergency_cancels_everything_at_once_and_cools_down(paper_desk):
    paper_desk.book()
    await eventually(lambda: len(paper_desk.resting()) == 2, 3.0)
    snapshot = paper_desk.book(intent=QuoteIntent.CANCEL_ALL)
    await eventually(lambda: not paper_desk.resting(), 3.0)
    assert paper_desk.desk.reaction.count == 1
    acted = paper_desk.logged(VerdictActed)
    assert [(a.intent, a.action) for a in acted] == [("CANCEL_ALL", "cancel all (paper)")]
    journaled = paper_desk.entries(EntryKind.VERDICT_ACTION)[-1]
    assert journaled["recv_ns"] == snapshot.recv_ns and journaled["reaction_us"] >= 0
    paper_desk.book()  # HOLD again, but inside the 300 ms cooldown
    await asyncio.sleep(0.05)
    assert paper_desk.resting() == []
    await asyncio.sleep(0.3)
    paper_desk.book()
    await eventually(lambda: len(paper_desk.resting()) == 2, 3.0)


async def test_lean_buy_pulls_the_ask_and_keeps_the_bid(paper_desk):
    paper_desk.book()
    await eventually(lambda: len(paper_desk.resting()) == 2, 3.0)
    paper_desk.book(intent=QuoteIntent.PULL_ASKS)
    await eventually(lambda: [side for side, _, _ in paper_desk.resting()] == ["buy"], 3.0)
    assert paper_desk.logged(VerdictActed)[-1].action == "pull ask"


async def test_a_fill_is_hedged_back_inside_the_deadband(paper_desk):
    paper_desk.book()
    await eventually(lambda: len(paper_desk.resting()) == 2, 3.0)
    # The market trades through our bid: long 0.002 BTC = 128 USDT of delta.
    paper_desk.book(bids=[(63_990.0, 0.5)], asks=[(63_996.0, 0.5)])
    await eventually(lambda: paper_desk.desk.executor.stats().fills >= 2, 3.0)
    risk = paper_desk.desk.gateway.snapshot()
    positions = {p.symbol: p.size for p in risk.positions}
    assert positions["BTCUSDT"] == pytest.approx(0.002)
    assert positions["ETHUSDT"] == pytest.approx(-0.04)  # 128 / 3400 = 0.0376 -> 0.04
    assert abs(risk.net_delta) <= paper_desk.config.hedge.deadband_usdt


async def test_pause_cancels_quotes_and_resume_brings_them_back(paper_desk):
    paper_desk.book()
    await eventually(lambda: len(paper_desk.resting()) == 2, 3.0)
    result = await paper_desk.desk.execute(Command(Pause()))
    assert result.ok and paper_desk.desk.gateway.state is TradingState.PAUSED
    await eventually(lambda: not paper_desk.resting(), 3.0)
    paper_desk.book()
    await asyncio.sleep(0.02)
    assert paper_desk.resting() == []
    assert (await paper_desk.desk.execute(Command(Resume()))).ok
    paper_desk.book()
    await eventually(lambda: len(paper_desk.resting()) == 2, 3.0)
    commands = [e["command"] for e in paper_desk.entries(EntryKind.OPERATOR_COMMAND)]
    assert commands == ["pause", "resume"]


async def test_a_paused_symbol_has_its_quotes_pulled_and_the_book_goes_on(paper_desk):
    desk = paper_desk.desk
    paper_desk.book()
    await eventually(lambda: len(paper_desk.resting()) == 2, 3.0)
    result = await desk.execute(Command(PauseSymbol("BTCUSDT")))
    assert (result.ok, result.message) == (True, "BTCUSDT paused: operator pause")
    assert desk.gateway.state is TradingState.ACTIVE
    await eventually(lambda: not paper_desk.resting(), 3.0)
    paper_desk.book()  # a new book: still nothing quoted on the paused symbol
    await asyncio.sleep(0.02)
    assert paper_desk.resting() == []
    views = {view.symbol: view.stood_aside for view in desk.status().risk.positions}
    assert views == {"BTCUSDT": "operator pause", "ETHUSDT": ""}
    refused = await desk.execute(Command(PauseSymbol("DOGEUSDT")))
    assert (refused.ok, refused.message) == (False, "'DOGEUSDT' is not in the book")
    assert (await desk.execute(Command(ResumeSymbol("BTCUSDT")))).ok
    paper_desk.book()
    await eventually(lambda: len(paper_desk.resting()) == 2, 3.0)
    journaled = [  # the desk's entries (a refusal also has the gateway's, without "ok")
        (e["command"], e["symbol"], e["ok"])
        for e in paper_desk.entries(EntryKind.OPERATOR_COMMAND)
        if "ok" in e
    ]
    assert journaled == [
        ("pause_symbol", "BTCUSDT", True),
        ("pause_symbol", "DOGEUSDT", False),
        ("resume_symbol", "BTCUSDT", True),
    ]


async def test_a_paused_hedge_is_not_asked_to_trade_and_hedges_once_resumed(paper_desk):
    desk = paper_desk.desk
    assert (await desk.execute(Command(PauseSymbol("ETHUSDT")))).ok
    paper_desk.book()
    await eventually(lambda: len(paper_desk.resting()) == 2, 3.0)  # BTCUSDT quotes on
    paper_desk.book(bids=[(63_990.0, 0.5)], asks=[(63_996.0, 0.5)])  # fills our bid
    await eventually(lambda: desk.executor.stats().fills >= 1, 3.0)
    await asyncio.sleep(0.01)  # the hedge check a fill schedules has run
    assert desk.gateway.position("ETHUSDT") == 0
    assert desk.gateway.snapshot().denial_counts[DenialReason.SYMBOL_PAUSED] == 0
    assert (await desk.execute(Command(ResumeSymbol("ETHUSDT")))).ok
    await eventually(lambda: desk.gateway.position("ETHUSDT") != 0, 3.0)


async def test_kill_flattens_and_stays_latched_until_rearmed(paper_desk):
    desk = paper_desk.desk
    paper_desk.book()
    await eventually(lambda: len(paper_desk.resting()) == 2, 3.0)
    paper_desk.book(bids=[(63_990.0, 0.5)], asks=[(63_996.0, 0.5)])  # fills our bid
    await eventually(lambda: desk.executor.stats().fills >= 2, 3.0)
    paper_desk.book(bids=BTC_BIDS, asks=BTC_ASKS)
    result = await desk.execute(Command(Kill()))
    assert result.ok, result.message
    assert result.elapsed_ms > 0
    snapshot = await paper_desk.venue.snapshot()
    assert snapshot.orders == () and snapshot.positions == ()
    assert desk.gateway.state is TradingState.HALTED
    assert desk.last_kill == result
    paper_desk.book()
    await asyncio.sleep(0.02)
    assert paper_desk.resting() == []  # nothing quotes while halted
    assert not (await desk.execute(Command(Resume()))).ok
    assert not (await desk.execute(Command(Rearm("please")))).ok
    assert (await desk.execute(Command(Rearm("REARM")))).ok
    assert desk.gateway.state is TradingState.PAUSED
    logged = [(e.command, e.ok) for e in paper_desk.logged(CommandExecuted)]
    assert logged == [("kill", True), ("resume", False), ("rearm", False), ("rearm", True)]


async def test_flatten_goes_flat_then_pauses(paper_desk):
    desk = paper_desk.desk
    paper_desk.book()
    await eventually(lambda: len(paper_desk.resting()) == 2, 3.0)
    paper_desk.book(bids=[(63_990.0, 0.5)], asks=[(63_996.0, 0.5)])
    await eventually(lambda: desk.executor.stats().fills >= 2, 3.0)
    paper_desk.book(bids=BTC_BIDS, asks=BTC_ASKS)
    result = await desk.execute(Command(Flatten()))
    assert result.ok, result.message
    assert (await paper_desk.venue.snapshot()).positions == ()
    assert desk.gateway.state is TradingState.PAUSED
    assert "PAUSED" in result.message


async def test_a_kill_during_a_flatten_takes_over_and_the_flatten_says_so(paper_desk):
    desk = paper_desk.desk
    paper_desk.book()
    await eventually(lambda: len(paper_desk.resting()) == 2, 3.0)
    paper_desk.book(bids=[(63_990.0, 0.5)], asks=[(63_996.0, 0.5)])
    await eventually(lambda: desk.executor.stats().fills >= 2, 3.0)
    paper_desk.book(bids=BTC_BIDS, asks=BTC_ASKS)
    flatten = asyncio.create_task(desk.execute(Command(Flatten())))
    # Step by step (the paper venue may close in a few steps): kill as soon as it is reducing.
    deadline = asyncio.get_running_loop().time() + 3.0
    while desk.gateway.state is not TradingState.REDUCING:
        assert asyncio.get_running_loop().time() < deadline and not flatten.done()
        await asyncio.sleep(0)
    killed = await desk.execute(Command(Kill()))
    flattened = await flatten
    assert killed.ok, killed.message
    assert (flattened.ok, flattened.message) == (False, "superseded by the kill switch")
    assert desk.gateway.state is TradingState.HALTED


async def test_flatten_with_nothing_open_says_so_and_asks_for_no_close(paper_desk):
    desk = paper_desk.desk
    result = await desk.execute(Command(Flatten()))
    assert (result.ok, result.message) == (
        True,
        "nothing to flatten: no orders, no positions; now PAUSED",
    )
    assert paper_desk.entries(EntryKind.ORDER_DENIED) == []
    assert paper_desk.entries(EntryKind.ORDER_INTENT) == []
    [journaled] = paper_desk.entries(EntryKind.OPERATOR_COMMAND)
    assert (journaled["command"], journaled["ok"], journaled["message"]) == (
        "flatten",
        True,
        "nothing to flatten: no orders, no positions; now PAUSED",
    )


async def test_flatten_with_only_quotes_open_cancels_them_and_asks_for_no_denied_close(
    paper_desk,
):
    desk = paper_desk.desk
    paper_desk.book()
    await eventually(lambda: len(paper_desk.resting()) == 2, 3.0)
    result = await desk.execute(Command(Flatten()))
    assert result.ok, result.message
    assert paper_desk.resting() == []
    assert desk.gateway.state is TradingState.PAUSED
    assert paper_desk.entries(EntryKind.ORDER_DENIED) == []


async def test_a_halt_from_the_gateway_itself_starts_the_close_sequence(paper_desk):
    desk = paper_desk.desk
    paper_desk.book()
    await eventually(lambda: len(paper_desk.resting()) == 2, 3.0)
    desk.gateway.kill(desk._clock(), "daily loss 400.00 USDT reached the hard limit")
    desk.executor.drain_risk_events()
    await eventually(lambda: not paper_desk.resting(), 3.0)
    assert desk.gateway.state is TradingState.HALTED


async def test_overrides_apply_as_a_whole_or_not_at_all(paper_desk):
    desk = paper_desk.desk
    bad = RiskOverrides(max_net_delta=2_000, risk_scale=1.5)
    result = await desk.execute(Command(SetLimits(bad)))
    assert not result.ok and "risk scale" in result.message
    assert desk.gateway.snapshot().max_net_delta == 1_500  # untouched
    good = RiskOverrides(
        max_position={"BTCUSDT": 0.03},
        max_net_delta=2_000,
        max_slippage_bps=15,
        orders_per_second=5,
        orders_per_minute=200,
        risk_scale=0.5,
    )
    result = await desk.execute(Command(SetLimits(good)))
    assert result.ok, result.message
    risk = desk.gateway.snapshot()
    assert risk.limits.max_position["BTCUSDT"] == 0.03
    assert risk.limits.max_slippage_bps == 15 and risk.limits.orders_per_second == 5
    assert risk.risk_scale == 0.5 and risk.max_net_delta == 1_000
    assert not (await desk.execute(Command(SetLimits(RiskOverrides(orders_per_second=5))))).ok


async def test_a_risk_scale_that_leaves_no_whole_lot_to_quote_says_so(paper_desk):
    """0.002 BTC quotes: at 0.5 one lot (0.001) is left, at 0.4 none, and nothing is quoted."""
    desk = paper_desk.desk
    half = await desk.execute(Command(SetLimits(RiskOverrides(risk_scale=0.5))))
    assert half.ok and "not quoted" not in half.message
    lower = await desk.execute(Command(SetLimits(RiskOverrides(risk_scale=0.4))))
    assert lower.ok
    assert lower.message.endswith(
        "; the quote size 0.0008 or the position cap 0.008 BTCUSDT is now under one lot "
        "(0.001): BTCUSDT is not quoted until it is raised"
    )
    by_kev = await desk.execute(Command(KevOrder(KevAction.HOLD, 0.3, None), CommandSource.KEV))
    assert by_kev.ok and by_kev.message.endswith("BTCUSDT is not quoted until it is raised")


async def kev(desk, action, risk_scale, hedge_ratio):
    """What the gateway did with Kev's command, sent as KevHub sends it."""
    order = KevOrder(action, risk_scale, hedge_ratio)
    return (await desk.execute(Command(order, CommandSource.KEV))).kev


async def test_kev_may_lower_the_risk_scale_but_not_raise_it(paper_desk):
    desk = paper_desk.desk
    lowered = await kev(desk, KevAction.HOLD, 0.5, None)
    assert lowered.accepted and lowered.risk_scale == 0.5
    raised = await kev(desk, KevAction.HOLD, 0.9, None)
    assert not raised.accepted and raised.risk_scale == 0.5
    # The risk scale's change is journaled at once; the decisions themselves are KevHub's to
    # journal (once each, tests/engine/kev), so the refusal adds no entry of its own here.
    changes = paper_desk.entries(EntryKind.STATE_CHANGE)
    assert {
        "limit": "risk_scale",
        "symbol": None,
        "old": 1.0,
        "new": 0.5,
        "source": "kev",
    } in changes
    assert paper_desk.entries(EntryKind.KEV_DECISION) == []


async def test_kevs_beta_reaches_the_gateway_through_the_desk(paper_desk):
    """The default book lets Kev move no beta ([risk] beta_band 1-1): the gateway gets the
    beta, keeps BTCUSDT's as configured and says so."""
    desk = paper_desk.desk
    order = KevOrder(KevAction.HOLD, None, None, ("BTCUSDT", 1.2))
    result = await desk.execute(Command(order, CommandSource.KEV))
    assert (result.ok, result.kev.beta) == (True, 1.0)
    assert result.message == "beta BTCUSDT 1.2 clamped to 1"
    assert dict(desk.gateway.snapshot().betas) == {"BTCUSDT": 1.0}


async def test_kev_flatten_runs_the_close_sequence(paper_desk):
    desk = paper_desk.desk
    paper_desk.book()
    await eventually(lambda: len(paper_desk.resting()) == 2, 3.0)
    paper_desk.book(bids=[(63_990.0, 0.5)], asks=[(63_996.0, 0.5)])
    await eventually(lambda: desk.executor.stats().fills >= 2, 3.0)
    paper_desk.book(bids=BTC_BIDS, asks=BTC_ASKS)
    outcome = await kev(desk, KevAction.FLATTEN, None, None)
    assert outcome.accepted
    await eventually(lambda: desk.gateway.state is TradingState.PAUSED, 3.0)
    assert (await paper_desk.venue.snapshot()).positions == ()


async def test_status_is_a_frozen_picture(paper_desk):
    paper_desk.book()
    await eventually(lambda: len(paper_desk.resting()) == 2, 3.0)
    status = paper_desk.desk.status()
    assert status.mode == "paper" and status.venue == "paper"
    assert status.state is TradingState.ACTIVE
    assert {order.side for order in status.open_orders} == {OrderSide.BUY, OrderSide.SELL}
    assert status.private_stream == "live"
    with pytest.raises(dataclasses.FrozenInstanceError):
        status.mode = "live"  # type: ignore[misc]
    assert Source.STRATEGY in {order.source for order in status.open_orders}
