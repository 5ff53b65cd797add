"""Checks shared by the frozen configs and the operator's overrides. Each raises ValueError
naming `owner.name`, the range and the value; a bool is never a number here."""

from __future__ import annotations

import math


def require_integer(owner: str, name: str, value: int, low: int, high: int | None = None) -> None:
    """An integer >= `low`, and <= `high` when given."""
    if isinstance(value, bool) or not (
        isinstance(value, int) and low <= value and (high is None or value <= high)
    ):
        bound = f">= {low}" if high is None else f"within [{low}, {high}]"
        raise ValueError(f"{owner}.{name} must be an integer {bound}, got {value!r}")


def require_count(owner: str, name: str, value: int) -> None:
    """An integer >= 1."""
    require_integer(owner, name, value, 1)


def require_number(
    owner: str, name: str, value: float, *, low: float, high: float = math.inf
) -> None:
    """A finite number within [low, high]."""
    if not (finite_number(value) and low <= value <= high):
        bound = f"[{low:g}, {high:g}]" if math.isfinite(high) else f">= {low:g}"
        raise ValueError(f"{owner}.{name} must be a finite number {bound}, got {value!r}")


def require_positive(owner: str, name: str, value: float) -> None:
    """A finite number > 0."""
    if not (finite_number(value) and value > 0):
        raise ValueError(f"{owner}.{name} must be a positive finite number, got {value!r}")


def require_symbol(owner: str, name: str, value: object) -> None:
    """A contract symbol: upper-case ASCII letters and digits, like BTCUSDT."""
    if not (isinstance(value, str) and value.isascii() and value.isalnum() and value.isupper()):
        raise ValueError(f"{owner}.{name} must be a symbol like BTCUSDT, got {value!r}")


def finite_number(value: object) -> bool:
    """A real number (not a bool), finite."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
