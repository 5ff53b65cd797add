"""Contract specifications shared by the generator, the matching engine and the frame renderer."""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

# Tolerance, in units of one tick or one size step, for treating a float as on the grid. Far
# below any real mistake (a price off by a fraction of a tick) and far above float noise.
_GRID_TOLERANCE = 1e-6


@dataclass(frozen=True, slots=True)
class Instrument:
    """A USDT-M perpetual: symbol, price tick, size step and minimum notional."""

    symbol: str
    tick_size: float
    size_step: float
    min_notional: float = 5.0

    def __post_init__(self) -> None:
        if not self.symbol or not self.symbol.isalnum() or not self.symbol.isupper():
            raise ValueError(
                f"symbol must be upper-case letters/digits like BTCUSDT, got {self.symbol!r}"
            )
        for name in ("tick_size", "size_step"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number, got {value!r}")
            if _decimals(value) > 10:
                raise ValueError(f"{name} must have at most 10 decimals, got {value!r}")
        if not (math.isfinite(self.min_notional) and self.min_notional >= 0):
            raise ValueError(f"min_notional must be >= 0, got {self.min_notional!r}")

    @property
    def price_decimals(self) -> int:
        return _decimals(self.tick_size)

    @property
    def size_decimals(self) -> int:
        return _decimals(self.size_step)

    def format_price(self, price: float) -> str:
        return f"{price:.{self.price_decimals}f}"

    def format_size(self, size: float) -> str:
        return f"{size:.{self.size_decimals}f}"

    def to_ticks(self, price: float) -> int:
        return round(price / self.tick_size)

    def to_lots(self, size: float) -> int:
        return round(size / self.size_step)

    def price_of(self, ticks: int) -> float:
        return ticks * self.tick_size

    def size_of(self, lots: float) -> float:
        return lots * self.size_step

    def is_on_tick(self, price: float) -> bool:
        return abs(price / self.tick_size - round(price / self.tick_size)) < _GRID_TOLERANCE

    def is_on_step(self, size: float) -> bool:
        return abs(size / self.size_step - round(size / self.size_step)) < _GRID_TOLERANCE


def _decimals(value: float) -> int:
    exponent = Decimal(repr(value)).normalize().as_tuple().exponent
    assert isinstance(exponent, int)  # finite values only; checked by the caller
    return max(0, -exponent)


BTCUSDT = Instrument("BTCUSDT", tick_size=0.1, size_step=0.001)
ETHUSDT = Instrument("ETHUSDT", tick_size=0.01, size_step=0.01)

_BUILT_IN = {"BTC": BTCUSDT, "ETH": ETHUSDT}
_QUOTES = ("USDT", "USDC", "USD")


def base_coin(symbol: str) -> str:
    """BTC for BTCUSDT, BTCUSD or BTCUSDC; the symbol itself when it has no known quote."""
    for quote in _QUOTES:
        if symbol.endswith(quote) and len(symbol) > len(quote):
            return symbol[: -len(quote)]
    return symbol


def built_in_twin(symbol: str) -> str | None:
    """The built-in symbol with the same base coin (BTCUSDT for BTCUSD), None if none."""
    instrument = _BUILT_IN.get(base_coin(symbol))
    return instrument.symbol if instrument is not None else None


def instrument_for(symbol: str) -> Instrument | None:
    """The contract spec of `symbol`: a built-in one's, or its base coin's twin's (BTCUSD
    trades in BTCUSDT's ticks and lots); None when there is none."""
    spec = _BUILT_IN.get(base_coin(symbol))
    if spec is None:
        return None
    return Instrument(symbol, spec.tick_size, spec.size_step, spec.min_notional)
