"""Risk limits, the hard bounds on operator overrides, and the gateway's configuration.

All frozen and validated on construction, so a gateway can only ever start from a coherent set
of limits. Sizes are in base coin, notionals and losses in USDT, price bands in basis points.
"""

from __future__ import annotations

import math
import types
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from engine.bitget.models import CLIENT_OID_PATTERN
from engine.risk.events import OutboxOverflow
from engine.validation import finite_number, require_count, require_positive, require_symbol

_CLOSING_OID_COUNTER_DIGITS = 12
"""Room left in a 32-character clientOid for the closing-order counter."""


@dataclass(frozen=True, slots=True)
class SymbolLimits:
    """Caps for one symbol: position (base coin, either direction), notional of that position
    at the mid (USDT) and the size of any single order (base coin)."""

    symbol: str
    max_position: float
    max_notional: float
    max_order_size: float

    def __post_init__(self) -> None:
        require_symbol("SymbolLimits", "symbol", self.symbol)
        for name in ("max_position", "max_notional", "max_order_size"):
            require_positive(f"SymbolLimits({self.symbol})", name, getattr(self, name))


@dataclass(frozen=True, slots=True)
class EndpointLimits:
    """Bitget's per-UID request limits, each endpoint counted on its own (bitget-v2.md §4, §6).
    Above them the exchange answers 429, so the gateway never lets a request through that
    would be one too many."""

    place_order_per_second: int = 10
    cancel_order_per_second: int = 10
    batch_cancel_per_second: int = 10
    close_positions_per_second: int = 1

    def __post_init__(self) -> None:
        for name in (
            "place_order_per_second",
            "cancel_order_per_second",
            "batch_cancel_per_second",
            "close_positions_per_second",
        ):
            require_count("EndpointLimits", name, getattr(self, name))


@dataclass(frozen=True, slots=True)
class RiskLimits:
    """The limits a gateway starts with (the operator may override some, within
    `OverrideBounds`).

    `max_slippage_bps` bounds how far a buy may pay above (a sell below) both the mid and the
    microprice; `max_closing_slippage_bps` is the wider band for orders that only shrink a
    position, so that a flatten in a wide market is not blocked by the band meant for quotes.
    `orders_per_second` and `orders_per_minute` are our own pace for risk-increasing orders;
    `daily_loss_soft` and `daily_loss_hard` are losses (positive USDT) since the daily reset,
    realized plus unrealized, that switch trading to REDUCING and HALTED.
    """

    symbols: tuple[SymbolLimits, ...]
    max_net_delta: float
    daily_loss_soft: float
    daily_loss_hard: float
    max_slippage_bps: float = 10.0
    max_closing_slippage_bps: float = 100.0
    orders_per_second: int = 8
    orders_per_minute: int = 240
    max_open_orders: int = 20
    endpoints: EndpointLimits = field(default_factory=EndpointLimits)

    def __post_init__(self) -> None:
        if not self.symbols:
            raise ValueError("RiskLimits.symbols must name at least one symbol")
        names = [limits.symbol for limits in self.symbols]
        if len(set(names)) != len(names):
            raise ValueError(f"RiskLimits.symbols has a symbol twice: {names}")
        for name in ("max_net_delta", "daily_loss_soft", "daily_loss_hard"):
            require_positive("RiskLimits", name, getattr(self, name))
        if self.daily_loss_soft >= self.daily_loss_hard:
            raise ValueError(
                f"RiskLimits.daily_loss_soft ({self.daily_loss_soft}) must be below "
                f"daily_loss_hard ({self.daily_loss_hard})"
            )
        for name in ("max_slippage_bps", "max_closing_slippage_bps"):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0 <= value < 10_000):
                raise ValueError(f"RiskLimits.{name} must be within [0, 10000) bps, got {value!r}")
        if self.max_closing_slippage_bps < self.max_slippage_bps:
            raise ValueError(
                "RiskLimits.max_closing_slippage_bps must be >= max_slippage_bps: closing "
                "orders get the wider band"
            )
        for name in ("orders_per_second", "orders_per_minute", "max_open_orders"):
            require_count("RiskLimits", name, getattr(self, name))
        if self.orders_per_second > self.endpoints.place_order_per_second:
            raise ValueError(
                f"RiskLimits.orders_per_second ({self.orders_per_second}) must not exceed "
                f"Bitget's place-order limit ({self.endpoints.place_order_per_second}/s)"
            )

    def for_symbol(self, symbol: str) -> SymbolLimits:
        for limits in self.symbols:
            if limits.symbol == symbol:
                return limits
        raise KeyError(symbol)


@dataclass(frozen=True, slots=True)
class OverrideBounds:
    """Hard bounds on the operator's overrides: `max_position` is the ceiling per symbol (base
    coin; every configured symbol must have one), the rest ceilings on the matching limit.
    `hedge_ratio` and `betas` are the [low, high] the hedge ratio and each quoted symbol's beta
    may be set to: `RiskGatewayConfig` puts its `hedge_ratio_band` and `beta_range`s here (None
    and empty without a hedge: nothing to steer), whatever was given."""

    max_position: Mapping[str, float]
    max_net_delta: float
    max_slippage_bps: float
    max_orders_per_second: int
    max_orders_per_minute: int
    hedge_ratio: tuple[float, float] | None = None
    betas: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Read-only copies, so the bounds cannot be changed after validation.
        object.__setattr__(self, "max_position", types.MappingProxyType(dict(self.max_position)))
        object.__setattr__(self, "betas", types.MappingProxyType(dict(self.betas)))
        for symbol, ceiling in self.max_position.items():
            require_positive("OverrideBounds.max_position", symbol, ceiling)
        require_positive("OverrideBounds", "max_net_delta", self.max_net_delta)
        if not (math.isfinite(self.max_slippage_bps) and 0 <= self.max_slippage_bps < 10_000):
            raise ValueError(
                f"OverrideBounds.max_slippage_bps must be within [0, 10000), "
                f"got {self.max_slippage_bps!r}"
            )
        require_count("OverrideBounds", "max_orders_per_second", self.max_orders_per_second)
        require_count("OverrideBounds", "max_orders_per_minute", self.max_orders_per_minute)


@dataclass(frozen=True, slots=True)
class RiskGatewayConfig:
    """Limits, override bounds and the rest of what a `RiskGateway` needs.

    `hedge_symbol` is the instrument whose notional counts toward net delta multiplied by the
    hedge ratio (see `RiskGateway`); the ratio starts at `hedge_ratio` and Kev may move it only
    inside `hedge_ratio_band`. Every other symbol's notional counts multiplied by its beta to
    the book (`betas`; 1 for a symbol not named), so the hedge offsets each in proportion; Kev
    may move a quoted symbol's beta inside `beta_band` times its configured beta (`beta_range`:
    the default (1, 1) keeps every beta as configured, and without a hedge none moves); the
    operator may set the ratio and a beta inside the same bands (`bounds`, filled in here).
    `risk_scale` (0..1) multiplies the position, notional and net delta limits. A mark older
    than `max_mark_age_ms` blocks risk-increasing orders. The daily loss counter restarts at
    `daily_reset_hour_utc`. The kill switch is re-armed only with `rearm_confirmation` typed
    back.
    """

    limits: RiskLimits
    bounds: OverrideBounds
    hedge_symbol: str | None = None
    hedge_ratio: float = 1.0
    hedge_ratio_band: tuple[float, float] = (0.0, 1.0)
    betas: Mapping[str, float] = field(default_factory=dict)
    beta_band: tuple[float, float] = (1.0, 1.0)
    risk_scale: float = 1.0
    max_mark_age_ms: int = 2_000
    daily_reset_hour_utc: int = 0
    rearm_confirmation: str = "REARM"
    outbox_capacity: int = 4_096
    outbox_overflow: OutboxOverflow = OutboxOverflow.DROP_OLDEST
    closing_client_oid_prefix: str = "risk-close-"

    def __post_init__(self) -> None:
        symbols = {limits.symbol for limits in self.limits.symbols}
        if set(self.bounds.max_position) != symbols:
            raise ValueError(
                f"OverrideBounds.max_position must name exactly the configured symbols "
                f"{sorted(symbols)}, got {sorted(self.bounds.max_position)}"
            )
        for limits in self.limits.symbols:
            ceiling = self.bounds.max_position[limits.symbol]
            if limits.max_position > ceiling:
                raise ValueError(
                    f"{limits.symbol} max_position {limits.max_position} is above its override "
                    f"ceiling {ceiling}"
                )
        for name, limit, ceiling in (
            ("max_net_delta", self.limits.max_net_delta, self.bounds.max_net_delta),
            ("max_slippage_bps", self.limits.max_slippage_bps, self.bounds.max_slippage_bps),
            (
                "orders_per_second",
                self.limits.orders_per_second,
                self.bounds.max_orders_per_second,
            ),
            (
                "orders_per_minute",
                self.limits.orders_per_minute,
                self.bounds.max_orders_per_minute,
            ),
        ):
            if limit > ceiling:
                raise ValueError(f"RiskLimits.{name} {limit} is above its override bound {ceiling}")
        if self.bounds.max_orders_per_second > self.limits.endpoints.place_order_per_second:
            raise ValueError(
                "OverrideBounds.max_orders_per_second must not exceed Bitget's place-order "
                f"limit ({self.limits.endpoints.place_order_per_second}/s)"
            )
        if self.bounds.max_slippage_bps > self.limits.max_closing_slippage_bps:
            raise ValueError(
                "OverrideBounds.max_slippage_bps must not exceed max_closing_slippage_bps: "
                "closing orders keep the wider band"
            )
        if self.hedge_symbol is not None and self.hedge_symbol not in symbols:
            raise ValueError(f"hedge_symbol {self.hedge_symbol!r} is not a configured symbol")
        object.__setattr__(self, "betas", types.MappingProxyType(dict(self.betas)))
        for symbol, beta in self.betas.items():
            if symbol not in symbols or symbol == self.hedge_symbol:
                raise ValueError(
                    f"a beta for {symbol}, which is not a quoted symbol of the book "
                    f"({', '.join(sorted(symbols - {self.hedge_symbol}))})"
                )
            if not (finite_number(beta) and 0 < beta <= 10):
                raise ValueError(f"{symbol} beta must be within (0, 10], got {beta!r}")
        low, high = self.hedge_ratio_band
        if not (math.isfinite(low) and math.isfinite(high) and 0 <= low <= high):
            raise ValueError(
                "hedge_ratio_band must be finite with 0 <= low <= high, "
                f"got {self.hedge_ratio_band}"
            )
        if not low <= self.hedge_ratio <= high:
            raise ValueError(
                f"hedge_ratio {self.hedge_ratio} is outside hedge_ratio_band "
                f"{self.hedge_ratio_band}"
            )
        low, high = self.beta_band
        if not (finite_number(low) and finite_number(high) and 0 < low <= 1 <= high):
            raise ValueError(
                f"beta_band must be finite with 0 < low <= 1 <= high, got {self.beta_band}"
            )
        for symbol in sorted(symbols - {self.hedge_symbol}):
            if self.betas.get(symbol, 1.0) * high > 10:
                raise ValueError(
                    f"beta_band high {high:g} takes {symbol}'s beta "
                    f"{self.betas.get(symbol, 1.0):g} above 10"
                )
        if self.hedge_symbol is None:
            steered = replace(self.bounds, hedge_ratio=None, betas={})
        else:
            quoted = (limits.symbol for limits in self.limits.symbols)
            steered = replace(
                self.bounds,
                hedge_ratio=self.hedge_ratio_band,
                betas={s: self.beta_range(s) for s in quoted if s != self.hedge_symbol},
            )
        object.__setattr__(self, "bounds", steered)
        if not (math.isfinite(self.risk_scale) and 0 <= self.risk_scale <= 1):
            raise ValueError(f"risk_scale must be within [0, 1], got {self.risk_scale!r}")
        require_count("RiskGatewayConfig", "max_mark_age_ms", self.max_mark_age_ms)
        if not (isinstance(self.daily_reset_hour_utc, int) and 0 <= self.daily_reset_hour_utc < 24):
            raise ValueError(
                f"daily_reset_hour_utc must be an hour 0..23, got {self.daily_reset_hour_utc!r}"
            )
        if not self.rearm_confirmation.strip():
            raise ValueError("rearm_confirmation must not be blank")
        require_count("RiskGatewayConfig", "outbox_capacity", self.outbox_capacity)
        prefix = self.closing_client_oid_prefix
        if not (
            CLIENT_OID_PATTERN.match(prefix) and len(prefix) <= 32 - _CLOSING_OID_COUNTER_DIGITS
        ):
            raise ValueError(
                f"closing_client_oid_prefix must be at most {32 - _CLOSING_OID_COUNTER_DIGITS} "
                f"characters of [0-9A-Za-z_#-], got {prefix!r}"
            )

    def delta_weight(self, symbol: str) -> float:
        """`symbol`'s weight in the net delta at the start: the hedge ratio for the hedge, its
        beta for any other (1 unless set)."""
        return self.hedge_ratio if symbol == self.hedge_symbol else self.betas.get(symbol, 1.0)

    def beta_range(self, symbol: str) -> tuple[float, float]:
        """The [low, high] a quoted symbol's beta may move in: `beta_band` times its configured
        beta; without a hedge only the configured beta (there is no hedge for a beta to steer,
        only the net delta limit it would move)."""
        beta = self.betas.get(symbol, 1.0)
        if self.hedge_symbol is None:
            return beta, beta
        low, high = self.beta_band
        # To the 12th decimal, as the decimals meant: 0.8 x 1.1 is 0.8800000000000001 in
        # floats, and a beta of 0.88 must be inside the range, not clamped to that noise.
        return round(low * beta, 12), round(high * beta, 12)
