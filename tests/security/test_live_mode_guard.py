"""Live trading is impossible without `--live` plus the phrase typed at a terminal.

The real command line in a subprocess with live credentials in its environment: without
`--live` (flag or configuration) it refuses; with `--live` the phrase piped, redirected or
absent never confirms; typed at a real pseudo-terminal, only the exact phrase does. Below the
command line, a live trading configuration without the confirmation is refused by the engine.
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import checkout_env, run_cli

from console.cli.config import settings_for_run
from console.cli.main import _credentials, _trading, build_parser
from engine.contract_sources import simulator_contracts
from engine.trading.config import TradingConfig, TradingMode

KEYS = {
    "BITGET_API_KEY": "bg_live0123456789abcdef0123456789",
    "BITGET_API_SECRET": "live-guard-secret-value-9f8e7d6c5b4a",
    "BITGET_API_PASSPHRASE": "LiveGuardPass7",
}
PHRASE = "LIVE BTCUSDT ETHUSDT"


def _environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    base = {
        k: v for k, v in os.environ.items() if not k.startswith(("BITGET_API_", "HFT_CONSOLE_"))
    }
    config = tmp_path / "config.toml"
    config.write_text("")
    return checkout_env(base, HFT_CONSOLE_CONFIG=str(config), **KEYS, **extra)


def hft_console(tmp_path: Path, *args: str, stdin: int | str = "", **extra: str):
    return run_cli(*args, env=_environment(tmp_path, **extra), cwd=tmp_path, stdin=stdin)


def test_live_credentials_without_a_mode_do_not_trade_live(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in _environment(tmp_path).items():
        monkeypatch.setenv(name, value)
    args = build_parser().parse_args(["run", "--headless"])
    settings = settings_for_run(args)
    credentials = _credentials(args, settings)
    assert credentials is None  # the live keys were not even loaded
    trading = _trading(args, settings, simulator_contracts(settings), credentials)
    assert trading.mode is TradingMode.SIM and not trading.live_confirmed


@pytest.mark.parametrize(
    ("args", "extra", "origin"),
    [
        (("run", "--mode", "live"), {}, "--mode live"),
        (("run",), {"HFT_CONSOLE_TRADING__MODE": "live"}, "[trading] mode live"),
        (("run", "--headless", "--mode", "live", "--duration", "1"), {}, "--mode live"),
    ],
    ids=["--mode live", "mode live from the environment", "headless --mode live"],
)
def test_live_without_the_live_flag_is_refused(
    tmp_path: Path, args: tuple[str, ...], extra: dict[str, str], origin: str
) -> None:
    result = hft_console(tmp_path, *args, stdin=PHRASE + "\n", **extra)
    assert result.returncode == 2, result.stderr
    assert f"{origin}" in result.stderr and "add --live" in result.stderr
    assert "LIVE TRADING" not in result.stdout  # not even asked


@pytest.mark.parametrize(
    "stdin",
    [PHRASE + "\n", f"{PHRASE}\n{PHRASE}\n", "", subprocess.DEVNULL],
    ids=["piped phrase", "piped twice", "empty pipe", "/dev/null"],
)
def test_live_with_input_that_is_not_a_terminal_is_refused(
    tmp_path: Path, stdin: int | str
) -> None:
    result = hft_console(tmp_path, "run", "--headless", "--mode", "live", "--live", stdin=stdin)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "standard input is not a terminal" in result.stdout
    assert "nothing sent" in result.stdout and "Confirmed" not in result.stdout
    for secret in (KEYS["BITGET_API_SECRET"], KEYS["BITGET_API_PASSPHRASE"]):
        assert secret not in result.stdout + result.stderr


def _confirm_at_a_terminal(typed: str) -> tuple[int, str]:
    """`confirm_live` with its default reader in a child whose stdin is a pseudo-terminal."""
    program = (
        "import sys; from console.cli.live_guard import confirm_live; "
        "sys.exit(0 if confirm_live(account='main', symbols=['BTCUSDT', 'ETHUSDT']) else 3)"
    )
    controller, terminal = pty.openpty()
    try:
        child = subprocess.Popen(
            [sys.executable, "-c", program],
            stdin=terminal,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=checkout_env(),
        )
        os.write(controller, typed.encode() + b"\n")
        output, _ = child.communicate(timeout=60)
    finally:
        os.close(terminal)
        os.close(controller)
    return child.returncode, output.decode()


def test_at_a_terminal_only_the_exact_phrase_confirms() -> None:
    code, output = _confirm_at_a_terminal(PHRASE)
    assert code == 0 and "Confirmed: starting live trading." in output
    code, output = _confirm_at_a_terminal("yes")
    assert code == 3 and "Not confirmed" in output


def test_the_engine_refuses_an_unconfirmed_live_configuration() -> None:
    with pytest.raises(ValueError, match="live trading needs --live and the typed confirmation"):
        TradingConfig(mode=TradingMode.LIVE)
    assert TradingConfig(mode=TradingMode.LIVE, live_confirmed=True).mode is TradingMode.LIVE
