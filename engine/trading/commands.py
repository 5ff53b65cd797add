"""Operator commands' inputs and outcomes: what the console sends and what it gets back."""

from __future__ import annotations

import math
import types
from collections.abc import Mapping
from dataclasses import dataclass, field

from engine.risk.limits import OverrideBounds
from engine.units import coin


@dataclass(frozen=True, slots=True)
class CommandResult:
    """The outcome of one engine command: `ok`, a line for the operator, and how long it took
    (for kill and flatten: from the command to the venue confirming no orders and flat)."""

    command: str
    ok: bool
    message: str
    elapsed_ms: float = 0.0


@dataclass(frozen=True, slots=True)
class RiskOverrides:
    """Operator overrides, applied as a whole or not at all; None leaves a limit as it is.

    `max_position` maps symbols to base-coin caps; the order rate takes both figures.
    """

    max_position: Mapping[str, float] = field(default_factory=dict)
    max_net_delta: float | None = None
    max_slippage_bps: float | None = None
    orders_per_second: int | None = None
    orders_per_minute: int | None = None
    risk_scale: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "max_position", types.MappingProxyType(dict(self.max_position)))

    @property
    def empty(self) -> bool:
        return not self.max_position and all(
            value is None
            for value in (
                self.max_net_delta,
                self.max_slippage_bps,
                self.orders_per_second,
                self.orders_per_minute,
                self.risk_scale,
            )
        )

    def problems(self, bounds: OverrideBounds) -> list[str]:
        """Every reason the overrides cannot be applied (empty: they can), judged by the same
        rules and bounds as the gateway's own setters."""
        found: list[str] = []
        for symbol, size in self.max_position.items():
            ceiling = bounds.max_position.get(symbol)
            if ceiling is None:
                found.append(f"{symbol!r} is not a configured symbol")
            elif not (_number(size) and 0 <= size <= ceiling):
                found.append(
                    f"{symbol} max position must be within [0, {coin(symbol, ceiling)}], got "
                    f"{size!r}"
                )
        if self.max_net_delta is not None and not (
            _number(self.max_net_delta) and 0 <= self.max_net_delta <= bounds.max_net_delta
        ):
            found.append(
                f"max net delta must be within [0, {bounds.max_net_delta:g}] USDT, "
                f"got {self.max_net_delta!r}"
            )
        if self.max_slippage_bps is not None and not (
            _number(self.max_slippage_bps) and 0 <= self.max_slippage_bps <= bounds.max_slippage_bps
        ):
            found.append(
                f"max slippage must be within [0, {bounds.max_slippage_bps:g}] bps, "
                f"got {self.max_slippage_bps!r}"
            )
        if (self.orders_per_second is None) != (self.orders_per_minute is None):
            found.append("the order rate needs both orders per second and per minute")
        else:
            for name, value, ceiling in (
                ("per second", self.orders_per_second, bounds.max_orders_per_second),
                ("per minute", self.orders_per_minute, bounds.max_orders_per_minute),
            ):
                if value is not None and not (
                    isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= ceiling
                ):
                    found.append(
                        f"orders {name} must be an integer within [1, {ceiling}], got {value!r}"
                    )
        if self.risk_scale is not None and not (
            _number(self.risk_scale) and 0 <= self.risk_scale <= 1
        ):
            found.append(f"risk scale must be within [0, 1], got {self.risk_scale!r}")
        return found


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
