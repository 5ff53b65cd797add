"""`--report DIR`: a backtest's figures as files: report.json (every run's metrics) and
fills.csv (every fill with its markouts). Written into a scratch folder beside DIR and moved
into place whole, so an interrupted run leaves nothing half-written."""

from __future__ import annotations

import csv
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from engine.backtest.metrics import HORIZONS_MS, SessionMetrics
from engine.backtest.report import metrics_json


def check_report_dir(folder: Path) -> None:
    """Before the runs: DIR must be new or empty, in a folder that exists and can be written."""
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ValueError(f"--report {folder}: exists and is not an empty folder")
    parent = folder.absolute().parent
    if not parent.is_dir():
        raise ValueError(f"--report {folder}: the folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise ValueError(f"--report {folder}: cannot write in {parent}")


def write_report(folder: Path, runs: Sequence[SessionMetrics]) -> None:
    folder = folder.absolute()
    scratch = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        (scratch / "report.json").write_text(
            json.dumps({"runs": [metrics_json(run) for run in runs]}, indent=2)
        )
        _write_fills(scratch / "fills.csv", runs)
        if folder.exists():
            folder.rmdir()  # checked empty before the runs
        scratch.rename(folder)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise


def _write_fills(path: Path, runs: Sequence[SessionMetrics]) -> None:
    markout_columns = [f"markout_{horizon}ms_bps" for horizon in HORIZONS_MS]
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(
            [
                "run",
                "recording",
                "time_ns",
                "symbol",
                "side",
                "price",
                "size",
                "maker",
                "fee",
                "role",
                *markout_columns,
            ]
        )
        for run in runs:
            for fill in run.fills:
                writer.writerow(
                    [
                        run.label,
                        Path(run.recording).name,
                        fill.at_ns,
                        fill.symbol,
                        fill.side,
                        repr(fill.price),
                        repr(fill.size),
                        int(fill.maker),
                        repr(fill.fee),
                        fill.role,
                        *("" if value != value else f"{value:.4f}" for value in fill.markouts_bps),
                    ]
                )
