"""`hft-console backtest`: recordings through the whole engine in market time, and what its
trading made (engine/backtest/)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from console.arguments import count


def add_backtest_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "backtest",
        help="the whole engine on recordings in market time: PnL, markouts, gates compared",
        description="Plays each recording through the whole engine (Laya, the desk, the risk "
        "gateway, the executor, the paper venue) in the recording's own time at full speed, "
        "deterministically, and reports PnL, activity, markouts and what Laya did.",
    )
    parser.add_argument("--replay", metavar="FILE", nargs="+", required=True, help="recordings")
    parser.add_argument(
        "--symbols",
        type=_symbols,
        help="traded symbol first, then the hedge (default: the recording's two busiest)",
    )
    parser.add_argument("--config", metavar="FILE", help="settings file (default: the user's)")
    parser.add_argument(
        "--set",
        metavar="KEY=VALUE[,VALUE...]",
        action="append",
        default=[],
        help="a setting for the run (e.g. trading.strategy.half_spread_bps=2); several values "
        "make a grid, each point a run of its own",
    )
    parser.add_argument(
        "--compare",
        action="store_true",
        help="each run three times: Laya's gate, no gate, and the top-5 imbalance gate",
    )
    parser.add_argument("--json", action="store_true", help="JSON on stdout instead of tables")
    parser.add_argument(
        "--report", metavar="DIR", help="also write report.html, report.json and fills.csv there"
    )
    parser.add_argument(
        "--jobs",
        type=count,
        default=os.cpu_count() or 1,
        help="worker processes for several runs (default: one per core)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")


def _symbols(text: str) -> tuple[str, ...]:
    symbols = tuple(part.strip().upper() for part in text.split(",") if part.strip())
    if not 1 <= len(symbols) <= 2:
        raise argparse.ArgumentTypeError("give the traded symbol and at most one hedge")
    return symbols


def run_backtest_command(args: argparse.Namespace) -> int:
    from console.config_cli import load_console_settings
    from engine.backtest.plan import COMPARED_GATES, backtest_specs, grid, parse_set, run_specs
    from engine.backtest.report import compare_text, metrics_json, ranking_text, session_text
    from engine.feed.recording import check_recording
    from engine.settings import SettingsError

    name = "hft-console backtest"
    report_dir = Path(args.report) if args.report else None
    try:
        recordings = [Path(path) for path in args.replay]
        for recording in recordings:
            check_recording(recording)
        sets = [parse_set(text) for text in args.set]
        sources = {key: f"--set {key}" for key, _ in sets}
        settings = load_console_settings(args.config)
        gates = COMPARED_GATES if args.compare else (None,)
        specs = backtest_specs(
            settings, recordings, args.symbols, grid(sets), gates, sources=sources
        )
        if report_dir is not None:
            from engine.backtest.files import check_report_dir

            check_report_dir(report_dir)
    except SettingsError as error:
        print(f"{name}: {error}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as error:
        print(f"{name}: {error}", file=sys.stderr)
        return 2
    progress = None if args.quiet else _ProgressLine(len(specs))
    try:
        runs = run_specs(
            specs,
            args.jobs,
            progress=progress.show if progress is not None else None,
            done=progress.done if progress is not None else None,
        )
    finally:
        if progress is not None:
            progress.close()
    if report_dir is not None:
        from engine.backtest.files import write_report

        write_report(report_dir, runs)
    if args.json:
        print(json.dumps({"runs": [metrics_json(run) for run in runs]}, indent=2))
        return 0
    blocks = [session_text(run) for run in runs]
    if args.compare:
        for recording in recordings:
            of_it = [run for run in runs if Path(run.recording) == recording]
            for start in range(0, len(of_it), len(gates)):
                blocks.append(compare_text(of_it[start : start + len(gates)]))
    if len(runs) > 1:
        blocks.append(ranking_text(runs))
    if report_dir is not None:
        blocks.append(f"report: {report_dir / 'report.html'}")
    print("\n\n".join(blocks))
    return 0


class _ProgressLine:
    """One line on stderr, redrawn in place on a terminal; a line per run elsewhere."""

    def __init__(self, runs: int) -> None:
        self._runs = runs
        self._finished = 0
        self._tty = sys.stderr.isatty()
        self._drawn = False

    def show(self, progress) -> None:
        if not self._tty:
            return
        filled = int(progress.fraction * 24)
        minutes, seconds = divmod(int(progress.market_s), 60)
        sys.stderr.write(
            f"\r{Path(progress.recording).name} [{progress.label}] "
            f"[{'#' * filled}{'.' * (24 - filled)}] {progress.fraction:4.0%} "
            f"{progress.frames:,} frames, {progress.frames_per_s:,.0f}/s, "
            f"market {minutes}:{seconds:02d}\x1b[K"
        )
        sys.stderr.flush()
        self._drawn = True

    def done(self, index: int, metrics) -> None:
        self._finished += 1
        if self._drawn:
            sys.stderr.write("\r\x1b[K")
        sys.stderr.write(
            f"{self._finished}/{self._runs} {Path(metrics.recording).name} [{metrics.label}]: "
            f"net {metrics.net:+,.2f}, {metrics.fill_count:,} fills, "
            f"{metrics.frames_per_s:,.0f} frames/s\n"
        )
        sys.stderr.flush()
        self._drawn = False

    def close(self) -> None:
        if self._drawn:
            sys.stderr.write("\n")
