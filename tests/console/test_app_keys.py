"""Every key of the console against `FakeEngineHandle`: the right command, the right dialog,
and input checked before anything is sent."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import pytest
from console_scenarios import OVERRIDES, FakeEngineHandle, book_snapshot
from textual.widgets import Button, Input, Static

from console.app import COMMAND_NOTE_S, ConsoleConfig, HftConsoleApp
from console.engine.handle import ShutdownPolicy
from console.keymap import CONSOLE_BINDINGS
from console.screens.confirm import ConfirmScreen
from console.screens.help import HelpScreen
from console.screens.overrides import OverridesScreen
from console.screens.quit import QuitScreen
from console.screens.rearm import RearmScreen
from console.widgets.status import StatusPane
from engine.risk.events import TradingState
from engine.risk.limits import OverrideBounds
from engine.risk.overrides import RiskOverrides
from engine.trading.commands import CommandResult

SIZE = (80, 24)
"""The compact layout: the keys are the same, and it draws less, so the tests run faster."""


def console(handle: FakeEngineHandle, **config) -> HftConsoleApp:
    return HftConsoleApp(handle, ConsoleConfig(**config), clock=lambda: 0.0)


async def settle(app: HftConsoleApp, pilot) -> None:
    """Let sent commands finish and their answers reach the screen."""
    await app.workers.wait_for_complete()
    await pilot.pause()


def notices(app: HftConsoleApp) -> list[str]:
    return [notification.message for notification in app._notifications]


def on_the_main_screen(app: HftConsoleApp) -> bool:
    return app.screen is app.screen_stack[0]


def asking_to_quit(app: HftConsoleApp) -> bool:
    return isinstance(app.screen, QuitScreen)


def exited(app: HftConsoleApp) -> bool:
    return not app.is_running


def running(app: HftConsoleApp) -> bool:
    return app.is_running


def notice(text: str) -> Callable[[HftConsoleApp], bool]:
    return lambda app: text in notices(app)


def notice_containing(fragment: str) -> Callable[[HftConsoleApp], bool]:
    return lambda app: any(fragment in text for text in notices(app))


@dataclass(frozen=True)
class KeyCase:
    """Keys pressed on a console whose engine is in `state` (None: the handle's own, active
    with positions), the commands the engine gets, and what holds on screen once they settle."""

    keys: tuple[str, ...]
    commands: list[tuple[object, ...]]
    state: TradingState | None = None
    exposed: bool = True
    results: Mapping[str, CommandResult] = field(default_factory=dict)
    shows: tuple[Callable[[HftConsoleApp], bool], ...] = ()
    opens: type | None = None
    """The dialog the first key opens, checked before the other keys are pressed."""


KEY_CASES = {
    "p-pauses-an-active-engine": KeyCase(("p",), [("pause",)]),
    "p-resumes-a-paused-engine": KeyCase(("p",), [("resume",)], TradingState.PAUSED),
    "p-when-halted-sends-nothing-and-points-to-re-arm": KeyCase(
        ("p",), [], TradingState.HALTED, shows=(notice_containing("Re-arm with a"),)
    ),
    "f-then-y-flattens": KeyCase(("f", "y"), [("flatten",)]),
    "x-stands-the-symbol-shown-aside": KeyCase(("x",), [("pause_symbol", "BTCUSDT")]),
    "k-kills-at-once-without-a-dialog": KeyCase(("k",), [("kill",)], shows=(on_the_main_screen,)),
    "f-asks-first-and-n-sends-nothing": KeyCase(
        ("f", "n"), [], opens=ConfirmScreen, shows=(on_the_main_screen,)
    ),
    "k-kills-from-inside-a-confirmation-dialog": KeyCase(
        ("f", "k"), [("kill",)], opens=ConfirmScreen
    ),
    "q-with-open-positions-asks-and-escape-stays": KeyCase(
        ("q", "escape"), [], opens=QuitScreen, shows=(running, on_the_main_screen)
    ),
    "a-refused-command-is-reported-as-an-error": KeyCase(
        ("p",),
        [("pause",)],
        results={"pause": CommandResult("pause", False, "halted is latched")},
        shows=(notice("pause: halted is latched"),),
    ),
    "a-when-not-halted-opens-nothing": KeyCase(("a",), [], shows=(on_the_main_screen,)),
    "escape-leaves-the-rearm-dialog-without-a-command": KeyCase(
        ("a", *"REA", "escape"), [], TradingState.HALTED, shows=(on_the_main_screen,)
    ),
    "q-then-f-shuts-down-flattening-and-exits": KeyCase(
        ("q", "f"), [("shutdown", ShutdownPolicy.FLATTEN)], shows=(exited,)
    ),
    "q-then-l-shuts-down-keeping-positions-and-exits": KeyCase(
        ("q", "l"), [("shutdown", ShutdownPolicy.KEEP)], shows=(exited,)
    ),
    "q-when-flat-shuts-down-and-exits-without-asking": KeyCase(
        ("q",),
        [("shutdown", ShutdownPolicy.FLATTEN)],
        TradingState.ACTIVE,
        exposed=False,
        shows=(exited,),
    ),
    "a-refused-shutdown-keeps-the-console-open": KeyCase(
        ("q",),
        [("shutdown", ShutdownPolicy.FLATTEN)],
        TradingState.ACTIVE,
        exposed=False,
        results={"shutdown": CommandResult("shutdown", False, "flatten timed out")},
        shows=(running, notice("shutdown: flatten timed out")),
    ),
    "ctrl-c-asks-to-quit-like-q": KeyCase(("ctrl+c",), [], shows=(asking_to_quit,)),
    "ctrl-q-goes-through-the-same-question": KeyCase(("ctrl+q",), [], shows=(asking_to_quit,)),
}


@pytest.mark.parametrize("case", KEY_CASES.values(), ids=KEY_CASES.keys())
async def test_keys_send_their_command_and_leave_the_screen_as_they_should(case: KeyCase):
    handle = FakeEngineHandle(results=dict(case.results))
    if case.state is not None:
        handle.set_state(case.state, exposed=case.exposed)
    app = console(handle)
    async with app.run_test(size=SIZE) as pilot:
        keys = case.keys
        if case.opens is not None:
            await pilot.press(keys[0])
            await pilot.pause()
            assert isinstance(app.screen, case.opens)
            keys = keys[1:]
        await pilot.press(*keys)
        await settle(app, pilot)
        for shown in case.shows:
            assert shown(app), shown.__name__
    assert handle.commands == case.commands


async def test_kill_does_not_wait_behind_a_command_the_engine_is_still_doing():
    pause_gate = threading.Event()
    handle = FakeEngineHandle(gates={"pause": pause_gate})
    app = console(handle)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("p")
        await pilot.press("k")
        for _ in range(200):
            if ("kill",) in handle.commands:
                break
            await pilot.pause(0.01)
        killed_while_pausing = handle.commands == [("pause",), ("kill",)]
        pause_gate.set()
        await settle(app, pilot)
    assert killed_while_pausing


async def test_ordinary_commands_run_in_the_order_given():
    pause_gate = threading.Event()
    handle = FakeEngineHandle(gates={"pause": pause_gate})
    app = console(handle)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("p", "f", "y")
        await pilot.pause(0.05)
        assert handle.commands == [("pause",)]
        pause_gate.set()
        await settle(app, pilot)
    assert handle.commands == [("pause",), ("flatten",)]


async def test_a_rearm_needs_the_phrase_typed_exactly():
    handle = FakeEngineHandle()
    handle.set_state(TradingState.HALTED)
    app = console(handle)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, RearmScreen)
        await pilot.press(*"rearm", "enter")
        await pilot.pause()
        assert isinstance(app.screen, RearmScreen)
        error = app.screen.query_one("#rearm-error", Static)
        assert "type it exactly" in str(error.render())
        assert handle.commands == []
        await pilot.press(*"REARM", "enter")
        await settle(app, pilot)
        assert not isinstance(app.screen, RearmScreen)
    assert handle.commands == [("rearm", "REARM")]


def dialog_text(app: HftConsoleApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


@pytest.mark.parametrize(
    ("key", "dialog", "text", "after_the_kill"),
    [
        ("q", QuitScreen, "#quit-open", "Nothing is open now."),
        ("f", ConfirmScreen, "#confirm-detail", "Open: nothing."),
    ],
    ids=["quit", "flatten"],
)
async def test_a_dialog_lists_what_is_open_now_not_what_was_when_it_opened(
    key, dialog, text, after_the_kill
):
    handle = FakeEngineHandle()
    app = console(handle)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(key)
        await pilot.pause()
        assert isinstance(app.screen, dialog)
        assert "4 orders and positions of" in dialog_text(app, text)
        await pilot.press("k")  # the kill closes everything while the dialog is up
        await settle(app, pilot)
        assert isinstance(app.screen, dialog)
        assert after_the_kill in dialog_text(app, text)
        assert "orders" not in dialog_text(app, text)


async def test_once_a_kill_closed_everything_the_quit_dialog_quits_with_q():
    handle = FakeEngineHandle()
    app = console(handle)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("q")
        await pilot.pause()
        asking = app.screen
        shown = [button.id for button in asking.query(Button) if button.display]
        await pilot.press("q")  # something is open: q is no answer
        await pilot.pause()
        assert app.screen is asking and handle.commands == []
        await pilot.press("k")
        await settle(app, pilot)
        shown_after_the_kill = [button.id for button in asking.query(Button) if button.display]
        await pilot.press("q")
        await settle(app, pilot)
        assert exited(app)
    assert shown == ["flatten", "keep", "cancel"]
    assert shown_after_the_kill == ["quit", "cancel"]
    assert handle.commands == [("kill",), ("shutdown", ShutdownPolicy.FLATTEN)]


async def fill_overrides(pilot, app: HftConsoleApp, values: dict[str, str]) -> None:
    await pilot.press("r")
    await pilot.pause()
    assert isinstance(app.screen, OverridesScreen)
    for field_id, text in values.items():
        app.screen.query_one(f"#{field_id}", Input).value = text
    await pilot.pause()


async def test_r_applies_every_override_at_once():
    handle = FakeEngineHandle()
    app = console(handle)
    async with app.run_test(size=SIZE) as pilot:
        await fill_overrides(
            pilot,
            app,
            {
                "max-position-BTCUSDT": "0.01",
                "max-net-delta": "1500",
                "max-slippage": "7.5",
                "orders-per-second": "4",
                "orders-per-minute": "120",
                "risk-scale": "0.5",
                "hedge-ratio": "0.75",
                "beta-BTCUSDT": "1.15",
            },
        )
        await pilot.press("enter")
        await settle(app, pilot)
    assert handle.commands == [
        (
            "apply_overrides",
            RiskOverrides(
                max_position={"BTCUSDT": 0.01},
                max_net_delta=1500.0,
                max_slippage_bps=7.5,
                orders_per_second=4,
                orders_per_minute=120,
                risk_scale=0.5,
                hedge_ratio=0.75,
                betas={"BTCUSDT": 1.15},
            ),
        )
    ]


BAD_OVERRIDES = (
    ("risk-scale", "1.5", "risk scale must be within [0, 1], got 1.5"),
    ("orders-per-second", "11", "orders per second must be an integer within [1, 10], got 11"),
    ("max-position-ETHUSDT", "2", "ETHUSDT max position must be within [0, 1 ETH], got 2.0"),
    ("max-net-delta", "", "max net delta USDT: '' is not a number"),
    ("max-slippage", "-1", "max slippage must be within [0, 50] bps, got -1.0"),
    ("orders-per-minute", "0", "orders per minute must be an integer within [1, 600], got 0"),
    ("max-net-delta", "inf", "max net delta USDT: 'inf' is not a number"),
    ("hedge-ratio", "1.2", "hedge ratio must be within [0.5, 1], got 1.2"),
    ("beta-BTCUSDT", "1.3", "BTCUSDT beta must be within [0.8, 1.2], got 1.3"),
    ("beta-BTCUSDT", "x", "beta BTCUSDT: 'x' is not a number"),
)


async def test_r_gives_each_position_ceiling_in_its_coin():
    app = console(FakeEngineHandle())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("r")
        await pilot.pause()
        bounds = [str(label.render()) for label in app.screen.query(".override-bound")]
    assert bounds[:3] == ["<= 0.05 BTC", "<= 1 ETH", "<= 5000"]


async def test_r_refuses_each_bad_value_and_sends_nothing():
    handle = FakeEngineHandle()
    app = console(handle)
    async with app.run_test(size=SIZE) as pilot:
        await fill_overrides(pilot, app, {})
        form = app.screen
        for field_id, text, message in BAD_OVERRIDES:
            field = form.query_one(f"#{field_id}", Input)
            good = field.value
            field.value = text
            await pilot.press("enter")
            await settle(app, pilot)
            assert app.screen is form, field_id
            assert message in str(form.query_one("#overrides-error", Static).render())
            field.value = good
    assert handle.commands == []


async def test_r_with_nothing_changed_sends_nothing():
    handle = FakeEngineHandle()
    app = console(handle)
    async with app.run_test(size=SIZE) as pilot:
        await fill_overrides(pilot, app, {})
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert not isinstance(app.screen, OverridesScreen)
        assert "Risk limits unchanged." in notices(app)
    assert handle.commands == []


async def test_an_untouched_form_keeps_every_digit_of_the_limits_in_force():
    handle = FakeEngineHandle()
    precise = replace(OVERRIDES, max_position={"BTCUSDT": 0.0123456789, "ETHUSDT": 0.5})
    status = handle.current.status
    trading = replace(status.trading, overrides=precise)
    handle.current = replace(handle.current, status=replace(status, trading=trading))
    app = console(handle)
    async with app.run_test(size=SIZE) as pilot:
        await fill_overrides(pilot, app, {})
        assert app.screen.query_one("#max-position-BTCUSDT", Input).value == "0.0123456789"
        await pilot.press("enter")
        await settle(app, pilot)
        assert "Risk limits unchanged." in notices(app)
    assert handle.commands == []


async def test_the_override_form_starts_from_the_limits_in_force():
    handle = FakeEngineHandle()
    app = console(handle)
    async with app.run_test(size=SIZE) as pilot:
        await fill_overrides(pilot, app, {})
        form = app.screen
        assert form.query_one("#max-position-BTCUSDT", Input).value == "0.02"
        assert form.query_one("#orders-per-minute", Input).value == str(OVERRIDES.orders_per_minute)
        await pilot.press("escape")
        await settle(app, pilot)
    assert handle.commands == []


async def test_limits_changed_while_the_form_is_open_are_not_put_back_by_applying_it():
    handle = FakeEngineHandle()
    app = console(handle)
    async with app.run_test(size=SIZE) as pilot:
        await fill_overrides(pilot, app, {"max-net-delta": "1500"})
        status = handle.current.status
        halved = replace(OVERRIDES, risk_scale=0.5)  # Kev halves the risk meanwhile
        trading = replace(status.trading, overrides=halved)
        handle.current = replace(handle.current, status=replace(status, trading=trading))
        app.poll()
        await pilot.pause()
        assert app.screen.query_one("#risk-scale", Input).value == "0.5"
        assert "changed meanwhile" in dialog_text(app, "#overrides-error")
        await pilot.press("enter")
        await settle(app, pilot)
    assert handle.commands == [("apply_overrides", RiskOverrides(max_net_delta=1500.0))]


async def test_a_kev_change_the_form_has_not_seen_yet_is_not_put_back_by_applying_it():
    """Kev moves a limit after the form's last refresh: only the operator's edit is sent, so
    the engine keeps Kev's value."""
    handle = FakeEngineHandle()
    app = console(handle)
    async with app.run_test(size=SIZE) as pilot:
        await fill_overrides(pilot, app, {"max-net-delta": "1500", "risk-scale": "1"})
        status = handle.current.status
        halved = replace(OVERRIDES, risk_scale=0.5)  # not polled: the form still shows 1
        trading = replace(status.trading, overrides=halved)
        handle.current = replace(handle.current, status=replace(status, trading=trading))
        await pilot.press("enter")
        await settle(app, pilot)
    assert handle.commands == [("apply_overrides", RiskOverrides(max_net_delta=1500.0))]


async def test_r_has_the_hedge_ratio_and_each_quoted_symbols_beta_only_with_a_hedge():
    handle = FakeEngineHandle()
    app = console(handle)
    async with app.run_test(size=SIZE) as pilot:
        await fill_overrides(pilot, app, {})
        hedged = [str(field.id) for field in app.screen.query(Input)][-2:]
        bounds = [str(label.render()) for label in app.screen.query(".override-bound")][-2:]
        await pilot.press("escape")
        status = handle.current.status
        alone = replace(OVERRIDES, hedge_ratio=None, betas={})
        unhedged = replace(status.trading, overrides=alone)
        handle.current = replace(
            handle.current, status=replace(status, trading=unhedged, hedge=None)
        )
        app.poll()
        await fill_overrides(pilot, app, {})
        fields = [str(field.id) for field in app.screen.query(Input)]
    assert (hedged, bounds) == (["hedge-ratio", "beta-BTCUSDT"], ["0.5..1", "0.8..1.2"])
    assert fields[-1] == "risk-scale"


async def test_a_kev_beta_while_the_form_is_open_is_not_put_back_by_applying_it():
    handle = FakeEngineHandle()
    app = console(handle)
    async with app.run_test(size=SIZE) as pilot:
        await fill_overrides(pilot, app, {"max-net-delta": "1500"})
        status = handle.current.status
        moved = replace(OVERRIDES, betas={"BTCUSDT": 1.2})  # Kev moves the beta meanwhile
        trading = replace(status.trading, overrides=moved)
        handle.current = replace(handle.current, status=replace(status, trading=trading))
        app.poll()
        await pilot.pause()
        assert app.screen.query_one("#beta-BTCUSDT", Input).value == "1.2"
        await pilot.press("enter")
        await settle(app, pilot)
    assert handle.commands == [("apply_overrides", RiskOverrides(max_net_delta=1500.0))]


async def test_a_books_last_beta_is_reached_and_seen_on_a_small_terminal():
    """Eight quoted symbols and a hedge give the form 22 fields, more than 80x24 has rows:
    they scroll, and tab brings the last one into sight with the keys still shown."""
    handle = FakeEngineHandle(book_snapshot())
    symbols = handle.current.status.symbols
    quoted = handle.current.status.quoted
    bounds = OverrideBounds(
        {symbol: 10.0 for symbol in symbols},
        5_000.0,
        50.0,
        10,
        600,
        betas={symbol: (0.8, 1.2) for symbol in quoted},
    )
    overrides = RiskOverrides(
        {symbol: 1.0 for symbol in symbols},
        2_500.0,
        10.0,
        8,
        240,
        1.0,
        betas={symbol: 1.0 for symbol in quoted},
    )
    status = handle.current.status
    trading = replace(status.trading, overrides=overrides, bounds=bounds)
    handle.current = replace(handle.current, status=replace(status, trading=trading))
    app = console(handle)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("r")
        await pilot.pause()
        last = app.screen.query(Input).last()
        while app.screen.focused is not last:
            await pilot.press("tab")
        await pilot.press(*"1.1")  # select_on_focus: the typing replaces the value
        await pilot.pause()
        screen = app.screen.region
        keys = app.screen.query_one(".dialog-keys")
        assert screen.contains_region(last.region) and screen.contains_region(keys.region)
        await pilot.press("enter")
        await settle(app, pilot)
    assert handle.commands == [("apply_overrides", RiskOverrides(betas={quoted[-1]: 1.1}))]


async def test_a_failing_engine_call_is_reported_and_the_console_stays():
    handle = FakeEngineHandle()
    handle.execute = lambda command: (_ for _ in ()).throw(ConnectionError("engine thread gone"))
    app = console(handle)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("k")
        await settle(app, pilot)
        assert app.is_running
        assert "KILL: failed: ConnectionError: engine thread gone" in notices(app)


async def test_help_lists_every_key_with_the_keys_in_force():
    handle = FakeEngineHandle()
    app = console(handle, keymap={"console.kill": "K"})
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        keys = [str(widget.render()) for widget in app.screen.query(".help-key")]
        texts = [str(widget.render()) for widget in app.screen.query(".help-text")]
        shown = dict(zip(keys, texts, strict=True))
        assert shown["K"] == "KILL SWITCH: halt, cancel all, flatten; latched until re-armed"
        assert shown["q, ^c"].startswith("quit")
        for fragment in ("pause", "flatten", "re-arm", "risk limits", "next pane"):
            assert any(fragment in text for text in texts)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.screen_stack[0]


async def test_a_keymap_moves_the_kill_switch():
    handle = FakeEngineHandle()
    app = console(handle, keymap={"console.kill": "K"})
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("k")
        await settle(app, pilot)
        assert handle.commands == []
        await pilot.press("K")
        await settle(app, pilot)
    assert handle.commands == [("kill",)]


def test_a_keymap_for_an_unknown_binding_is_refused():
    with pytest.raises(ValueError, match="unknown bindings"):
        ConsoleConfig(keymap={"console.nuke": "n"})


@pytest.mark.parametrize(
    ("keymap", "message"),
    [
        (
            {"console.kill": "q"},
            'keymap binds "q" twice in the console: console.kill ("q") and console.quit '
            '("q,ctrl+c"); give each action a key of its own',
        ),
        (
            {"console.kill": "f"},
            'keymap binds "f" twice in the console: console.flatten ("f") and console.kill '
            '("f"); give each action a key of its own',
        ),
        (
            {"console.kill": "n"},
            'keymap binds "n" twice in the flatten confirmation dialog: console.kill ("n") and '
            'confirm.no ("n,escape"); give each action a key of its own',
        ),
        (
            {"console.pause_resume": "ctrl+q"},
            'keymap binds "ctrl+q" twice in the console: console.pause_resume ("ctrl+q") and '
            'Textual\'s quit ("ctrl+q"); give each action a key of its own',
        ),
        (
            {"console.quit": " , "},
            'keymap gives console.quit no key: every action needs one (its default is "q,ctrl+c")',
        ),
        (
            {"console.kill": "Ctrl+K"},
            'keymap gives console.kill "Ctrl+K", which is not a key: name keys as Textual does '
            "(k, K, ctrl+k, f5, escape, question_mark)",
        ),
        (
            {"console.kill": "ctrl+k,full_stop"},
            'keymap binds console.kill to "ctrl+k,full_stop", but the risk override form needs '
            "'.' typed and the kill switch takes its keys first on every screen: give the kill "
            "switch another key",
        ),
        (
            {"console.kill": "enter"},
            'keymap binds "enter" twice in the dialogs with text fields: console.kill ("enter") '
            'and their text fields ("enter,tab,shift+tab,backspace"); give each action a key of '
            "its own",
        ),
    ],
    ids=[
        "kill-on-quit",
        "kill-on-flatten",
        "kill-on-a-dialog-key",
        "textual-quit",
        "none",
        "typo",
        "kill-on-a-digit",
        "kill-on-enter",
    ],
)
def test_a_keymap_that_leaves_a_key_ambiguous_or_an_action_unbound_is_refused(keymap, message):
    with pytest.raises(ValueError) as refused:
        ConsoleConfig(keymap=keymap)
    assert str(refused.value) == message


async def test_a_keymap_that_swaps_two_keys_is_taken_as_textual_reads_it():
    handle = FakeEngineHandle()
    config = ConsoleConfig(keymap={"console.kill": "p", "console.pause_resume": "k, !"})
    assert dict(config.keymap) == {
        "console.kill": "p",
        "console.pause_resume": "k,exclamation_mark",
    }
    app = HftConsoleApp(handle, config, clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("exclamation_mark")
        await settle(app, pilot)
        await pilot.press("p")
        await settle(app, pilot)
    assert handle.commands == [("pause",), ("kill",)]


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
async def test_each_help_line_fits_on_one_row(size):
    app = console(FakeEngineHandle())
    async with app.run_test(size=size) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        texts = list(app.screen.query(".help-text"))
        assert len(texts) == len(CONSOLE_BINDINGS)
        dialog = app.screen.query_one(".help").content_region
        for text in texts:
            assert text.region.height == 1, str(text.render())
            assert dialog.contains_region(text.region), str(text.render())


def status_row(app: HftConsoleApp) -> str:
    return app.query_one(StatusPane).render_line(0).text


async def test_k_says_it_was_sent_then_shows_halted_and_the_answer_without_waiting_for_a_poll():
    """The engine sends the picture a command left ahead of its answer; the console draws it
    with the answer, though its next poll is a second away (refresh_hz 1)."""
    gate = threading.Event()
    handle = FakeEngineHandle()

    async def kill() -> CommandResult:
        await asyncio.to_thread(gate.wait, 10)
        handle.set_state(TradingState.HALTED)  # the picture that comes with the answer
        return CommandResult("kill", True, "venue confirms no open orders and flat", 5.3)

    handle.execute = lambda command: kill()
    app = console(handle, refresh_hz=1)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("k")
        await pilot.pause()
        sent = status_row(app)
        gate.set()
        await settle(app, pilot)
        answered = status_row(app)
        await pilot.press("a")  # the keys act on that picture too: re-arm opens at once
        await pilot.pause()
        rearm_opened = isinstance(app.screen, RearmScreen)
    assert "KILL sent…" in sent and "ACTIVE" in sent
    assert "HALTED" in answered and "KILL done: flat after 5.3 ms" in answered
    assert rearm_opened


async def test_a_done_note_leaves_after_its_time_and_a_failure_stays_until_the_next_key():
    clock = [100.0]
    handle = FakeEngineHandle(
        results={"kill": CommandResult("kill", False, "not confirmed flat after 15,000 ms")}
    )
    app = HftConsoleApp(handle, ConsoleConfig(), clock=lambda: clock[0])
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("p")
        await settle(app, pilot)
        assert "pause done in" in status_row(app)
        clock[0] += COMMAND_NOTE_S
        app.poll()
        await pilot.pause()
        assert "pause done" not in status_row(app)
        await pilot.press("k")
        await settle(app, pilot)
        clock[0] += 10 * COMMAND_NOTE_S
        app.poll()
        await pilot.pause()
        assert "KILL FAILED: not confirmed flat after 15,000 ms" in status_row(app)
        handle.set_state(TradingState.PAUSED)
        app.poll()
        await pilot.press("p")
        await settle(app, pilot)
        assert "KILL FAILED" not in status_row(app)
        assert "resume done in" in status_row(app)
