"""`hft-console backtest`: recordings through the whole engine in market time, and what its
trading made (engine/tools/backtest/)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from console.cli.arguments import (
    add_book_options,
    add_ray_argument,
    count,
    ray_address,
    ray_workers,
)
from console.cli.errors import error_line
from console.cli.progress import progress_bar

if TYPE_CHECKING:
    from engine.kev.client import KevHealth
    from engine.kev.config import KevClientConfig
    from engine.tools.backtest.report import RunGroup


def add_backtest_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "backtest",
        help="the whole engine on recordings in market time: PnL, markouts, gates compared",
        description="Plays each recording through the whole engine (Laya, the desk, the risk "
        "gateway, the executor, the paper venue) in the recording's own time at full speed, "
        "deterministically, and reports PnL, activity, markouts and what Laya did.",
    )
    parser.add_argument("--replay", metavar="FILE", nargs="+", required=True, help="recordings")
    add_book_options(
        parser, "each recording's own two busiest, the first quoted, the second its hedge"
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
    parser.add_argument(
        "--blocks",
        metavar="DURATION",
        type=_block_length,
        help="--compare's figures also per block of this much market time (e.g. 8h, as train's "
        "validation blocks; whole minutes), the last block taking the remainder",
    )
    parser.add_argument(
        "--json", action="store_true", help="JSON on stdout instead of tables and charts"
    )
    parser.add_argument(
        "--no-charts", action="store_true", help="the tables only, no charts in the terminal"
    )
    parser.add_argument(
        "--report",
        metavar="DIR",
        help="also write there report.html (the tables and charts in one file), the charts as "
        "PNG, report.json and fills.csv (needs matplotlib: pip install '.[report]')",
    )
    parser.add_argument(
        "--jobs",
        type=count,
        default=os.cpu_count() or 1,
        help="worker processes for several runs (default: one per core)",
    )
    add_ray_argument(parser, "each run")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    kev = parser.add_mutually_exclusive_group()
    kev.add_argument(
        "--kev",
        metavar="FILE",
        help="Kev takes part ([kev] url's llama-server): its answers take effect their latency "
        "after each request, in market time, and are recorded to FILE for --kev-answers",
    )
    kev.add_argument(
        "--kev-answers",
        metavar="FILE",
        help="Kev's answers played back from a --kev run's FILE: the rerun is exact, no server",
    )
    parser.add_argument(
        "--frames",
        type=count,
        help="play each recording looped to this many frames (time and trade ids moved on "
        "each pass, as the soak does): long runs, memory checks",
    )
    parser.add_argument(
        "--compiled",
        action="store_true",
        help="run the trading stack compiled by mypyc (1.3-1.6x the frames a second, the same "
        "results; built once per source into the user cache, about a minute, with --ray on "
        "each node; needs pip install 'hft-console[compiled]' and a C compiler)",
    )


def _block_length(text: str) -> int:
    """`--blocks`: a positive duration of whole minutes, in seconds."""
    from engine.journal import DURATION_FORMS, duration_ns
    from engine.tools.backtest.metrics import MARK_STEP_S

    value = duration_ns(text)
    if value is None or not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a positive duration: give {DURATION_FORMS}"
        )
    seconds = round(value / 1e9)
    if seconds == 0 or seconds % MARK_STEP_S or abs(value / 1e9 - seconds) > 1e-6:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a whole number of minutes (blocks are cut on the minute)"
        )
    return seconds


def run_backtest_command(args: argparse.Namespace, arguments: Sequence[str] = ()) -> int:
    """`arguments`: the command line as given, which `--compiled` runs again in a child."""
    from engine.tools.backtest.compiled import TREE_ENV

    # With --ray the nodes run the compiled engine, built on each; this process needs none.
    if args.compiled and not args.ray and TREE_ENV not in os.environ:  # the child runs it once
        child = [
            argument
            for argument in arguments  # `--compiled` and what argparse takes for it
            if not (argument.startswith("--compi") and "--compiled".startswith(argument))
        ]
        return _run_compiled(child, quiet=args.quiet)
    with tempfile.TemporaryDirectory(prefix="hft-backtest-loops-") as scratch:
        try:
            return _backtest(args, Path(scratch))
        except KeyboardInterrupt:  # the workers ignore Ctrl-C and are gone by now: one line
            print("hft-console backtest: interrupted", file=sys.stderr)
            return 130


def _run_compiled(arguments: list[str], *, quiet: bool) -> int:
    """The same command in a child process whose `engine` is the compiled tree (`-P`: the
    current folder, which may hold the source, does not come first on its path)."""
    from engine.tools.backtest.compiled import TREE_ENV, CompiledBuildError, compiled_tree

    name = "hft-console backtest"
    try:
        tree = compiled_tree(on_build=None if quiet else lambda: _say_building(name, "here"))
    except (CompiledBuildError, OSError) as error:
        print(f"{name}: {error_line(error)}", file=sys.stderr)
        return 2
    path = os.pathsep.join(filter(None, (str(tree), os.environ.get("PYTHONPATH"))))
    environment = {**os.environ, TREE_ENV: str(tree), "PYTHONPATH": path}
    command = [sys.executable, "-P", "-m", "console.cli", *arguments]
    return subprocess.run(command, env=environment, check=False).returncode


def _say_building(name: str, where: str) -> None:
    once = "once per source, about a minute"
    print(f"{name}: compiling the trading stack with mypyc {where} ({once})", file=sys.stderr)


def _backtest(args: argparse.Namespace, scratch: Path) -> int:
    from console.cli.config import load_console_settings, recording_book
    from engine.feed.recording import check_recording, require_distinct_recordings
    from engine.kev.command import KevCommandSpec
    from engine.settings.sources import SettingsError
    from engine.tools.backtest.compiled import TREE_ENV, compiled_problem
    from engine.tools.backtest.plan import (
        COMPARED_GATES,
        backtest_specs,
        grid,
        looped_recordings,
        parse_set,
        run_specs,
    )
    from engine.tools.backtest.report import (
        backtest_json,
        compare_text,
        ranking_text,
        run_groups,
        session_text,
    )
    from engine.tools.cluster.ray_workers import ClusterError
    from engine.user_files import check_output_file

    name = "hft-console backtest"
    report_dir = Path(args.report) if args.report else None
    problem = compiled_problem()
    if problem is not None:
        print(f"{name}: {problem}", file=sys.stderr)
        return 2
    try:
        recordings = [Path(path) for path in args.replay]
        for recording in recordings:
            check_recording(recording)
        require_distinct_recordings(recordings)  # one run each: a copy would weigh twice
        if args.frames:
            recordings = looped_recordings(recordings, args.frames, scratch)
        if args.blocks is not None:
            _check_blocks(args, recordings)
        sets = [parse_set(text) for text in args.set]
        sources = {key: f"--set {key}" for key, _ in sets}
        settings, symbols = recording_book(load_console_settings(args.config), args)
        gates = COMPARED_GATES if args.compare else (None,)
        specs = backtest_specs(
            settings,
            recordings,
            symbols,
            grid(sets),
            gates,
            kev_record=Path(args.kev) if args.kev else None,
            kev_answers=Path(args.kev_answers) if args.kev_answers else None,
            sources=sources,
        )
        if args.kev_answers:
            from engine.kev.answers import RecordedKevClient

            RecordedKevClient(args.kev_answers, KevCommandSpec())  # refused now, not mid-run
        if args.kev:  # the answers a rerun replays: never written over
            check_output_file(args.kev, f"--kev {args.kev}", can_force=False, inputs=args.replay)
            kev_client = specs[0].engine.kev_client
            assert kev_client is not None  # a --kev run's engine asks the [kev] server
            _check_kev_server(kev_client)
        if report_dir is not None:
            from engine.tools.backtest.files import check_report_dir

            check_report_dir(report_dir)
        cluster = ray_address(args, settings)
        if cluster is not None:
            given_by = cluster[1]
            if args.kev or args.kev_answers:
                raise ValueError(f"{given_by}: Kev takes part on this machine only, run it here")
        # --compiled's child (the setting asked for Ray) runs it on the nodes too.
        compiled = args.compiled or TREE_ENV in os.environ
        ray = ray_workers(
            cluster,
            run_specs.__module__,
            compiled=compiled,
            on_build=None if args.quiet else lambda: _say_building(name, "on the nodes without it"),
        )
    except SettingsError as error:
        print(f"{name}: {error}", file=sys.stderr)
        return 2
    except (OSError, ValueError, ImportError) as error:
        print(f"{name}: {error_line(error)}", file=sys.stderr)
        return 2
    progress = None if args.quiet else _ProgressLine(len(specs))
    try:
        runs = run_specs(
            specs,
            args.jobs,
            progress=progress.show if progress is not None else None,
            done=progress.done if progress is not None else None,
            ray=ray,
        )
    except ClusterError as error:  # the cluster failed mid-run (a node lost too often)
        print(f"{name}: {error}", file=sys.stderr)
        return 1
    finally:
        if progress is not None:
            progress.close()
    groups = run_groups(runs, len(gates), args.blocks)
    if args.json:
        print(json.dumps(backtest_json(groups), indent=2))
    else:
        blocks = [session_text(run) for run in runs]
        blocks += [compare_text(group.runs, group.block_s) for group in groups if group.compared]
        if len(runs) > 1:
            blocks.append(ranking_text(runs))
        if not args.no_charts:
            blocks.append(_charts(groups))
        print("\n\n".join(blocks), flush=True)
    # A run whose Kev never answered is not the run asked for: its figures are Kev-less.
    unanswered = sum(run.kev_offered for run in runs if args.kev and not run.kev)
    if unanswered:
        print(
            f"{name}: Kev never answered: {unanswered:,} anomalies unanswered, the run is "
            f"without Kev ({args.kev} holds no answer; see hft-console kev status)",
            file=sys.stderr,
        )
    if report_dir is None:
        return 1 if unanswered else 0
    from engine.tools.backtest.files import write_report

    try:
        write_report(report_dir, groups)
    except OSError as error:
        print(f"{name}: --report {report_dir}: not written: {error_line(error)}", file=sys.stderr)
        return 1
    print(f"report: {report_dir / 'report.html'}", file=sys.stderr if args.json else sys.stdout)
    return 1 if unanswered else 0


def _check_blocks(args: argparse.Namespace, recordings: Sequence[Path]) -> None:
    """`--blocks` cuts `--compare`'s runs, each at least one block long: raises ValueError."""
    from engine.tools.backtest.report import block_text
    from engine.tools.optimize.folds import recording_span

    given = f"--blocks {block_text(args.blocks)}"
    if not args.compare:
        raise ValueError(f"{given} cuts --compare's figures into blocks: add --compare")
    for recording in recordings:
        span = recording_span(recording)
        span_s = (span.last_ns - span.first_ns) / 1e9
        if span_s < args.blocks:
            raise ValueError(
                f"{given} is longer than {recording.name}, {span_s:,.1f} s of market: give a "
                "shorter block"
            )


def _check_kev_server(config: KevClientConfig) -> None:
    """`--kev`: Kev's server must answer now (as `hft-console kev status` asks it), or the
    run would record no answer; raises ValueError saying so."""
    import asyncio

    from engine.kev.client import KevClient
    from engine.kev.command import KevCommandSpec

    async def probe() -> KevHealth:
        async with KevClient(config, KevCommandSpec()) as client:
            return await client.health()

    health = asyncio.run(probe())
    if health.state != "ok":
        detail = f" ({health.detail})" if health.detail else ""
        raise ValueError(
            f"--kev: Kev's llama-server at {config.base_url} is {health.state}{detail}: start "
            f"it (hft-console kev serve), or leave --kev out"
        )


def _charts(groups: Sequence[RunGroup]) -> str:
    """The charts sized to the terminal, in colour on a terminal without NO_COLOR."""
    import shutil

    from engine.tools.backtest.charts import chart_size, figures_text, report_figures, wants_colour

    width, height = chart_size(*shutil.get_terminal_size((100, 45)))
    return figures_text(report_figures(groups), width, height, wants_colour(sys.stdout))


class _ProgressLine:
    """A line per run on stderr; on a terminal, below them one line redrawn in place: the
    frames of a run played here, else a bar of the runs done wherever they run (worker
    processes, a Ray cluster)."""

    def __init__(self, runs: int) -> None:
        self._runs = runs
        self._finished = 0
        self._tty = sys.stderr.isatty()
        self._drawn = False

    def show(self, progress) -> None:
        if not self._tty:
            return
        minutes, seconds = divmod(int(progress.market_s), 60)
        sys.stderr.write(
            f"\r{Path(progress.recording).name} [{progress.label}] "
            f"{progress_bar(progress.fraction)} "
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
        self._drawn = self._tty and self._finished < self._runs
        if self._drawn:
            sys.stderr.write(
                f"{progress_bar(self._finished / self._runs)} {self._finished}/{self._runs} runs"
            )
        sys.stderr.flush()

    def close(self) -> None:
        if self._drawn:
            sys.stderr.write("\n")
