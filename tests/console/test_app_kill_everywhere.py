"""The kill switch from every screen the console can push, whatever has focus. The screens are
found in `console.screens`, not listed, so a new one fails here until it is walked too."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
from console_scenarios import FakeEngineHandle
from textual.screen import Screen
from textual.widgets import Input

import console.screens
from console.app import ConsoleConfig, HftConsoleApp
from console.screens.confirm import ConfirmScreen
from console.screens.help import HelpScreen
from console.screens.overrides import OverridesScreen
from console.screens.quit import QuitScreen
from console.screens.rearm import RearmScreen
from console.screens.symbol import SymbolScreen
from console.widgets.status import StatusPane
from engine.risk.events import TradingState

OPENED_BY: dict[type[Screen] | None, tuple[TradingState, tuple[str, ...]]] = {
    None: (TradingState.ACTIVE, ()),  # the main screen
    ConfirmScreen: (TradingState.ACTIVE, ("f",)),
    QuitScreen: (TradingState.ACTIVE, ("q",)),
    RearmScreen: (TradingState.HALTED, ("a",)),
    OverridesScreen: (TradingState.ACTIVE, ("r",)),
    HelpScreen: (TradingState.ACTIVE, ("question_mark",)),
    SymbolScreen: (TradingState.ACTIVE, ("s",)),
}
"""Each screen the App pushes: the trading state it opens in and the keys that open it."""


def console_screens() -> set[type[Screen]]:
    """Every screen `console.screens` defines, but the bases of others."""
    defined: set[type[Screen]] = set()
    for module in pkgutil.iter_modules(console.screens.__path__):
        loaded = importlib.import_module(f"{console.screens.__name__}.{module.name}")
        defined |= {
            item
            for _, item in inspect.getmembers(loaded, inspect.isclass)
            if issubclass(item, Screen) and item.__module__ == loaded.__name__
        }
    return {
        screen
        for screen in defined
        if not any(other is not screen and issubclass(other, screen) for other in defined)
    }


def test_every_screen_the_console_defines_is_walked():
    assert console_screens() == set(OPENED_BY) - {None}, "a new screen: add how it opens"


def status_row(app: HftConsoleApp) -> str:
    return app.screen_stack[0].query_one(StatusPane).render_line(0).text


@pytest.mark.parametrize("keymap", [{}, {"console.kill": "K"}], ids=["k", "keymap-K"])
@pytest.mark.parametrize(
    "screen", list(OPENED_BY), ids=[screen.__name__ if screen else "main" for screen in OPENED_BY]
)
async def test_the_kill_key_halts_from_every_screen_whatever_has_focus(screen, keymap):
    state, keys = OPENED_BY[screen]
    kill = keymap.get("console.kill", "k")
    handle = FakeEngineHandle()
    handle.set_state(state)
    app = HftConsoleApp(handle, ConsoleConfig(keymap=keymap), clock=lambda: 0.0)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*keys)
        await pilot.pause()
        shown = app.screen
        assert shown is app.screen_stack[0] if screen is None else isinstance(shown, screen)
        focus = [None, *shown.focus_chain]
        for number, widget in enumerate(focus, 1):
            handle.set_state(state)  # open again what the last kill closed
            app.poll()
            shown.set_focus(widget)
            await pilot.pause()
            where = f"{type(shown).__name__}, focus on {widget!r}"
            typed = {field.id: field.value for field in shown.query(Input)}
            await pilot.press(kill)
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert handle.commands == [("kill",)] * number, where
            assert "HALTED" in status_row(app), where
            assert app.screen is shown, where
            assert {field.id: field.value for field in shown.query(Input)} == typed, where
