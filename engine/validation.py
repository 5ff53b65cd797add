"""Checks shared by the frozen configs and the operator's overrides."""

from __future__ import annotations

import math


def require_count(owner: str, name: str, value: int) -> None:
    if not (isinstance(value, int) and value >= 1):
        raise ValueError(f"{owner}.{name} must be an integer >= 1, got {value!r}")


def finite_number(value: object) -> bool:
    """A real number (not a bool), finite."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
