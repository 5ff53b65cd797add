"""The decision stage: Laya's verdict -> what happens to our resting quotes.

EMERGENCY cancels every resting order at once; LEAN_BUY pulls our asks (the price is about to
rise through them), LEAN_SELL pulls our bids, HOLD keeps quoting. The strategy and executor
act on the intent; the stage itself is pure and cheap, and it keeps the verdict stream the
console shows.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from engine.laya.verdict import Verdict
from engine.validation import require_count

_new_tuple = tuple.__new__  # skips NamedTuple's Python-level __new__ on the hot path


class QuoteIntent(enum.IntEnum):
    KEEP_QUOTING = 0
    PULL_ASKS = 1
    PULL_BIDS = 2
    CANCEL_ALL = 3
    STAND_ASIDE = 4
    """Laya is warming up (its feature windows are not filled): no quotes, and no verdict."""


class QuoteGate(enum.StrEnum):
    """What decides which of our quotes to pull. Laya runs on every frame whatever the gate,
    so its verdicts are counted (and Kev hears them) either way; the backtest's `--compare`
    plays one recording under each."""

    LAYA = "laya"
    """Laya's verdicts act (the default)."""
    NONE = "none"
    """Quote on every frame: no verdict and no warm-up pulls anything."""
    IMBALANCE = "imbalance"
    """A one-line rule: the top-5 book imbalance beyond `imbalance_gate` pulls the side it
    points against (bids heavy: the ask is about to be run over), else keep quoting."""

    @property
    def actor(self) -> str:
        """Who acted, in the reasons the journal gives."""
        return {"laya": "Laya", "none": "no gate", "imbalance": "the imbalance gate"}[self.value]


INTENT_OF_VERDICT: tuple[QuoteIntent, ...] = (
    QuoteIntent.KEEP_QUOTING,  # HOLD
    QuoteIntent.PULL_ASKS,  # LEAN_BUY
    QuoteIntent.PULL_BIDS,  # LEAN_SELL
    QuoteIntent.CANCEL_ALL,  # EMERGENCY
)
"""Indexed by Verdict value."""


class VerdictRecord(NamedTuple):
    """One entry of the verdict stream."""

    symbol: str
    exchange_ts_ms: int
    verdict: Verdict
    probability: float
    intent: QuoteIntent


@dataclass(frozen=True, slots=True)
class VerdictStreamView:
    """A frozen copy of the verdict stream for the UI."""

    recent: tuple[VerdictRecord, ...]
    counts: dict[str, int]
    total: int
    current: Mapping[str, Verdict] = field(default_factory=dict)
    """Each symbol's verdict on its last book (a HOLD too: the stream keeps HOLDs only when
    the verdict changes, so a symbol long in HOLD has left it)."""


class DecisionStage:
    """Turns verdicts into quote intents and remembers the recent stream and class counts.

    The stream keeps every non-HOLD verdict and HOLDs only when the verdict changes, so a
    long quiet spell does not push the interesting entries out of the bounded log.
    """

    def __init__(self, stream_size: int = 512) -> None:
        require_count("DecisionStage", "stream_size", stream_size)
        self._recent: deque[VerdictRecord] = deque(maxlen=stream_size)
        self._counts = [0, 0, 0, 0]
        self._last_verdict: dict[str, int] = {}

    def decide(
        self, symbol: str, exchange_ts_ms: int, verdict: Verdict, probability: float
    ) -> QuoteIntent:
        self._counts[verdict] += 1
        intent = INTENT_OF_VERDICT[verdict]
        if verdict or self._last_verdict.get(symbol, 0):
            self._recent.append(
                _new_tuple(VerdictRecord, (symbol, exchange_ts_ms, verdict, probability, intent))
            )
        self._last_verdict[symbol] = verdict
        return intent

    def counts(self) -> dict[str, int]:
        return {verdict.name: self._counts[verdict] for verdict in Verdict}

    def view(self, limit: int = 100) -> VerdictStreamView:
        recent = tuple(self._recent)[-limit:] if limit > 0 else ()
        current = {symbol: Verdict(verdict) for symbol, verdict in self._last_verdict.items()}
        return VerdictStreamView(recent, self.counts(), sum(self._counts), current)
