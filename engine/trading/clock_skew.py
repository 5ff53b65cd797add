"""The venue's clock offset, watched: a jump (the REST client re-measures it after a 40008) is
explained in words, with what it means for Bitget's signing window."""

from __future__ import annotations

from engine.bitget.endpoints import SIGNING_WINDOW_MS

CLOCK_JUMP_MS = 1_000
"""A change of the venue's clock offset worth explaining (resyncs move it by a few ms)."""


class ClockWatch:
    """The offset last explained and its explanation; `started` and `moved` return the fault
    entry's payload when there is something to explain, else None."""

    __slots__ = ("note", "offset_ms")

    def __init__(self) -> None:
        self.offset_ms = 0
        """Exchange time minus ours, as the venue last measured it."""
        self.note = ""
        """The last explanation (beyond Bitget's 30 s window: why 40008)."""

    def started(self, offset_ms: int) -> dict[str, object] | None:
        """The offset the venue measured at start: explained when beyond the window."""
        self.offset_ms = offset_ms
        if abs(offset_ms) > SIGNING_WINDOW_MS:
            return self._explain(offset_ms, None)
        return None

    def moved(self, offset_ms: int) -> dict[str, object] | None:
        """The venue's offset now: explained when it jumped since the last explanation."""
        if abs(offset_ms - self.offset_ms) < CLOCK_JUMP_MS:
            return None
        previous, self.offset_ms = self.offset_ms, offset_ms
        return self._explain(offset_ms, previous)

    def _explain(self, offset_ms: int, previous_ms: int | None) -> dict[str, object]:
        """Say how far apart the clocks are and what it means."""
        apart = f"{abs(offset_ms) / 1000:.1f} s {'ahead of' if offset_ms > 0 else 'behind'} ours"
        was = "at start" if previous_ms is None else f"was {previous_ms / 1000:+.1f} s"
        window_s = SIGNING_WINDOW_MS // 1000
        if abs(offset_ms) > SIGNING_WINDOW_MS:
            text = (
                f"clock skew: the exchange clock is {apart} ({was}), beyond Bitget's "
                f"{window_s} s signing window: requests stamped with our clock are refused "
                "(40008). Resynced from the exchange's server time: requests are now stamped "
                "with exchange time. Fix the system clock (NTP)"
            )
        else:
            text = (
                f"clock resynced: the exchange clock is {apart} ({was}), within Bitget's "
                f"{window_s} s signing window"
            )
        self.note = text
        return {
            "clock_offset_ms": offset_ms,
            "previous_offset_ms": previous_ms,
            "signing_window_ms": SIGNING_WINDOW_MS,
            "text": text,
        }
