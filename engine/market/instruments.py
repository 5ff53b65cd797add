"""Contract specifications shared by the generator, the matching engine and the frame renderer."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from decimal import Decimal

from engine.validation import require_symbol

# Tolerance, in units of one tick or one size step, for treating a float as on the grid. Far
# below any real mistake (a price off by a fraction of a tick) and far above float noise.
_GRID_TOLERANCE = 1e-6


@dataclass(frozen=True, slots=True)
class Instrument:
    """A USDT-M perpetual: symbol, price tick, size step, minimum notional and the fee rates
    its venue lists (fractions of the notional, 0.0002 is 2 bps; None where none is known: a
    recording's contract, a built-in one)."""

    symbol: str
    tick_size: float
    size_step: float
    min_notional: float = 5.0
    maker_fee_rate: float | None = None
    taker_fee_rate: float | None = None
    # A tick is `_tick_units` of the last of its decimals (0.1: 1 of 10**-1): n ticks are the
    # integer n * units over 10**decimals, and one division gives the double nearest that
    # decimal, where n * tick_size carries float noise (618522 * 0.1 = 61852.200000000004).
    _tick_units: int = field(init=False, repr=False, compare=False)
    _price_scale: float = field(init=False, repr=False, compare=False)
    _lot_units: int = field(init=False, repr=False, compare=False)
    _size_scale: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        require_symbol("Instrument", "symbol", self.symbol)
        for name in ("tick_size", "size_step"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number, got {value!r}")
            if decimals(value) > 10:
                raise ValueError(f"{name} must have at most 10 decimals, got {value!r}")
        if not (math.isfinite(self.min_notional) and self.min_notional >= 0):
            raise ValueError(f"min_notional must be >= 0, got {self.min_notional!r}")
        for name in ("maker_fee_rate", "taker_fee_rate"):
            rate = getattr(self, name)
            if rate is not None and not (math.isfinite(rate) and -0.01 <= rate <= 0.01):
                raise ValueError(f"{name} must be within [-0.01, 0.01], got {rate!r}")
        for units, scale, step in (
            ("_tick_units", "_price_scale", self.tick_size),
            ("_lot_units", "_size_scale", self.size_step),
        ):
            object.__setattr__(self, scale, 10.0 ** decimals(step))
            object.__setattr__(self, units, round(step * getattr(self, scale)))

    @property
    def price_decimals(self) -> int:
        return decimals(self.tick_size)

    @property
    def size_decimals(self) -> int:
        return decimals(self.size_step)

    def format_price(self, price: float) -> str:
        return f"{price:.{self.price_decimals}f}"

    def format_size(self, size: float) -> str:
        return f"{size:.{self.size_decimals}f}"

    def to_ticks(self, price: float) -> int:
        return round(price / self.tick_size)

    def to_lots(self, size: float) -> int:
        return round(size / self.size_step)

    def price_of(self, ticks: int) -> float:
        return ticks * self._tick_units / self._price_scale

    def size_of(self, lots: float) -> float:
        return lots * self._lot_units / self._size_scale

    def is_on_tick(self, price: float) -> bool:
        return abs(price / self.tick_size - round(price / self.tick_size)) < _GRID_TOLERANCE

    def is_on_step(self, size: float) -> bool:
        return abs(size / self.size_step - round(size / self.size_step)) < _GRID_TOLERANCE


def decimals(value: float | Decimal) -> int:
    """The decimals `value` is written with, trailing zeros aside (0.010: 2)."""
    number = value if isinstance(value, Decimal) else Decimal(repr(value))
    exponent = number.normalize().as_tuple().exponent
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


@functools.lru_cache(maxsize=64)
def instrument_for(symbol: str) -> Instrument | None:
    """The contract spec of `symbol`: a built-in one's, or its base coin's twin's (BTCUSD
    trades in BTCUSDT's ticks and lots); None when there is none."""
    spec = _BUILT_IN.get(base_coin(symbol))
    if spec is None:
        return None
    return Instrument(symbol, spec.tick_size, spec.size_step, spec.min_notional)


def price_text(instrument: Instrument | None, price: float, *, grouped: bool = False) -> str:
    """A price written out, for a person or a program: at its contract's decimals
    ("61852.2", "3000.50"; `grouped`: "61,852.2"); off its tick, or without a contract
    (None), to 10 decimals without the trailing zeros (float noise gone either way)."""
    on_grid = instrument is not None and instrument.is_on_tick(price)
    return _grid_text(price, instrument.price_decimals if on_grid else None, grouped)


def size_text(instrument: Instrument | None, size: float, *, signed: bool = False) -> str:
    """A size written out: at its contract's decimals ("0.003" BTC, "1.50" ETH; `signed`:
    "+0.003"), as `price_text` off its step or without a contract."""
    on_grid = instrument is not None and instrument.is_on_step(size)
    return _grid_text(size, instrument.size_decimals if on_grid else None, False, signed)


def _grid_text(value: float, places: int | None, grouped: bool, signed: bool = False) -> str:
    digits = 10 if places is None else places
    shown = round(value, digits) + 0.0  # -0.0 is 0.0
    text = f"{shown:{'+' if signed else ''}{',' if grouped else ''}.{digits}f}"
    return text if places is not None else text.rstrip("0").rstrip(".")
