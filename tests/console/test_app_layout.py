"""Where things land on screen: `v` at both sizes, notifications that leave the status and the
newest events in sight, event lines that wrap instead of being cut."""

from __future__ import annotations

import pytest
from console_scenarios import AT_NS, FakeEngineHandle, fixed_events
from textual.widgets._toast import Toast

from console.app import ConsoleConfig, HftConsoleApp
from console.view import ConsoleEvent, EventKind, Severity

FULL, COMPACT = (160, 48), (80, 24)
LONG = (
    "ETHUSDT buy 0.5 ETH denied (POSITION_LIMIT): ETHUSDT position could reach +0.7 ETH, beyond "
    "max position 0.6 ETH; and the rest of a long reason that no pane is wide enough for"
)


def console(handle: FakeEngineHandle) -> HftConsoleApp:
    return HftConsoleApp(handle, ConsoleConfig(), clock=lambda: 0.0)


def shown_panes(app: HftConsoleApp) -> list[str]:
    return [pane_id for pane_id, pane in app._secondary.items() if pane.region.area]


async def test_v_at_the_full_size_shows_each_pane_large_in_turn_then_all_again():
    app = console(FakeEngineHandle())
    async with app.run_test(size=FULL) as pilot:
        await pilot.pause()
        every = list(app._secondary)
        in_the_grid = [pane for pane in every if pane != "scorecard"]  # shown on `v` alone
        assert shown_panes(app) == in_the_grid
        seen = []
        for _ in every:
            await pilot.press("v")
            await pilot.pause()
            [shown] = shown_panes(app)
            seen.append(shown)
            assert app._secondary[shown].region.width > 100  # large: all but the ladder
        assert seen == every
        await pilot.press("v")
        await pilot.pause()
        assert shown_panes(app) == in_the_grid


async def test_v_when_compact_goes_round_the_panes():
    app = console(FakeEngineHandle())
    async with app.run_test(size=COMPACT) as pilot:
        await pilot.pause()
        seen = []
        for _ in range(len(app._secondary) + 1):
            [shown] = shown_panes(app)
            seen.append(shown)
            await pilot.press("v")
            await pilot.pause()
    assert seen == [*app._secondary, "book"]


@pytest.mark.parametrize("size", [FULL, COMPACT], ids=["160x48", "80x24"])
async def test_notifications_leave_the_status_and_the_events_pane_in_sight(size):
    handle = FakeEngineHandle(events=list(fixed_events()))
    app = console(handle)
    async with app.run_test(size=size, notifications=True) as pilot:
        if size == COMPACT:
            while shown_panes(app) != ["events"]:
                await pilot.press("v")
        app.notify("KILL: venue confirms no open orders and flat after 5.9 ms (1 attempt)")
        app.notify("flatten: not confirmed flat after 12,000 ms", severity="error")
        app.notify("engine not answering: the engine process was killed by SIGKILL")
        await pilot.pause(0.3)
        toasts = list(app.screen.query(Toast))
        assert len(toasts) == 3
        for toast in toasts:
            assert not toast.region.overlaps(app._events.region)
            assert not toast.region.overlaps(app._status.region)


@pytest.mark.parametrize("size", [FULL, COMPACT], ids=["160x48", "80x24"])
async def test_an_event_too_long_for_the_pane_wraps_and_stays_whole_after_a_resize(size):
    handle = FakeEngineHandle(events=list(fixed_events()))
    app = console(handle)
    async with app.run_test(size=size) as pilot:
        while shown_panes(app) and "events" not in shown_panes(app):
            await pilot.press("v")
        handle.events.append(ConsoleEvent(7, AT_NS, EventKind.DENIAL, Severity.WARNING, LONG))
        app.poll()
        await pilot.pause()
        for resize in (size, COMPACT if size == FULL else FULL, size):
            await pilot.resize_terminal(*resize)
            while shown_panes(app) and "events" not in shown_panes(app):
                await pilot.press("v")
            await pilot.pause()
            pane = app._events
            width = pane.scrollable_content_region.width
            lines = [strip.text.rstrip() for strip in pane.lines]
            assert all(len(line) <= width for line in lines), (resize, lines)
            start = max(i for i, line in enumerate(lines) if " denial " in line)
            words = " ".join(line.split("denial", 1)[-1] for line in lines[start:]).split()
            assert " ".join(words) == LONG, resize
