"""`hft-console run --mode ...` and `bench --reaction/--kill`: what they refuse, and why."""

from __future__ import annotations

import os

from support.cli import checkout_env, run_cli

KEYS = {
    "BITGET_API_KEY": "bg_0123456789abcdef0123",
    "BITGET_API_SECRET": "cli-test-secret-value-1",
    "BITGET_API_PASSPHRASE": "cli-test-passphrase-2",
}


def hft_console(*args: str, env: dict[str, str] | None = None, stdin: str = ""):
    base = {key: value for key, value in os.environ.items() if not key.startswith("BITGET_API_")}
    return run_cli(*args, env=checkout_env(base, **(env or {})), stdin=stdin)


def test_live_without_the_live_flag_is_refused():
    result = hft_console("run", "--mode", "live")
    assert result.returncode == 2
    assert "--mode live trades real money: add --live" in result.stderr


def test_live_without_credentials_says_where_it_looked(tmp_path):
    missing = tmp_path / "credentials.toml"
    result = hft_console("run", "--mode", "live", "--live", "--credentials", str(missing))
    assert result.returncode == 2
    assert str(missing) in result.stderr and "Traceback" not in result.stderr


def test_live_needs_the_typed_phrase_and_sends_nothing_without_it():
    result = hft_console("run", "--mode", "live", "--live", env=KEYS, stdin="yes please\n")
    assert result.returncode == 1
    assert "LIVE BTCUSDT ETHUSDT" in result.stdout  # the phrase it asked for
    assert "Not confirmed" in result.stdout and "nothing sent" in result.stdout
    for secret in (KEYS["BITGET_API_SECRET"], KEYS["BITGET_API_PASSPHRASE"]):
        assert secret not in result.stdout and secret not in result.stderr


def test_a_simulator_rest_url_needs_its_public_feed():
    result = hft_console("run", "--rest-url", "http://127.0.0.1:8700")
    assert result.returncode == 2
    assert "public feed (--url)" in result.stderr


def test_bench_needs_a_recording_or_a_trading_benchmark():
    result = hft_console("bench")
    assert result.returncode == 2
    assert "--replay FILE" in result.stderr and "--reaction" in result.stderr
