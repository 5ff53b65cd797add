"""The console on the real engine trading a book (three quoted symbols and their hedge on the
engine's own simulator, in the engine's process): the overview has a line a symbol with its
role, quotes and weight in the net delta (Kev moves it), and `s` picks the symbol the detail
panes show."""

from __future__ import annotations

import asyncio
from dataclasses import replace

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
from engine.risk.commands import KevAction
from engine.trading.commands import Command, CommandSource, KevOrder


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


def weights(app: HftConsoleApp) -> dict[str, str]:
    """Each symbol's beta/ratio cell on the overview."""
    header, *rows = [strip.text for strip in app.query_one(BookPane)._strips]
    start = header.index("beta/ratio")
    return {row[2:].split()[0]: row[start : start + 10].strip() for row in rows}


async def test_a_kev_beta_and_hedge_ratio_show_on_the_book_overview(laya_model, tmp_path):
    """Kev's command (through the engine's desk, as its hub sends it) moves a quoted symbol's
    beta and the hedge ratio: their lines show the configured weight, an arrow and the new."""
    config = sim_book_engine(laya_model, tmp_path / "journal.sqlite")
    risk = replace(config.trading.risk, beta_band=(0.8, 1.2))
    handle = EngineNodeHandle(replace(config, trading=replace(config.trading, risk=risk)), FAST)
    await asyncio.to_thread(handle.start)
    try:
        await eventually(lambda: quoting_every_symbol(handle), ENGINE_WAIT_S * 2)
        app = HftConsoleApp(handle, ConsoleConfig())  # its own clock: the pane's budget runs
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause(0.5)
            assert weights(app) == dict.fromkeys((*QUOTED, HEDGE), "1")
            kev = KevOrder(KevAction.HOLD, hedge_ratio=0.75, beta=(QUOTED[1], 1.2))
            result = await handle.execute(Command(kev, CommandSource.KEV))
            assert result.ok, result.message
            moved = dict.fromkeys((*QUOTED, HEDGE), "1") | {QUOTED[1]: "1→1.2", HEDGE: "1→0.75"}
            await eventually(
                lambda: weights(app) == moved,
                ENGINE_WAIT_S,
                "the moved weights",
                explain=lambda: repr(weights(app)),
            )
    finally:
        await asyncio.to_thread(handle.shutdown, ShutdownPolicy.FLATTEN)
