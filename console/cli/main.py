"""`hft-console`: the command line. Each subcommand imports what it needs when it runs, so
headless commands never load the UI and `--help` stays instant."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence

from console.cli.arguments import (
    add_book_options,
    add_ray_argument,
    count,
    non_negative_number,
    positive_number,
    ray_address,
    ray_workers,
    replay_speed,
    symbol_list,
)
from console.cli.backtest import add_backtest_parser, run_backtest_command
from console.cli.chaos import add_chaos_parser, run_chaos
from console.cli.config import add_config_parser, run_config
from console.cli.errors import error_line
from console.cli.importer import add_import_parser, run_import
from console.cli.instruments import add_instruments_parser, run_instruments
from console.cli.kev import add_kev_parser, run_kev
from console.cli.optimize import add_optimize_parser, run_optimize_command
from console.cli.soak import add_soak_parser, run_soak
from engine.bitget.endpoints import BITGET_DEMO_PUBLIC_URL, BITGET_PUBLIC_URL

DEFAULT_SYMBOLS = "BTCUSDT,ETHUSDT"
LAB_BOOK = "each recording's own symbols, a book's as its contracts line lists them"
"""What `train` and `eval` read without --symbols (`recording_symbols_of`)."""


def _add_market_options(parser: argparse.ArgumentParser) -> None:
    add_book_options(parser, "[engine] symbols, BTCUSDT")
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--replay", metavar="FILE", help="replay a recording instead of a live feed"
    )
    source.add_argument("--url", help=f"live public websocket (e.g. {BITGET_PUBLIC_URL})")
    parser.add_argument(
        "--speed", type=replay_speed, default=1.0, help="replay pace: 1, 10, ... or max (default 1)"
    )
    parser.add_argument("--seed", type=int, help="simulated market seed (default 7)")
    _add_laya_options(parser)


def _add_trading_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--mode",
        choices=("sim", "paper", "demo", "live"),
        help="where orders go: sim (the simulator, default), paper (real market data, "
        "in-process matching), demo (Bitget demo trading), live (real money, needs --live); "
        "a --replay trades only with --mode paper",
    )
    parser.add_argument(
        "--live", action="store_true", help="allow --mode live (a typed confirmation follows)"
    )
    parser.add_argument(
        "--rest-url", metavar="URL", help="REST of a simulator started apart (with --url)"
    )
    parser.add_argument(
        "--journal", metavar="FILE", help="journal file (default: the per-user data directory)"
    )
    parser.add_argument(
        "--credentials",
        metavar="FILE",
        help="Bitget credentials file for demo/live (mode 0600; default: the per-user config "
        "directory), unless BITGET_API_KEY/_SECRET/_PASSPHRASE are set",
    )


def _add_launch_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--shadow-model",
        metavar="ONNX",
        help="a second Laya model scored beside the live one, never acting (the scorecard; "
        "[laya] shadow_model)",
    )
    parser.add_argument(
        "--headless",
        action="store_true",
        help="no console: print events and a status line (for tmux or a service)",
    )
    parser.add_argument(
        "--exit-policy",
        choices=("flatten", "keep"),
        help="what an end without the quit dialog does: SIGHUP (the SSH connection dropped), "
        "SIGTERM, --duration, the end of a replay, Ctrl+C headless. flatten (default): halt, "
        "cancel all, close all, then exit; keep: cancel the quotes, leave positions open",
    )
    parser.add_argument(
        "--exit-at-end",
        action="store_true",
        help="close the console when the --replay recording ends (headless always stops there)",
    )
    parser.add_argument(
        "--stats-out",
        metavar="FILE",
        help="write the fast path's figures as JSON (bench's shape) when the run ends",
    )
    parser.add_argument(
        "--refresh-hz",
        type=positive_number,
        help="console snapshots a second (default 20)",
    )
    parser.add_argument(
        "--low-bandwidth",
        action="store_const",
        const="low",
        dest="bandwidth",
        help="for links under about 256 kbit/s: fewer redraws, the terminal's own 16 colours "
        '([console] bandwidth = "low")',
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="settings file (default: hft-console config path); flags override it",
    )


def _add_laya_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", metavar="ONNX", help="Laya model (default: the shipped one)")
    parser.add_argument(
        "--cpu", action="store_true", help="run Laya on the CPU even where CUDA works"
    )


def _laya_config(args: argparse.Namespace):
    from engine.laya.config import DEFAULT_MODEL_PATH, LayaClassifierConfig

    return LayaClassifierConfig(
        model_path=args.model or DEFAULT_MODEL_PATH, prefer_gpu=not args.cpu
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hft-console",
        description="Run and watch the fast/slow dual-AI HFT engine for Bitget USDT-M perpetuals. "
        "Without a command: the engine on the built-in simulated exchange.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = commands.add_parser(
        "run", help="run the engine under the console (simulator by default; the default command)"
    )
    _add_market_options(run)
    run.add_argument("--duration", type=positive_number, help="stop after this many seconds")
    _add_trading_options(run)
    _add_launch_options(run)

    sim = commands.add_parser("sim", help="run the simulated Bitget exchange standalone")
    sim.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    sim.add_argument("--port", type=int, default=8700, help="port (default 8700; 0 = any)")
    sim.add_argument("--seed", type=int, default=7, help="market seed (default 7)")
    sim.add_argument(
        "--symbols",
        type=symbol_list,
        default=symbol_list(DEFAULT_SYMBOLS),
        help="the quoted symbols of a book, any of the contracts the simulator lists; one or two "
        "without --hedge: the traded symbol, then its hedge, as before "
        f"(default {DEFAULT_SYMBOLS})",
    )
    sim.add_argument(
        "--hedge",
        type=str.upper,
        metavar="SYMBOL",
        help="the hedge of a book of --symbols, the market's leader they follow (default "
        "BTCUSDT when --symbols lists three or more)",
    )
    sim.add_argument(
        "--book-interval-ms", type=int, default=150, help="books15 push interval (default 150)"
    )
    sim.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="SPEC",
        help="inject a fault, e.g. disconnect@30, silence:30, malformed:20, slow-rest:1.5, "
        "rest-error:429:10 (repeatable)",
    )

    record = commands.add_parser("record", help="record raw public frames to a file")
    record.add_argument("--out", required=True, metavar="FILE", help="output (.gz compresses)")
    record.add_argument("--symbols", type=symbol_list, default=symbol_list(DEFAULT_SYMBOLS))
    record.add_argument(
        "--duration", type=positive_number, help="seconds to record (default: until Ctrl+C)"
    )
    record_source = record.add_mutually_exclusive_group()
    record_source.add_argument("--sim", action="store_true", help="record the simulator")
    record_source.add_argument(
        "--url", default=BITGET_PUBLIC_URL, help=f"public websocket (default {BITGET_PUBLIC_URL})"
    )
    record.add_argument("--seed", type=int, default=7, help="simulated market seed (with --sim)")

    train = commands.add_parser("train", help="train a Laya model on recordings (train extra)")
    train.add_argument(
        "--replay", nargs="+", required=True, metavar="FILE", help="recordings, a session each"
    )
    add_book_options(train, LAB_BOOK)
    train.add_argument(
        "--out", required=True, metavar="MODEL.onnx", help="model to write, its card beside it"
    )
    train.add_argument(
        "--force", action="store_true", help="replace --out and its card (MODEL.md) if they exist"
    )
    train.add_argument(
        "--sim-minutes",
        type=non_negative_number,
        default=0.0,
        help="also train on this many simulated minutes (default 0)",
    )
    train.add_argument("--seed", type=int, default=7, help="simulated market seed (default 7)")
    train.add_argument(
        "--backtest",
        action="store_true",
        help="choose the model by what its gate saves in the backtest of each left-out "
        "recording (needs two or more)",
    )
    add_ray_argument(train, "each recording's dataset build and each fold's fits")

    evaluate = commands.add_parser("eval", help="evaluate a Laya model against baselines")
    evaluate.add_argument("--replay", nargs="+", required=True, metavar="FILE", help="recordings")
    add_book_options(evaluate, LAB_BOOK)
    evaluate.add_argument("--model", metavar="ONNX", help="model (default: the shipped one)")
    evaluate.add_argument("--json", action="store_true", help="print one JSON object")
    evaluate.add_argument("--predictions-out", metavar="CSV", help="write every prediction")
    evaluate.add_argument(
        "--force", action="store_true", help="replace --predictions-out if it exists"
    )
    evaluate.add_argument(
        "--all", action="store_true", help="every labelled frame, not only the hold-out"
    )

    bench = commands.add_parser(
        "bench", help="benchmark the fast path over a recording, and the risk check"
    )
    bench.add_argument("--replay", metavar="FILE", help="recording to run")
    bench.add_argument(
        "--reaction",
        action="store_true",
        help="instead: books15 receive -> EMERGENCY -> cancel on the socket, on the simulator",
    )
    bench.add_argument(
        "--kill", action="store_true", help="instead: kill switch to confirmed flat, on the sim"
    )
    bench.add_argument(
        "--book",
        type=count,
        metavar="N",
        help="instead: a books15 frame's p50/p99 with 1 and with N quoted symbols and their "
        "hedge on the simulator's book, and their ratio (--passes rounds); with --reaction "
        "or --kill: those with 1 and with N, in turn",
    )
    # The options of one benchmark default to None: another benchmark refuses them (_bench).
    bench.add_argument(
        "--samples", type=count, help="reaction samples per round, path and book (default 60)"
    )
    bench.add_argument(
        "--runs", type=count, help="reaction and kill rounds, each book in turn (default 3)"
    )
    bench.add_argument("--kill-runs", type=count, help="kill switch runs on each book (default 20)")
    bench.add_argument("--json", action="store_true", help="print one JSON object")
    bench.add_argument("--limit", type=int, help="only the first N frames")
    bench.add_argument(
        "--passes", type=int, help="timed passes; figures from the median (default 3)"
    )
    bench.add_argument(
        "--memory-frames",
        type=int,
        help="frames in the steady-state memory pass (default 100000; 0 skips it)",
    )
    bench.add_argument(
        "--risk-iterations",
        type=int,
        metavar="N",
        help="timed risk checks (default 100000, under a second)",
    )
    _add_laya_options(bench)

    journal = commands.add_parser("journal", help="query the event journal")
    journal.add_argument(
        "--since",
        type=_since,
        metavar="T",
        help="entries at or after T: a duration ago (90s, 15m, 2h, 1d), an ISO-8601 time "
        "(UTC unless it has an offset) or epoch seconds, ms or ns",
    )
    journal.add_argument(
        "--kind",
        type=_journal_kinds,
        action="append",
        metavar="K",
        help="only these kinds, repeatable or comma-separated (e.g. fill,order_denied)",
    )
    journal.add_argument(
        "--limit", type=count, metavar="N", help="only the most recent N matching entries"
    )
    journal.add_argument("--json", action="store_true", help="JSON Lines, one entry per line")
    journal.add_argument(
        "--path",
        metavar="FILE",
        help="journal file (default: journal.sqlite in the per-user data directory, "
        "$XDG_DATA_HOME/hft-console on Linux)",
    )
    doctor = commands.add_parser(
        "doctor",
        help="check this machine: packages, ONNX Runtime providers, CUDA, GPU and VRAM, "
        "llama-server, Bitget and the clock, credentials, configuration",
    )
    doctor.add_argument("--json", action="store_true", help="print one JSON object (scripts)")
    doctor.add_argument("--model", metavar="ONNX", help="Laya model (default: the shipped one)")
    doctor.add_argument("--kev-url", metavar="URL", help="Kev's llama-server (default :8001)")
    doctor.add_argument(
        "--rest-url", metavar="URL", help="Bitget REST (default https://api.bitget.com)"
    )
    doctor.add_argument("--credentials", metavar="FILE", help="credentials file to check")
    add_kev_parser(commands)
    add_config_parser(commands)
    add_chaos_parser(commands)
    add_soak_parser(commands)
    add_backtest_parser(commands)
    add_import_parser(commands)
    add_instruments_parser(commands)
    add_optimize_parser(commands)
    return parser


def _since(text: str) -> int:
    from engine.journal import parse_since

    try:
        return parse_since(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _journal_kinds(text: str) -> tuple[str, ...]:
    from engine.journal import EntryKind

    kinds = tuple(part.strip().lower() for part in text.split(",") if part.strip())
    known = [kind.value for kind in EntryKind]
    unknown = [kind for kind in kinds if kind not in known]
    if unknown or not kinds:
        raise argparse.ArgumentTypeError(
            f"unknown kind {', '.join(map(repr, unknown)) or repr(text)}; kinds: "
            + ", ".join(known)
        )
    return kinds


_OPTIONS_WITH_DASH_VALUES = frozenset({"--since"})
"""Options whose value may begin with a minus (`--since -5m`): argparse would take the value
for an unknown option and answer "expected one argument"."""


def _dash_values_attached(arguments: list[str]) -> list[str]:
    """`--since -5m` as `--since=-5m`, which argparse reads as the option's value."""
    attached: list[str] = []
    values = iter(arguments)
    for argument in values:
        if argument in _OPTIONS_WITH_DASH_VALUES:
            value = next(values, None)
            if value is not None and value.startswith("-") and len(value) > 1:
                attached.append(f"{argument}={value}")
                continue
            attached.append(argument)
            if value is not None:
                attached.append(value)
            continue
        if argument == "--":
            attached.extend([argument, *values])
            break
        attached.append(argument)
    return attached


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    arguments = list(sys.argv[1:] if argv is None else argv)
    if not arguments or (arguments[0].startswith("-") and arguments[0] not in ("-h", "--help")):
        arguments.insert(0, "run")  # `hft-console [run options]` is `hft-console run ...`
    args = parser.parse_args(_dash_values_attached(arguments))
    command = args.command
    try:
        if command == "bench":
            return _bench(args)
        if command == "sim":
            return _sim(args)
        if command == "record":
            return _record(args)
        if command == "train":
            return _train(args)
        if command == "eval":
            return _eval(args)
        if command == "journal":
            return _journal(args)
        if command == "kev":
            return run_kev(args)
        if command == "doctor":
            return _doctor(args)
        if command == "config":
            return run_config(args)
        if command == "chaos":
            return run_chaos(args)
        if command == "soak":
            return run_soak(args)
        if command == "backtest":
            return run_backtest_command(args, arguments)
        if command == "import":
            return run_import(args)
        if command == "instruments":
            return run_instruments(args)
        if command == "optimize":
            return run_optimize_command(args)
        return _run(args)
    except KeyboardInterrupt:
        return 130
    except ImportError as error:
        print(
            f"hft-console {command}: {error.name or error} is not installed; it comes with the "
            f"train extra: pip install '.[train]'",
            file=sys.stderr,
        )
        return 2
    except (OSError, ValueError) as error:
        print(f"hft-console {command}: {error_line(error)}", file=sys.stderr)
        return 2


_BENCH_OPTIONS = {
    "--replay": ("limit", "passes", "memory_frames", "risk_iterations"),
    "--book N": ("passes",),
    "--reaction": ("samples", "runs"),
    "--kill": ("kill_runs", "runs"),
}
"""The options each benchmark takes (by their argparse names); the others it refuses."""


def _given(args: argparse.Namespace, *names: str) -> dict[str, object]:
    """The options of `names` given on the command line (the benchmark's defaults stand for
    the others)."""
    return {name: getattr(args, name) for name in names if getattr(args, name) is not None}


def _refuse_other_benchmarks_options(args: argparse.Namespace) -> None:
    chosen = [mode for mode in ("--reaction", "--kill") if getattr(args, mode[2:])] or [
        "--book N" if args.book is not None else "--replay"
    ]
    taken = {name for mode in chosen for name in _BENCH_OPTIONS[mode]}
    other = sorted({name for names in _BENCH_OPTIONS.values() for name in names} - taken)
    given = [f"--{name.replace('_', '-')}" for name in _given(args, *other)]
    if given:
        raise ValueError(
            f"{', '.join(given)} "
            f"{'is not an option' if len(given) == 1 else 'are not options'} of "
            f"{' '.join(chosen)}: drop {'it' if len(given) == 1 else 'them'}"
        )


def _bench(args: argparse.Namespace) -> int:
    _refuse_other_benchmarks_options(args)
    if args.reaction or args.kill:
        return _bench_trading(args)
    if args.book is not None:
        return _bench_book(args)
    if args.replay is None:
        raise ValueError("give --replay FILE (the fast path), or --reaction / --kill")
    from engine.tools.bench.fast_path import format_table, run_bench

    result = run_bench(
        args.replay,
        laya=_laya_config(args),
        **_given(args, "limit", "passes", "memory_frames", "risk_iterations"),
    )
    if result["recording_problem"]:
        print(f"hft-console bench: {result['recording_problem']}", file=sys.stderr)
    print(json.dumps(result) if args.json else format_table(result))
    return 0


def _bench_book(args: argparse.Namespace) -> int:
    if args.replay:
        raise ValueError("--book N runs the simulator's book: drop --replay")
    from engine.tools.bench.fast_path import format_book_table, run_book_bench

    rounds = {} if args.passes is None else {"rounds": args.passes}
    result = run_book_bench(args.book, laya=_laya_config(args), **rounds)
    print(json.dumps(result) if args.json else format_book_table(result))
    return 0


def _bench_trading(args: argparse.Namespace) -> int:
    """Exit 1 when a kill run was not confirmed flat on every symbol, or the bench could not
    get the engine where it measures."""
    import dataclasses

    from engine.tools.bench.trading import (
        BenchFailed,
        bench_books,
        bench_kill,
        bench_reaction,
        format_kill,
        format_reaction,
        lane_p99_ratios,
        python_loop_ns,
    )

    if args.replay:
        raise ValueError("--reaction and --kill run on the simulator: drop --replay")
    books = bench_books(args.book)
    report = (lambda line: None) if args.json else print
    figures: dict[str, object] = {"python_loop_ns": python_loop_ns()}
    report(f"this machine now: {figures['python_loop_ns']:.0f} ns per Python loop iteration")
    unconfirmed = 0
    try:
        if args.reaction:
            reaction = asyncio.run(
                bench_reaction(
                    books, model=args.model, report=report, **_given(args, "samples", "runs")
                )
            )
            ratios = lane_p99_ratios(reaction)
            figures["reaction"] = {
                **{name: dataclasses.asdict(item) for name, item in reaction.items()},
                "lane_p99_ratio": ratios and ratios[0],
                "lane_p99_ratio_rounds": ratios and ratios[1],
            }
            if not args.json:
                print(format_reaction(reaction))
        if args.kill:
            kill = asyncio.run(
                bench_kill(
                    books, model=args.model, report=report, **_given(args, "kill_runs", "runs")
                )
            )
            figures["kill"] = {name: dataclasses.asdict(item) for name, item in kill.items()}
            unconfirmed = sum(item.runs - item.ok for item in kill.values())
            if not args.json:
                print(format_kill(kill))
    except BenchFailed as error:  # what was measured before it is printed already
        print(f"hft-console bench: {error}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(figures))
    if unconfirmed:
        print(
            f"hft-console bench: {unconfirmed} kill run{'s' if unconfirmed > 1 else ''} not "
            "confirmed flat on every symbol",
            file=sys.stderr,
        )
        return 1
    return 0


def _doctor(args: argparse.Namespace) -> int:
    """Exit 1 when a check failed, 0 otherwise (warnings included)."""
    import shutil

    from engine.tools.doctor.run import DoctorConfig, run_doctor

    report = run_doctor(
        DoctorConfig(
            laya_model_path=args.model,
            kev_url=args.kev_url,
            bitget_rest_url=args.rest_url,
            credentials_path=args.credentials,
        )
    )
    width = min(shutil.get_terminal_size((100, 24)).columns, 140)
    print(report.to_json() if args.json else report.format_table(width))
    return 1 if report.failed else 0


def _journal(args: argparse.Namespace) -> int:
    import sqlite3
    from pathlib import Path

    from engine.journal import default_journal_path, format_entries, read_journal

    path = Path(args.path) if args.path else default_journal_path()
    if not path.exists():
        raise FileNotFoundError(
            f"no journal at {path}; the engine writes one there when it runs "
            "(--path FILE reads another)"
        )
    kinds = [kind for group in args.kind for kind in group] if args.kind else None
    try:
        entries = read_journal(path, since_ns=args.since, kinds=kinds, limit=args.limit)
    except sqlite3.Error as error:
        raise ValueError(f"{path} is not a readable journal ({error})") from None
    if not entries:
        print(f"no journal entries match in {path}", file=sys.stderr)
        return 0
    try:
        print(format_entries(entries, as_json=args.json))
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader stopped early (`| head`): not an error. Point stdout at /dev/null so the
        # interpreter's own flush at exit does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _train(args: argparse.Namespace) -> int:
    from console.cli.config import load_console_settings, recording_book
    from engine.lab.train import train_command

    settings, symbols = recording_book(load_console_settings(), args)
    try:
        ray = ray_workers(ray_address(args, settings), train_command.__module__)
    except ImportError as error:  # not the train extra's: the main handler would say so
        print(f"hft-console train: {error}", file=sys.stderr)
        return 2
    print(
        train_command(
            args.replay,
            args.out,
            symbols=symbols,
            sim_minutes=args.sim_minutes,
            seed=args.seed,
            backtest=args.backtest,
            force=args.force,
            ray=ray,
        )
    )
    return 0


def _eval(args: argparse.Namespace) -> int:
    from console.cli.config import load_console_settings, recording_book
    from engine.lab.evaluate import eval_command
    from engine.laya.config import DEFAULT_MODEL_PATH

    settings, symbols = recording_book(load_console_settings(), args)
    print(
        eval_command(
            args.replay,
            args.model or DEFAULT_MODEL_PATH,
            json_output=args.json,
            predictions_out=args.predictions_out,
            force=args.force,
            all_frames=args.all,
            symbols=symbols,
            models=settings.laya.models,
        )
    )
    return 0


def _sim(args: argparse.Namespace) -> int:
    from engine.sim.market import DEFAULT_HEDGE, sim_book, sim_market
    from engine.sim.server import SimExchangeConfig
    from engine.sim.standalone import run_standalone

    if args.hedge is None and len(args.symbols) <= 2:
        market = sim_market(args.symbols, args.seed)  # the old form: a pair, traded then hedge
    else:
        market = sim_book(args.symbols, args.seed, args.hedge or DEFAULT_HEDGE)
    config = SimExchangeConfig(
        host=args.host, port=args.port, book_interval_ms=args.book_interval_ms, market=market
    )
    run_standalone(config, args.fault)
    return 0


def _record(args: argparse.Namespace) -> int:
    from engine.bitget.rest import BitgetRestError
    from engine.node import record_command
    from engine.user_files import check_output_file

    check_output_file(args.out, f"--out {args.out}", can_force=False)
    try:
        return asyncio.run(
            record_command(
                args.out, args.symbols, args.duration, None if args.sim else args.url, args.seed
            )
        )
    except BitgetRestError as error:  # no contract table to record the symbols' contracts from
        print(f"hft-console record: no contract table: {error}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    from console.cli.config import adapter_config, console_keymap, settings_for_run
    from engine.user_files import check_output_file

    if args.stats_out:
        # Regenerated figures, replaced each run: a --force on `run` would read as forcing a trade.
        check_output_file(args.stats_out, f"--stats-out {args.stats_out}", force=True)
    settings = settings_for_run(args)  # defaults < config file < environment < flags
    mode = settings.trading.mode.value if _trades(args, settings) else None
    url = args.url
    if url is None and args.replay is None and mode in ("demo", "live"):
        url = BITGET_DEMO_PUBLIC_URL if mode == "demo" else BITGET_PUBLIC_URL
    from console.cli.launch import refused_recording
    from engine.bitget.rest import BitgetRestError

    if args.replay and (refused := refused_recording(args.replay, settings.engine)):
        print(f"hft-console: {refused}", file=sys.stderr)
        return 2
    credentials = _credentials(args, settings) if mode else None
    if mode == "live" and not sys.stdin.isatty() and not _confirmed_live(settings, credentials):
        return 1  # nobody at a terminal to confirm: said before any venue is asked
    try:
        contracts = _run_contracts(args, settings, url)
    except BitgetRestError as error:  # the venue's table cannot be read, and none is cached
        print(f"hft-console run: no contract table: {error}", file=sys.stderr)
        return 1
    try:
        trading = _trading(args, settings, contracts, credentials) if mode else None
    except _LiveNotConfirmed:
        return 1  # confirm_live has said why; nothing was started
    refresh_hz = settings.console.refresh_hz
    config = settings.engine_config(
        replay_path=args.replay,
        replay_speed=args.speed,
        live_url=url,
        trading=trading,
        status_interval_s=min(settings.engine.status_interval_s, 1 / refresh_hz),
        contracts=contracts,
    )
    from pathlib import Path

    from console.bandwidth import Bandwidth
    from console.cli.launch import LaunchOptions, launch
    from console.engine.handle import ShutdownPolicy

    options = LaunchOptions(
        headless=args.headless,
        exit_policy=ShutdownPolicy(settings.console.shutdown_policy),
        exit_at_end=args.exit_at_end,
        duration_s=args.duration,
        stats_out=Path(args.stats_out) if args.stats_out else None,
        refresh_hz=refresh_hz,
        keymap=console_keymap(settings),
        bandwidth=Bandwidth(settings.console.bandwidth),
    )
    return launch(config, options, credentials, adapter=adapter_config(settings))


class _LiveNotConfirmed(Exception):
    """The operator did not type the live confirmation."""


def _trades(args: argparse.Namespace, settings) -> bool:
    """Whether `run` trades: a recording is only watched unless --mode (or [trading] mode)
    says paper."""
    return not (args.replay and args.mode is None and settings.trading.mode.value != "paper")


def _run_contracts(args: argparse.Namespace, settings, url: str | None):
    """The contracts of the run's symbols from its market: the recording, the venue behind
    `url` (Bitget's table, or a simulator's started apart), or the in-process simulator."""
    from engine import contract_sources

    if args.replay:
        return contract_sources.recording_contracts(settings, args.replay)
    if url is None:
        return contract_sources.simulator_contracts(settings)
    from engine.bitget.record import rest_url_of

    contracts, _ = asyncio.run(
        contract_sources.venue_contracts(
            settings,
            args.rest_url or rest_url_of(url),
            notice=lambda line: print(f"hft-console: {line}", file=sys.stderr),
        )
    )
    return contracts


def _credentials(args: argparse.Namespace, settings):
    """The credentials `run`'s mode needs (None for sim and paper), after the mode's flags are
    checked: all before anything is asked of a venue."""
    from pathlib import Path

    mode = settings.trading.mode.value
    if mode == "live" and not args.live:
        source = settings.source_of("trading.mode")
        origin = "--mode live" if args.mode else f"[trading] mode live ({source})"
        raise ValueError(f"{origin} trades real money: add --live to mean it")
    if args.live and mode != "live":
        raise ValueError("--live goes with --mode live only")
    if mode in ("demo", "live"):
        from engine.bitget.credentials import load_credentials

        path = Path(args.credentials) if args.credentials else None
        return load_credentials(path=path, mode=mode)
    if args.credentials:
        raise ValueError("--credentials is for --mode demo or live")
    return None


def _trading(args: argparse.Namespace, settings, contracts, credentials):
    """The trading configuration `run` asked for, on `contracts`; live only once confirmed."""
    confirmed = False
    if settings.trading.mode.value == "live":
        confirmed = _confirmed_live(settings, credentials, settings.risk_config(contracts).limits)
        if not confirmed:
            raise _LiveNotConfirmed
    return settings.trading_config(
        contracts=contracts, rest_url=args.rest_url, live_confirmed=confirmed
    )


def _confirmed_live(settings, credentials, limits=None) -> bool:
    """The operator's typed confirmation (live_guard), with the limits once they are known."""
    from console.cli.live_guard import confirm_live
    from engine.bitget.credentials import mask_api_key

    return confirm_live(
        account=f"Bitget USDT-M, API key {mask_api_key(credentials.api_key)}",
        symbols=settings.engine.traded_symbols,
        hedge=settings.engine.hedge_symbol,
        api_key=credentials.api_key,
        limits=limits,
    )


if __name__ == "__main__":
    sys.exit(main())
