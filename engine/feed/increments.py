"""A contract's grid from its data, and the `--instrument SYMBOL:tick=..,lot=..,min_notional=..`
that gives it instead.

The finest increment of a set of decimal texts is the greatest common divisor of their values
as integers at the most decimals any of them has: exact, from the text, never from floats
(1.205, 1.21 and 1.2 give 0.005).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

_SEEN_TEXTS_MAX = 1 << 16
"""Texts remembered as taken in: a venue's prices and sizes repeat, and a text seen before
cannot change the increment."""
INSTRUMENT_KEYS = ("tick", "lot", "min_notional")
INSTRUMENT_FORMAT = "SYMBOL:tick=..,lot=..,min_notional=.."


class FinestIncrement:
    """The finest increment of the decimal texts `add`ed so far (None before one that is not
    zero). Texts are plain decimals (`1.205`, `30`), as a venue's prices and sizes are."""

    __slots__ = ("_decimals", "_seen", "_units")

    def __init__(self) -> None:
        self._decimals = 0
        self._units = 0
        self._seen: set[str] = set()

    def add(self, text: str) -> None:
        """Take in `text`; ValueError when it is not a plain decimal."""
        seen = self._seen
        if text in seen:
            return
        whole, _, fraction = text.partition(".")
        fraction = fraction.rstrip("0")
        digits = whole + fraction
        if not (digits.isascii() and digits.isdigit()):
            raise ValueError(f"not a plain decimal: {text!r}")
        places = len(fraction)
        if places > self._decimals:
            self._units *= 10 ** (places - self._decimals)
            self._decimals = places
        self._units = math.gcd(self._units, int(digits) * 10 ** (self._decimals - places))
        if len(seen) >= _SEEN_TEXTS_MAX:
            seen.clear()
        seen.add(text)

    @property
    def step(self) -> Decimal | None:
        if not self._units:
            return None
        return Decimal(self._units).scaleb(-self._decimals).normalize()


@dataclass(frozen=True, slots=True)
class InstrumentOption:
    """One `--instrument`: a symbol and the keys given for it (None: not given)."""

    symbol: str
    tick: Decimal | None = None
    lot: Decimal | None = None
    min_notional: Decimal | None = None

    @property
    def given(self) -> tuple[str, ...]:
        return tuple(key for key in INSTRUMENT_KEYS if getattr(self, key) is not None)


def parse_instrument_option(text: str) -> InstrumentOption:
    """`NEXOUSDT:tick=0.001,lot=0.1` read; ValueError, one line naming what is wrong, for a
    missing symbol or key, a key unknown or given twice, a value that is not a number > 0
    (min_notional: >= 0)."""
    where = f"--instrument {text}"
    symbol, colon, keys = text.partition(":")
    symbol = symbol.strip().upper()
    if not colon or not keys.strip():
        raise ValueError(f"{where}: expected {INSTRUMENT_FORMAT}")
    if not (symbol.isascii() and symbol.isalnum()):
        raise ValueError(f"{where}: {symbol!r} is not a symbol like NEXOUSDT")
    values: dict[str, Decimal] = {}
    for item in keys.split(","):
        key, equals, value = (part.strip() for part in item.partition("="))
        if key not in INSTRUMENT_KEYS or not equals:
            raise ValueError(
                f"{where}: {item.strip()!r} is not one of {', '.join(INSTRUMENT_KEYS)}=VALUE"
            )
        if key in values:
            raise ValueError(f"{where}: {key} is given twice")
        try:
            number = Decimal(value)
        except InvalidOperation:
            number = Decimal("NaN")
        bound = ">= 0" if key == "min_notional" else "> 0"
        if not number.is_finite() or number < 0 or (number == 0 and key != "min_notional"):
            raise ValueError(f"{where}: {key} must be a number {bound}, got {value!r}")
        values[key] = number
    return InstrumentOption(symbol, **values)
