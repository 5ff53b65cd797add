"""The kill and flatten sequence on the paper venue: it ends flat with nothing open."""

from __future__ import annotations

import asyncio

import executor_on_sim
import pytest
from executor_on_paper import ETH_ASKS, ETH_BIDS, order, started_rig
from support.waiting import eventually

from engine.bitget.endpoints import PLACE_ORDER
from engine.bitget.orders import OrderSide, TimeInForce
from engine.journal import EntryKind
from engine.risk.events import TradingState
from engine.risk.intents import Source
from engine.trading.close_sequence import run_close_sequence
from engine.trading.config import PaperVenueConfig
from engine.trading.tracked_order import OrderRole, OrderState


@pytest.fixture
async def rig(tmp_path):
    async with started_rig(tmp_path) as rig:
        yield rig


async def test_kill_sequence_ends_flat_with_nothing_open(rig):
    taking = [
        order(rig, OrderSide.BUY, 64_000.1, 0.004, TimeInForce.IOC),
        order(rig, OrderSide.SELL, 3_400.0, 0.3, TimeInForce.IOC, symbol="ETHUSDT"),
    ]
    resting = order(rig, OrderSide.BUY, 63_900.0)
    for intent in taking:
        assert rig.executor.submit(intent, OrderRole.HEDGE).approved
    assert rig.executor.submit(resting, OrderRole.BID).approved
    await eventually(
        lambda: (
            all(rig.executor.order(i.client_oid) is None for i in taking)
            and rig.executor.order(resting.client_oid).acknowledged
        ),
        3.0,
    )
    positions = {p.symbol: p.size for p in rig.gateway.snapshot().positions}
    assert positions == {"BTCUSDT": pytest.approx(0.004), "ETHUSDT": pytest.approx(-0.3)}
    rig.gateway.kill(rig.executor._clock())
    rig.book()  # fresh liquidity for the closing orders
    rig.book("ETHUSDT", ETH_BIDS, ETH_ASKS)
    outcome = await run_close_sequence(rig.executor, Source.OPERATOR, "test kill", 5.0)
    assert outcome.ok, outcome.message
    snapshot = await rig.venue.snapshot()
    assert snapshot.orders == () and snapshot.positions == ()
    assert all(p.size == 0 for p in rig.gateway.snapshot().positions)
    assert rig.gateway.state is TradingState.HALTED


async def test_a_kill_never_says_flat_with_an_order_still_on_its_way(tmp_path):
    """On a jittery network a quote already on its way when the kill starts can reach the venue
    after the kill's cancel-all (seed 9 of these 20 does). The kill waits for every placement's
    answer before its confirming snapshot, so an order that lands late is seen and cancelled,
    never left resting behind a "confirmed flat"."""
    for seed in range(20):
        paper = PaperVenueConfig(
            round_trip_ms=20.0, reaction_us=0.0, latency_jitter=2.0, latency_seed=seed
        )
        async with started_rig(tmp_path / str(seed), paper) as rig:
            quote = order(rig, OrderSide.BUY, 63_900.0)
            assert rig.executor.submit(quote, OrderRole.BID).approved
            sent = rig.executor.order(quote.client_oid)
            while sent.state is OrderState.JOURNALING:  # the kill comes once it is on its way
                await asyncio.sleep(0)
            rig.gateway.kill(rig.executor._clock())
            outcome = await run_close_sequence(rig.executor, Source.OPERATOR, "test kill", 30.0)
            assert outcome.ok, (seed, outcome.message)
            assert await rig.executor.placements_answered()
            snapshot = await rig.venue.snapshot()
            assert snapshot.orders == (), (seed, outcome.message)


async def test_a_kill_withdraws_the_quotes_still_waiting_for_the_rate_limit_unsent(sim, tmp_path):
    """A quote queued behind the venue's place-order limit when the kill starts never leaves:
    the kill's cancel-all has it asked again at once, and the kill does not wait for its slot
    (held ten seconds away here; a second at most in a live window)."""
    async with executor_on_sim.started_rig(sim, tmp_path, rate_window_margin_s=10.0) as rig:
        far = round(sim.market.book("BTCUSDT", 1).best_bid - 500, 1)
        for k in range(10):  # the venue's place-order window, taken by someone else's orders
            await rig.venue.client.place_order(
                "BTCUSDT", "buy", "0.002", price=str(far - k), client_oid=f"other{k}"
            )
        rig.mark()
        quote = rig.intent(far, TimeInForce.GTC)
        assert rig.executor.submit(quote, OrderRole.BID).approved
        sent = rig.executor.order(quote.client_oid)
        await eventually(lambda: sent.state is OrderState.SENDING, 5)
        assert rig.venue.client.stats().requests[PLACE_ORDER] == 10, "it waits for a slot"
        rig.gateway.kill(rig.executor._clock())
        outcome = await run_close_sequence(rig.executor, Source.OPERATOR, "test kill", 5.0)
        assert outcome.ok and outcome.attempts == 1, outcome.message
        assert outcome.elapsed_ms < 5_000, "the kill did not wait for the quote's slot"
        assert rig.executor.order(quote.client_oid) is None
        (withdrawn,) = [
            e for e in rig.entries(EntryKind.ORDER_REJECT) if e["client_oid"] == quote.client_oid
        ]
        assert "not sent" in str(withdrawn)
        assert not [
            e for e in rig.entries(EntryKind.ORDER_ACK) if e["client_oid"] == quote.client_oid
        ]
        assert sim.open_orders() == [] and (await rig.venue.snapshot()).orders == ()
