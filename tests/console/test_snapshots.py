"""Screenshots of every pane and of the whole console at 80x24 and 160x48, compared with the
reviewed SVGs in __snapshots__/test_snapshots/. Fixed data, a frozen clock, no cursor blink.

After a deliberate change to the drawing: `pytest tests/console/test_snapshots.py
--snapshot-update`, then look at every changed SVG before committing it.
"""

from __future__ import annotations

import pytest
from console_scenarios import (
    FakeEngineHandle,
    PaneHost,
    book_snapshot,
    depth_view,
    fixed_events,
    fixed_snapshot,
    imbalance_view,
    kev_decisions,
    latency_view,
    nexo_depth_view,
    scorecard_view,
    status_view,
    verdicts_view,
    vram_view,
)
from textual.widgets import Input

from console.app import ConsoleConfig, HftConsoleApp
from console.engine.handle import EngineLost
from console.view import ConsoleSnapshot
from console.widgets.book import BookLines, BookPane
from console.widgets.depth import DepthPane
from console.widgets.events import EventsPane
from console.widgets.imbalance import ImbalancePane
from console.widgets.kev import KevPane
from console.widgets.latency import LatencyPane
from console.widgets.orders import OrdersPane
from console.widgets.scorecard import ScorecardPane
from console.widgets.status import StatusPane
from console.widgets.verdicts import VerdictsOn, VerdictsPane
from console.widgets.vram import VramPane
from engine.risk.events import TradingState
from engine.trading.config import TradingMode


def console(
    state: TradingState = TradingState.ACTIVE,
    mode: TradingMode = TradingMode.SIM,
    gone: EngineLost | None = None,
    snapshot: ConsoleSnapshot | None = None,
) -> HftConsoleApp:
    snapshot = snapshot or fixed_snapshot(state, mode)
    handle = FakeEngineHandle(snapshot, list(fixed_events()), gone=gone)
    return HftConsoleApp(handle, ConsoleConfig(), clock=lambda: 0.0)


def opening(keys: tuple[str, ...]):
    """Press `keys`, then stop any text cursor blinking so the screenshot is stable."""

    async def open_dialog(pilot) -> None:
        await pilot.press(*keys)
        await pilot.pause()
        for field in pilot.app.screen.query(Input):
            field.cursor_blink = False

    return open_dialog


PANES = {
    "status": (lambda: StatusPane("status", classes="pane"), status_view, (160, 5)),
    "depth": (lambda: DepthPane("depth", classes="pane"), depth_view, (46, 34)),
    "depth_large_tick": (lambda: DepthPane("depth", classes="pane"), nexo_depth_view, (46, 34)),
    "imbalance": (
        lambda: ImbalancePane("imbalance", classes="pane"),
        imbalance_view,
        (57, 16),
    ),
    "verdicts": (
        lambda: VerdictsPane("Laya verdicts", classes="pane"),
        lambda: VerdictsOn("BTCUSDT", verdicts_view()),
        (57, 18),
    ),
    "book": (
        lambda: BookPane("book", classes="pane"),
        lambda: BookLines(
            book_snapshot().status, book_snapshot().orders, book_snapshot().verdicts, "SOLUSDT"
        ),
        (116, 12),
    ),
    "latency": (lambda: LatencyPane("latency", classes="pane"), latency_view, (57, 11)),
    "vram": (lambda: VramPane("VRAM", classes="pane"), vram_view, (57, 8)),
    "vram_no_gpu": (
        lambda: VramPane("VRAM", classes="pane"),
        lambda: vram_view(available=False),
        (57, 8),
    ),
    "kev": (lambda: KevPane("Kev decisions", classes="pane"), kev_decisions, (57, 15)),
    "orders": (
        lambda: OrdersPane("orders and fills", classes="pane"),
        lambda: (fixed_snapshot().orders, fixed_snapshot().fills, status_view().contracts),
        (46, 8),
    ),
    "events": (lambda: EventsPane("events", 100, classes="pane"), fixed_events, (114, 10)),
    "scorecard": (
        lambda: ScorecardPane("Laya's scorecard", classes="pane"),
        scorecard_view,
        (114, 6),
    ),
}


@pytest.mark.parametrize("name", list(PANES))
def test_pane(snap_compare, name):
    make_pane, make_view, size = PANES[name]
    assert snap_compare(PaneHost(make_pane(), make_view()), terminal_size=size)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_console(snap_compare, size):
    assert snap_compare(console(), terminal_size=size)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_console_with_a_book_of_eight_quoted_symbols_and_a_hedge(snap_compare, size):
    assert snap_compare(console(snapshot=book_snapshot()), terminal_size=size)


def test_console_live_and_halted_80x24(snap_compare):
    assert snap_compare(console(TradingState.HALTED, TradingMode.LIVE), terminal_size=(80, 24))


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_console_after_the_engine_died(snap_compare, size):
    died = EngineLost(
        "the engine process was killed by SIGKILL",
        "the exchange may still hold 4 orders and positions of +0.014 BTC, -0.2 ETH: check it",
    )
    assert snap_compare(console(gone=died), terminal_size=size)


@pytest.mark.parametrize("keys", [("r",), ("q",), ("question_mark",)], ids=["risk", "quit", "help"])
def test_dialog_80x24(snap_compare, keys):
    assert snap_compare(console(), terminal_size=(80, 24), run_before=opening(keys))


def test_symbol_picker_80x24(snap_compare):
    book = console(snapshot=book_snapshot())
    assert snap_compare(book, terminal_size=(80, 24), run_before=opening(("s", "down")))
