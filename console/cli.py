"""`hft-console`: the command line. Each subcommand imports what it needs when it runs, so
headless commands never load the UI and `--help` stays instant."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence

BITGET_PUBLIC_URL = "wss://ws.bitget.com/v2/ws/public"
DEFAULT_SYMBOLS = "BTCUSDT,ETHUSDT"


def _symbols(text: str) -> tuple[str, ...]:
    symbols = tuple(part.strip().upper() for part in text.split(",") if part.strip())
    if not symbols:
        raise argparse.ArgumentTypeError("give at least one symbol, e.g. BTCUSDT,ETHUSDT")
    return symbols


def _speed(text: str) -> float | None:
    if text == "max":
        return None
    try:
        speed = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"speed must be a number or 'max', got {text!r}") from None
    if not speed > 0:
        raise argparse.ArgumentTypeError(f"speed must be > 0, got {text}")
    return speed


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value


def _add_market_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--symbols",
        type=_symbols,
        default=_symbols(DEFAULT_SYMBOLS),
        help="traded symbol first, then the hedge (default BTCUSDT,ETHUSDT)",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--replay", metavar="FILE", help="replay a recording instead of a live feed"
    )
    source.add_argument("--url", help=f"live public websocket (e.g. {BITGET_PUBLIC_URL})")
    parser.add_argument(
        "--speed", type=_speed, default=1.0, help="replay pace: 1, 10, ... or max (default 1)"
    )
    parser.add_argument("--seed", type=int, default=7, help="simulated market seed (default 7)")
    _add_laya_options(parser)


def _add_laya_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", metavar="ONNX", help="Laya model (default: the shipped one)")
    parser.add_argument(
        "--cpu", action="store_true", help="run Laya on the CPU even where CUDA works"
    )


def _laya_config(args: argparse.Namespace):
    from engine.laya.classifier import LayaClassifierConfig
    from engine.laya.model import DEFAULT_MODEL_PATH

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

    run = commands.add_parser("run", help="run the engine (simulator by default)")
    _add_market_options(run)
    run.add_argument("--duration", type=_positive, help="stop after this many seconds")

    sim = commands.add_parser("sim", help="run the simulated Bitget exchange standalone")
    sim.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    sim.add_argument("--port", type=int, default=8700, help="port (default 8700; 0 = any)")
    sim.add_argument("--seed", type=int, default=7, help="market seed (default 7)")
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
    record.add_argument("--symbols", type=_symbols, default=_symbols(DEFAULT_SYMBOLS))
    record.add_argument(
        "--duration", type=_positive, help="seconds to record (default: until Ctrl+C)"
    )
    record_source = record.add_mutually_exclusive_group()
    record_source.add_argument("--sim", action="store_true", help="record the simulator")
    record_source.add_argument(
        "--url", default=BITGET_PUBLIC_URL, help=f"public websocket (default {BITGET_PUBLIC_URL})"
    )
    record.add_argument("--seed", type=int, default=7, help="simulated market seed (with --sim)")

    train = commands.add_parser("train", help="train a Laya model on recordings (train extra)")
    train.add_argument("--replay", nargs="+", required=True, metavar="FILE", help="recordings")
    train.add_argument("--out", required=True, metavar="MODEL.onnx", help="model to write")
    train.add_argument(
        "--sim-minutes",
        type=float,
        default=0.0,
        help="also train on this many simulated minutes (default 0)",
    )
    train.add_argument("--seed", type=int, default=7, help="simulated market seed (default 7)")

    evaluate = commands.add_parser("eval", help="evaluate a Laya model against baselines")
    evaluate.add_argument("--replay", nargs="+", required=True, metavar="FILE", help="recordings")
    evaluate.add_argument("--model", metavar="ONNX", help="model (default: the shipped one)")
    evaluate.add_argument("--json", action="store_true", help="print one JSON object")
    evaluate.add_argument("--predictions-out", metavar="CSV", help="write every prediction")
    evaluate.add_argument(
        "--all", action="store_true", help="every labelled frame, not only the hold-out"
    )

    bench = commands.add_parser("bench", help="benchmark the fast path over a recording")
    bench.add_argument("--replay", required=True, metavar="FILE", help="recording to run")
    bench.add_argument("--json", action="store_true", help="print one JSON object")
    bench.add_argument("--limit", type=int, help="only the first N frames")
    bench.add_argument(
        "--passes", type=int, default=3, help="timed passes; figures from the median (default 3)"
    )
    bench.add_argument(
        "--memory-frames",
        type=int,
        default=100_000,
        help="frames in the steady-state memory pass (default 100000; 0 skips it)",
    )
    _add_laya_options(bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    command = args.command or "run"
    if args.command is None:
        args = parser.parse_args(["run"])
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
        print(f"hft-console {command}: {error}", file=sys.stderr)
        return 2


def _bench(args: argparse.Namespace) -> int:
    from engine.bench import format_table, run_bench

    result = run_bench(
        args.replay,
        limit=args.limit,
        passes=args.passes,
        laya=_laya_config(args),
        memory_frames=args.memory_frames,
    )
    print(json.dumps(result) if args.json else format_table(result))
    return 0


def _train(args: argparse.Namespace) -> int:
    from engine.laya.train import train_command

    print(train_command(args.replay, args.out, sim_minutes=args.sim_minutes, seed=args.seed))
    return 0


def _eval(args: argparse.Namespace) -> int:
    from engine.laya.evaluate import eval_command
    from engine.laya.model import DEFAULT_MODEL_PATH

    print(
        eval_command(
            args.replay,
            args.model or DEFAULT_MODEL_PATH,
            json_output=args.json,
            predictions_out=args.predictions_out,
            all_frames=args.all,
        )
    )
    return 0


def _sim(args: argparse.Namespace) -> int:
    from engine.sim.market import MarketGeneratorConfig
    from engine.sim.server import SimExchangeConfig
    from engine.sim.standalone import run_standalone

    config = SimExchangeConfig(
        host=args.host,
        port=args.port,
        book_interval_ms=args.book_interval_ms,
        market=MarketGeneratorConfig(seed=args.seed),
    )
    run_standalone(config, args.fault)
    return 0


def _record(args: argparse.Namespace) -> int:
    from engine.node import record_command

    return asyncio.run(
        record_command(
            args.out, args.symbols, args.duration, None if args.sim else args.url, args.seed
        )
    )


def _run(args: argparse.Namespace) -> int:
    from engine.node import EngineConfig, run_headless

    config = EngineConfig(
        symbols=args.symbols,
        replay_path=args.replay,
        replay_speed=args.speed,
        live_url=args.url,
        sim_seed=args.seed,
        laya=_laya_config(args),
    )
    return asyncio.run(run_headless(config, duration_s=args.duration))


if __name__ == "__main__":
    sys.exit(main())
