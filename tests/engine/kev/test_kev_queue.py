"""The queue between the fast path and Kev: coalescing, priority, overflow, counters."""

from __future__ import annotations

import pytest

from engine.kev.queue import KevQueue, KevQueueOverflow, KevSnapshot
from engine.laya.verdict import Verdict

FEATURES = (0.1,) * 10


def snap(symbol: str, verdict: Verdict, mid: float = 100.0) -> KevSnapshot:
    return KevSnapshot(symbol, 1, int(verdict), (0.1, 0.2, 0.3, 0.4), mid, FEATURES)


def test_offers_are_taken_in_arrival_order():
    queue = KevQueue(4)
    for k, symbol in enumerate(("A", "B", "C")):
        assert queue.offer(snap(symbol, Verdict.LEAN_BUY), 10 * k)
    assert [queue.take().snapshot.symbol for _ in range(3)] == ["A", "B", "C"]
    assert queue.take() is None
    assert (queue.offered, queue.taken, queue.coalesced, queue.dropped) == (3, 3, 0, 0)


def test_the_latest_snapshot_of_a_symbol_wins_and_keeps_its_place():
    queue = KevQueue(4)
    queue.offer(snap("A", Verdict.LEAN_BUY, 100.0), 1)
    queue.offer(snap("B", Verdict.LEAN_SELL), 2)
    queue.offer(snap("A", Verdict.LEAN_SELL, 101.0), 3)
    queue.offer(snap("A", Verdict.LEAN_SELL, 102.0), 4)
    assert len(queue) == 2 and queue.coalesced == 2
    first = queue.take()
    assert first.snapshot.symbol == "A" and first.snapshot.mid == 102.0
    assert (first.first_queued_ns, first.context_ns, first.coalesced) == (1, 4, 2)
    assert first.verdict_counts == (0, 1, 2, 0)
    assert not first.emergency
    assert queue.take().snapshot.symbol == "B"


def test_emergency_goes_first_and_stays_emergency_when_coalesced():
    queue = KevQueue(4)
    queue.offer(snap("A", Verdict.LEAN_BUY), 1)
    queue.offer(snap("B", Verdict.LEAN_BUY), 2)
    queue.offer(snap("C", Verdict.EMERGENCY), 3)
    queue.offer(snap("C", Verdict.LEAN_SELL), 4)  # the latest context, but C is still urgent
    queue.offer(snap("D", Verdict.EMERGENCY), 5)
    taken = [queue.take() for _ in range(4)]
    assert [request.snapshot.symbol for request in taken] == ["C", "D", "A", "B"]
    assert taken[0].emergency and taken[0].snapshot.verdict == Verdict.LEAN_SELL
    assert taken[0].verdict_counts == (0, 0, 1, 1)


def test_drop_oldest_evicts_the_longest_waiting_symbol():
    queue = KevQueue(2, KevQueueOverflow.DROP_OLDEST)
    queue.offer(snap("A", Verdict.LEAN_BUY), 1)
    queue.offer(snap("B", Verdict.LEAN_BUY), 2)
    assert queue.offer(snap("C", Verdict.LEAN_SELL), 3)
    assert queue.dropped == 1
    assert [queue.take().snapshot.symbol for _ in range(2)] == ["B", "C"]


def test_drop_newest_keeps_what_waits():
    queue = KevQueue(2, KevQueueOverflow.DROP_NEWEST)
    queue.offer(snap("A", Verdict.LEAN_BUY), 1)
    queue.offer(snap("B", Verdict.LEAN_BUY), 2)
    assert not queue.offer(snap("C", Verdict.LEAN_SELL), 3)
    assert queue.dropped == 1
    # A symbol already waiting still coalesces into a full queue.
    assert queue.offer(snap("A", Verdict.LEAN_SELL), 4)
    assert [queue.take().snapshot.symbol for _ in range(2)] == ["A", "B"]


@pytest.mark.parametrize("overflow", list(KevQueueOverflow))
def test_an_emergency_evicts_the_oldest_lesser_verdict(overflow):
    queue = KevQueue(2, overflow)
    queue.offer(snap("A", Verdict.EMERGENCY), 1)
    queue.offer(snap("B", Verdict.LEAN_BUY), 2)
    assert queue.offer(snap("C", Verdict.EMERGENCY), 3)
    assert queue.dropped == 1
    assert [queue.take().snapshot.symbol for _ in range(2)] == ["A", "C"]


@pytest.mark.parametrize("overflow", list(KevQueueOverflow))
def test_a_queue_full_of_emergencies_drops_any_newcomer(overflow):
    queue = KevQueue(2, overflow)
    queue.offer(snap("A", Verdict.EMERGENCY), 1)
    queue.offer(snap("B", Verdict.EMERGENCY), 2)
    assert not queue.offer(snap("C", Verdict.EMERGENCY), 3)
    assert not queue.offer(snap("D", Verdict.LEAN_BUY), 4)
    assert queue.dropped == 2 and len(queue) == 2
    assert [queue.take().snapshot.symbol for _ in range(2)] == ["A", "B"]


def test_a_burst_never_grows_the_queue_past_its_symbols():
    queue = KevQueue(8)
    for k in range(10_000):
        queue.offer(snap("BTCUSDT" if k % 3 else "ETHUSDT", Verdict(1 + k % 3)), k)
    assert len(queue) == 2
    assert queue.offered == 10_000 and queue.coalesced == 9_998 and queue.dropped == 0


@pytest.mark.parametrize("capacity", [0, -1, 1.5])
def test_capacity_must_be_a_positive_integer(capacity):
    with pytest.raises(ValueError, match="capacity"):
        KevQueue(capacity)
