"""The search space: `--space KEY=LO:HI[:log|:int]` (a range) or `--space KEY=a,b,c` (choices),
each key a setting checked as `--set` checks it."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.settings.schema import Settings
from engine.tools.backtest.plan import parse_set

if TYPE_CHECKING:
    import optuna

LINEAR, LOG, INT = "linear", "log", "int"


@dataclass(frozen=True, slots=True)
class Dimension:
    """One setting searched: a range (`low` to `high`, on a `scale`) or a set of `choices`."""

    key: str
    text: str
    """As given after `--space `: how the study file names it."""
    low: float = math.nan
    high: float = math.nan
    scale: str = LINEAR
    choices: tuple[object, ...] = ()

    def suggest(self, trial: optuna.Trial) -> object:
        if self.choices:
            return trial.suggest_categorical(self.key, self.choices)  # type: ignore[arg-type]
        if self.scale == INT:
            return trial.suggest_int(self.key, int(self.low), int(self.high))
        return trial.suggest_float(self.key, self.low, self.high, log=self.scale == LOG)


def parse_space(text: str) -> Dimension:
    """`KEY=LO:HI`, `KEY=LO:HI:log`, `KEY=LO:HI:int` or `KEY=a,b[,c...]`; raises ValueError
    naming what is wrong (an empty or inverted range, a single choice)."""
    key, separator, rest = text.partition("=")
    key, rest = key.strip(), rest.strip()
    if not separator or not key or not rest:
        raise ValueError(
            f"--space {text!r}: expected KEY=LO:HI[:log|:int] or KEY=a,b,c, e.g. "
            "trading.strategy.half_spread_bps=0.5:8"
        )
    parts = rest.split(":")
    if len(parts) in (2, 3) and "," not in rest:
        return _range(key, text, parts)
    _, choices = parse_set(f"{key}={rest}")
    if len(choices) < 2:
        raise ValueError(
            f"--space {text}: one value is not a search: give a range LO:HI or two or more "
            "choices (a fixed setting is --set)"
        )
    return Dimension(key, text, choices=choices)


def _range(key: str, text: str, parts: list[str]) -> Dimension:
    scale = parts[2].strip().lower() if len(parts) == 3 else LINEAR
    if len(parts) == 3 and scale not in (LOG, INT):
        raise ValueError(f"--space {text}: the scale is log or int, not {parts[2]!r}")
    try:
        low, high = (float(part) for part in parts[:2])
    except ValueError:
        raise ValueError(f"--space {text}: a range's ends are numbers (LO:HI)") from None
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"--space {text}: a range's ends are finite numbers")
    if low == high:
        raise ValueError(f"--space {text}: the range is empty ({parts[0]} to {parts[1]})")
    if low > high:
        raise ValueError(f"--space {text}: the range is inverted: {parts[0]} > {parts[1]} (LO:HI)")
    if scale == INT and not (low.is_integer() and high.is_integer()):
        raise ValueError(f"--space {text}: an int range's ends are whole numbers")
    if scale == LOG and low <= 0:
        raise ValueError(f"--space {text}: a log range is above 0 (LO > 0)")
    return Dimension(key, text, low, high, scale)


def check_space(
    settings: Settings, space: Sequence[Dimension], fixed: Mapping[str, object]
) -> None:
    """Each key once, and a setting that takes each end of its range and each of its choices
    (with the `fixed` settings beside it); raises ValueError or SettingsError naming it."""
    keys = [dimension.key for dimension in space]
    for key in keys:
        if keys.count(key) > 1:
            raise ValueError(f"--space {key} is given twice: one range or one list of choices")
        if key in fixed:
            raise ValueError(f"{key} is both searched (--space) and fixed (--set)")
    for dimension in space:
        ends = (_bound(dimension, dimension.low), _bound(dimension, dimension.high))
        values = dimension.choices or ends
        for value in values:
            settings.with_overrides(
                {**fixed, dimension.key: value}, {dimension.key: f"--space {dimension.key}"}
            )


def _bound(dimension: Dimension, value: float) -> object:
    return int(value) if dimension.scale == INT else value
