"""REST faults (429, 5xx, a signature refusal, answers slower than the timeout) while the
engine quotes on the simulator: no order is ever duplicated, no fill is lost, and the engine's
positions end equal to the exchange's."""

from __future__ import annotations

import asyncio
from collections import Counter

from sim_engine import ALWAYS_EMERGENCY, engine_config, sim_orders
from support.waiting import eventually

from engine.journal import EntryKind, read_journal
from engine.node import EngineNode
from engine.trading.tracked_order import OrderState


async def test_rest_faults_never_duplicate_an_order_or_lose_a_fill(sim, laya_model, tmp_path):
    journal_path = tmp_path / "journal.sqlite"
    node = EngineNode(engine_config(sim, laya_model, journal_path, rest_timeout_s=0.4))
    await node.start()
    try:
        desk = node.desk
        executor = desk.executor
        prefix = f"hc{desk.session}"
        await eventually(
            lambda: sum(o.client_oid.startswith(prefix) for o in sim.open_orders()) == 2,
            15,
        )
        faults = sim.faults
        for code, count in ((429, 4), (503, 4), (40009, 2)):
            faults.rest_error(code, count)
            await asyncio.sleep(0.8)
        faults.slow_rest(0.6)  # every answer later than the client's 0.4 s timeout
        await asyncio.sleep(1.5)
        faults.slow_rest(0.0)
        await asyncio.sleep(1.5)
        node.classifier.thresholds = ALWAYS_EMERGENCY  # stop quoting, let everything settle
        await eventually(lambda: not executor.has_open_orders(), 15)
        await asyncio.sleep(0.5)

        stats = desk.venue.stats()
        assert {"429", "503", "40009", "transport"} <= set(stats["errors"])  # the faults hit
        assert stats["retries"] > 0

        ours = [order for order in sim_orders(sim) if order.client_oid.startswith(prefix)]
        assert ours, "the engine placed orders"
        duplicated = {oid: n for oid, n in Counter(o.client_oid for o in ours).items() if n > 1}
        assert duplicated == {}

        desk.journal.flush()
        approved = {
            e.payload["client_oid"]
            for e in read_journal(journal_path, kinds=[EntryKind.ORDER_APPROVED])
        }
        assert {order.client_oid for order in ours} <= approved  # journaled before sent
        journaled_fills = {
            e.payload["trade_id"] for e in read_journal(journal_path, kinds=[EntryKind.FILL])
        }
        assert {fill.trade_id for fill in sim.fills()} <= journaled_fills
        executor.invalidate_risk_view()
        engine_positions = {p.symbol: p.size for p in executor.risk_view().positions if p.size}
        exchange_positions = {p.symbol: p.size for p in sim.positions()}
        assert engine_positions.keys() == exchange_positions.keys()
        for symbol, size in exchange_positions.items():
            assert abs(engine_positions[symbol] - size) < 1e-9
        assert all(view.state is not OrderState.UNKNOWN for view in executor.open_orders())
    finally:
        await node.stop()
