"""`hft-console run` as the launcher runs it: headless and under the console (in a pseudo
terminal), how a run ends, and the figures it leaves behind."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import time
from pathlib import Path

import pytest
from support.cli import CLI, REPO, checkout_env, run_cli
from support.recordings import write_recording

from console.engine.config import EngineAdapterConfig
from console.engine.handle import ShutdownPolicy
from console.engine.node_handle import EngineNodeHandle
from engine.config import EngineConfig
from engine.journal import read_journal
from engine.laya.config import LayaClassifierConfig
from engine.pipeline import TIMED_STAGES
from engine.trading.config import TradingConfig


def environment(tmp_path: Path) -> dict[str, str]:
    env = checkout_env({k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")})
    env.update(
        TERM="xterm-256color",
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_DATA_HOME=str(tmp_path / "data"),
    )
    return env


@pytest.fixture
def recording(tmp_path) -> Path:
    return write_recording(tmp_path / "two-symbols.bitget.gz", books=200)


def check_figures(path: Path) -> dict[str, object]:
    figures = json.loads(path.read_text())
    assert list(figures["stages_us"]) == list(TIMED_STAGES)
    assert figures["depth_frames"] == 400 and figures["trade_frames"] == 100
    assert figures["frames"] == 500 and figures["provider"] == "CPUExecutionProvider"
    total = figures["stages_us"]["total"]
    assert 0 < total["p50"] <= total["p99"] <= total["max"]
    return figures


def test_headless_replays_to_the_end_and_writes_the_figures(tmp_path, recording, laya_model):
    stats = tmp_path / "figures.json"
    arguments = ["run", "--headless", "--replay", str(recording), "--speed", "max"]
    arguments += ["--stats-out", str(stats), "--model", str(laya_model), "--cpu"]
    result = run_cli(*arguments, env=environment(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "hft-console: end of the recording" in result.stdout
    assert "watch only: nothing is traded" in result.stdout
    assert "REPLAY frames 500 |" in result.stdout
    assert (
        "feed    end of the recording: 500 frames (500 of market data) over 10.0 s of market time"
        in result.stdout
    )
    assert "hft-console: end of the recording; engine stopped" in result.stderr
    check_figures(stats)


def test_exit_at_end_needs_a_recording(tmp_path):
    result = run_cli("run", "--headless", "--exit-at-end", env=environment(tmp_path), timeout=60)
    assert result.returncode == 2
    assert "--exit-at-end needs --replay FILE" in result.stderr


def run_in_terminal(arguments: list[str], env: dict[str, str], size=(100, 30)) -> tuple[int, str]:
    """`hft-console` with a pseudo terminal of `size` as its terminal; its exit status and the
    tail of what it drew."""
    controller, terminal = pty.openpty()
    width, height = size
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", height, width, 0, 0))
    process = subprocess.Popen(
        [*CLI, *arguments],
        cwd=REPO,
        env=env,
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        start_new_session=True,
    )
    os.close(terminal)
    drawn = b""
    deadline = time.monotonic() + 120
    try:
        while process.poll() is None and time.monotonic() < deadline:
            if select.select([controller], [], [], 0.1)[0]:
                try:
                    drawn = (drawn + os.read(controller, 65536))[-20_000:]
                except OSError:
                    break
    finally:
        if process.poll() is None:
            process.kill()
        os.close(controller)
    return process.wait(30), drawn.decode(errors="replace")


def test_the_console_replays_to_the_end_and_closes_with_the_figures(
    tmp_path, recording, laya_model
):
    stats = tmp_path / "figures.json"
    arguments = ["--replay", str(recording), "--speed", "max", "--exit-at-end"]
    arguments += ["--stats-out", str(stats), "--model", str(laya_model), "--cpu"]
    status, drawn = run_in_terminal(arguments, environment(tmp_path))
    assert status == 0, drawn
    assert "end of the recording; engine stopped" in drawn
    check_figures(stats)
    log = tmp_path / "state" / "hft-console" / "log" / "console.log"
    assert log.is_file()  # what the engine logged went there, not over the screen


def headless(
    tmp_path: Path, *arguments: str, settings: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`hft-console run --headless`; `settings`: HFT_CONSOLE_* variables on top."""
    return run_cli(
        "run", "--headless", *arguments, env={**environment(tmp_path), **(settings or {})}
    )


WARM_UP_30_S = {"HFT_CONSOLE_LAYA__WARMUP_S": "30"}


def log_file(tmp_path: Path) -> Path:
    return tmp_path / "state" / "hft-console" / "log" / "console.log"


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        (("--model", "{tmp}/missing.onnx"), "ModelNotFoundError: no Laya model at {tmp}/missing"),
        (("--model", "{tmp}/not-a-model.onnx"), "is not a loadable ONNX model"),
        (("--journal", "{tmp}"), "journal file cannot be created or opened: {tmp} "),
        (("--journal", "/proc/journal.sqlite"), "cannot be created or opened: /proc/journal"),
    ],
    ids=["missing-model", "not-a-model", "journal-on-a-directory", "journal-read-only"],
)
def test_a_failed_start_is_one_line_and_its_traceback_goes_to_the_log(
    tmp_path, laya_model, arguments, why
):
    tmp = str(tmp_path)
    (tmp_path / "not-a-model.onnx").write_bytes(b"not a model")
    chosen = [text.format(tmp=tmp) for text in arguments]
    result = headless(tmp_path, "--duration", "5", "--model", str(laya_model), *chosen)
    assert result.returncode == 1
    log = log_file(tmp_path)
    (line,) = result.stderr.splitlines()
    assert line.startswith("hft-console: the engine failed to start: ")
    assert why.format(tmp=tmp) in line and line.endswith(f" (log: {log})")
    logged = log.read_text()
    assert "Traceback" in logged and "the engine failed to start" in logged
    assert "last console snapshot failed" not in logged and "AssertionError" not in logged


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "hft-console: recording not found: {path}"),
        (
            b"not gzip at all\n",
            "hft-console: {path}: unreadable recording: not gzip data, though its name ends in .gz",
        ),
        (b"", "hft-console: {path}: unreadable recording: the file is empty"),
    ],
    ids=["missing", "not-gzip", "empty"],
)
def test_an_unreadable_recording_is_refused_before_the_engine_starts(tmp_path, content, message):
    path = tmp_path / "recording.gz"
    if content is not None:
        path.write_bytes(content)
    result = headless(tmp_path, "--replay", str(path), "--speed", "max", "--mode", "paper")
    assert result.returncode == 2
    assert result.stderr == message.format(path=path) + "\n"
    assert result.stdout == ""


def test_a_failed_start_under_the_console_is_one_line_too(tmp_path, laya_model):
    missing = tmp_path / "missing.onnx"
    status, drawn = run_in_terminal(["--model", str(missing)], environment(tmp_path))
    assert status == 1, drawn
    log = log_file(tmp_path)
    lines = drawn.replace("\r", "").strip().splitlines()
    assert lines == [
        f"hft-console: starting the engine (log: {log})",
        f"hft-console: the engine failed to start: ModelNotFoundError: no Laya model at {missing}"
        + lines[1].split(str(missing), 1)[1],
    ]
    assert lines[1].endswith(f" (log: {log})")
    logged = log.read_text()
    assert "Traceback" in logged and "AssertionError" not in logged


def journaled_stop(journal: Path) -> tuple[str, str]:
    """The reason of the HALTED state change and of the kill command of a run's end."""
    halted = [
        entry.payload["reason"]
        for entry in read_journal(journal, kinds=["state_change"])
        if entry.payload.get("new") == "HALTED"
    ]
    kills = [
        entry.payload["reason"]
        for entry in read_journal(journal, kinds=["operator_command"])
        if entry.payload["command"] == "kill"
    ]
    assert len(halted) == 1 and len(kills) == 1, (halted, kills)
    return halted[0], kills[0]


def test_the_duration_ending_a_run_is_journaled_as_such(tmp_path, laya_model):
    journal = tmp_path / "journal.sqlite"
    arguments = ["--duration", "2", "--model", str(laya_model), "--journal", str(journal)]
    result = headless(tmp_path, *arguments)
    assert result.returncode == 0, result.stderr
    assert "hft-console: --duration 2 s elapsed (flatten and stop)…" in result.stdout
    reason = "--duration 2 s elapsed (exit policy flatten)"
    assert journaled_stop(journal) == (reason, reason)


@pytest.mark.parametrize(
    ("signum", "reason"),
    [
        (signal.SIGHUP, "SIGHUP: the terminal hung up (exit policy flatten)"),
        (signal.SIGTERM, "SIGTERM: asked to stop (exit policy flatten)"),
        (signal.SIGINT, "SIGINT: interrupted (exit policy flatten)"),
    ],
    ids=["SIGHUP", "SIGTERM", "SIGINT"],
)
def test_a_signal_ending_a_headless_run_is_journaled_as_such(tmp_path, laya_model, signum, reason):
    journal = tmp_path / "journal.sqlite"
    process = start_headless(tmp_path, "--model", str(laya_model), "--journal", str(journal))
    try:
        process.send_signal(signum)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert f"hft-console: {reason.removesuffix(' (exit policy flatten)')} (flatten and" in out
    assert journaled_stop(journal) == (reason, reason)


def test_the_end_of_a_recording_is_journaled_as_such(tmp_path, recording, laya_model):
    journal = tmp_path / "journal.sqlite"
    replay = ("--replay", str(recording), "--speed", "max", "--mode", "paper")
    result = headless(tmp_path, *replay, "--model", str(laya_model), "--journal", str(journal))
    assert result.returncode == 0, result.stderr
    reason = "end of the recording (exit policy flatten)"
    assert journaled_stop(journal) == (reason, reason)


def test_the_consoles_flatten_and_quit_is_journaled_as_the_operators(tmp_path, laya_model):
    """What the quit dialog (or a quit with nothing open) sends: the handle's shutdown."""
    journal = tmp_path / "journal.sqlite"
    engine = EngineConfig(
        laya=LayaClassifierConfig(model_path=laya_model, prefer_gpu=False),
        trading=TradingConfig(journal_path=journal),
    )
    handle = EngineNodeHandle(engine, EngineAdapterConfig(gpu=None))
    handle.start()
    try:
        assert handle.shutdown(ShutdownPolicy.FLATTEN).ok
    finally:
        handle.shutdown(ShutdownPolicy.KEEP)
    reason = "the operator quit the console (flatten and quit)"
    assert journaled_stop(journal) == (reason, reason)


def test_a_truncated_recording_replays_what_it_holds_and_says_so(tmp_path, recording, laya_model):
    whole = recording.read_bytes()
    cut = tmp_path / "cut.bitget.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    replay = ("--replay", str(cut), "--speed", "max", "--mode", "paper")
    result = headless(tmp_path, *replay, "--model", str(laya_model))
    assert result.returncode == 0, result.stderr
    problem = f"{cut}: truncated at byte {len(whole) // 2:,} after "
    (said,) = [line for line in result.stderr.splitlines() if problem in line]
    assert said.startswith(f"hft-console: {problem}")
    assert said.endswith(
        "frames (the gzip data stops mid-stream: a copy cut short, or a recorder "
        "that stopped mid-write); the frames before it were read"
    )
    assert f"feed    {said.removeprefix('hft-console: ')}" in result.stdout  # the event


@pytest.mark.parametrize(
    ("book", "missing"),
    [
        (("SOLUSDT", "--hedge", "XRPUSDT"), "SOLUSDT, XRPUSDT (the hedge)"),
        (("BTCUSDT", "--hedge", "SOLUSDT"), "SOLUSDT (the hedge)"),
        (("BTCUSDT,ETHUSDT", "--hedge", "none", "--leader", "SOLUSDT"), "SOLUSDT (the leader)"),
        (("BTCUSDT,XRPUSDT,ETHUSDT", "--hedge", "SOLUSDT"), "XRPUSDT, SOLUSDT (the hedge)"),
    ],
    ids=["neither", "the-hedge", "the-leader", "a-book"],
)
def test_a_recording_without_the_symbols_is_refused_before_the_engine_starts(
    tmp_path, recording, laya_model, book, missing
):
    replay = ("--replay", str(recording), "--symbols", *book)
    result = headless(tmp_path, *replay, "--model", str(laya_model))
    assert result.returncode == 2
    assert result.stderr == (
        f"hft-console: {recording} has no {missing}: it has BTCUSDT, ETHUSDT; --symbols names "
        "the quoted ones, --hedge their hedge (or none), --leader the leader without one (or "
        "none)\n"
    )
    assert result.stdout == ""


def test_a_replay_shorter_than_the_warm_up_says_why_there_are_no_verdicts(
    tmp_path, recording, laya_model
):
    replay = ("--replay", str(recording), "--speed", "max", "--model", str(laya_model))
    result = headless(tmp_path, *replay, settings=WARM_UP_30_S)
    assert result.returncode == 0, result.stderr
    for symbol in ("BTCUSDT", "ETHUSDT"):
        assert (
            f"Laya was still warming up on {symbol} when the recording ended: 9.9 of 30 s of "
            "market data, so no verdicts ([laya] warmup_s sets it)"
        ) in result.stdout
    status = [line for line in result.stdout.splitlines() if line.startswith("REPLAY frames")]
    assert (
        "HOLD 0 LEAN_BUY 0 LEAN_SELL 0 EMERGENCY 0 warming up: BTCUSDT 20.1 s, ETHUSDT 20.1 s "
        "of market data to go" in status[-1]
    )


def test_a_headless_run_stopped_while_warming_up_says_so(tmp_path, laya_model):
    arguments = ("--duration", "2", "--model", str(laya_model))
    result = headless(tmp_path, *arguments, settings=WARM_UP_30_S)
    assert result.returncode == 0, result.stderr
    assert "Laya was still warming up on BTCUSDT when the run stopped: " in result.stdout
    assert " of 30 s of market data, so no verdicts ([laya] warmup_s sets it)" in result.stdout


def test_headless_lines_say_which_clock_each_time_is_on(tmp_path, recording, laya_model):
    replay = ("--replay", str(recording), "--speed", "max", "--mode", "paper")
    result = headless(tmp_path, *replay, "--model", str(laya_model))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    # The recording starts at 2024-09-10 20:26:40 UTC: the engine lives in its time.
    assert "20:26:40.000 market feed    BTCUSDT live (replay reached the symbol)" in lines
    # It halts as the recording ends (its last frames are at 20:26:49.95), in market time: once
    # the recording is over that time follows the wall clock, so the halt lands a poll or two of
    # the headless loop (0.1 s each) after the end.
    (halted,) = [line for line in lines if "ACTIVE -> HALTED" in line]
    assert halted.startswith("20:26:") and 49.9 <= float(halted[6:12]) < 51, halted
    assert halted[12:].startswith(" market state   ")
    (started,) = [line for line in lines if "engine started" in line]
    assert started[12:].startswith(" wall   system  engine started")  # the console's own note


def start_headless(tmp_path: Path, *arguments: str) -> subprocess.Popen[str]:
    """`hft-console run --headless ARGUMENTS` once its engine runs (its first status line)."""
    process = subprocess.Popen(
        [*CLI, "run", "--headless", *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=environment(tmp_path),
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("SIM frames"):
            return process
    process.kill()
    raise AssertionError(f"the first run did not start: {process.communicate()[1]}")


def engine_pid(launcher: subprocess.Popen[str]) -> int:
    """The pid of a running launcher's engine process, its one child (started by its main
    thread)."""
    (child,) = Path(f"/proc/{launcher.pid}/task/{launcher.pid}/children").read_text().split()
    return int(child)


def test_a_second_engine_on_a_journal_is_refused_naming_the_first(tmp_path, laya_model):
    journal = tmp_path / "journal.sqlite"
    arguments = ("--model", str(laya_model), "--journal", str(journal))
    first = start_headless(tmp_path, *arguments)
    try:
        holder = engine_pid(first)
        second = headless(tmp_path, *arguments, "--duration", "5")
        first.send_signal(signal.SIGTERM)
        _, first_err = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
    assert second.returncode == 2
    assert second.stderr == (
        f"hft-console: the journal {journal} is in use by another engine (pid {holder}; lock "
        f"{journal}.lock): stop that one first\n"
    )
    assert second.stdout == ""
    assert first.returncode == 0, first_err
    # The first ran on undisturbed: its own start and stop are all the journal holds.
    reason = "SIGTERM: asked to stop (exit policy flatten)"
    assert journaled_stop(journal) == (reason, reason)


def test_a_journal_lock_left_by_a_killed_engine_is_taken_over_and_said(tmp_path, laya_model):
    journal = tmp_path / "journal.sqlite"
    arguments = ("--model", str(laya_model), "--journal", str(journal))
    first = start_headless(tmp_path, *arguments)
    try:
        killed = engine_pid(first)
        os.kill(killed, signal.SIGKILL)  # the engine dies holding its lock
        first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 1
    again = headless(tmp_path, *arguments, "--duration", "2")
    assert again.returncode == 0, again.stderr
    assert (
        f"took over the lock on the journal {journal} left by pid {killed}, which ended "
        "without stopping: check the venue for its orders"
    ) in again.stdout
