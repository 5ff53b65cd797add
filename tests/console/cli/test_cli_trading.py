"""`hft-console run --mode ...` and `bench --reaction/--kill`: what they refuse, and why."""

from __future__ import annotations

import json
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


def test_bench_reaction_and_kill_refuse_a_recording_and_a_book_the_simulator_lacks(tmp_path):
    result = hft_console("bench", "--reaction", "--replay", str(tmp_path / "x.gz"))
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        "hft-console bench: --reaction and --kill run on the simulator: drop --replay\n"
    )
    result = hft_console("bench", "--kill", "--book", "10")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        "hft-console bench: a book of the simulator quotes 1 to 9 symbols besides its hedge "
        "BTCUSDT, got 10\n"
    )


def test_bench_reaction_and_kill_with_a_book_give_both_books_figures(laya_model):
    result = hft_console(
        "bench", "--reaction", "--kill", "--book", "2", "--samples", "2", "--runs", "1",
        "--kill-runs", "1", "--json", "--model", str(laya_model),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    reaction, kill = figures["reaction"], figures["kill"]
    for name, symbols in (
        ("one", ["ETHUSDT", "BTCUSDT"]),
        ("book", ["ETHUSDT", "SOLUSDT", "BTCUSDT"]),
    ):
        assert reaction[name]["symbols"] == kill[name]["symbols"] == symbols
        assert reaction[name]["lane"]["samples"] == reaction[name]["client"]["samples"] == 2
        assert (kill[name]["runs"], kill[name]["ok"], kill[name]["failures"]) == (1, 1, [])
    assert reaction["lane_p99_ratio"] == (
        reaction["book"]["lane"]["p99_us"] / reaction["one"]["lane"]["p99_us"]
    )
    assert len(reaction["lane_p99_ratio_rounds"]) == 1


def test_bench_refuses_the_options_of_another_benchmark(tmp_path):
    recording = str(tmp_path / "x.gz")
    for args, refused in (
        (("--kill", "--samples", "5"), "--samples is not an option of --kill: drop it"),
        (("--reaction", "--kill-runs", "5"), "--kill-runs is not an option of --reaction: drop it"),
        (
            ("--reaction", "--kill", "--passes", "2"),
            "--passes is not an option of --reaction --kill: drop it",
        ),
        (("--book", "2", "--runs", "2"), "--runs is not an option of --book N: drop it"),
        (
            ("--replay", recording, "--runs", "2", "--kill-runs", "3"),
            "--kill-runs, --runs are not options of --replay: drop them",
        ),
    ):
        result = hft_console("bench", *args)
        assert (result.returncode, result.stdout) == (2, ""), args
        assert result.stderr == f"hft-console bench: {refused}\n"
