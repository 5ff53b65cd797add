"""Commands to the gateway from the operator and from Kev, and what became of them."""

from __future__ import annotations

import enum
from typing import NamedTuple

from engine.risk.events import TradingState


class KevAction(enum.StrEnum):
    """What Kev may ask for. None of them can raise a limit, leave PAUSED or HALTED, or re-arm:
    REDUCE and FLATTEN only tighten trading, PAUSE_QUOTING stops new orders."""

    HOLD = "hold"
    REDUCE = "reduce"
    FLATTEN = "flatten"
    PAUSE_QUOTING = "pause_quoting"


class CommandOutcome(NamedTuple):
    """An operator command's result; `text` says what happened or why it was refused."""

    accepted: bool
    text: str


class KevCommandOutcome(NamedTuple):
    """A Kev command's result. `accepted` is False when any part was refused; `notes` has one
    line per refused or clamped part. `state`, `risk_scale` and `hedge_ratio` are the values in
    force afterwards, `beta` the beta in force of the symbol whose beta the command set (None:
    it set none)."""

    accepted: bool
    action: KevAction | str
    state: TradingState
    risk_scale: float
    hedge_ratio: float
    notes: tuple[str, ...]
    beta: float | None = None
