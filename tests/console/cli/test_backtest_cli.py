"""`hft-console backtest`: bad input gets one line and exit status 2 before anything runs; the
charts after the tables; `--report` written whole, or refused up front without matplotlib."""

from __future__ import annotations

import errno
import importlib.abc
import json
import sys

import pytest

from console.cli.main import main


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    from engine.sim.recording import simulate_recording

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


class _NoMatplotlib(importlib.abc.MetaPathFinder):
    """An environment without the report extra."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "matplotlib":
            raise ImportError(f"No module named {name!r}", name=name)
        return None


def test_without_matplotlib_a_report_is_refused_before_any_run(
    recording, tmp_path, capsys, monkeypatch
):
    for name in [name for name in sys.modules if name.partition(".")[0] == "matplotlib"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [_NoMatplotlib(), *sys.meta_path])
    folder = tmp_path / "report"
    # Not --quiet: a run that started would say so on stderr.
    code = main(["backtest", "--replay", str(recording), "--report", str(folder)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "pip install '.[report]'" in err
    assert list(tmp_path.iterdir()) == []


def test_the_charts_follow_the_tables_unless_turned_off(recording, capsys):
    code, out, _ = run(capsys, "--replay", str(recording), "--set", "laya.gate=none")
    assert code == 0
    assert out.index("PnL (USDT)") < out.index("net PnL, marked to market at the mid")
    assert "BTCUSDT mid and our fills (USDT)" in out and "mean markout (bps)" in out
    code, out, _ = run(capsys, "--replay", str(recording), "--set", "laya.gate=none", "--no-charts")
    assert code == 0 and "PnL (USDT)" in out and "marked to market" not in out


def test_the_charts_are_in_colour_on_a_terminal_unless_no_color_is_set(
    recording, capsys, monkeypatch
):
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.delenv("NO_COLOR", raising=False)
    _, coloured, _ = run(capsys, "--replay", str(recording), "--set", "laya.gate=none")
    monkeypatch.setenv("NO_COLOR", "1")
    _, plain, _ = run(capsys, "--replay", str(recording), "--set", "laya.gate=none")
    assert "\x1b[" in coloured and "marked to market" in plain and "\x1b[" not in plain


def test_a_compare_report_is_written_whole_and_named_last(recording, tmp_path, capsys):
    folder = tmp_path / "report"
    argv = ["--replay", str(recording), "--compare", "--jobs", "1", "--no-charts"]
    code, out, _ = run(capsys, *argv, "--report", str(folder))
    assert code == 0 and out.rstrip().endswith(f"report: {folder / 'report.html'}")
    page = (folder / "report.html").read_text("utf-8")
    assert all(f"[{gate}]" in page for gate in ("laya", "none", "imbalance"))
    assert "fills lost" in page and "Ranking by net PnL" in page
    for shown in json.loads((folder / "report.json").read_text("utf-8"))["runs"]:
        (quoted,) = [item for item in shown["symbols"] if item["symbol"] == shown["quoted"]]
        assert shown["series"]["equity"][-1] == pytest.approx(shown["pnl"]["net"])
        assert shown["series"]["position"][-1] == quoted["end_position"]


def test_with_json_stdout_stays_json_and_the_report_is_named_on_stderr(recording, tmp_path, capsys):
    folder = tmp_path / "report"
    argv = ["--replay", str(recording), "--set", "laya.gate=none", "--json"]
    code, out, err = run(capsys, *argv, "--report", str(folder))
    assert code == 0 and json.loads(out)["runs"][0]["label"] == "laya.gate=none"
    assert err == f"report: {folder / 'report.html'}\n"


def test_a_report_that_cannot_be_written_keeps_the_tables(recording, tmp_path, capsys, monkeypatch):
    from engine.tools.backtest import files

    def disk_full(figure):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files, "figure_png", disk_full)
    folder = tmp_path / "report"
    argv = ["--replay", str(recording), "--set", "laya.gate=none", "--no-charts"]
    code, out, err = run(capsys, *argv, "--report", str(folder))
    assert code == 1 and "PnL (USDT)" in out and "report:" not in out
    assert err.count("\n") == 1 and "not written: [Errno 28] No space left on device" in err
    assert list(tmp_path.iterdir()) == []
