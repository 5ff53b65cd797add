"""The console on the real engine trading a book (three quoted symbols and their hedge on the
engine's own simulator, in the engine's process): the overview has a line a symbol with its
role and quotes, and `s` picks the symbol the detail panes show."""

from __future__ import annotations

import asyncio

from support.console_engine import ENGINE_WAIT_S, FAST
from support.sim_book import HEDGE, QUOTED, sim_book_engine
from support.waiting import eventually
from textual.widgets import OptionList

from console.app import ConsoleConfig, HftConsoleApp
from console.engine.handle import ShutdownPolicy
from console.engine.node_handle import EngineNodeHandle
from console.screens.symbol import SymbolScreen
from console.widgets.book import BookPane
from console.widgets.depth import DepthPane


def quoting_every_symbol(handle: EngineNodeHandle) -> bool:
    snapshot = handle.snapshot()
    if snapshot is None or snapshot.status.trading is None:
        return False
    return {order.symbol for order in snapshot.orders} >= set(QUOTED)


async def test_the_console_shows_the_engines_book_and_picks_a_symbol(laya_model, tmp_path):
    handle = EngineNodeHandle(sim_book_engine(laya_model, tmp_path / "journal.sqlite"), FAST)
    await asyncio.to_thread(handle.start)
    try:
        await eventually(lambda: quoting_every_symbol(handle), ENGINE_WAIT_S * 2)
        app = HftConsoleApp(handle, ConsoleConfig(), clock=lambda: 0.0)  # never stale
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause(0.5)
            lines = [strip.text for strip in app.query_one(BookPane)._strips]
            cells = [line.replace("▶", " ").split() for line in lines[1:]]
            assert [(row[0], row[1]) for row in cells] == [
                *((symbol, "quoted") for symbol in QUOTED),
                (HEDGE, "hedge"),
            ]
            # The detail panes show the first quoted symbol; `s` picks another.
            assert app.query_one(DepthPane).border_title == f"depth {QUOTED[0]}"
            await pilot.press("s")
            await pilot.pause()
            options = app.screen.query_one(OptionList)
            assert isinstance(app.screen, SymbolScreen)
            assert [options.get_option_at_index(i).id for i in range(options.option_count)] == [
                *QUOTED,
                HEDGE,
            ]
            await pilot.press("down", "enter")
            await pilot.pause(0.3)
            assert app.query_one(DepthPane).border_title == f"depth {QUOTED[1]}"
    finally:
        await asyncio.to_thread(handle.shutdown, ShutdownPolicy.FLATTEN)
