"""`hft-console import --from binance-raw`: a recording and a summary, the gaps said on stderr;
bad input one line, exit status 2 and nothing written."""

from __future__ import annotations

import gzip

import pytest

from console.cli.main import main
from engine.feed.recording import check_recording, iter_recording, recording_instruments
from engine.market.instruments import Instrument

SNAPSHOT = (
    b'1680652700000000 {"lastUpdateId": 10, "bids": [["100.0", "1"]], "asks": [["100.1", "2"]]}'
)
UPDATES = [
    b'1680652700000001 {"stream": "btcusdt@depth@0ms", "data": {"e": "depthUpdate", "E": 2, '
    b'"T": 1, "s": "BTCUSDT", "U": 11, "u": 12, "pu": 10, "b": [["99.9", "3"]], "a": []}}',
    b'1680652700000002 {"stream": "btcusdt@trade", "data": {"e": "trade", "E": 3, "T": 2, '
    b'"s": "BTCUSDT", "t": 7, "p": "100.1", "q": "0.5", "X": "MARKET", "m": false}}',
]
LOST_UPDATE = (
    b'1680652700000003 {"stream": "btcusdt@depth@0ms", "data": {"e": "depthUpdate", "E": 4, '
    b'"T": 3, "s": "BTCUSDT", "U": 20, "u": 21, "pu": 19, "b": [], "a": []}}'
)


def capture(path, *lines: bytes):
    path.write_bytes(gzip.compress(b"\n".join(lines) + b"\n"))
    return str(path)


def run(capsys, *argv):
    code = main(["import", "--from", "binance-raw", "--quiet", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_capture_becomes_a_recording_with_a_summary(tmp_path, capsys):
    out = tmp_path / "session.bitget.gz"
    code, printed, err = run(
        capsys, capture(tmp_path / "raw.gz", SNAPSHOT, *UPDATES), "--out", str(out)
    )
    assert code == 0 and err == ""
    check_recording(out)
    assert len(list(iter_recording(out))) == 2
    assert printed.startswith(f"wrote {out}: 2 frames over 0.0 min of market")
    assert "BTCUSDT (USD-M, 1 file(s)): 1 books15, 1 trades" in printed


def test_the_stored_contract_is_said_with_where_each_key_came_from(tmp_path, capsys):
    raw = capture(tmp_path / "raw.gz", SNAPSHOT, *UPDATES)
    out = tmp_path / "derived.bitget.gz"
    code, printed, _ = run(capsys, raw, "--out", str(out))
    assert code == 0
    # Prices 99.9, 100, 100.1; sizes 0.5 (the trade), 1, 2, 3.
    assert printed.splitlines()[-1] == (
        "contract stored: BTCUSDT tick 0.1 lot 0.5 min 5 USDT (tick and lot from the data)"
    )
    assert recording_instruments(out) == {"BTCUSDT": Instrument("BTCUSDT", 0.1, 0.5)}
    given = tmp_path / "given.bitget.gz"
    option = "btcusdt:lot=0.1,min_notional=2"
    code, printed, _ = run(capsys, raw, "--out", str(given), "--instrument", option)
    assert code == 0
    assert printed.splitlines()[-1] == (
        "contract stored: BTCUSDT tick 0.1 lot 0.1 min 2 USDT (--instrument gave lot, "
        "min_notional; tick from the data)"
    )
    assert recording_instruments(given) == {"BTCUSDT": Instrument("BTCUSDT", 0.1, 0.1, 2.0)}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            ("--instrument", "BTCUSDT:tick=0.2"),
            "BTCUSDT: its prices are not all on --instrument tick=0.2: they move in steps of "
            "0.1; nothing written",
        ),
        (
            ("--instrument", "ETHUSDT:tick=0.01"),
            "--instrument ETHUSDT: the captures have no ETHUSDT: they have BTCUSDT",
        ),
        (
            ("--instrument", "BTCUSDT:tick=0.1", "--instrument", "BTCUSDT:lot=1"),
            "--instrument BTCUSDT is given twice: give its keys in one",
        ),
        (
            ("--instrument", "BTCUSDT:tick=0.1,tick=0.01"),
            "--instrument BTCUSDT:tick=0.1,tick=0.01: tick is given twice",
        ),
        (
            ("--instrument", "BTCUSDT:step=0.1"),
            "--instrument BTCUSDT:step=0.1: 'step=0.1' is not one of tick, lot, min_notional=VALUE",
        ),
    ],
)
def test_an_instrument_that_contradicts_the_data_or_itself_is_refused(
    tmp_path, capsys, options, message
):
    raw = capture(tmp_path / "raw.gz", SNAPSHOT, *UPDATES)
    code, printed, err = run(capsys, raw, "--out", str(tmp_path / "out.gz"), *options)
    assert (code, printed, err) == (2, "", f"hft-console import: {message}\n")
    assert list(tmp_path.iterdir()) == [tmp_path / "raw.gz"]


def test_a_gap_is_said_on_stderr_and_the_recording_still_written(tmp_path, capsys):
    raw = capture(tmp_path / "raw.gz", SNAPSHOT, *UPDATES, LOST_UPDATE)
    code, printed, err = run(capsys, raw, "--out", str(tmp_path / "out.gz"))
    assert code == 0 and "1 gap(s)" in printed
    lines = err.splitlines()
    assert len(lines) == 2 and all(
        line.startswith("hft-console import: BTCUSDT: ") for line in lines
    )
    assert "depth-chain gap" in lines[0] and "no snapshot came after the gap" in lines[1]


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ((UPDATES[0],), "no depth snapshot"),
        ((b"hello",), "unreadable recording"),
        (
            (b'1680652700000000 {"action":"snapshot","arg":{"instId":"BTCUSDT"},"data":[]}',),
            "it holds Bitget frames",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path, capsys, lines, message):
    out = tmp_path / "out.gz"
    code, printed, err = run(capsys, capture(tmp_path / "raw.gz", *lines), "--out", str(out))
    assert (code, printed) == (2, "")
    assert err.count("\n") == 1 and message in err and err.startswith("hft-console import: ")
    assert list(tmp_path.iterdir()) == [tmp_path / "raw.gz"]


def test_files_out_of_order_a_missing_file_and_an_existing_output_are_refused(tmp_path, capsys):
    first = capture(tmp_path / "a.gz", SNAPSHOT, UPDATES[0])
    second = capture(tmp_path / "b.gz", UPDATES[1])
    out = tmp_path / "out.gz"
    for argv, message in (
        ((second, first), "give a symbol's files in date order"),
        ((first, str(tmp_path / "missing.gz")), "missing.gz: no such file"),
    ):
        code, printed, err = run(capsys, *argv, "--out", str(out))
        assert (code, printed) == (2, "") and err.count("\n") == 1 and message in err
    out.write_bytes(b"someone's")
    code, _, err = run(capsys, first, second, "--out", str(out))
    assert code == 2 and f"--out {out}: exists; add --force to replace it" in err
    assert out.read_bytes() == b"someone's"
    assert run(capsys, first, second, "--out", str(out), "--force")[0] == 0
    code, printed, err = run(capsys, first, second, "--out", str(tmp_path), "--force")
    assert (code, printed) == (2, "")
    assert (
        err
        == f"hft-console import: --out {tmp_path}: is a folder; give the name of a file to write\n"
    )


def test_a_capture_cut_short_is_refused_unless_allowed_then_said(tmp_path, capsys):
    whole = gzip.compress(b"\n".join((SNAPSHOT, *UPDATES)) + b"\n")
    raw = tmp_path / "raw.gz"
    raw.write_bytes(whole[:-4])  # the gzip trailer cut: every line read, the end missing
    out = tmp_path / "out.gz"
    code, printed, err = run(capsys, str(raw), "--out", str(out))
    assert (code, printed) == (2, "") and err.count("\n") == 1
    assert err.startswith(f"hft-console import: {raw}: truncated at byte ")
    assert err.endswith("nothing written (--allow-truncated imports it up to the cut)\n")
    assert list(tmp_path.iterdir()) == [raw]
    code, printed, err = run(capsys, str(raw), "--out", str(out), "--allow-truncated")
    assert code == 0 and printed.startswith(f"wrote {out}: ")
    assert err.startswith(f"hft-console import: {raw}: truncated at byte ")
    check_recording(out)


def test_the_progress_bar_fills_with_the_fraction_read():
    from console.cli.progress import progress_bar

    assert progress_bar(0.5) == "[############............]  50%"
    assert progress_bar(1.0) == "[########################] 100%"
