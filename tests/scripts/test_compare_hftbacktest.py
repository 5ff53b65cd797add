"""scripts/compare-hftbacktest: without hftbacktest it says so in one line; with it, our backtest
and hftbacktest agree on a session where every fill is a trade through the quote (so no queue
model can differ)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "compare-hftbacktest"
T0_US = 1_680_652_800_000_000
CYCLES = 30


def test_without_hftbacktest_it_fails_with_one_line():
    hide = (
        "import runpy, sys; sys.modules['hftbacktest'] = None; "
        f"sys.argv = ['compare-hftbacktest']; runpy.run_path({str(SCRIPT)!r}, run_name='__main__')"
    )
    result = subprocess.run(
        [sys.executable, "-c", hide], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode != 0 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("compare-hftbacktest: hftbacktest is not installed")


def through_the_quotes_capture(path: Path) -> Path:
    """A USD-M capture, one book a second at 30000.0 / 30000.1 and, in between, a sell through
    the bid and a buy through the ask: each fills the quote resting there in any model."""
    lines = [
        (
            T0_US,
            {
                "lastUpdateId": 10,
                "E": 1,
                "T": 1,
                "bids": [["30000.0", "1.000"]],
                "asks": [["30000.1", "1.000"]],
            },
        )
    ]
    update_id = 10
    for cycle in range(CYCLES + 1):  # the last book only lets the last answers come back
        at_us = T0_US + 1_000 + cycle * 1_000_000
        ms = at_us // 1000 - 20  # transaction time: 20 ms before the collector got it
        data = {
            "e": "depthUpdate",
            "E": ms + 1,
            "T": ms,
            "s": "BTCUSDT",
            "U": update_id + 1,
            "u": update_id + 2,
            "pu": update_id,
            "b": [["30000.0", f"{1 + cycle / 1000:.3f}"]],
            "a": [["30000.1", "1.000"]],
        }
        update_id += 2
        lines.append((at_us, {"stream": "btcusdt@depth@0ms", "data": data}))
        if cycle == CYCLES:
            break
        for offset_ms, price, seller in ((400, "29999.9", True), (700, "30000.2", False)):
            trade = {
                "e": "trade",
                "E": ms + offset_ms + 1,
                "T": ms + offset_ms,
                "s": "BTCUSDT",
                "t": cycle * 2 + seller,
                "p": price,
                "q": "0.500",
                "X": "MARKET",
                "m": seller,
            }
            lines.append((at_us + offset_ms * 1000, {"stream": "btcusdt@trade", "data": trade}))
    with gzip.open(path, "wb") as file:
        for local_us, message in lines:
            file.write(b"%d %b\n" % (local_us, orjson.dumps(message)))
    return path


def test_ours_and_hftbacktest_fill_alike_when_no_queue_model_can_differ(tmp_path):
    pytest.importorskip("hftbacktest")
    capture = through_the_quotes_capture(tmp_path / "btcusdt_20230405.dat.gz")
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--captures", str(capture), "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    ours = report["ours"]["none"]
    assert ours["fills"] == 2 * CYCLES
    assert report["ours"]["as captured"]["fills"] == 2 * CYCLES  # trades through: any latency
    for run in report["theirs"]["none"]:
        assert run["fills"] == ours["fills"], run["name"]
        assert run["matched"] == 1.0, run["name"]
        assert run["net"] == pytest.approx(ours["net"], abs=1e-6), run["name"]
