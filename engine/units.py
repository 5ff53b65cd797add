"""How money and sizes are written for people: the console's panes, events and status lines,
command answers and the journal's texts.

Money is USDT, signed by its effect on PnL: a fee paid is negative (`fee -0.0256 USDT`), a
rebate positive. Sizes are in the symbol's base coin (`0.002 BTC`). The engine's numbers keep
their own conventions (a fill's `fee` is the cost, positive when paid); only texts use these.
"""

from __future__ import annotations

from decimal import Decimal

QUOTE_COIN = "USDT"
"""Every symbol traded is a USDT-M perpetual: prices, PnL and fees are in USDT."""


def base_coin(symbol: str) -> str:
    """The coin a symbol's sizes count: BTCUSDT -> BTC."""
    return symbol.removesuffix(QUOTE_COIN) or symbol


def amount(value: float, decimals: int = 2) -> str:
    """Signed money with thousands separators, no unit (where a unit is written once for a
    group of figures): "+1,234.56"."""
    return f"{value + 0.0:+,.{decimals}f}"


def usdt(value: float, decimals: int = 2) -> str:
    """Signed money with its unit: "-0.21 USDT"."""
    return f"{amount(value, decimals)} {QUOTE_COIN}"


def fee_usdt(cost: float) -> str:
    """A fee by its effect on PnL: a cost of 0.0256 is "-0.0256 USDT"."""
    return usdt(-cost, 4)


def plain(value: float) -> str:
    """A size as typed: no exponent, no trailing zeros ("0.002", "1.5", "12")."""
    text = f"{value + 0.0:.8f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def exact(value: float) -> str:
    """A number as the operator gave it, every digit that tells it apart and no more: the
    shortest text that reads back as the same float, without an exponent ("123456.7",
    "0.00001", "2"). For the audit trail's answers, where a rounded figure would be untrue."""
    text = format(Decimal(repr(float(value) + 0.0)), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def coin(symbol: str, size: float, *, signed: bool = False) -> str:
    """A size in its base coin: "0.002 BTC", or signed ("+0.002 BTC", long)."""
    text = plain(size)
    if signed and size > 0:
        text = f"+{text}"
    return f"{text} {base_coin(symbol)}"
