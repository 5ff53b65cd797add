"""`hft-console optimize`: settings searched with Optuna, walk-forward over recordings, judged
out of sample (engine/tools/optimize/)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from console.cli.arguments import (
    add_book_options,
    add_ray_argument,
    count,
    finite_number,
    non_negative_number,
    ray_address,
    ray_workers,
)
from console.cli.errors import error_line
from console.cli.progress import progress_bar

NAME = "hft-console optimize"


def add_optimize_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "optimize",
        help="search settings with Optuna, walk-forward: in-sample vs out-of-sample figures",
        description="Splits the recordings' market time into K folds in order; for each fold "
        "after the first, searches the space (Optuna's TPE, seeded) by backtests on the folds "
        "before it and scores the chosen settings on that fold. Prints each step's and the "
        "whole walk's in-sample and out-of-sample figures and their gap. Needs the research "
        "extra: pip install 'hft-console[research]'.",
    )
    parser.add_argument(
        "--replay", metavar="FILE", nargs="+", action="extend", required=True, help="recordings"
    )
    parser.add_argument(
        "--space",
        metavar="KEY=LO:HI[:log|:int] | KEY=a,b,c",
        action="append",
        required=True,
        help="a setting searched: a range (linear, log or whole numbers) or choices, e.g. "
        "trading.strategy.half_spread_bps=0.5:8:log",
    )
    parser.add_argument(
        "--set",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="a setting fixed for every trial (e.g. laya.gate=none)",
    )
    parser.add_argument("--folds", type=count, default=3, help="walk-forward folds (default 3)")
    parser.add_argument("--trials", type=count, default=20, help="trials a step (default 20)")
    parser.add_argument(
        "--seed", type=int, default=0, help="the sampler's seed: a run repeats (default 0)"
    )
    parser.add_argument(
        "--study",
        metavar="FILE",
        help="Optuna journal file the studies live in: an interrupted run resumes from it "
        "(default: none, nothing kept)",
    )
    parser.add_argument(
        "--objective",
        choices=("net-per-hour", "net"),
        default="net-per-hour",
        help="what is maximised in sample (default net-per-hour)",
    )
    parser.add_argument(
        "--min-markout-1s-bps",
        type=finite_number,
        metavar="BPS",
        help="constraint: the quotes' fills' mean 1 s markout at least this",
    )
    parser.add_argument(
        "--max-drawdown-usdt",
        type=non_negative_number,
        metavar="USDT",
        help="constraint: the net PnL's largest fall from its high at most this",
    )
    add_book_options(
        parser, "each recording's own two busiest, the first quoted, the second its hedge"
    )
    parser.add_argument("--config", metavar="FILE", help="settings file (default: the user's)")
    parser.add_argument(
        "--report",
        metavar="DIR",
        help="also write there optimisation.html (the tables, each step's history and "
        "importance charts) and backtest/ (the last step's choice on its fold); needs "
        "matplotlib: pip install '.[report]'",
    )
    parser.add_argument("--json", action="store_true", help="JSON on stdout instead of tables")
    parser.add_argument(
        "--jobs",
        type=count,
        default=os.cpu_count() or 1,
        help="trials run at once, each in a worker process (default: one per core); a run "
        "repeats for the same --seed and --jobs",
    )
    add_ray_argument(parser, "each trial's backtests")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")


def run_optimize_command(args: argparse.Namespace) -> int:
    from engine.tools.optimize.walk_forward import require_optuna

    try:
        require_optuna()
    except ImportError as error:
        print(f"{NAME}: {error}", file=sys.stderr)
        return 2
    try:
        return _optimize(args)
    except KeyboardInterrupt:  # the workers ignore Ctrl-C and are gone by now: one line
        kept = (
            f"; what finished is kept in {args.study}: the same command resumes"
            if args.study
            else ""
        )
        print(f"{NAME}: interrupted{kept}", file=sys.stderr)
        return 130


def _optimize(args: argparse.Namespace) -> int:
    from console.cli.config import load_console_settings, recording_book
    from engine.feed.recording import (
        check_recording,
        require_distinct_recordings,
        require_recording_symbols,
    )
    from engine.settings.sources import SettingsError
    from engine.tools.backtest.plan import parse_set
    from engine.tools.cluster.ray_workers import ClusterError
    from engine.tools.optimize.figures import Goal
    from engine.tools.optimize.folds import recording_span, walk_forward_folds
    from engine.tools.optimize.space import check_space, parse_space
    from engine.tools.optimize.walk_forward import Search, open_storage

    report_dir = Path(args.report) if args.report else None
    try:
        settings, symbols = recording_book(load_console_settings(args.config), args)
        book = settings.engine if symbols else None
        recordings = [Path(path) for path in args.replay]
        for recording in recordings:
            check_recording(recording)
            require_recording_symbols(
                recording,
                symbols,
                hedge=book.hedge_symbol if book else None,
                leader=book.leader_symbol if book else None,
            )
        require_distinct_recordings(recordings)
        space = tuple(parse_space(text) for text in args.space)
        fixed: dict[str, object] = {}
        for text in args.set:
            key, values = parse_set(text)
            if len(values) != 1 or key in fixed:
                raise ValueError(f"--set {key}: one value each here (a search is --space)")
            fixed[key] = values[0]
        check_space(settings, space, fixed)
        goal = Goal(args.objective, args.min_markout_1s_bps, args.max_drawdown_usdt)
        spans = tuple(recording_span(recording) for recording in recordings)
        folds = tuple(walk_forward_folds(spans, args.folds))
        search = Search(space, spans, folds, goal, args.seed, tuple(fixed.items()), symbols)
        if report_dir is not None:
            from engine.tools.backtest.files import check_report_dir

            check_report_dir(report_dir)
        if args.study and Path(args.study).resolve() in {path.resolve() for path in recordings}:
            raise ValueError(f"--study {args.study}: is one of the recordings (--replay)")
        storage = open_storage(Path(args.study) if args.study else None, search)
        from engine.tools.backtest.plan import run_specs

        ray = ray_workers(ray_address(args, settings), run_specs.__module__)
    except SettingsError as error:
        print(f"{NAME}: {error}", file=sys.stderr)
        return 2
    except (OSError, ValueError, ImportError) as error:
        print(f"{NAME}: {error_line(error)}", file=sys.stderr)
        return 2
    for span in spans:
        if span.problem is not None:
            print(f"{NAME}: {span.problem}", file=sys.stderr)
    try:
        return _walk(args, settings, search, storage, report_dir, ray)
    except ClusterError as error:  # the cluster failed mid-run (a node lost too often)
        print(f"{NAME}: {error}", file=sys.stderr)
        return 1


def _walk(args, settings, search, storage, report_dir: Path | None, ray) -> int:
    from engine.tools.backtest.report import parts_text
    from engine.tools.optimize.report import walk_forward_json, walk_forward_parts
    from engine.tools.optimize.walk_forward import run_walk_forward

    steps_total = len(search.folds) - 1
    ran = 0
    terminal = sys.stderr.isatty()

    def heard(step: int, done: int, trials: int, batch: int) -> None:
        nonlocal ran
        ran += batch
        line = f"step {step}/{steps_total}: {done}/{trials} trials"
        if args.quiet:
            return
        if terminal:  # a step's line redrawn in place: a bar of its trials, wherever they run
            end = "\n" if done >= trials else ""
            sys.stderr.write(f"\r{line} {progress_bar(done / trials)}\x1b[K{end}")
            sys.stderr.flush()
        else:
            print(line, file=sys.stderr)

    started = time.perf_counter()
    steps = run_walk_forward(search, settings, storage, args.trials, args.jobs, heard, ray)
    wall_s = time.perf_counter() - started
    # The out-of-sample runs count in the time: trials a minute is the walk's own pace.
    pace = {"trials_run": ran, "wall_s": wall_s, "trials_per_minute": ran / wall_s * 60}
    if args.json:
        print(json.dumps({**walk_forward_json(search, steps), "pace": pace}, indent=2))
    else:
        print(parts_text(walk_forward_parts(search, steps)), flush=True)
    if not args.quiet and ran:
        print(
            f"{NAME}: {ran} trials in {wall_s:.1f} s ({pace['trials_per_minute']:.1f} a minute, "
            f"--jobs {args.jobs})",
            file=sys.stderr,
        )
    unchosen = [step.number for step in steps if step.chosen is None]
    if unchosen:
        print(
            f"{NAME}: no trial met the constraints in step {', '.join(map(str, unchosen))}: "
            "loosen them, or search more (--trials)",
            file=sys.stderr,
        )
    if report_dir is not None:
        try:
            _write_report(report_dir, settings, search, steps, args.jobs, ray)
        except OSError as error:
            print(
                f"{NAME}: --report {report_dir}: not written: {error_line(error)}", file=sys.stderr
            )
            return 1
        print(
            f"report: {report_dir / 'optimisation.html'}",
            file=sys.stderr if args.json else sys.stdout,
        )
    return 1 if unchosen else 0


def _write_report(report_dir: Path, settings, search, steps, jobs: int, ray) -> None:
    """The last step that chose a point: its backtest on the fold it was scored on, beside the
    optimisation's charts."""
    from engine.tools.backtest.plan import run_specs
    from engine.tools.backtest.report import run_groups
    from engine.tools.optimize.folds import fold_windows
    from engine.tools.optimize.report import write_optimize_report
    from engine.tools.optimize.walk_forward import point_specs

    groups = []
    last = next((step for step in reversed(steps) if step.chosen is not None), None)
    if last is not None:
        fold = last.out_of_sample
        windows = fold_windows(search.recordings, fold.start_ns, fold.end_ns)
        specs = point_specs(
            search.base_settings(settings), last.chosen.point, windows, search.symbols
        )
        groups = run_groups(run_specs(specs, jobs, ray=ray), 1)
    write_optimize_report(report_dir, search, steps, groups)
