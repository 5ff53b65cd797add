"""`hft-console soak` through `run_soak`: the generated recording when none is found, the JSON
object and an exit status that agrees with it, and bad input answered with a clear error."""

from __future__ import annotations

import argparse
import json

import pytest

from console.cli.soak import add_soak_parser, run_soak


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="hft-console")
    add_soak_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["soak", *argv])


def test_defaults_are_the_documented_full_run():
    args = parse()
    assert args.frames == 1_000_000 and args.replay is None and args.journal is None
    assert not args.json and not args.model_verdicts and args.kev_url is None
    assert parse("--frames", "20_000").frames == 20_000


def test_too_few_frames_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        parse("--frames", "500")
    assert exit_info.value.code == 2
    assert "at least 10,000 frames" in capsys.readouterr().err


def test_a_missing_recording_is_named(tmp_path, capsys):
    missing = tmp_path / "missing.bitget.gz"
    code = run_soak(parse("--replay", str(missing), "--frames", "10000"))
    assert code == 2
    assert f"recording not found: {missing}" in capsys.readouterr().err


def test_an_unreadable_recording_is_named_with_what_is_wrong(tmp_path, capsys):
    path = tmp_path / "notgzip.gz"
    path.write_bytes(b"not gzip at all\n")
    code = run_soak(parse("--replay", str(path), "--frames", "10000"))
    assert code == 2
    assert capsys.readouterr().err == (
        f"hft-console soak: {path}: unreadable recording: not gzip data, though its name ends "
        "in .gz\n"
    )


def test_without_recordings_it_generates_one_and_says_so(tmp_path, monkeypatch, capsys, laya_model):
    empty = tmp_path / "recordings"
    empty.mkdir()
    monkeypatch.setenv("HFT_CONSOLE_REPLAY_DIR", str(empty))
    journal = tmp_path / "journal.sqlite"
    code = run_soak(
        parse(
            "--frames", "10000", "--model", str(laya_model), "--cpu",
            "--journal", str(journal), "--json",
        )
    )  # fmt: skip
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert code == (0 if result["passed"] else 1)
    assert result["frames"] == 10_000
    assert any("generated" in note and str(empty) in note for note in result["notes"])
    assert f"no recordings in {empty}" in err
    assert result["orders_placed"] > 0 and result["journal_entries"] > 0
    names = [check["name"] for check in result["checks"]]
    assert "RSS growth, first tenth -> end" in names
    assert "fast path p99, last / first tenth" in names
    assert {queue["name"] for queue in result["queues"]} >= {"event log", "journal writer"}
    assert journal.is_file()
