"""The `hft-console` command line, run as a real subprocess."""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from support.cli import CLI, REPO, checkout_env, run_cli
from support.recordings import write_books, write_recording
from support.sim import running_sim, sim_config

from console.cli.main import build_parser, main
from engine.feed.parse import FrameParser
from engine.feed.recording import iter_recording, recording_instruments
from engine.laya.config import SHIPPED_MODELS
from engine.sim.recording import simulate_recording


def hft_console(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, timeout=timeout)


@pytest.fixture
def recording(tmp_path) -> Path:
    asks = [["100.5", "1"], ["101", "2"]]
    bids = [["100", "1"], ["99.5", "3"]]
    return write_books(tmp_path / "tiny.bitget.gz", 50, asks, bids)


def test_help_lists_every_command():
    result = hft_console("--help")
    assert result.returncode == 0
    for command in ("run", "sim", "record", "bench"):
        assert command in result.stdout


@pytest.mark.skipif(shutil.which("hft-console") is None, reason="package not installed")
def test_installed_console_script_answers():
    result = subprocess.run(["hft-console", "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "hft-console" in result.stdout


def test_bench_json(recording, laya_model):
    result = hft_console(
        "bench",
        "--replay",
        str(recording),
        "--json",
        "--model",
        str(laya_model),
        "--memory-frames",
        "200",
    )
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert figures["frames"] == 50
    assert set(figures["stages_us"]) == {
        "parse",
        "book",
        "features",
        "infer",
        "decide",
        "total",
        "trade",
    }
    assert figures["provider"] == "CPUExecutionProvider"
    assert figures["memory"]["frames"] == 200


def test_bench_of_a_missing_file_is_a_clear_error(tmp_path):
    result = hft_console("bench", "--replay", str(tmp_path / "nope.gz"))
    assert result.returncode == 2
    assert "recording not found" in result.stderr
    assert "Traceback" not in result.stderr


def test_bench_of_an_unreadable_recording_says_why(tmp_path):
    path = tmp_path / "notgzip.gz"
    path.write_bytes(b"not gzip at all\n")
    result = hft_console("bench", "--replay", str(path))
    assert result.returncode == 2
    assert result.stderr == (
        f"hft-console bench: {path}: unreadable recording: not gzip data, though its name ends "
        "in .gz\n"
    )


def test_bench_of_a_truncated_recording_runs_what_it_holds_and_says_so(
    recording, laya_model, tmp_path
):
    whole = recording.read_bytes()
    cut = tmp_path / "cut.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    light = ("--json", "--memory-frames", "0", "--risk-iterations", "1000", "--passes", "1")
    result = hft_console("bench", "--replay", str(cut), "--model", str(laya_model), *light)
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    problem = figures["recording_problem"]
    assert problem.startswith(f"{cut}: truncated at byte {len(whole) // 2:,} after ")
    assert result.stderr == f"hft-console bench: {problem}\n"
    assert 0 < figures["frames"] < 50


def test_bench_book_times_a_frame_with_one_and_with_n_quoted_symbols(laya_model):
    result = hft_console("bench", "--book", "2", "--passes", "1", "--model", str(laya_model))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("a books15 frame's cost, 1 vs 2 quoted symbols and their hedge")
    assert lines[1] == "  1: ETHUSDT, BTCUSDT (3,600 books15)"
    assert lines[2] == "  2: ETHUSDT, SOLUSDT, BTCUSDT (3,600 books15)"
    assert lines[-1].startswith("total per frame with the book: p50 x")


def test_bench_book_runs_the_simulator_alone(tmp_path):
    result = hft_console("bench", "--book", "8", "--replay", str(tmp_path / "x.gz"))
    assert result.returncode == 2
    assert result.stderr == "hft-console bench: --book N runs the simulator's book: drop --replay\n"
    result = hft_console("bench", "--book", "10")
    assert result.returncode == 2
    assert result.stderr == (
        "hft-console bench: a book of the simulator quotes 1 to 9 symbols besides its hedge "
        "BTCUSDT, got 10\n"
    )


def test_bad_speed_is_rejected_by_the_parser():
    result = hft_console("run", "--speed", "0")
    assert result.returncode == 2
    assert "speed must be a finite number > 0 or 'max', got '0'" in result.stderr


RECORDING_AND_MODEL = ("--replay", "x.gz", "--out", "x.onnx")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (("run", "--speed", "inf"), "speed must be a finite number > 0 or 'max', got 'inf'"),
        (("run", "--speed", "nan"), "speed must be a finite number > 0 or 'max', got 'nan'"),
        (("run", "--duration", "inf"), "expected a finite number, got 'inf'"),
        (("run", "--duration=-inf"), "expected a finite number, got '-inf'"),
        (("run", "--refresh-hz", "nan"), "expected a finite number, got 'nan'"),
        (("record", "--out", "x.gz", "--duration", "Infinity"), "expected a finite number"),
        (("train", *RECORDING_AND_MODEL, "--sim-minutes", "nan"), "expected a finite number"),
        (("kev", "serve", "--ready-timeout", "inf"), "expected a finite number, got 'inf'"),
        (("chaos", "--silence-s", "inf"), "expected a finite number, got 'inf'"),
        (("journal", "--limit", "9" * 30), "expected a number up to 9,223,372,036,854,775,807"),
    ],
)
def test_numeric_flags_refuse_inf_and_nan_saying_finite(capsys, arguments, message):
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(list(arguments))
    assert exited.value.code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert error.startswith(f"hft-console {arguments[0]}") and message in error


def test_run_quotes_a_book_of_symbols_hedged_by_one():
    book = ("--symbols", "ETHUSDT,SOLUSDT,XRPUSDT", "--hedge", "btcusdt")
    result = hft_console("run", "--headless", "--duration", "3", *book)
    assert result.returncode == 0, result.stderr
    status = result.stdout.splitlines()[-1]
    for symbol in ("ETHUSDT", "SOLUSDT", "XRPUSDT", "BTCUSDT"):
        assert f"| {symbol} " in status


SEVENTEEN = [f"A{n}USDT" for n in range(17)]


@pytest.mark.parametrize(
    ("arguments", "environ", "message"),
    [
        (
            ["--symbols", ",".join(SEVENTEEN)],
            {},
            f"[engine] symbols = {json.dumps(SEVENTEEN)} (command line --symbols): a book quotes "
            f"1 to 16 symbols besides its hedge, got 17: {', '.join(SEVENTEEN)}",
        ),
        (
            [],
            {"HFT_CONSOLE_ENGINE__SYMBOLS": ",".join(SEVENTEEN)},
            f"[engine] symbols = {json.dumps(SEVENTEEN)} (environment "
            "HFT_CONSOLE_ENGINE__SYMBOLS): a book quotes 1 to 16 symbols besides its hedge, got "
            f"17: {', '.join(SEVENTEEN)}",
        ),
        (
            ["--symbols", "SOLUSDT,ETHUSDT,SOLUSDT"],
            {},
            '[engine] symbols = ["SOLUSDT", "ETHUSDT", "SOLUSDT"] (command line --symbols): '
            "SOLUSDT is quoted twice",
        ),
        (
            ["--symbols", "SOLUSDT,XRPUSDT", "--hedge", "XRPUSDT"],
            {},
            '[engine] symbols = ["SOLUSDT", "XRPUSDT"] (command line --symbols); [engine] hedge '
            '= "XRPUSDT" (command line --hedge): XRPUSDT is the hedge and cannot also be quoted',
        ),
        (
            ["--symbols", "SOLUSDT,NEXOUSDT,XRPUSDT", "--hedge", "BTCUSDT"],
            {},
            "the simulator has no NEXOUSDT: it runs",
        ),
        (
            ["--symbols", "BTCUSDT,ETHUSDT"],
            {},
            "--symbols BTCUSDT,ETHUSDT: --symbols now lists the quoted symbols and --hedge their "
            "hedge: ETHUSDT is the hedge (default) and cannot also be quoted; for the old meaning "
            "(BTCUSDT traded, ETHUSDT its hedge) say --symbols BTCUSDT --hedge ETHUSDT; to quote "
            "both, say another --hedge SYMBOL or --hedge none",
        ),
        (
            ["--symbols", "SOLUSDT,XRPUSDT", "--hedge", "ETHUSDT", "--leader", "ADAUSDT"],
            {},
            "--leader ADAUSDT: a leader is watched only without a hedge (--hedge none); ETHUSDT, "
            "the hedge, leads this book",
        ),
    ],
    ids=[
        "too many",
        "too many set",
        "twice",
        "hedge quoted",
        "not listed",
        "the old form",
        "a leader and a hedge",
    ],
)
def test_a_book_run_cannot_trade_is_one_line_and_exit_2(
    capsys, monkeypatch, arguments, environ, message
):
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert main(["run", "--headless", "--duration", "1", *arguments]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"hft-console run: {message}")


def _options(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for subparser in action.choices.values():
                yield from _options(subparser)
        elif action.option_strings:
            yield parser.prog, action


def test_no_flag_reads_a_bare_float():
    """A bare float() takes inf and nan: every number goes through console.cli.arguments."""
    bare = [
        f"{prog} {action.option_strings[0]}"
        for prog, action in _options(build_parser())
        if action.type is float
    ]
    assert bare == []


def test_headless_replay_runs_to_the_end(recording, laya_model):
    replay = ("--replay", str(recording), "--speed", "max", "--symbols", "BTCUSDT")
    result = hft_console(
        "run", "--headless", *replay, "--hedge", "none", "--model", str(laya_model)
    )
    assert result.returncode == 0, result.stderr
    assert "BTCUSDT live (replay reached the symbol)" in result.stdout
    assert "BTCUSDT stopped (end of recording)" in result.stdout
    assert "REPLAY frames 50 | BTCUSDT stopped 100.0/100.5" in result.stdout
    assert "Laya (CPU native kernel)" in result.stdout


@pytest.mark.parametrize("mode", [(), ("--mode", "paper")], ids=["watched", "paper"])
def test_a_replay_without_the_hedge_is_refused_before_anything_runs(recording, mode):
    result = hft_console("run", "--headless", "--replay", str(recording), "--speed", "1", *mode)
    assert result.returncode == 2
    assert result.stderr == (
        f"hft-console: {recording} has no ETHUSDT (the hedge): it has BTCUSDT; --symbols names "
        "the quoted ones, --hedge their hedge (or none), --leader the leader without one (or "
        "none)\n"
    )


@pytest.mark.parametrize("command", ["run", "backtest"])
def test_a_quote_size_below_the_symbols_lot_is_refused_at_start(
    capsys, tmp_path, monkeypatch, command
):
    """ETHUSDT's lot is 0.01: a quote size of 0.002 (BTC's) would send no order at all."""
    monkeypatch.setenv("HFT_CONSOLE_TRADING__STRATEGY__QUOTE_SIZE", "0.002")
    recording = write_recording(tmp_path / "two.bitget.gz", books=20)
    replay = (
        ["--replay", str(recording)] if command == "backtest" else ["--headless", "--duration", "3"]
    )
    code = main([command, *replay, "--symbols", "ETHUSDT", "--hedge", "BTCUSDT"])
    assert code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.endswith(
        "quote_size 0.002 is below one lot of ETHUSDT (0.01): no quote could be sent; make it "
        "one lot or more"
    )


async def test_record_of_a_symbol_the_venue_refuses_fails_saying_why(tmp_path):
    out = tmp_path / "xrp.bitget.gz"
    # A simulator of BTCUSDT and ETHUSDT lists XRPUSDT in its table but has no XRPUSDT market.
    async with running_sim(sim_config(7)) as sim:
        arguments = ("--url", sim.ws_url, "--symbols", "XRPUSDT", "--out", str(out))
        result = await asyncio.to_thread(hft_console, "record", *arguments, "--duration", "30")
    assert result.returncode == 1
    (last,) = result.stdout.splitlines()[-1:]
    assert last.endswith(
        "FAULT: the venue refused XRPUSDT books15: 30001 "
        "instType:USDT-FUTURES,channel:books15,instId:XRPUSDT doesn't exist"
    )


async def test_record_of_a_symbol_without_a_contract_is_one_line_and_nothing_written(tmp_path):
    out = tmp_path / "nexo.bitget.gz"
    async with running_sim(sim_config(7)) as sim:
        arguments = ("--url", sim.ws_url, "--symbols", "NEXOUSDT", "--out", str(out))
        result = await asyncio.to_thread(hft_console, "record", *arguments, "--duration", "30")
    assert result.returncode == 2 and not out.exists()
    assert result.stderr == (
        f"hft-console record: no contract for NEXOUSDT in the contract table of {sim.rest_url}: "
        f"record the symbols it lists (hft-console instruments --url {sim.rest_url})\n"
    )


def test_headless_run_on_the_simulator(laya_model):
    result = hft_console("run", "--headless", "--duration", "3", "--model", str(laya_model))
    assert result.returncode == 0, result.stderr
    assert " wall   feed    BTCUSDT live (first book frame)" in result.stdout
    status_lines = [line for line in result.stdout.splitlines() if line.startswith("SIM frames")]
    assert any("BTCUSDT live" in line and "ETHUSDT live" in line for line in status_lines)
    assert "SIM HALTED pos flat" in status_lines[-1]  # the end flattens (--exit-policy)


def test_record_from_the_simulator_of_a_large_tick_contract(tmp_path):
    out = tmp_path / "ada.bitget.gz"
    arguments = ("--sim", "--symbols", "ADAUSDT", "--out", str(out), "--duration", "2.5")
    result = hft_console("record", *arguments)
    assert result.returncode == 0, result.stdout + result.stderr
    frames = [json.loads(raw) for _, raw in iter_recording(out)]
    books = [
        frame["data"][0]
        for frame in frames
        if "data" in frame and frame["arg"]["channel"] == "books15"
    ]
    prices = [price for book in books for price, _ in book["bids"] + book["asks"]]
    assert prices and all(len(price.split(".")[1]) == 4 for price in prices)  # ADA's 0.0001


def test_record_of_a_symbol_the_simulator_has_not_is_one_line(tmp_path, capsys):
    out = tmp_path / "nexo.bitget.gz"
    code = main(["record", "--sim", "--symbols", "NEXOUSDT", "--out", str(out), "--duration", "1"])
    assert code == 2 and not out.exists()
    assert capsys.readouterr().err == (
        "hft-console record: the simulator has no NEXOUSDT: it runs BTCUSDT, ETHUSDT, SOLUSDT, "
        "XRPUSDT, DOGEUSDT, ADAUSDT, TRXUSDT, LINKUSDT, AVAXUSDT, DOTUSDT\n"
    )


@pytest.mark.parametrize(
    ("options", "symbols", "market"),
    [
        (
            ["--symbols", "adausdt,DOGEUSDT"],
            "ADAUSDT (traded), DOGEUSDT (hedge)",
            "a pair: DOGEUSDT follows ADAUSDT (--hedge makes --symbols a book)",
        ),
        (
            ["--symbols", "ETHUSDT,solusdt,XRPUSDT"],
            "ETHUSDT, SOLUSDT, XRPUSDT (quoted), BTCUSDT (hedge)",
            "a book: every quoted symbol follows BTCUSDT, the market's leader",
        ),
        (
            ["--symbols", "ADAUSDT,DOGEUSDT", "--hedge", "xrpusdt"],
            "ADAUSDT, DOGEUSDT (quoted), XRPUSDT (hedge)",
            "a book: every quoted symbol follows XRPUSDT, the market's leader",
        ),
    ],
)
def test_the_standalone_simulator_runs_the_symbols_it_is_given(options, symbols, market):
    sim = subprocess.Popen(
        [*CLI, "sim", "--port", "0", *options],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=checkout_env(),
    )
    assert sim.stdout is not None
    banner: list[str] = []
    try:
        while (line := sim.stdout.readline()) not in ("", "Ctrl+C to stop\n"):  # "": it died
            banner.append(line.strip())
    finally:
        sim.send_signal(signal.SIGTERM)
        sim.wait(timeout=30)
    assert f"symbols            {symbols}, seed 7" in banner
    assert f"market             {market}" in banner


def test_the_standalone_simulator_refuses_a_symbol_it_has_not(capsys):
    assert main(["sim", "--port", "0", "--symbols", "BTCUSDT,NEXOUSDT"]) == 2
    assert capsys.readouterr().err == (
        "hft-console sim: the simulator has no NEXOUSDT: it runs BTCUSDT, ETHUSDT, SOLUSDT, "
        "XRPUSDT, DOGEUSDT, ADAUSDT, TRXUSDT, LINKUSDT, AVAXUSDT, DOTUSDT\n"
    )


@pytest.mark.parametrize(
    ("options", "refusal"),
    [
        (["--symbols", "ETHUSDT,BTCUSDT", "--hedge", "BTCUSDT"], "BTCUSDT is the hedge and cannot"),
        (
            ["--symbols", "ETHUSDT,SOLUSDT,BTCUSDT"],
            "BTCUSDT is the hedge and cannot also be quoted",
        ),
        (["--symbols", "ETHUSDT,SOLUSDT,ETHUSDT"], "ETHUSDT is quoted twice"),
        (["--symbols", "ETHUSDT", "--hedge", "NEXOUSDT"], "the simulator has no NEXOUSDT: it runs"),
    ],
)
def test_the_standalone_simulator_refuses_a_bad_book_in_one_line(capsys, options, refusal):
    assert main(["sim", "--port", "0", *options]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"hft-console sim: {refusal}") and err.count("\n") == 1


def test_record_from_the_simulator_then_replay(tmp_path):
    out = tmp_path / "sim.bitget.gz"
    result = hft_console("record", "--sim", "--out", str(out), "--duration", "2.5")
    assert result.returncode == 0, result.stderr
    assert "frames/s" in result.stdout
    assert set(recording_instruments(out)) == {"BTCUSDT", "ETHUSDT"}  # its first line
    frames = list(iter_recording(out))
    assert len(frames) > 10
    parser = FrameParser()
    events = [parser.parse(raw, recv_ns) for recv_ns, raw in frames]
    assert parser.stats.depth_snapshots > 5 and not parser.stats.rejected
    assert all(event is not None for event in events)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('"btc usdt" = "m.onnx"', "key 'btc usdt' is neither a symbol"),
        # A relative path is from the settings file's folder, not the working directory.
        (
            '"BTC*" = "missing.onnx"',
            "[laya.models] maps BTCUSDT to {folder}/missing.onnx, and there is no",
        ),
    ],
)
def test_a_bad_laya_models_table_is_one_line_and_exit_2(table, message, recording, tmp_path):
    folder = tmp_path / "settings"
    folder.mkdir()
    settings = folder / "config.toml"
    settings.write_text(f"[laya.models]\n{table}\n")
    env = checkout_env(HFT_CONSOLE_CONFIG=str(settings))
    run = (
        "run",
        "--headless",
        "--replay",
        str(recording),
        "--symbols",
        "BTCUSDT",
        "--hedge",
        "none",
    )
    result = run_cli(*run, env=env, cwd=tmp_path)
    assert result.returncode == 2
    assert message.format(folder=folder) in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_eval_says_which_model_each_symbol_would_run_on(laya_model, tmp_path, monkeypatch, capsys):
    recording = simulate_recording(tmp_path / "session.bitget.gz", 1.0, seed=3).path
    nexo = tmp_path / "nexo.onnx"
    settings = tmp_path / "config.toml"
    settings.write_text(f'[laya.models]\n"ETH*" = "{nexo}"\n"SOL*" = "sol.onnx"\n')
    monkeypatch.setenv("HFT_CONSOLE_CONFIG", str(settings))
    common = ("eval", "--replay", str(recording), "--model", str(laya_model), "--all")
    assert main([*common]) == 0
    table = capsys.readouterr().out.splitlines()
    assert f"BTCUSDT would run on {laya_model}" in table
    assert f"ETHUSDT would run on {nexo}" in table
    assert main([*common, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["symbol_models"] == {"BTCUSDT": str(laya_model), "ETHUSDT": str(nexo)}


def test_a_shipped_model_is_mapped_by_its_name_from_a_settings_file(
    laya_model, tmp_path, monkeypatch, capsys
):
    recording = simulate_recording(tmp_path / "session.bitget.gz", 1.0, seed=3).path
    settings = tmp_path / "settings" / "config.toml"
    settings.parent.mkdir()
    settings.write_text('[laya.models]\n"ETH*" = "laya-large-tick"\n')
    monkeypatch.setenv("HFT_CONSOLE_CONFIG", str(settings))
    argv = ("eval", "--replay", str(recording), "--model", str(laya_model), "--all", "--json")
    assert main([*argv]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["symbol_models"]["ETHUSDT"] == str(SHIPPED_MODELS / "laya-large-tick.onnx")
