"""What the console does with what the engine hands it: snapshots, events in order, a stale
or failing engine, the two layouts and the symbol picked for the detail panes."""

from __future__ import annotations

from dataclasses import replace

import pytest
from console_scenarios import (
    AT_NS,
    BOOK_QUOTED,
    FakeEngineHandle,
    book_snapshot,
    fixed_events,
    fixed_snapshot,
)
from textual.widgets import Footer, OptionList

from console.app import ConsoleConfig, HftConsoleApp
from console.bandwidth import BUDGETS, Bandwidth
from console.screens.symbol import SymbolScreen
from console.view import ConsoleEvent, EventKind, Severity
from console.widgets.book import BookPane
from console.widgets.depth import DepthPane
from console.widgets.events import EventsPane
from console.widgets.imbalance import ImbalancePane
from console.widgets.latency import LatencyPane
from console.widgets.status import StatusPane
from console.widgets.verdicts import VerdictsPane
from engine.risk.events import TradingState


class ManualClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def console(handle: FakeEngineHandle, clock=lambda: 0.0, **config) -> HftConsoleApp:
    return HftConsoleApp(handle, ConsoleConfig(**config), clock=clock)


def log_text(app: HftConsoleApp) -> list[str]:
    return [strip.text.rstrip() for strip in app.query_one(EventsPane).lines]


async def test_events_are_shown_in_order_each_once_after_a_gap_line():
    handle = FakeEngineHandle(events=list(fixed_events()), missed_before=3)
    app = console(handle)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        first = log_text(app)
        assert first[0] == "… 3 events were dropped before the console read them"
        assert [line.split(maxsplit=2)[2] for line in first[1:]] == [
            event.text for event in fixed_events()
        ]
        handle.events.append(
            ConsoleEvent(7, AT_NS, EventKind.DENIAL, Severity.WARNING, "ETHUSDT sell denied")
        )
        app.poll()
        app.poll()
        await pilot.pause()
        lines = log_text(app)
    assert lines[:-1] == first
    assert lines[-1].endswith("denial  ETHUSDT sell denied")


async def test_a_failing_engine_marks_the_screen_stale_and_the_console_keeps_running():
    handle = FakeEngineHandle()
    app = console(handle)
    async with app.run_test(size=(160, 48)) as pilot:
        handle.fail_snapshot = ConnectionError("engine thread gone")
        app.poll()
        await pilot.pause()
        status = app.query_one(StatusPane)
        assert status.problem == "engine not answering: ConnectionError: engine thread gone"
        assert "STALE: engine not answering" in status.render_line(0).text
        handle.fail_snapshot = None
        app.poll()
        await pilot.pause()
        assert status.problem == ""
        assert app.is_running


async def test_a_snapshot_that_stops_moving_is_marked_stale():
    clock = ManualClock()
    handle = FakeEngineHandle()
    app = console(handle, clock=clock, stale_after_s=3.0)
    async with app.run_test(size=(160, 48)) as pilot:
        status = app.query_one(StatusPane)
        clock.now += 2.0
        app.poll()
        assert status.problem == ""
        clock.now += 2.0
        app.poll()
        assert status.problem == "no new snapshot for 4 s"
        handle.current = replace(handle.current, at_ns=AT_NS + 4_000_000_000)
        app.poll()
        await pilot.pause()
        assert status.problem == ""


async def test_an_unchanged_snapshot_is_not_drawn_again():
    handle = FakeEngineHandle()
    app = console(handle)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        depth = app.query_one(DepthPane)
        shown = depth.view
        handle.current = replace(handle.current, at_ns=AT_NS + 50_000_000)
        app.poll()
        await pilot.pause()
        # A new snapshot object with an equal depth view: the pane keeps the one it has.
        assert depth.view is shown


async def test_the_compact_layout_shows_one_pane_beside_the_ladder_and_v_cycles():
    app = console(FakeEngineHandle())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.has_class("-compact")
        shown = [pane.id for pane in app.query(".secondary") if pane.display]
        assert shown == ["book"]
        assert app.query_one("#depth").display
        for _ in range(2):  # the imbalance, then the latency
            await pilot.press("v")
        await pilot.pause()
        assert [pane.id for pane in app.query(".secondary") if pane.display] == ["latency"]
        # Drawn on being shown, though its view arrived while it was hidden.
        assert app.query_one(LatencyPane).render_line(0).text.startswith("stage")
        assert app.query_one(Footer).compact


async def test_the_full_layout_shows_every_pane():
    app = console(FakeEngineHandle())
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert not app.has_class("-compact")
        panes = [pane for pane in app.query(".pane") if pane.id != "scorecard"]
        assert len(panes) == 10
        assert all(pane.display and pane.size.height > 0 for pane in panes)
        assert not app.query_one("#scorecard").region.area  # Laya's scorecard: `v` shows it
        assert app.check_action("next_pane", ()) is True  # v: one pane large (test_app_layout)


@pytest.mark.parametrize("size", [(119, 48), (160, 39)])
async def test_anything_below_the_full_size_is_compact(size):
    app = console(FakeEngineHandle())
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        assert app.has_class("-compact")


async def test_a_terminal_resize_switches_the_layout():
    app = console(FakeEngineHandle())
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert app.has_class("-compact")
        await pilot.resize_terminal(160, 48)
        await pilot.pause()
        assert not app.has_class("-compact")


def detail_symbols(app: HftConsoleApp) -> tuple[str, str, str]:
    """The symbols depth, imbalance and Laya's verdicts show."""
    return (
        app.query_one(DepthPane).view.symbol,
        app.query_one(ImbalancePane).view.symbol,
        app.query_one(VerdictsPane).view.symbol,
    )


async def test_s_picks_the_symbol_the_detail_panes_show_from_the_book():
    handle = FakeEngineHandle(book_snapshot())
    app = console(handle)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert detail_symbols(app) == ("BTCUSDT", "BTCUSDT", "BTCUSDT")
        await pilot.press("s")
        await pilot.pause()
        picker = app.screen
        assert isinstance(picker, SymbolScreen)
        options = picker.query_one(OptionList)
        assert [options.get_option_at_index(i).id for i in range(options.option_count)] == [
            *BOOK_QUOTED,
            "ETHUSDT",
        ]
        assert options.highlighted == 0  # the symbol shown now
        await pilot.press("down", "down", "enter")
        await pilot.pause()
        assert not isinstance(app.screen, SymbolScreen)
        assert detail_symbols(app) == ("XRPUSDT", "XRPUSDT", "XRPUSDT")
        assert app.query_one(DepthPane).border_title == "depth XRPUSDT"
        book = [strip.text for strip in app.query_one(BookPane)._strips]
        assert book[3].startswith("▶ XRPUSDT")  # the overview marks it
        # Escape leaves the pick as it was.
        await pilot.press("s", "down", "escape")
        await pilot.pause()
        assert detail_symbols(app) == ("XRPUSDT", "XRPUSDT", "XRPUSDT")


async def test_the_pick_survives_snapshots_and_falls_back_to_the_first_symbol_when_it_goes():
    handle = FakeEngineHandle(book_snapshot())
    app = console(handle)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("s", "up", "enter")  # round to the last: the hedge
        await pilot.pause()
        assert detail_symbols(app) == ("ETHUSDT", "ETHUSDT", "ETHUSDT")
        handle.current = replace(book_snapshot(), at_ns=AT_NS + 1_000_000_000)
        app.poll()
        await pilot.pause()
        assert detail_symbols(app) == ("ETHUSDT", "ETHUSDT", "ETHUSDT")
        handle.current = book_snapshot(picked_missing="ETHUSDT")
        app.poll()
        await pilot.pause()
        assert detail_symbols(app) == ("BTCUSDT", "BTCUSDT", "BTCUSDT")


async def test_s_is_off_with_a_single_symbol():
    snapshot = fixed_snapshot()
    status = replace(snapshot.status, feeds=snapshot.status.feeds[:1])
    app = console(FakeEngineHandle(replace(snapshot, status=status)))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert app.check_action("pick_symbol", ()) is False
        await pilot.press("s")
        await pilot.pause()
        assert not isinstance(app.screen, SymbolScreen)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"refresh_hz": 0.5}, "refresh_hz"),
        ({"refresh_hz": 100}, "refresh_hz"),
        ({"stale_after_s": 0}, "stale_after_s"),
        ({"event_log_lines": 0}, "event_log_lines"),
        ({"keymap": {"console.kill": " "}}, "no key"),
        (
            {"keymap": {"console.next_symbol": "S"}},
            "console.next_symbol is now console.pick_symbol",
        ),
        ({"bandwidth": "dialup"}, "bandwidth must be one of 'full', 'low'"),
    ],
)
def test_config_is_validated(config, message):
    with pytest.raises(ValueError, match=message):
        ConsoleConfig(**config)


def moved(snapshot, *, size: float = 9.999, daily: float = 1.0, state=None):
    """`snapshot` with the ladder's best bid resized and the day's PnL moved; `state` set."""
    depth = snapshot.depth[0]
    best = depth.bids[0]._replace(size=size)
    trading = snapshot.status.trading
    trading = replace(trading, pnl=replace(trading.pnl, daily=daily), state=state or trading.state)
    return replace(
        snapshot,
        depth=(replace(depth, bids=(best, *depth.bids[1:])), *snapshot.depth[1:]),
        status=replace(snapshot.status, trading=trading),
    )


async def test_ordinary_changes_wait_for_the_budget_and_a_state_change_does_not():
    clock = ManualClock()
    handle = FakeEngineHandle()
    app = console(handle, clock=clock)
    budget = BUDGETS[Bandwidth.FULL]
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        depth, status = app.query_one(DepthPane), app.query_one(StatusPane)
        first = handle.current
        assert depth.view is first.depth[0] and status.view is first.status

        handle.current = moved(first)
        clock.now += budget.ladder_s / 2
        app.poll()
        assert depth.view is first.depth[0] and status.view is first.status  # held back

        clock.now += budget.ladder_s / 2
        app.poll()
        assert depth.view is handle.current.depth[0]  # its budget has passed
        assert status.view is first.status  # the status's has not (status_s > ladder_s)
        clock.now += budget.status_s
        app.poll()
        assert status.view is handle.current.status

        handle.current = moved(handle.current, daily=2.0, state=TradingState.HALTED)
        clock.now += 0.01
        app.poll()
        await pilot.pause()
        assert status.view is handle.current.status  # at once: the state changed
        assert "HALTED" in status.render_line(0).text


def with_sizes(snapshot, **sizes: float):
    """`snapshot` with those positions resized (a fill)."""
    trading = snapshot.status.trading
    positions = tuple(
        position._replace(size=sizes.get(position.symbol, position.size))
        for position in trading.positions
    )
    return replace(
        snapshot, status=replace(snapshot.status, trading=replace(trading, positions=positions))
    )


@pytest.mark.parametrize(
    ("size", "book", "fill", "at_once"),
    [
        ((160, 48), False, {"BTCUSDT": 0.016}, True),  # the pair's sizes are listed
        ((80, 24), True, {"BTCUSDT": 0.016}, False),  # a book's are counted: the same count
        ((80, 24), True, {"XRPUSDT": 50.0}, True),  # a new position: the count moves
        ((80, 24), True, {"BTCUSDT": -0.002}, True),  # a long turned short
    ],
)
async def test_a_fill_is_at_once_in_the_status_bar_where_the_positions_row_shows_it(
    size, book, fill, at_once
):
    clock = ManualClock()
    first = book_snapshot() if book else fixed_snapshot()
    handle = FakeEngineHandle(first)
    app = console(handle, clock=clock)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        status = app.query_one(StatusPane)
        counted = "positions:" in status.render_line(2).text
        assert counted == book
        handle.current = with_sizes(first, **fill)
        clock.now += 0.01
        app.poll()
        assert (status.view is handle.current.status) == at_once


async def test_low_bandwidth_draws_in_the_terminals_colours_and_holds_changes_longer():
    clock = ManualClock()
    handle = FakeEngineHandle()
    app = console(handle, clock=clock, bandwidth="low")
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert app.current_theme.ansi
        depth = app.query_one(DepthPane)
        handle.current = moved(handle.current)
        clock.now += BUDGETS[Bandwidth.FULL].ladder_s
        app.poll()
        assert depth.view is not handle.current.depth[0]
        clock.now += BUDGETS[Bandwidth.LOW].ladder_s
        app.poll()
        assert depth.view is handle.current.depth[0]


def event(event_id: int, kind: EventKind, text: str) -> ConsoleEvent:
    return ConsoleEvent(event_id, AT_NS, kind, Severity.INFO, text)


async def test_routine_events_and_fills_wait_for_the_next_and_a_denial_takes_them_in_order():
    """A fill is in the orders pane and the status bar at once; its line in the event log may
    wait, as Laya's actions do: a book of symbols fills several times a second."""
    clock = ManualClock()
    handle = FakeEngineHandle()
    app = console(handle, clock=clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        handle.events.append(event(0, EventKind.SYSTEM, "Laya CANCEL_ALL on BTCUSDT: cool down"))
        handle.events.append(event(1, EventKind.FILL, "BTCUSDT buy 0.002 @ 60,000.0"))
        app.poll()
        await pilot.pause()
        assert log_text(app) == []  # routine: held for the budget
        denial = ConsoleEvent(2, AT_NS, EventKind.DENIAL, Severity.WARNING, "ETHUSDT denied")
        handle.events.append(denial)
        app.poll()
        await pilot.pause()
        assert [line.split(maxsplit=2)[2] for line in log_text(app)] == [
            "Laya CANCEL_ALL on BTCUSDT: cool down",
            "BTCUSDT buy 0.002 @ 60,000.0",
            "ETHUSDT denied",
        ]
        handle.events.append(event(3, EventKind.FILL, "ETHUSDT sell 0.2 @ 3,000.1"))
        app.poll()
        clock.now += BUDGETS[Bandwidth.FULL].lists_s
        app.poll()
        await pilot.pause()
        assert log_text(app)[-1].endswith("ETHUSDT sell 0.2 @ 3,000.1")


async def test_on_ready_is_called_once_the_first_frame_is_up():
    ready: list[bool] = []
    app = HftConsoleApp(FakeEngineHandle(), ConsoleConfig(), on_ready=lambda: ready.append(True))
    async with app.run_test() as pilot:
        await pilot.pause()
        assert ready == [True]


async def test_x_stands_the_picked_symbol_aside_and_lets_a_paused_one_back():
    handle = FakeEngineHandle(book_snapshot())
    app = console(handle)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        shown = 0  # the list opens on the symbol shown
        for symbol in ("SOLUSDT", "AVAXUSDT"):  # AVAXUSDT is stood aside in the book
            picked = BOOK_QUOTED.index(symbol)
            await pilot.press("s", *["down"] * (picked - shown), "enter", "x")
            await pilot.pause(0.2)
            shown = picked
    assert handle.commands == [("pause_symbol", "SOLUSDT"), ("resume_symbol", "AVAXUSDT")]
