"""The venue clock's explainer, on the real simulator: the clock skew behind a 40008 explained
and journaled, and the resync back within the signing window."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from executor_on_sim import Rig, started_rig
from support.waiting import eventually

from engine.bitget.orders import TimeInForce
from engine.journal import EntryKind
from engine.trading.events import TradingFault
from engine.trading.tracked_order import OrderRole


@pytest.fixture
async def rig(sim, tmp_path) -> AsyncIterator[Rig]:
    async with started_rig(sim, tmp_path) as rig:
        yield rig


async def test_a_clock_skew_behind_a_40008_is_explained_and_journaled(rig):
    rig.sim.faults.clock_skew(-45)
    await rig.executor.check_with_venue("test")  # refused 40008, re-measured, answered
    await eventually(lambda: bool(rig.logged(TradingFault)), 2)
    (fault,) = rig.logged(TradingFault)
    assert fault.reason.startswith("clock skew: the exchange clock is 45.0 s behind ours")
    assert "30 s signing window" in fault.reason and "40008" in fault.reason
    assert "now stamped with exchange time" in fault.reason
    stats = rig.executor.stats()
    assert stats.clock_note == fault.reason and abs(stats.clock_offset_ms + 45_000) < 2_000
    assert rig.venue.stats()["clock_resyncs"] >= 1
    (entry,) = [e for e in rig.entries(EntryKind.FAULT) if "clock_offset_ms" in e]
    assert abs(int(entry["clock_offset_ms"]) + 45_000) < 2_000
    assert entry["signing_window_ms"] == 30_000

    rig.sim.faults.clock_skew(0)
    await rig.executor.check_with_venue("test")
    await eventually(lambda: len(rig.logged(TradingFault)) == 2, 2)
    back = rig.logged(TradingFault)[1].reason
    assert back.startswith("clock resynced") and "within Bitget's 30 s signing window" in back


async def test_a_fill_after_a_position_sync_counts_whatever_our_estimate_of_the_venues_clock(
    rig,
):
    # Our estimate of the exchange's clock 20 s ahead (within the signing window, so nothing
    # is refused): a sync must still place its watermark by the venue's own stamps, or every
    # fill of the next 20 s would be taken as already in the synced position.
    rig.sim.faults.clock_skew(20)
    await rig.venue.client.sync_time()
    assert rig.venue.clock_offset_ms > 19_000
    assert await rig.executor.reconcile("test") is not None
    assert rig.engine_position() == 0.0
    rig.mark()
    taker = rig.intent(round(rig.sim.market.book("BTCUSDT", 1).best_ask + 10, 1), TimeInForce.IOC)
    assert rig.executor.submit(taker, OrderRole.BID).approved
    await eventually(lambda: rig.venue_position() > 0, 5)
    await eventually(lambda: rig.engine_position() == rig.venue_position(), 5)
    (fill,) = rig.entries(EntryKind.FILL)
    assert fill["in_position_sync"] is False
