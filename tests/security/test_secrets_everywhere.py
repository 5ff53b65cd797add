"""Secrets at rest and in crash output.

The credentials file: only a file no one else may read, write or execute is loaded, whatever
the route to it (a symlink is judged by its target); every looser mode is refused with the
mode found and the fix. Owner-only modes are accepted (0600, 0400, and 0700: an execute bit
only the owner has exposes nothing to anyone else).

Crash output (there is no crash-report file: what an unhandled failure leaves is stderr, the
console's exit traceback and the log files): the engine failing to start with the keys loaded
(the venue refuses them), under the console and headless; and the console itself crashing on
an unhandled exception while the engine trades with the keys, whose traceback Textual prints
with every frame's local variables. Each is scanned with tests/support/secret_scan.py's scanner.
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from rich.console import Console
from support.secret_scan import API_KEY, API_SECRET, PASSPHRASE, leaks, sim_with_keys

from engine.bitget.credentials import Credentials, CredentialsError, load_credentials
from engine.sim.server import SimExchange

TABLE = f'[live]\napi_key = "{API_KEY}"\napi_secret = "{API_SECRET}"\npassphrase = "{PASSPHRASE}"\n'
LOOSE_MODES = (0o640, 0o644, 0o604, 0o660, 0o620, 0o602, 0o606, 0o610, 0o601, 0o666, 0o777)
PRIVATE_MODES = (0o600, 0o400, 0o700)


@pytest.fixture
def private_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "config"
    directory.mkdir(mode=0o700)
    return directory


@pytest.mark.parametrize("mode", LOOSE_MODES, ids=lambda mode: f"{mode:04o}")
def test_a_credentials_file_others_can_touch_is_refused(private_dir: Path, mode: int) -> None:
    path = private_dir / "credentials.toml"
    path.write_text(TABLE)
    os.chmod(path, mode)
    with pytest.raises(CredentialsError) as refused:
        load_credentials(environ={}, path=path)
    message = str(refused.value)
    assert f"has mode {mode:04o}" in message and "readable or writable by others" in message
    assert f"chmod 600 {path}" in message
    assert leaks(message) == []


@pytest.mark.parametrize("mode", LOOSE_MODES[:4], ids=lambda mode: f"{mode:04o}")
def test_a_symlink_to_a_loose_file_is_judged_by_its_target(private_dir: Path, mode: int) -> None:
    target = private_dir / "real.toml"
    target.write_text(TABLE)
    os.chmod(target, mode)
    link = private_dir / "credentials.toml"
    link.symlink_to(target)
    with pytest.raises(CredentialsError) as refused:
        load_credentials(environ={}, path=link)
    message = str(refused.value)
    assert f"{link} -> {target} has mode {mode:04o}" in message
    assert f"chmod 600 {target}" in message
    os.chmod(target, 0o600)
    assert load_credentials(environ={}, path=link).api_key == API_KEY


@pytest.mark.parametrize("mode", PRIVATE_MODES, ids=lambda mode: f"{mode:04o}")
def test_owner_only_modes_are_accepted(private_dir: Path, mode: int) -> None:
    path = private_dir / "credentials.toml"
    path.write_text(TABLE)
    os.chmod(path, mode)
    loaded = load_credentials(environ={}, path=path)
    assert (loaded.api_key, loaded.api_secret, loaded.passphrase) == (
        API_KEY,
        API_SECRET,
        PASSPHRASE,
    )


def test_every_permission_bit_for_others_is_refused(private_dir: Path) -> None:
    """Exhaustively: each of the 64 group/other combinations but none."""
    path = private_dir / "credentials.toml"
    path.write_text(TABLE)
    accepted = []
    for others in range(0o100):
        os.chmod(path, 0o600 | others)
        try:
            load_credentials(environ={}, path=path)
            accepted.append(f"{0o600 | others:04o}")
        except CredentialsError:
            pass
    assert accepted == ["0600"]


# Crash output


@pytest.fixture
async def keyed_sim() -> AsyncIterator[SimExchange]:
    """The simulator holding the keys the engine trades with."""
    async with sim_with_keys(9) as exchange:
        yield exchange


def _engine_config(sim: SimExchange, tmp_path: Path):
    from engine.config import EngineConfig
    from engine.laya.config import LayaClassifierConfig
    from engine.trading.config import TradingConfig

    return EngineConfig(
        live_url=sim.ws_url,
        laya=LayaClassifierConfig(prefer_gpu=False),
        trading=TradingConfig(journal_path=tmp_path / "journal.sqlite", rest_url=sim.rest_url),
        status_interval_s=0.05,
    )


@pytest.mark.parametrize("headless", [False, True], ids=["console", "headless"])
def test_an_engine_that_fails_to_start_with_the_keys_prints_no_secret(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    headless: bool,
) -> None:
    """The engine (its own process, the keys handed to it) cannot open its journal: the start
    fails with a traceback in its log and a line for the operator."""
    from console.cli.launch import LaunchOptions, launch
    from engine.config import EngineConfig
    from engine.laya.config import LayaClassifierConfig
    from engine.trading.config import TradingConfig

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # the console's log file
    not_a_file = tmp_path / "journal.sqlite"
    not_a_file.mkdir()
    engine = EngineConfig(
        laya=LayaClassifierConfig(prefer_gpu=False),
        trading=TradingConfig(journal_path=not_a_file),
    )
    out, err = io.StringIO(), io.StringIO()
    handlers = list(logging.getLogger().handlers)
    try:
        status = launch(
            engine,
            LaunchOptions(headless=headless, duration_s=5),
            Credentials(API_KEY, API_SECRET, PASSPHRASE),
            out=out,
            err=err,
        )
    finally:
        for handler in logging.getLogger().handlers:
            if handler not in handlers:  # launch's log file handler, under the console
                logging.getLogger().removeHandler(handler)
                handler.close()
    captured = capfd.readouterr()  # the engine process writes to the inherited descriptors
    logs = {path.name: path.read_bytes() for path in (tmp_path / "state").rglob("*.log")}
    assert status == 1
    said = err.getvalue()
    assert "hft-console: " in said and "journal" in said.lower(), said
    # The operator gets one line; the engine's traceback goes to the log file, headless too.
    assert "Traceback" not in said and "Traceback" not in captured.err
    assert b"Traceback" in logs["console.log"]
    findings = {
        "launch stdout": leaks(out.getvalue()),
        "launch stderr": leaks(said),
        "process stdout": leaks(captured.out),
        "process stderr": leaks(captured.err),
        **{f"log {name}": leaks(blob) for name, blob in logs.items()},
    }
    assert {where: found for where, found in findings.items() if found} == {}


async def test_a_console_crash_with_the_keys_loaded_prints_no_secret(
    keyed_sim: SimExchange,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Textual prints the crash's traceback, with each frame's locals, when the app exits."""
    from console.app import ConsoleConfig, HftConsoleApp
    from console.engine.config import EngineAdapterConfig
    from console.engine.handle import ShutdownPolicy
    from console.engine.node_handle import EngineNodeHandle
    from console.widgets.events import EventsPane

    add = EventsPane.add

    def add_then_crash(self, events, missed, *rest):
        add(self, events, missed, *rest)
        if any("API key bg_" in event.text for event in events):
            raise RuntimeError("a pane bug, provoked once the masked key is on the screen")

    monkeypatch.setattr(EventsPane, "add", add_then_crash)
    log = tmp_path / "engine.log"
    credentials = Credentials(API_KEY, API_SECRET, PASSPHRASE)
    handle = EngineNodeHandle(
        _engine_config(keyed_sim, tmp_path),
        EngineAdapterConfig(gpu=None),
        credentials,
        log_path=log,
    )
    await asyncio.to_thread(handle.start)
    try:
        app = HftConsoleApp(handle, ConsoleConfig())
        capsys.readouterr()
        with pytest.raises(RuntimeError, match="a pane bug"):
            async with app.run_test(size=(160, 48)) as pilot:
                for _ in range(200):
                    await pilot.pause(0.05)
        printed = capsys.readouterr()
        crash = printed.out + printed.err
    finally:
        await asyncio.to_thread(handle.shutdown, ShutdownPolicy.FLATTEN)
    assert "a pane bug" in crash and "Traceback" in crash
    assert "ConsoleEvent(" in crash  # the frames' locals are shown: the scan covers them
    findings = {"console crash output": leaks(crash), "engine log": leaks(log.read_bytes())}
    assert {where: found for where, found in findings.items() if found} == {}


def test_the_crash_renderer_would_show_a_secret_held_in_a_local() -> None:
    """The control: Textual's traceback prints locals, so a key held in one would be caught."""
    from rich.traceback import Traceback

    def crashing(api_secret: str) -> None:
        raise RuntimeError("boom")

    try:
        crashing(API_SECRET)
    except RuntimeError:
        console = Console(file=io.StringIO(), width=160, color_system=None)
        console.print(Traceback(show_locals=True, width=None, locals_max_length=5))
    assert leaks(console.file.getvalue()) == [API_SECRET]


def test_the_loaders_mode_check_uses_no_group_or_other_bit() -> None:
    from engine.bitget import credentials

    assert credentials._PRIVATE_BITS == stat.S_IRWXG | stat.S_IRWXO
