"""The venue clock's explainer, on the real simulator: the clock skew behind a 40008 explained
and journaled, and the resync back within the signing window."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from executor_on_sim import Rig, started_rig
from support.waiting import eventually

from engine.journal import EntryKind
from engine.trading.events import TradingFault


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
