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


def book_symbol(text: str) -> str:
    """`--hedge`, `--leader`: a symbol, upper-cased, or `none`."""
    from engine.settings.schema import NO_SYMBOL

    return NO_SYMBOL if text.strip().lower() == NO_SYMBOL else text.strip().upper()


def add_book_options(parser: argparse.ArgumentParser, default: str) -> None:
    """`--symbols`, `--hedge` and `--leader`: the book a command runs (`default` says what
    runs without them), over [engine] symbols, hedge and leader (console/cli/config.py)."""
    parser.add_argument(
        "--symbols",
        type=symbol_list,
        metavar="A,B,...",
        help=f"the quoted symbols, 1 to 16 (default: {default}); one or two need --hedge too: "
        "they once meant the traded symbol, then its hedge",
    )
    parser.add_argument(
        "--hedge",
        type=book_symbol,
        metavar="SYMBOL|none",
        help="the symbol that hedges the quoted ones' combined delta, never quoted itself "
        "(default: [engine] hedge, ETHUSDT); none: no hedge",
    )
    parser.add_argument(
        "--leader",
        type=book_symbol,
        metavar="SYMBOL|none",
        help="with --hedge none: the symbol the quoted ones' cross features read, watched, not "
        "traded (default: [engine] leader, BTCUSDT); none: the last quoted symbol leads",
    )


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
