"""Kev's quote skews: each symbol's, in force until its ttl ends. Kev's hub sets them when the
gateway accepted its command, the desk reads them as it quotes; the node hands the one it
builds to both."""

from __future__ import annotations

from collections.abc import Callable


class QuoteSkews:
    """Quote skews in bps per symbol on `clock` (epoch ns), each until its end."""

    def __init__(self, clock: Callable[[], int]) -> None:
        self._clock = clock
        self._skews: dict[str, tuple[float, int]] = {}

    def set(self, symbol: str, skew_bps: float, until_ns: int) -> None:
        self._skews[symbol] = (skew_bps, until_ns)

    def bps(self, symbol: str) -> float:
        """`symbol`'s skew, 0 when none is in force."""
        skew = self._skews.get(symbol)
        if skew is None:
            return 0.0
        if self._clock() >= skew[1]:
            del self._skews[symbol]
            return 0.0
        return skew[0]
