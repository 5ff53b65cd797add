"""`hft-console backtest`: bad input gets one line and exit status 2 before anything runs."""

from __future__ import annotations

import json

import pytest

from console.cli import main


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    from engine.laya.dataset import simulate_recording

    path = tmp_path_factory.mktemp("cli-backtest") / "sim.bitget.gz"
    simulate_recording(path, 1.0, seed=5)
    return path


def run(capsys, *argv):
    code = main(["backtest", "--quiet", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("write", "message"),
    [
        (lambda path: path.write_bytes(b"not gzip at all"), "unreadable recording: not gzip data"),
        (lambda path: path.write_bytes(b""), "unreadable recording: the file is empty"),
        (lambda path: None, "recording not found"),
    ],
)
def test_an_unreadable_recording_is_one_line_and_exit_2(tmp_path, capsys, write, message):
    path = tmp_path / "bad.gz"
    write(path)
    code, out, err = run(capsys, "--replay", str(path))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--set", "trading.strategy.nope=1"], "trading.strategy.nope"),
        (["--set", "trading.strategy.half_spread_bps=-1"], "half_spread_bps"),
        (["--set", "trading.strategy.half_spread_bps"], "expected KEY=VALUE"),
        (["--symbols", "BTCUSDT,SOLUSDT"], "has no SOLUSDT"),
        (["--compare", "--set", "laya.gate=none"], "--set laya.gate would undo it"),
    ],
)
def test_a_bad_setting_or_symbol_is_refused_before_any_run(recording, capsys, args, message):
    code, out, err = run(capsys, "--replay", str(recording), *args)
    assert code == 2 and out == ""
    assert message in err and "Traceback" not in err


def test_a_report_folder_that_holds_something_is_refused_and_left_alone(
    recording, tmp_path, capsys
):
    folder = tmp_path / "report"
    folder.mkdir()
    (folder / "mine.txt").write_text("keep me")
    code, _, err = run(capsys, "--replay", str(recording), "--report", str(folder))
    assert code == 2 and "exists and is not an empty folder" in err
    assert [p.name for p in folder.iterdir()] == ["mine.txt"]


def test_a_run_prints_its_figures_as_json(recording, capsys):
    code, out, _ = run(capsys, "--replay", str(recording), "--json", "--set", "laya.gate=none")
    assert code == 0
    (figures,) = json.loads(out)["runs"]
    assert figures["label"] == "laya.gate=none" and figures["frames"] > 0
    assert set(figures["pnl"]) == {"realized", "unrealized", "fees", "net", "net_per_hour"}
    assert [item["horizon_ms"] for item in figures["markouts"]["fills"]] == [100, 1000, 5000, 30000]
