"""Laya's four classes, in the order of the classifier's outputs."""

from __future__ import annotations

import enum


class Verdict(enum.IntEnum):
    HOLD = 0
    LEAN_BUY = 1
    LEAN_SELL = 2
    EMERGENCY = 3


CLASS_NAMES: tuple[str, ...] = tuple(verdict.name for verdict in Verdict)
"""Class names as stored in model metadata and written in predictions CSVs."""
