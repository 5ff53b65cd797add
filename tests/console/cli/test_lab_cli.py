"""`hft-console train` and `eval` on a recording of a book: `--symbols`, `--hedge` and `--leader`
name it as `run` and `backtest` do, the report splits per symbol, and a book that is not one,
or one the recording lacks, is one line before any work."""

from __future__ import annotations

import json

import pytest

from console.cli.main import main
from engine.feed.recording import recording_symbols
from engine.sim.market import sim_book
from engine.sim.recording import simulate_recording

BOOK = ("SOLUSDT", "ETHUSDT", "XRPUSDT")


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    """A simulated book of three quoted symbols, hedged (and led) by BTCUSDT."""
    path = tmp_path_factory.mktemp("lab-cli") / "book.bitget.gz"
    return simulate_recording(path, 1.0, seed=4, market=sim_book(BOOK, seed=4)).path


@pytest.fixture(autouse=True)
def default_settings(tmp_path, monkeypatch):
    """The settings' defaults ([engine] hedge ETHUSDT, leader BTCUSDT), not the user's."""
    settings = tmp_path / "config.toml"
    settings.write_text("")
    monkeypatch.setenv("HFT_CONSOLE_CONFIG", str(settings))


def scored_symbols(capsys, *argv) -> list[str]:
    """The symbols `eval --json` scored, in the report's order."""
    assert main(["eval", *argv, "--all", "--json"]) == 0
    return list(json.loads(capsys.readouterr().out)["per_symbol"])


@pytest.mark.parametrize(
    ("options", "scored"),
    [
        ((), [*BOOK, "BTCUSDT"]),  # its own, as its contracts line lists them
        (("--symbols", "SOLUSDT,XRPUSDT", "--hedge", "BTCUSDT"), ["SOLUSDT", "XRPUSDT", "BTCUSDT"]),
        (("--symbols", "SOLUSDT,XRPUSDT", "--hedge", "none"), ["SOLUSDT", "XRPUSDT", "BTCUSDT"]),
        (
            ("--symbols", "SOLUSDT,XRPUSDT", "--hedge", "none", "--leader", "none"),
            ["SOLUSDT", "XRPUSDT"],
        ),
        (  # [engine] hedge
            ("--symbols", "XRPUSDT,SOLUSDT,BTCUSDT"),
            ["XRPUSDT", "SOLUSDT", "BTCUSDT", "ETHUSDT"],
        ),
    ],
    ids=["own", "hedged", "led", "last-leads", "default-hedge"],
)
def test_eval_of_a_book_scores_each_symbol_of_the_book_the_engine_would_run(
    book, laya_model, capsys, options, scored
):
    assert scored_symbols(capsys, "--replay", str(book), "--model", str(laya_model), *options) == (
        scored
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("--symbols", "SOLUSDT,ETHUSDT,SOLUSDT", "--hedge", "BTCUSDT"), "SOLUSDT is quoted twice"),
        (
            ("--symbols", "SOLUSDT", "--hedge", "SOLUSDT"),
            "SOLUSDT is the hedge and cannot also be quoted",
        ),
        (("--hedge", "BTCUSDT"), "--hedge: only with --symbols"),
        (
            ("--symbols", "SOLUSDT,XRPUSDT"),
            "for the old meaning (SOLUSDT traded, XRPUSDT its hedge) say --symbols SOLUSDT "
            "--hedge XRPUSDT",
        ),
        (
            ("--symbols", "SOLUSDT,ETHUSDT", "--hedge", "DOGEUSDT"),
            "{book} has no DOGEUSDT (the leader)",
        ),
        (
            ("--symbols", "SOLUSDT", "--hedge", "none", "--leader", "DOGEUSDT"),
            "{book} has no DOGEUSDT (the leader)",
        ),
        (("--symbols", "ADAUSDT,SOLUSDT", "--hedge", "BTCUSDT"), "{book} has no ADAUSDT"),
    ],
    ids=[
        "quoted-twice",
        "hedge-quoted",
        "hedge-alone",
        "old-pair-form",
        "no-hedge",
        "no-leader",
        "no-symbol",
    ],
)
@pytest.mark.parametrize("command", ["train", "eval"])
def test_a_book_that_is_not_one_is_one_line_before_any_work(
    book, laya_model, tmp_path, capsys, command, options, message
):
    out = tmp_path / "model.onnx"
    argv = {"train": ("--out", str(out)), "eval": ("--model", str(laya_model))}[command]
    code = main([command, "--replay", str(book), *argv, *options])
    printed, err = capsys.readouterr()
    assert (code, printed) == (2, "")
    assert err.startswith(f"hft-console {command}: ") and err.count("\n") == 1
    line = message.format(book=book)
    if "has no" in line:  # the lab's own check: what the recording has, busiest first
        assert (
            err == f"hft-console {command}: {line}: it has {', '.join(recording_symbols(book))}\n"
        )
    else:
        assert line in err
    assert not out.exists()
