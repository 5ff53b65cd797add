"""Laya's scorecard pane in the console: `v` brings it beside the ladder with a line per
symbol (Laya's AUC against the rule's and the shadow's, the sparkline of Laya's edge), and a
new picture from the engine redraws it."""

from __future__ import annotations

import dataclasses

from console_scenarios import FakeEngineHandle, fixed_events, fixed_snapshot, scorecard_view

from console.app import ConsoleConfig, HftConsoleApp
from console.widgets.latency import SPARK_LEVELS
from console.widgets.scorecard import edge_cells

COMPACT = (80, 24)


def pane_text(app: HftConsoleApp) -> list[str]:
    pane = app._secondary["scorecard"]
    return [pane.render_line(y).text.rstrip() for y in range(pane.size.height)]


async def test_v_shows_the_scorecard_and_it_follows_the_engine():
    handle = FakeEngineHandle(fixed_snapshot(), list(fixed_events()))
    now = [0.0]
    app = HftConsoleApp(handle, ConsoleConfig(), clock=lambda: now[0])
    async with app.run_test(size=COMPACT) as pilot:
        await pilot.pause()
        assert not app._secondary["scorecard"].region.area
        for _ in range(list(app._secondary).index("scorecard")):
            await pilot.press("v")
        await pilot.pause()
        assert app._secondary["scorecard"].region.area
        lines = pane_text(app)
        assert lines[0] == "AUC ask/bid 15 min: Laya vs rule"
        btc = next(line for line in lines if line.startswith("BTCUSDT"))
        assert btc.startswith("BTCUSDT  .79/.70 vs .75/.70")
        assert btc.rstrip()[-1] in SPARK_LEVELS
        assert "shadow laya-candidate.onnx" in lines
        view = scorecard_view()
        fault = dataclasses.replace(view, shadow_fault="RuntimeError: the shadow's GPU was lost")
        handle.current = dataclasses.replace(fixed_snapshot(), scorecard=fault, at_ns=1)
        now[0] = 10.0  # past the pane's redraw budget
        await pilot.pause(0.3)
        assert any(line.startswith("shadow stopped: RuntimeError") for line in pane_text(app))


def test_the_sparkline_shows_laya_ahead_or_behind_the_rule():
    cells = edge_cells(((0.70, 0.60), (0.60, 0.65), (float("nan"), 0.6), (0.7, 0.7)), 10)
    assert cells == [
        (SPARK_LEVELS[7], True),
        (SPARK_LEVELS[3], False),
        (" ", True),
        (SPARK_LEVELS[0], True),
    ]
    assert len(edge_cells(((0.7, 0.6),) * 50, 8)) == 8
