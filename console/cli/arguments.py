"""The argparse types every command shares, so each flag refuses bad numbers the same way:
numbers must be finite (inf and nan never reach the engine), counts whole and in range."""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from engine.settings.schema import Settings
    from engine.tools.cluster.ray_workers import RayWorkers

MAX_COUNT = 2**63 - 1
"""The largest count a flag takes: what SQLite and numpy hold in an integer."""


def finite_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def positive_number(text: str) -> float:
    value = finite_number(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text}")
    return value


def non_negative_number(text: str) -> float:
    value = finite_number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text}")
    return value


def replay_speed(text: str) -> float | None:
    """`max` (None: as fast as the engine goes) or a finite pace > 0."""
    if text == "max":
        return None
    try:
        return positive_number(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"speed must be a finite number > 0 or 'max', got {text!r}"
        ) from None


def count(text: str) -> int:
    """A whole number from 1 to MAX_COUNT."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    if value > MAX_COUNT:
        raise argparse.ArgumentTypeError(f"expected a number up to {MAX_COUNT:,}, got {value}")
    return value


def symbol_list(text: str) -> tuple[str, ...]:
    """`BTCUSDT,ETHUSDT` -> ("BTCUSDT", "ETHUSDT"), upper-cased; at least one."""
    symbols = tuple(part.strip().upper() for part in text.split(",") if part.strip())
    if not symbols:
        raise argparse.ArgumentTypeError("give at least one symbol, e.g. BTCUSDT,ETHUSDT")
    return symbols


def traded_symbols(text: str) -> tuple[str, ...]:
    """A `symbol_list` the engine trades: the traded symbol, then its hedge (optional)."""
    symbols = symbol_list(text)
    if len(symbols) > 2:
        raise argparse.ArgumentTypeError(
            f"at most 2 symbols (the traded one, then its hedge), got {text!r}"
        )
    return symbols


def add_recording_symbols(parser: argparse.ArgumentParser) -> None:
    """`--symbols` of the commands that replay recordings (backtest, optimize)."""
    parser.add_argument(
        "--symbols",
        type=traded_symbols,
        help="traded symbol first, then the hedge (default: each recording's own two busiest)",
    )


def add_dataset_symbols(parser: argparse.ArgumentParser) -> None:
    """`--symbols` and `--hedge` of the commands that build Laya's datasets (train, eval): a
    book as the engine runs it (`dataset_symbols`)."""
    parser.add_argument(
        "--symbols",
        type=symbol_list,
        help="the quoted symbols of a book; one or two without --hedge: the traded symbol, then "
        "its hedge (default: each recording's own, led by the symbol its contracts line lists "
        "last, else by its busiest)",
    )
    parser.add_argument(
        "--hedge",
        type=str.upper,
        metavar="SYMBOL",
        help="the hedge of --symbols, the leader every symbol's cross features read (default "
        "BTCUSDT when --symbols lists three or more)",
    )


def dataset_symbols(args: argparse.Namespace) -> tuple[str, ...] | None:
    """The book `--symbols` and `--hedge` name, the hedge last (None: each recording's own);
    a ValueError for a hedge without the symbols it hedges, or a book that is not one."""
    from engine.lab.dataset import book_symbols

    if args.symbols is None:
        if args.hedge is not None:
            raise ValueError("--hedge names the hedge of --symbols: give the quoted symbols too")
        return None
    return book_symbols(args.symbols, args.hedge)


def add_ray_argument(parser: argparse.ArgumentParser, runs: str) -> None:
    """`--ray ADDRESS`: `runs` as tasks on a Ray cluster (engine/tools/cluster/)."""
    parser.add_argument(
        "--ray",
        metavar="ADDRESS",
        help=f"run {runs} as tasks on the Ray cluster at ADDRESS (HOST:PORT as `ray start "
        "--head` prints it, ray://HOST:PORT, or auto: the one this machine is part of), the "
        "same results as here (default: [research] ray_address, else worker processes here); "
        "needs pip install 'hft-console[cluster]' (docs/cluster.md)",
    )


def ray_address(args: argparse.Namespace, settings: Settings) -> tuple[str, str] | None:
    """The Ray cluster's address and what gave it: `--ray`, else [research] ray_address; None:
    neither (worker processes on this machine)."""
    if args.ray:
        return args.ray, "--ray"
    if settings.research.ray_address:
        return settings.research.ray_address, "[research] ray_address"
    return None


def ray_workers(
    cluster: tuple[str, str] | None,
    preload: str,
    *,
    compiled: bool = False,
    on_build: Callable[[], None] | None = None,
) -> RayWorkers | None:
    """The Ray cluster at `cluster` (`ray_address`'s answer) with `preload` imported on its
    workers, which run the compiled engine built on each node when `compiled` (`on_build`
    hears that a node builds it); None: no cluster (worker processes on this machine)."""
    if cluster is None:
        return None
    from engine.tools.cluster.ray_workers import RayWorkers

    address, given_by = cluster
    return RayWorkers(
        address, given_by=given_by, preload=[preload], compiled=compiled, on_build=on_build
    )
