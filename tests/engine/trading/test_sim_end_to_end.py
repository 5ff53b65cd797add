"""The whole engine on the simulated exchange: public feed -> Laya -> desk -> REST and the
private stream. Quotes rest, fills arrive, the hedge holds delta, EMERGENCY pulls every quote,
kill leaves the exchange flat."""

from __future__ import annotations

import asyncio
import time

import pytest
from sim_engine import ALWAYS_EMERGENCY, NEVER_EMERGENCY, sim_rest
from support.waiting import eventually

from engine.journal import EntryKind, read_journal
from engine.node import format_status
from engine.risk.events import TradingState
from engine.trading.commands import Command, Kill
from engine.trading.events import ReconciliationDone


def ours(sim, node):
    prefix = f"hc{node.desk.session}"
    return [order for order in sim.open_orders() if order.client_oid.startswith(prefix)]


async def test_quotes_rest_at_the_exchange_on_both_sides(sim, node):
    await eventually(lambda: {o.side.value for o in ours(sim, node)} == {"buy", "sell"}, 15)
    resting = ours(sim, node)
    book = sim.market.book("BTCUSDT", 1)
    bid = next(o for o in resting if o.side.value == "buy")
    ask = next(o for o in resting if o.side.value == "sell")
    assert bid.price < ask.price
    assert bid.price <= book.best_ask and ask.price >= book.best_bid  # post only, passive
    assert "SIM ACTIVE" in format_status(node.status())


async def test_fills_arrive_and_the_hedge_keeps_net_delta_near_zero(sim, node):
    desk = node.desk
    executor = desk.executor
    deadband = desk.config.hedge.deadband_usdt

    def hedged() -> bool:
        positions = {p.symbol: p.size for p in executor.risk_view().positions}
        return positions["BTCUSDT"] != 0 and positions["ETHUSDT"] != 0

    await eventually(hedged, 30)
    # Stop quoting (Laya says EMERGENCY from now on) and let the hedge catch the last fills.
    node.classifier.thresholds = ALWAYS_EMERGENCY
    await eventually(lambda: not executor.has_open_orders(), 5)
    await asyncio.sleep(desk.config.executor.hedge_interval_ms / 1000 * 3)
    await eventually(lambda: not executor.has_open_orders(), 5)
    executor.invalidate_risk_view()
    risk = executor.risk_view()
    # Whole 0.01 ETH lots (~34 USDT): the hedge leaves at most the deadband, plus what the
    # marks moved since.
    assert abs(risk.net_delta) <= deadband + 0.01 * sim.market.book("ETHUSDT", 1).mid
    exchange = {p.symbol: p.size for p in sim.positions()}
    engine = {p.symbol: p.size for p in risk.positions if p.size}
    assert engine == pytest.approx(exchange)
    desk.journal.flush()
    fills = [e.payload for e in read_journal(desk.journal.config.path, kinds=[EntryKind.FILL])]
    assert {f["symbol"] for f in fills} == {"BTCUSDT", "ETHUSDT"}
    assert {f["trade_id"] for f in fills} >= {fill.trade_id for fill in sim.fills()}


async def test_emergency_pulls_every_quote_then_quoting_resumes(sim, node):
    await eventually(lambda: len(ours(sim, node)) == 2, 15)
    node.classifier.thresholds = ALWAYS_EMERGENCY
    pulled_at = time.monotonic()
    await eventually(lambda: not ours(sim, node), 2)
    assert time.monotonic() - pulled_at < 1.0
    desk = node.desk
    # The reaction is recorded when the cancel's answer is back, which can trail the book.
    await eventually(lambda: desk.reaction.count >= 1, 5)
    assert 0 < desk.reaction.percentile_ns(50) < 50_000_000
    node.classifier.thresholds = NEVER_EMERGENCY
    await eventually(lambda: len(ours(sim, node)) == 2, 10)
    desk.journal.flush()
    actions = read_journal(desk.journal.config.path, kinds=[EntryKind.VERDICT_ACTION])
    cancel_all = [a.payload for a in actions if a.payload["action"].startswith("cancel all")]
    assert cancel_all and cancel_all[0]["reaction_us"] > 0


async def test_kill_from_another_thread_leaves_the_exchange_flat(sim, node):
    desk = node.desk
    await eventually(lambda: len(ours(sim, node)) == 2, 15)
    await eventually(lambda: bool(sim.positions()), 30)  # a quote filled: a position is open

    def press_kill():
        return node.call_threadsafe(node.execute(Command(Kill()))).result(15)

    result = await asyncio.to_thread(press_kill)
    assert result.ok, result.message
    assert 0 < result.elapsed_ms < 5_000
    client = await sim_rest(sim)
    try:
        assert await client.pending_orders() == []
        assert await client.positions() == []
    finally:
        await client.stop()
    assert desk.gateway.state is TradingState.HALTED
    status = node.status().trading
    assert status is not None and status.last_kill == result
    await asyncio.sleep(0.3)
    assert not ours(sim, node)  # halted: nothing quotes again
    desk.journal.flush()
    commands = read_journal(desk.journal.config.path, kinds=[EntryKind.OPERATOR_COMMAND])
    assert commands[-1].payload["command"] == "kill" and commands[-1].payload["ok"] is True


async def test_a_private_stream_reconnect_reconciles_with_the_exchange(sim, node):
    await eventually(lambda: len(ours(sim, node)) == 2, 15)
    sim.faults.disconnect()  # drops every websocket, the private stream's too

    def reconciled() -> list[ReconciliationDone]:
        return [
            event
            for _, event in node.events.since(-1)[0]
            if isinstance(event, ReconciliationDone) and "reconnected" in event.reason
        ]

    await eventually(lambda: bool(reconciled()), 20)
    executor = node.desk.executor

    def positions_agree() -> bool:
        # A quote may fill while this compares (the stream is back): agreement, not one reading.
        executor.invalidate_risk_view()
        engine = {p.symbol: p.size for p in executor.risk_view().positions if p.size}
        return engine == pytest.approx({p.symbol: p.size for p in sim.positions()})

    await eventually(positions_agree, 10)
    await eventually(lambda: len(ours(sim, node)) == 2, 15)  # quoting goes on
