"""`hft-console journal` on real journal files, through the real CLI entry point."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from console.cli.main import main
from engine.journal import EntryKind, Journal, JournalConfig, default_journal_path

T0 = int(datetime(2024, 6, 1, 12, 0, tzinfo=UTC).timestamp()) * 1_000_000_000
SECOND = 1_000_000_000
SECRET = "Jr9SecretForTheJournalCli"
KINDS = [EntryKind.ORDER_INTENT, EntryKind.ORDER_ACK, EntryKind.FILL, EntryKind.FAULT]


def write_journal(path: Path, count: int = 12) -> Path:
    """Entry n at T0 + n s, kinds cycling through KINDS; the fault entries quote a secret."""
    journal = Journal(JournalConfig(path))
    journal.register_secret(SECRET)
    journal.start()
    try:
        for n in range(count):
            kind = KINDS[n % len(KINDS)]
            payload: dict[str, object] = {"n": n, "symbol": "BTCUSDT"}
            if kind is EntryKind.FAULT:
                payload["error"] = f"signature rejected for secret {SECRET}"
            journal.append(kind, payload, T0 + n * SECOND)
    finally:
        journal.stop()
    return path


@pytest.fixture
def journal_file(tmp_path: Path) -> Path:
    return write_journal(tmp_path / "events.sqlite")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["journal", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def json_lines(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines()]


def test_the_table_lists_every_entry_oldest_first(journal_file, capsys) -> None:
    code, out, err = run(capsys, "--path", str(journal_file))
    assert code == 0 and err == ""
    header, *rows = out.splitlines()
    assert header.split() == ["SEQ", "TIME", "(UTC)", "KIND", "PAYLOAD"]
    assert len(rows) == 12
    assert rows[0].split()[:4] == ["1", "2024-06-01", "12:00:00.000000", "order_intent"]
    assert rows[3].split()[3] == "fault" and "<redacted>" in rows[3]
    assert SECRET not in out


def test_json_lines_carry_seq_time_kind_and_payload(journal_file, capsys) -> None:
    code, out, _ = run(capsys, "--path", str(journal_file), "--json")
    assert code == 0
    entries = json_lines(out)
    assert [entry["seq"] for entry in entries] == list(range(1, 13))
    assert entries[2] == {
        "seq": 3,
        "at_ns": T0 + 2 * SECOND,
        "time": "2024-06-01 12:00:02.000000",
        "kind": "fill",
        "payload": {"n": 2, "symbol": "BTCUSDT"},
    }
    assert entries[3]["payload"]["error"] == "signature rejected for secret <redacted>"


def test_kind_filters_repeat_and_split_on_commas(journal_file, capsys) -> None:
    _, out, _ = run(capsys, "--path", str(journal_file), "--json", "--kind", "fill")
    assert [entry["payload"]["n"] for entry in json_lines(out)] == [2, 6, 10]
    _, out, _ = run(
        capsys, "--path", str(journal_file), "--json", "--kind", "FILL,fault", "--kind", "order_ack"
    )
    assert [entry["payload"]["n"] for entry in json_lines(out)] == [1, 2, 3, 5, 6, 7, 9, 10, 11]


def test_since_accepts_iso_times_and_epoch_numbers(journal_file, capsys) -> None:
    _, out, _ = run(
        capsys, "--path", str(journal_file), "--json", "--since", "2024-06-01T12:00:09Z"
    )
    assert [entry["payload"]["n"] for entry in json_lines(out)] == [9, 10, 11]
    epoch_ms = str((T0 + 10 * SECOND) // 1_000_000)
    _, out, _ = run(capsys, "--path", str(journal_file), "--json", "--since", epoch_ms)
    assert [entry["payload"]["n"] for entry in json_lines(out)] == [10, 11]
    # A time with an offset: 14:00:11+02:00 is 12:00:11 UTC.
    _, out, _ = run(
        capsys, "--path", str(journal_file), "--json", "--since", "2024-06-01T14:00:11+02:00"
    )
    assert [entry["payload"]["n"] for entry in json_lines(out)] == [11]


def test_limit_keeps_the_most_recent_matches(journal_file, capsys) -> None:
    args = ("--path", str(journal_file), "--json", "--limit", "2", "--kind", "order_intent")
    _, out, _ = run(capsys, *args)
    assert [entry["payload"]["n"] for entry in json_lines(out)] == [4, 8]


@pytest.mark.parametrize("since", [["--since", "15m"], ["--since", "-15m"], ["--since=-15m"]])
def test_a_duration_since_counts_back_from_now(tmp_path, capsys, since) -> None:
    """`-15m` reads as 15 minutes ago too: argparse once took it for an unknown option."""
    path = tmp_path / "recent.sqlite"
    journal = Journal(JournalConfig(path))
    journal.start()
    now_ns = datetime.now(UTC).timestamp() * SECOND
    journal.append("state_change", {"at": "two hours ago"}, int(now_ns - 7_200 * SECOND))
    journal.append("state_change", {"at": "a minute ago"}, int(now_ns - 60 * SECOND))
    journal.stop()
    code, out, _ = run(capsys, "--path", str(path), "--json", *since)
    assert code == 0
    assert [entry["payload"]["at"] for entry in json_lines(out)] == ["a minute ago"]


def test_nothing_matching_says_so_on_stderr(journal_file, capsys) -> None:
    code, out, err = run(capsys, "--path", str(journal_file), "--since", "2030-01-01")
    assert code == 0 and out == ""
    assert f"no journal entries match in {journal_file}" in err


def test_a_missing_journal_is_a_clear_error(tmp_path, capsys) -> None:
    missing = tmp_path / "none.sqlite"
    code, out, err = run(capsys, "--path", str(missing))
    assert code == 2 and out == ""
    assert f"no journal at {missing}" in err and "--path" in err


def test_a_file_that_is_not_a_journal_is_a_clear_error(tmp_path, capsys) -> None:
    text_file = tmp_path / "notes.txt"
    text_file.write_text("not a database at all, just some words " * 100)
    code, _, err = run(capsys, "--path", str(text_file))
    assert code == 2 and f"{text_file} is not a readable journal" in err
    other_db = tmp_path / "other.sqlite"
    with sqlite3.connect(other_db) as connection:
        connection.execute("CREATE TABLE things (x)")
    connection.close()
    code, _, err = run(capsys, "--path", str(other_db))
    assert code == 2 and "no such table: entries" in err


def test_the_default_path_is_the_per_user_data_dir(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    expected = tmp_path / "data" / "hft-console" / "journal.sqlite"
    assert default_journal_path() == expected
    code, _, err = run(capsys)
    assert code == 2 and f"no journal at {expected}" in err
    write_journal(expected, count=3)
    code, out, _ = run(capsys, "--json")
    assert code == 0 and len(json_lines(out)) == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--kind", "fil"), "unknown kind 'fil'; kinds: verdict_action,"),
        (("--kind", ","), "unknown kind ','"),
        (("--since", "yesterday"), "cannot read --since 'yesterday'"),
        (
            ("--since", "99999999999999999999999"),
            "--since '99999999999999999999999' is outside the journal's times (1970 to 2262)",
        ),
        (("--limit", "0"), "expected a number >= 1, got 0"),
        (("--limit", "ten"), "expected a whole number, got 'ten'"),
    ],
)
def test_bad_options_are_refused_by_the_parser(journal_file, capsys, args, message) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["journal", "--path", str(journal_file), *args])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err
