"""`hft-console backtest`: bad input gets one line and exit status 2 before anything runs; the
charts after the tables; `--report` written whole, or refused up front without matplotlib."""

from __future__ import annotations

import errno
import gzip
import http.server
import importlib.abc
import json
import os
import signal
import subprocess
import sys
import threading

import pytest
from support.cli import CLI, REPO, checkout_env, with_sigint_default

from console.cli.main import main
from console.cli.progress import progress_bar


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
        (["--symbols", "BTCUSDT", "--hedge", "SOLUSDT"], "has no SOLUSDT (the hedge)"),
        (["--symbols", "BTCUSDT,SOLUSDT"], "--symbols now lists the quoted symbols and --hedge"),
        (["--hedge", "none"], "--hedge: only with --symbols (without it each recording's own"),
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
    assert code == 2 and "is a folder with files in it" in err
    assert [p.name for p in folder.iterdir()] == ["mine.txt"]


def test_a_report_under_a_file_or_on_a_link_to_nothing_is_refused_before_any_run(
    recording, tmp_path, capsys
):
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    for folder, message in (
        (tmp_path / "notes.txt" / "report", f"{tmp_path / 'notes.txt'} is a file, not a folder"),
        (tmp_path / "link", f"is a symbolic link to {tmp_path / 'nowhere'}, which does not exist"),
    ):
        code, out, err = run(capsys, "--replay", str(recording), "--report", str(folder))
        assert (code, out) == (2, "")
        assert err == f"hft-console backtest: --report {folder}: {message}\n"


def test_the_same_recording_twice_is_refused(recording, tmp_path, capsys):
    copy = tmp_path / "copy.bitget.gz"
    copy.write_bytes(recording.read_bytes())
    code, out, err = run(capsys, "--replay", str(recording), str(copy))
    assert (code, out) == (2, "") and f"{copy} is a copy of {recording}" in err


def test_kev_answers_already_recorded_are_never_written_over(recording, tmp_path, capsys):
    answers = tmp_path / "answers.jsonl"
    answers.write_text("the answers a rerun replays\n")
    code, out, err = run(capsys, "--replay", str(recording), "--kev", str(answers))
    assert (code, out) == (2, "")
    assert err == f"hft-console backtest: --kev {answers}: exists; give a name that is not taken\n"
    assert answers.read_text() == "the answers a rerun replays\n"


def test_a_model_that_is_not_onnx_is_one_line(recording, tmp_path, capsys):
    notes = tmp_path / "notes.onnx"
    notes.write_text("not a model")
    code, out, err = run(capsys, "--replay", str(recording), "--set", f"laya.model_path={notes}")
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err.startswith(f"hft-console backtest: {notes} is not a loadable ONNX model")


def test_a_run_prints_its_figures_as_json(recording, capsys):
    code, out, _ = run(capsys, "--replay", str(recording), "--json", "--set", "laya.gate=none")
    assert code == 0
    (figures,) = json.loads(out)["runs"]
    assert figures["label"] == "laya.gate=none" and figures["frames"] > 0
    assert set(figures["pnl"]) == {"realized", "unrealized", "fees", "net", "net_per_hour"}
    horizons = [item["horizon_ms"] for item in figures["markouts"]["quote_fills"]]
    assert horizons == [100, 1000, 5000, 30000]


def test_runs_in_workers_draw_one_bar_of_the_runs_done_on_a_terminal(
    recording, capsys, monkeypatch
):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    grid = ("--set", "laya.gate=none", "--set", "trading.strategy.half_spread_bps=1,2,3")
    code = main(["backtest", "--replay", str(recording), *grid, "--jobs", "2", "--json"])
    _, err = capsys.readouterr()
    assert code == 0
    drawn = err.split("\r\x1b[K")  # a run's line clears the bar first, then draws it again
    assert [text.splitlines()[-1] for text in drawn[:-1]] == [
        f"{progress_bar(done / 3)} {done}/3 runs" for done in (1, 2)
    ]
    assert drawn[-1].startswith("3/3 ") and drawn[-1].endswith("frames/s\n")  # no bar left


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
        (quoted,) = [item for item in shown["symbols"] if item["symbol"] in shown["quoted"]]
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
    assert err.count("\n") == 1 and err.endswith("not written: No space left on device\n")
    assert list(tmp_path.iterdir()) == []


# Small refusals: a folder, a raw capture, three symbols, a grid point twice


@pytest.mark.parametrize(
    ("write", "message"),
    [
        (lambda path: path.mkdir(), "is a folder, not a recording"),
        (
            lambda path: path.write_bytes(
                gzip.compress(b'1680652700423575 {"stream":"btcusdt@trade","data":{}}\n')
            ),
            "looks like a Binance raw capture, not a recording: import it first "
            "(hft-console import --from binance-raw",
        ),
    ],
    ids=["folder", "raw-capture"],
)
def test_a_folder_or_a_raw_capture_is_named_for_what_it_is(tmp_path, capsys, write, message):
    path = tmp_path / "usdm_btcusdt_20230404.dat.gz"
    write(path)
    code, out, err = run(capsys, "--replay", str(path))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and message in err


@pytest.mark.parametrize(
    "command",
    [
        ["backtest", "--replay"],
        ["train", "--out", "model.onnx", "--replay"],
        ["eval", "--replay"],
        ["bench", "--replay"],
    ],
)
def test_a_folder_as_a_recording_is_said_in_words_by_every_command(tmp_path, capsys, command):
    """Not Python's "[Errno 21] is a folder, not a recording: '...'" (console/cli/errors.py)."""
    folder = tmp_path / "session"
    folder.mkdir()
    code = main([*command, str(folder)])
    err = capsys.readouterr().err
    assert code == 2
    assert err == f"hft-console {command[0]}: {folder}: is a folder, not a recording\n"


@pytest.mark.parametrize("command", ["backtest", "run"])  # train, eval: test_lab_cli.py
def test_a_book_of_three_names_what_the_recording_lacks(recording, capsys, command):
    book = ("--symbols", "BTCUSDT,SOLUSDT,XRPUSDT", "--hedge", "ETHUSDT")
    assert main([command, "--replay", str(recording), *book]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert f"{recording} has no SOLUSDT, XRPUSDT: it has BTCUSDT, ETHUSDT" in line


def test_a_book_is_backtested_on_a_recording_of_it(tmp_path, capsys):
    from engine.sim.market import sim_book
    from engine.sim.recording import simulate_recording

    path = tmp_path / "book.bitget.gz"
    simulate_recording(path, 0.5, seed=3, market=sim_book(("ETHUSDT", "SOLUSDT"), seed=3))
    book = ("--symbols", "ETHUSDT,SOLUSDT", "--hedge", "BTCUSDT")
    code, out, err = run(capsys, "--replay", str(path), *book, "--no-charts", "--json")
    assert code == 0, err
    (shown,) = json.loads(out)["runs"]
    assert {item["symbol"] for item in shown["symbols"]} == {"ETHUSDT", "SOLUSDT", "BTCUSDT"}


def test_a_grid_value_given_twice_is_refused(recording, capsys):
    half_spread = "trading.strategy.half_spread_bps"
    code, out, err = run(capsys, "--replay", str(recording), "--set", f"{half_spread}=1,1.0")
    assert (code, out) == (2, "")
    assert err == f"hft-console backtest: --set {half_spread}: 1.0 is given twice\n"


def test_a_recording_shorter_than_layas_warm_up_says_why_it_has_no_verdicts(recording, capsys):
    longer = ("--replay", str(recording), "--set", "laya.warmup_s=120")  # a minute recorded
    code, out, _ = run(capsys, *longer, "--no-charts")
    assert code == 0
    warming = "  Laya was still warming up on BTCUSDT when the recording ended: 59.9 of 120 s"
    assert out.splitlines()[1].startswith(warming)  # under the run's title
    code, out, _ = run(capsys, *longer, "--json")
    (figures,) = json.loads(out)["runs"]
    assert figures["laya_still_warming_up"][0].startswith("Laya was still warming up on BTCUSDT")


def test_kev_with_no_server_answering_is_refused_before_any_run(
    recording, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("HFT_CONSOLE_KEV__URL", "http://127.0.0.1:9")  # nobody there
    answers = tmp_path / "answers.jsonl"
    code, out, err = run(capsys, "--replay", str(recording), "--kev", str(answers))
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err.startswith(
        "hft-console backtest: --kev: Kev's llama-server at http://127.0.0.1:9 is unreachable"
    )
    assert not answers.exists()


@pytest.fixture(scope="module")
def long_recording(tmp_path_factory):
    """Ten minutes of the simulator: a run takes long enough to be interrupted mid-way."""
    from engine.sim.recording import simulate_recording

    path = tmp_path_factory.mktemp("cli-backtest-long") / "sim-10min.bitget.gz"
    simulate_recording(path, 10.0, seed=5)
    return path


def test_ctrl_c_during_worker_runs_is_one_line_and_exit_130(long_recording, tmp_path):
    """Ctrl-C reaches the whole foreground group: the workers too."""
    recording = long_recording
    grid = "trading.strategy.half_spread_bps=1,2,3,4"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    process = subprocess.Popen(
        [*CLI, "backtest", "--replay", str(recording), "--set", grid, "--jobs", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=checkout_env(HFT_CONSOLE_LAYA__PREFER_GPU="false", TMPDIR=str(scratch)),
        start_new_session=True,
        preexec_fn=with_sigint_default,
    )
    try:
        assert process.stderr is not None
        first = process.stderr.readline()  # a run has ended: the others are under way
        assert first.startswith("1/4 "), first
        os.killpg(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, err
    assert out == "" and "Traceback" not in err and "KeyboardInterrupt" not in err
    assert err.splitlines()[-1] == "hft-console backtest: interrupted"
    assert not list(scratch.glob("hft-backtest-*"))  # no run's scratch folder left behind


class _UpOnce(http.server.BaseHTTPRequestHandler):
    """llama-server's /health: ok once (the check before the run), loading from then on."""

    probes = 0

    def do_GET(self):
        type(self).probes += 1
        up = type(self).probes == 1
        body = b'{"status":"ok"}' if up else b'{"error":{"code":503,"message":"Loading model"}}'
        self.send_response(200 if up else 503)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        return


def test_a_run_whose_kev_never_answered_says_so_and_exits_1(
    recording, tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr(_UpOnce, "probes", 0)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _UpOnce)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        monkeypatch.setenv("HFT_CONSOLE_KEV__URL", f"http://127.0.0.1:{server.server_port}")
        # Thresholds that lean on a lopsided book, whatever operating point ships: Laya's
        # verdicts are the anomalies Kev is offered.
        monkeypatch.setenv("HFT_CONSOLE_LAYA__THRESHOLDS", "0.5,0.325,0.325,0.9")
        answers = tmp_path / "answers.jsonl"
        code, out, err = run(capsys, "--replay", str(recording), "--kev", str(answers))
    finally:
        server.shutdown()
        thread.join(10)
    assert code == 1 and "PnL (USDT)" in out
    assert _UpOnce.probes > 2  # the check before the run, then the run's own probes
    assert err.startswith("hft-console backtest: Kev never answered: ") and err.count("\n") == 1
    assert " anomalies unanswered, the run is without Kev" in err


@pytest.mark.parametrize(
    ("blocks", "message"),
    [
        ("0h", "'0h' is not a positive duration"),
        ("eight", "'eight' is not a positive duration: give a number and a unit"),
        ("-8h", "'-8h' is not a positive duration"),
        ("90s", "'90s' is not a whole number of minutes"),
    ],
)
def test_a_block_that_is_no_positive_whole_minutes_is_refused(recording, capsys, blocks, message):
    with pytest.raises(SystemExit) as exited:
        run(capsys, "--replay", str(recording), "--compare", f"--blocks={blocks}")
    assert exited.value.code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert error.startswith("hft-console backtest: error: argument --blocks:") and message in error


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--blocks", "8h"], "--blocks 8 h cuts --compare's figures into blocks: add --compare"),
        (
            ["--blocks", "1m", "--compare"],
            "--blocks 1 min is longer than sim.bitget.gz, 59.9 s of market",
        ),
    ],
)
def test_blocks_without_compare_or_longer_than_the_recording_are_refused_before_any_run(
    recording, capsys, args, message
):
    code, out, err = run(capsys, "--replay", str(recording), *args)
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err.startswith(f"hft-console backtest: {message}")


def test_compare_per_block_in_the_tables_and_the_json(tmp_path, capsys):
    from engine.sim.recording import simulate_recording

    recording = tmp_path / "two.bitget.gz"
    simulate_recording(recording, 2.0, seed=5)
    argv = ["--replay", str(recording), "--compare", "--blocks", "1m", "--jobs", "1"]
    code, out, _ = run(capsys, *argv, "--json")
    assert code == 0
    (compare,) = json.loads(out)["compare"]
    assert compare["block_s"] == 60 and len(compare["blocks"]) == 1  # under 2 min: one block
    assert [gate["gate"] for gate in compare["blocks"][0]] == ["laya", "none", "imbalance"]
    code, out, _ = run(capsys, *argv, "--no-charts")
    assert code == 0 and "per block of 1 min of market time" in out


def test_a_books_compare_is_per_quoted_symbol_and_for_the_book(tmp_path, capsys):
    from engine.sim.market import sim_book
    from engine.sim.recording import simulate_recording

    path = tmp_path / "book.bitget.gz"
    simulate_recording(path, 2.0, seed=3, market=sim_book(("ETHUSDT", "SOLUSDT"), seed=3))
    book = ("--symbols", "ETHUSDT,SOLUSDT", "--hedge", "BTCUSDT")
    argv = ["--replay", str(path), *book, "--compare", "--jobs", "1"]
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    shown = json.loads(out)
    (compare,) = shown["compare"]
    assert [item["symbol"] for item in compare["symbols"]] == ["ETHUSDT", "SOLUSDT"]
    quoted = ["ETHUSDT", "SOLUSDT"]
    per_symbol = zip(*(item["gates"] for item in compare["symbols"]), strict=True)
    for gate, each, run_shown in zip(compare["gates"], per_symbol, shown["runs"], strict=True):
        assert (run_shown["quoted"], run_shown["hedge"]) == (quoted, "BTCUSDT")
        makers = {item["symbol"]: item["maker_fills"] for item in run_shown["symbols"]}
        assert [figures["quote_fills"] for figures in each] == [makers[s] for s in quoted]
        assert gate["quote_fills"] == sum(makers[s] for s in quoted) > 0
    code, out, _ = run(capsys, *argv, "--no-charts")
    assert code == 0 and "per quoted symbol: its net (without the hedge's)" in out
    assert "BTCUSDT (hedge)" in out and "net, with the hedge BTCUSDT" in out
