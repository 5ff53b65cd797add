"""A point's figures over several recordings' runs together, and how the goal judges them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.tools.optimize.figures import Goal, WindowFigures, combined, max_drawdown


def figures(net=1.0, hours=0.5, quote_fills=2, markout=1.0, drawdown=0.0):
    return WindowFigures(hours, net, quote_fills + 1, quote_fills, markout, drawdown)


def test_the_drawdown_is_the_largest_fall_from_a_high():
    equity = np.array([np.nan, 0.0, 2.0, -1.0, 3.0, 1.5, np.nan])
    assert max_drawdown(equity) == 3.0
    assert max_drawdown(np.array([np.nan])) == 0.0


def test_runs_together_sum_weigh_the_markout_by_fills_and_keep_the_worst_drawdown():
    together = combined(
        [
            figures(net=2.0, hours=0.5, quote_fills=1, markout=4.0, drawdown=1.0),
            figures(net=-1.0, hours=1.0, quote_fills=3, markout=0.0, drawdown=2.5),
            figures(net=0.0, hours=0.5, quote_fills=0, markout=math.nan, drawdown=0.0),
        ]
    )
    assert (together.net, together.hours, together.quote_fills) == (1.0, 2.0, 4)
    assert together.markout_1s_bps == 1.0 and together.max_drawdown == 2.5
    assert together.net_per_hour == 0.5


def test_the_goal_maximises_the_objective_under_its_constraints():
    goal = Goal("net-per-hour", min_markout_1s_bps=0.5, max_drawdown=2.0)
    assert goal.value(figures(net=1.0, hours=0.5)) == 2.0
    assert Goal("net").value(figures(net=1.0, hours=0.5)) == 1.0
    assert goal.violations(figures(markout=0.0, drawdown=3.0)) == {
        "markout_1s": 0.5,
        "drawdown": 1.0,
    }
    assert not goal.met(figures(markout=0.0))
    assert goal.met(figures(markout=1.0, drawdown=2.0))
    # No quote fill: no markout to floor.
    assert goal.met(figures(quote_fills=0, markout=math.nan))
    with pytest.raises(ValueError, match="--objective is one of net-per-hour, net"):
        Goal("sharpe")


def test_figures_keep_nan_through_the_study_files_json():
    found = figures(quote_fills=0, markout=math.nan)
    assert found.as_json()["markout_1s_bps"] is None
    back = WindowFigures.from_json(found.as_json())
    assert math.isnan(back.markout_1s_bps) and back.net == found.net
