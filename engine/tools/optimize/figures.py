"""What a settings point made over a stretch of market time, and how it is judged: the objective
(net PnL per hour by default) under a market maker's constraints (a floor on the quotes' 1 s
markout, a cap on the drawdown)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from engine.tools.backtest.metrics import SessionMetrics

OBJECTIVES = ("net-per-hour", "net")


@dataclass(frozen=True, slots=True)
class WindowFigures:
    """One point's runs over a stretch of market time (each recording's part of it), together.
    Money in the quote coin (USDT)."""

    hours: float
    """Market hours traded, summed over the recordings."""
    net: float
    fills: int
    quote_fills: int
    markout_1s_bps: float
    """The mean 1 s markout of the quotes' fills (NaN without one)."""
    max_drawdown: float
    """The largest fall of the net PnL from its high, marked to the mid (>= 0)."""

    @property
    def net_per_hour(self) -> float:
        return self.net / self.hours if self.hours > 0 else 0.0

    def as_json(self) -> dict[str, object]:
        """NaN as None: the study file is JSON."""
        values = asdict(self)
        return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in values.items()}

    @classmethod
    def from_json(cls, values: dict[str, object]) -> WindowFigures:
        markout = values["markout_1s_bps"]
        return cls(**{**values, "markout_1s_bps": math.nan if markout is None else markout})  # type: ignore[arg-type]


def window_figures(runs: Sequence[SessionMetrics]) -> WindowFigures:
    return combined(
        [
            WindowFigures(
                hours=run.hours,
                net=run.net,
                fills=run.fill_count,
                quote_fills=run.quote_fills,
                markout_1s_bps=run.markout(1_000).mean_bps,
                max_drawdown=max_drawdown(run.series.equity),
            )
            for run in runs
        ]
    )


def combined(parts: Sequence[WindowFigures]) -> WindowFigures:
    """Several stretches as one: sums, the markout weighted by the quote fills, the worst
    drawdown."""
    marked = [part for part in parts if part.quote_fills and not math.isnan(part.markout_1s_bps)]
    weight = sum(part.quote_fills for part in marked)
    return WindowFigures(
        hours=sum(part.hours for part in parts),
        net=sum(part.net for part in parts),
        fills=sum(part.fills for part in parts),
        quote_fills=sum(part.quote_fills for part in parts),
        markout_1s_bps=(
            sum(part.markout_1s_bps * part.quote_fills for part in marked) / weight
            if weight
            else math.nan
        ),
        max_drawdown=max((part.max_drawdown for part in parts), default=0.0),
    )


def max_drawdown(equity: np.ndarray) -> float:
    values = equity[np.isfinite(equity)]
    if not len(values):
        return 0.0
    return float(np.max(np.maximum.accumulate(values) - values))


@dataclass(frozen=True, slots=True)
class Goal:
    """The objective, maximised, and the constraints a point must meet to be chosen."""

    objective: str = "net-per-hour"
    min_markout_1s_bps: float | None = None
    max_drawdown: float | None = None

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise ValueError(f"--objective is one of {', '.join(OBJECTIVES)}")

    def value(self, figures: WindowFigures) -> float:
        return figures.net_per_hour if self.objective == "net-per-hour" else figures.net

    def violations(self, figures: WindowFigures) -> dict[str, float]:
        """By how much each constraint is missed (> 0), Optuna's way; a point without a quote
        fill has no markout to floor."""
        found = {}
        if self.min_markout_1s_bps is not None:
            markout = figures.markout_1s_bps
            found["markout_1s"] = 0.0 if math.isnan(markout) else self.min_markout_1s_bps - markout
        if self.max_drawdown is not None:
            found["drawdown"] = figures.max_drawdown - self.max_drawdown
        return found

    def met(self, figures: WindowFigures) -> bool:
        return all(missed <= 0 for missed in self.violations(figures).values())
