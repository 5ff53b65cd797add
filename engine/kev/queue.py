"""The queue between the fast path and Kev: bounded, coalesced per symbol, EMERGENCY first.

`offer` runs on the engine loop for every non-HOLD verdict, so it never blocks and allocates
only when a symbol gets its first entry: a symbol already waiting has its snapshot replaced
(the latest context wins) and its verdict counted. Entries are taken EMERGENCY first (an entry
stays EMERGENCY once any verdict coalesced into it was one: that emergency has not been
consulted yet), then in order of arrival.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from engine.laya.verdict import Verdict
from engine.validation import require_count

_EMERGENCY = int(Verdict.EMERGENCY)


class KevQueueOverflow(enum.Enum):
    """What happens when a symbol not yet waiting arrives at a full queue. Either way an
    EMERGENCY is never displaced by a lesser verdict: an arriving EMERGENCY evicts the oldest
    non-EMERGENCY entry, and a non-EMERGENCY arriving at a queue of EMERGENCYs is dropped."""

    DROP_OLDEST = "drop_oldest"
    """Evict the entry that waited longest: its context is the most likely to be stale."""
    DROP_NEWEST = "drop_newest"
    """Drop the arriving snapshot and keep what is waiting."""


class KevSnapshot(NamedTuple):
    """What the fast path hands Kev about one non-HOLD verdict (built by
    `engine.kev.context.snapshot_of`): the class probabilities in `Verdict` order, the mid, and
    a copy of the (1, 128) feature row; the context picks what it needs off the fast path."""

    symbol: str
    exchange_ts_ms: int
    verdict: int
    probabilities: Sequence[float]
    mid: float
    features: np.ndarray


class KevRequest(NamedTuple):
    """A queue entry as the hub takes it. `context_ns` is when its (latest) snapshot was
    offered, `first_queued_ns` when the symbol started waiting; `coalesced` counts the
    snapshots it replaced and `verdict_counts` every verdict offered into it, by class."""

    snapshot: KevSnapshot
    context_ns: int
    first_queued_ns: int
    coalesced: int
    verdict_counts: tuple[int, int, int, int]
    emergency: bool


# Entry layout: one list, mutated in place when a snapshot is coalesced into it; the verdict
# counts are its last four slots (one allocation per new entry, not two).
_SNAPSHOT, _CONTEXT_NS, _FIRST_NS, _COALESCED, _EMERGENCY_FLAG, _COUNTS = range(6)


class KevQueue:
    """At most `capacity` symbols waiting, one entry each, in a dict whose insertion order is
    the arrival order (a coalesced entry keeps its place), so the oldest entry is the first.
    Counters: `offered`, `coalesced`, `dropped` (snapshots lost to overflow, arriving or
    evicted) and `taken`."""

    __slots__ = (
        "_capacity",
        "_entries",
        "coalesced",
        "dropped",
        "offered",
        "overflow",
        "taken",
    )

    def __init__(
        self, capacity: int = 8, overflow: KevQueueOverflow = KevQueueOverflow.DROP_OLDEST
    ) -> None:
        require_count("KevQueue", "capacity", capacity)
        if not isinstance(overflow, KevQueueOverflow):
            raise ValueError(f"KevQueue overflow must be a KevQueueOverflow, got {overflow!r}")
        self._capacity = capacity
        self.overflow = overflow
        self._entries: dict[str, list] = {}
        self.offered = 0
        self.coalesced = 0
        self.dropped = 0
        self.taken = 0

    def __len__(self) -> int:
        return len(self._entries)

    def offer(self, snapshot: KevSnapshot, now_ns: int) -> bool:
        """Queue or coalesce; False when the snapshot itself was dropped."""
        self.offered += 1
        entry = self._entries.get(snapshot[0])
        verdict = snapshot[2]
        if entry is not None:
            entry[_SNAPSHOT] = snapshot
            entry[_CONTEXT_NS] = now_ns
            entry[_COALESCED] += 1
            entry[_COUNTS + verdict] += 1
            if verdict == _EMERGENCY:
                entry[_EMERGENCY_FLAG] = True
            self.coalesced += 1
            return True
        emergency = verdict == _EMERGENCY
        if len(self._entries) >= self._capacity and not self._make_room(emergency):
            self.dropped += 1
            return False
        entry = [snapshot, now_ns, now_ns, 0, emergency, 0, 0, 0, 0]
        entry[_COUNTS + verdict] = 1
        self._entries[snapshot[0]] = entry
        return True

    def _make_room(self, emergency: bool) -> bool:
        """Evict one entry for an arriving snapshot, per the overflow policy; False when the
        arriving snapshot is the one to drop."""
        if not emergency and self.overflow is KevQueueOverflow.DROP_NEWEST:
            return False
        entries = self._entries
        oldest = next(iter(entries))
        if entries[oldest][_EMERGENCY_FLAG]:
            oldest = next((s for s, e in entries.items() if not e[_EMERGENCY_FLAG]), None)
            if oldest is None:
                return False
        del entries[oldest]
        self.dropped += 1
        return True

    def take(self) -> KevRequest | None:
        """The next entry to consult Kev about (the oldest EMERGENCY, else the oldest), or
        None."""
        entries = self._entries
        if not entries:
            return None
        chosen = next(iter(entries))
        for symbol, entry in entries.items():
            if entry[_EMERGENCY_FLAG]:
                chosen = symbol
                break
        entry = entries.pop(chosen)
        self.taken += 1
        return KevRequest(
            entry[_SNAPSHOT],
            entry[_CONTEXT_NS],
            entry[_FIRST_NS],
            entry[_COALESCED],
            tuple(entry[_COUNTS:]),
            entry[_EMERGENCY_FLAG],
        )
