"""`--report DIR`: every file written whole (the page, the PNGs, the JSON, the CSV), or, when
the write is interrupted, nothing at all."""

from __future__ import annotations

import base64
import csv
import json
import os
from datetime import UTC, datetime

import pytest
from matplotlib import image

from engine.tools.backtest import files
from engine.tools.backtest.files import write_report
from engine.tools.backtest.report import run_groups


def test_the_report_holds_the_page_the_pictures_the_json_and_the_fills(compared_runs, tmp_path):
    folder = tmp_path / "report"
    write_report(folder, run_groups(compared_runs, 3))
    written = sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*.*"))
    assert written == [
        "charts/overview-1.png",
        "charts/run-1-laya.png",
        "charts/run-2-none.png",
        "charts/run-3-imbalance.png",
        "fills.csv",
        "report.html",
        "report.json",
    ]
    assert [path.name for path in tmp_path.iterdir()] == ["report"]  # no scratch folder left
    umask = os.umask(0)
    os.umask(umask)
    assert folder.stat().st_mode & 0o777 == 0o777 & ~umask  # as a folder the user made

    page = (folder / "report.html").read_text("utf-8")
    for png in sorted((folder / "charts").iterdir()):
        height, width, _ = image.imread(png).shape  # decodes the whole file
        assert width == 1300 and height >= 380
        assert base64.b64encode(png.read_bytes()).decode() in page  # the same picture, inline

    report = json.loads((folder / "report.json").read_text("utf-8"))
    assert [run["label"] for run in report["runs"]] == ["laya", "none", "imbalance"]
    for shown, run in zip(report["runs"], compared_runs, strict=True):
        assert shown["series"]["equity"][-1] == pytest.approx(run.net)

    with (folder / "fills.csv").open(newline="", encoding="utf-8") as source:
        rows = list(csv.DictReader(source))
    assert len(rows) == sum(run.fill_count for run in compared_runs) > 0
    for row in rows[:20]:
        at = datetime.fromisoformat(row["time_utc"])
        assert at.tzinfo == UTC
        assert int(at.timestamp() * 1000) == int(row["time_ns"]) // 1_000_000


def test_fills_csv_writes_prices_and_sizes_on_the_contracts_grid_at_its_decimals(
    compared_runs, tmp_path
):
    folder = tmp_path / "report"
    write_report(folder, run_groups(compared_runs, 3))
    with (folder / "fills.csv").open(newline="", encoding="utf-8") as source:
        rows = list(csv.DictReader(source))
    decimals = {"BTCUSDT": (1, 3), "ETHUSDT": (2, 2)}  # the tick's and the size step's
    assert {row["symbol"] for row in rows} == set(decimals)
    for row in rows:
        price_decimals, size_decimals = decimals[row["symbol"]]
        assert len(row["price"].partition(".")[2]) == price_decimals, row
        assert len(row["size"].partition(".")[2]) == size_decimals, row
        assert "e" not in row["fee"] and len(row["fee"].partition(".")[2]) <= 8, row


def test_an_interrupted_write_leaves_nothing_and_an_empty_folder_as_it_was(
    compared_runs, tmp_path, monkeypatch
):
    drawn = []

    def interrupted_after_one(figure):
        if drawn:
            raise KeyboardInterrupt
        drawn.append(figure.name)
        return b"\x89PNG"

    monkeypatch.setattr(files, "figure_png", interrupted_after_one)
    folder = tmp_path / "report"
    folder.mkdir()
    with pytest.raises(KeyboardInterrupt):
        write_report(folder, run_groups(compared_runs, 3))
    assert drawn == ["overview-1"]  # it was part-way through
    assert [path.name for path in tmp_path.iterdir()] == ["report"]
    assert not any(folder.iterdir())


def test_report_json_holds_each_gate_against_no_gate_whole_and_per_block(compared_runs, tmp_path):
    folder = tmp_path / "report"
    write_report(folder, run_groups(compared_runs, 3, block_s=60))
    (compare,) = json.loads((folder / "report.json").read_text("utf-8"))["compare"]
    assert [gate["gate"] for gate in compare["gates"]] == ["laya", "none", "imbalance"]
    assert compare["block_s"] == 60 and len(compare["blocks"]) == 3  # under 4 min: the last takes 2
    for column, run in enumerate(compared_runs):
        blocks = [block[column] for block in compare["blocks"]]
        assert sum(block["quote_fills"] for block in blocks) == run.quote_fills
        assert sum(block["net"] for block in blocks) == pytest.approx(run.net)
        assert [block["start_ns"] for block in blocks[1:]] == [b["end_ns"] for b in blocks[:-1]]
    laya, none, _ = compare["gates"]
    assert none["saved_per_fill_1s_bps"] is None
    assert laya["saved_per_fill_1s_bps"] == pytest.approx(
        laya["markout_1s_bps"] - none["markout_1s_bps"]
    )
    assert laya["saved_interval"] in ("above zero", "below zero", "holds zero")
