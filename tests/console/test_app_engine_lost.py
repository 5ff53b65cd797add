"""A dead engine is said at once: the real engine process killed by SIGKILL under the real
console, what that leaves unknown at the exchange, and quitting with exit status 1."""

from __future__ import annotations

import asyncio
import os
import signal
from dataclasses import replace

from console_scenarios import FakeEngineHandle
from support.console_engine import ENGINE_WAIT_S, FAST, sim_engine, sim_exchange  # noqa: F401
from support.waiting import eventually
from textual.widget import Widget

from console.app import ConsoleConfig, HftConsoleApp
from console.engine.handle import EngineLost, ShutdownPolicy
from console.engine.node_handle import EngineNodeHandle

DIED = EngineLost(
    "the engine process was killed by SIGKILL",
    "the exchange may still hold 4 orders and positions of +0.014 BTC, -0.2 ETH: check it",
)


def rows(pane: Widget) -> list[str]:
    return [pane.render_line(y).text.rstrip() for y in range(pane.size.height)]


def said(lines: list[str]) -> str:
    """Wrapped rows read as one text."""
    return " ".join(" ".join(lines).split())


async def test_an_engine_killed_by_sigkill_is_said_at_once_and_quitting_exits_1(
    sim,
    laya_model,
    tmp_path,
):
    config = sim_engine(sim, laya_model, tmp_path / "journal.sqlite")
    # Quotes that rest where they are: a requote (cancel, then place) could otherwise fall
    # between the last picture and the kill, and leave nothing open to report.
    strategy = replace(
        config.trading.strategies[0], requote_threshold_bps=1_000.0, requote_size_fraction=1.0
    )
    handle = EngineNodeHandle(
        replace(config, trading=replace(config.trading, strategies=(strategy,))), FAST
    )
    await asyncio.to_thread(handle.start)
    try:
        await eventually(lambda: handle.snapshot().status.trading.open_orders > 0, ENGINE_WAIT_S)
        app = HftConsoleApp(handle, ConsoleConfig(), clock=lambda: 0.0)  # never stale
        async with app.run_test(size=(160, 48), notifications=True) as pilot:
            await pilot.pause()
            assert app._status.lost is None
            os.kill(handle.pid, signal.SIGKILL)
            await eventually(lambda: app._status.lost is not None, ENGINE_WAIT_S)  # no key pressed
            await pilot.pause()
            last = handle.snapshot().status.trading
            assert last.exposed
            lost = EngineLost(
                "the engine process was killed by SIGKILL",
                f"the exchange may still hold {last.exposure}: check it",
            )
            assert handle.lost() == lost
            status = rows(app._status)
            assert "ENGINE DIED  the engine process was killed by SIGKILL" in status[0]
            assert f"the exchange may still hold {last.exposure}: check it." in said(status)
            assert "STALE" not in said(status) and "ACTIVE" not in said(status)
            events = [strip.text.rstrip() for strip in app._events.lines]
            assert str(lost) in said(events[-3:])
            assert [n.message for n in app._notifications] == [str(lost)]
            await pilot.press("q")  # nothing to stop or flatten: no dialog
            await pilot.pause()
        assert app.return_code == 1
        assert not handle.shutdown(ShutdownPolicy.FLATTEN).ok  # the launcher exits 1 too
    finally:
        await asyncio.to_thread(handle.shutdown, ShutdownPolicy.KEEP)


async def test_commands_to_a_dead_engine_send_nothing_and_say_why():
    handle = FakeEngineHandle(gone=DIED)
    app = HftConsoleApp(handle, ConsoleConfig(), clock=lambda: 0.0)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        status = rows(app._status)
        assert status[0] == " SIM  ENGINE DIED  the engine process was killed by SIGKILL"
        assert said(status[1:]) == (
            "the exchange may still hold 4 orders and positions of +0.014 BTC, -0.2 ETH: check "
            "it. q quits (exit status 1); the panes below are its last picture."
        )
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 1
    assert handle.commands == []
