"""The operator's risk overrides and the one set of rules they are judged by (the gateway,
the trading desk and the console's risk dialog all ask `problems`)."""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import dataclass, field

from engine.risk.limits import OverrideBounds
from engine.units import coin, exact
from engine.validation import finite_number


@dataclass(frozen=True, slots=True)
class RiskOverrides:
    """Operator overrides, applied as a whole or not at all; None leaves a limit as it is.

    `max_position` maps symbols to base-coin caps; the order rate takes both figures;
    `hedge_ratio` and `betas` (quoted symbols to their beta to the book) are for a book with a
    hedge only. The console also uses it for the limits in force (every value given).
    """

    max_position: Mapping[str, float] = field(default_factory=dict)
    max_net_delta: float | None = None
    max_slippage_bps: float | None = None
    orders_per_second: int | None = None
    orders_per_minute: int | None = None
    risk_scale: float | None = None
    hedge_ratio: float | None = None
    betas: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Read-only copies, so the overrides cannot change after validation.
        object.__setattr__(self, "max_position", types.MappingProxyType(dict(self.max_position)))
        object.__setattr__(self, "betas", types.MappingProxyType(dict(self.betas)))

    @property
    def empty(self) -> bool:
        return (
            not self.max_position
            and not self.betas
            and all(
                value is None
                for value in (
                    self.max_net_delta,
                    self.max_slippage_bps,
                    self.orders_per_second,
                    self.orders_per_minute,
                    self.risk_scale,
                    self.hedge_ratio,
                )
            )
        )

    @property
    def order_rate(self) -> tuple[int, int] | None:
        """Orders per second and per minute, or None when not given."""
        if self.orders_per_second is None or self.orders_per_minute is None:
            return None
        return self.orders_per_second, self.orders_per_minute

    def changes_from(self, base: RiskOverrides) -> RiskOverrides:
        """Only what differs from `base` (the limits the operator saw): applying it changes
        those and leaves the rest as they are meanwhile (Kev may have moved one). The order
        rate stays a pair: both figures when either changed."""
        rate_changed = self.order_rate != base.order_rate

        def changed(value: float | None, before: float | None) -> float | None:
            return value if value != before else None

        return RiskOverrides(
            max_position={
                symbol: size
                for symbol, size in self.max_position.items()
                if base.max_position.get(symbol) != size
            },
            max_net_delta=changed(self.max_net_delta, base.max_net_delta),
            max_slippage_bps=changed(self.max_slippage_bps, base.max_slippage_bps),
            orders_per_second=self.orders_per_second if rate_changed else None,
            orders_per_minute=self.orders_per_minute if rate_changed else None,
            risk_scale=changed(self.risk_scale, base.risk_scale),
            hedge_ratio=changed(self.hedge_ratio, base.hedge_ratio),
            betas={
                symbol: beta
                for symbol, beta in self.betas.items()
                if base.betas.get(symbol) != beta
            },
        )

    def problems(self, bounds: OverrideBounds) -> list[str]:
        """Every reason the overrides cannot be applied (empty: they can)."""
        found: list[str] = []
        for symbol, size in self.max_position.items():
            ceiling = bounds.max_position.get(symbol)
            if ceiling is None:
                found.append(f"{symbol!r} is not a configured symbol")
            elif not (finite_number(size) and 0 <= size <= ceiling):
                found.append(
                    f"{symbol} max position must be within [0, {coin(symbol, ceiling)}], got "
                    f"{size!r}"
                )
        for name, value, ceiling, unit in (
            ("max net delta", self.max_net_delta, bounds.max_net_delta, "USDT"),
            ("max slippage", self.max_slippage_bps, bounds.max_slippage_bps, "bps"),
        ):
            if value is not None and not (finite_number(value) and 0 <= value <= ceiling):
                found.append(f"{name} must be within [0, {exact(ceiling)}] {unit}, got {value!r}")
        if (self.orders_per_second is None) != (self.orders_per_minute is None):
            found.append("the order rate needs both orders per second and per minute")
        else:
            for name, rate, most in (
                ("per second", self.orders_per_second, bounds.max_orders_per_second),
                ("per minute", self.orders_per_minute, bounds.max_orders_per_minute),
            ):
                if rate is not None and not (
                    isinstance(rate, int) and not isinstance(rate, bool) and 1 <= rate <= most
                ):
                    found.append(
                        f"orders {name} must be an integer within [1, {most}], got {rate!r}"
                    )
        if self.risk_scale is not None and not (
            finite_number(self.risk_scale) and 0 <= self.risk_scale <= 1
        ):
            found.append(f"risk scale must be within [0, 1], got {self.risk_scale!r}")
        if self.hedge_ratio is not None:
            band = bounds.hedge_ratio
            if band is None:
                found.append("a hedge ratio, but the book has no hedge")
            elif not (finite_number(self.hedge_ratio) and band[0] <= self.hedge_ratio <= band[1]):
                found.append(
                    f"hedge ratio must be within [{exact(band[0])}, {exact(band[1])}], "
                    f"got {self.hedge_ratio!r}"
                )
        for symbol, beta in self.betas.items():
            beta_range = bounds.betas.get(symbol)
            if beta_range is None:
                found.append(_no_beta_for(symbol, bounds))
            elif not (finite_number(beta) and beta_range[0] <= beta <= beta_range[1]):
                low, high = beta_range
                found.append(
                    f"{symbol} beta must be within [{exact(low)}, {exact(high)}], got {beta!r}"
                )
        return found

    def journaled(self) -> dict[str, object]:
        """The overrides as an operator command's journal entry has them."""
        return {
            "max_position": dict(self.max_position),
            "max_net_delta": self.max_net_delta,
            "max_slippage_bps": self.max_slippage_bps,
            "orders_per_second": self.orders_per_second,
            "orders_per_minute": self.orders_per_minute,
            "risk_scale": self.risk_scale,
            "hedge_ratio": self.hedge_ratio,
            "betas": dict(self.betas),
        }


def _no_beta_for(symbol: str, bounds: OverrideBounds) -> str:
    """Why `symbol` takes no beta: not in the book, no hedge for a beta to steer, or it is the
    hedge (whose weight is the hedge ratio)."""
    if symbol not in bounds.max_position:
        return f"{symbol!r} is not a configured symbol"
    if not bounds.betas:
        return f"a beta for {symbol}, but the book has no hedge for a beta to steer"
    return f"a beta for {symbol}, the hedge: its weight in the net delta is the hedge ratio"
