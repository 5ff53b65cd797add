"""`--report DIR`: a backtest's figures as files: report.html (the tables and the charts, one
self-contained page), the charts as PNG files in charts/, report.json (every run's metrics and
series) and fills.csv (every fill with its markouts). Written into a scratch folder beside DIR
and moved into place whole, so an interrupted run leaves nothing half-written."""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from engine.market.instruments import price_text, size_text
from engine.tools.backtest.charts import report_figures
from engine.tools.backtest.html_report import figure_png, report_html, require_matplotlib
from engine.tools.backtest.metrics import HORIZONS_MS, SessionMetrics
from engine.tools.backtest.report import RunGroup, backtest_json
from engine.units import plain
from engine.user_files import check_output_folder, folder_made_whole


def check_report_dir(folder: Path) -> None:
    """Before the runs: matplotlib must import, and DIR must be a new or empty folder that can
    be made and written (`check_output_folder`)."""
    require_matplotlib()
    check_output_folder(folder, f"--report {folder}")


def write_report(folder: Path, groups: Sequence[RunGroup]) -> None:
    """Every run of `groups` (in order) and each group's comparison."""
    runs = [run for group in groups for run in group.runs]
    with folder_made_whole(folder) as scratch:
        (scratch / "report.json").write_text(json.dumps(backtest_json(groups), indent=2), "utf-8")
        _write_fills(scratch / "fills.csv", runs)
        figures = report_figures(groups)
        pngs = {figure.name: figure_png(figure) for figure in figures}
        (scratch / "charts").mkdir()
        for name, png in pngs.items():
            (scratch / "charts" / f"{name}.png").write_bytes(png)
        (scratch / "report.html").write_text(report_html(groups, figures, pngs), "utf-8")


def _write_fills(path: Path, runs: Sequence[SessionMetrics]) -> None:
    markout_columns = [f"markout_{horizon}ms_bps" for horizon in HORIZONS_MS]
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(
            [
                "run",
                "recording",
                "time_ns",
                "time_utc",
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
            instruments = {result.symbol: result.instrument for result in run.symbols}
            for fill in run.fills:
                writer.writerow(
                    [
                        run.label,
                        Path(run.recording).name,
                        fill.at_ns,
                        _utc(fill.at_ns),
                        fill.symbol,
                        fill.side,
                        price_text(instruments.get(fill.symbol), fill.price),
                        size_text(instruments.get(fill.symbol), fill.size),
                        int(fill.maker),
                        plain(fill.fee),
                        fill.role,
                        *("" if value != value else f"{value:.4f}" for value in fill.markouts_bps),
                    ]
                )


def _utc(at_ns: int) -> str:
    """ISO 8601 to the millisecond, from the integer (a float's rounding would shift it)."""
    seconds, rest = divmod(at_ns, 1_000_000_000)
    at = datetime.fromtimestamp(seconds, UTC) + timedelta(microseconds=rest // 1_000)
    return at.isoformat(timespec="milliseconds")
