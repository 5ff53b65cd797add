"""`hft-console import`: other people's captures as our recordings (engine/feed/binance_raw.py),
so users bring their own history, with each symbol's contract (derived from the data, or given
with --instrument). Exits 2 on bad input (a capture cut short included, unless
--allow-truncated; an --instrument that does not read or fit the data), with nothing written."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from console.cli.errors import error_line
from console.cli.progress import progress_bar

if TYPE_CHECKING:
    from engine.feed.binance_raw import ImportNotice, ImportProgress, ImportResult

SOURCES = ("binance-raw",)


def add_import_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "import",
        help="convert Binance raw captures (hftbacktest's collector) into a recording",
        description="Rebuilds each symbol's book from its depth snapshot and updates and "
        "writes a recording of Bitget v2 frames: a books15 snapshot after every applied "
        "update and a trade frame per trade, symbols interleaved by receive time, after a "
        "line with each symbol's contract: tick and lot are the finest price and size steps "
        "in the data unless --instrument gives them. Give a symbol's files in date order, the "
        "session's first (with the snapshot) first.",
    )
    parser.add_argument(
        "--from", dest="source", choices=SOURCES, required=True, help="the captures' format"
    )
    parser.add_argument("files", metavar="FILE", nargs="+", help="raw capture files")
    parser.add_argument(
        "--out", metavar="REC", required=True, help="the recording to write (.gz compresses)"
    )
    parser.add_argument("--force", action="store_true", help="replace --out if it exists")
    parser.add_argument(
        "--allow-truncated",
        action="store_true",
        help="import a capture cut short up to the cut, and say where (default: refused)",
    )
    parser.add_argument(
        "--instrument",
        action="append",
        default=[],
        metavar="SYMBOL:KEY=VALUE,...",
        help="a symbol's contract instead of the data's: tick=, lot=, min_notional= (USDT, "
        "default 5), e.g. NEXOUSDT:tick=0.001,lot=0.1; refused when the data is off it "
        "(repeatable, a symbol once)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")


def run_import(args: argparse.Namespace) -> int:
    from engine.feed.binance_raw import import_captures
    from engine.feed.increments import parse_instrument_option

    name = "hft-console import"
    progress = None if args.quiet or not sys.stderr.isatty() else _ProgressLine()

    def notice(item: ImportNotice) -> None:
        if progress is not None:
            progress.clear()
        print(f"{name}: {item.text}", file=sys.stderr)

    try:
        instruments = [parse_instrument_option(text) for text in args.instrument]
        result = import_captures(
            args.files,
            args.out,
            overwrite=args.force,
            allow_truncated=args.allow_truncated,
            instruments=instruments,
            on_notice=notice,
            on_progress=progress.show if progress is not None else None,
        )
    except (ValueError, OSError) as error:  # RawCaptureError, OutputRefused and the disk
        if progress is not None:
            progress.clear()
        print(f"{name}: {error_line(error)}", file=sys.stderr)
        return 2
    if progress is not None:
        progress.clear()
    for symbol in result.symbols:
        for problem in symbol.problems:
            print(f"{name}: {problem}", file=sys.stderr)
    print(summary_text(result))
    return 0


def summary_text(result: ImportResult) -> str:
    from engine.feed.binance_raw import utc_text
    from engine.feed.recording import contracts_text

    first = min((s.first_ns for s in result.symbols if s.first_ns), default=0)
    last = max((s.last_ns for s in result.symbols), default=0)
    lines = [
        f"wrote {result.path}: {result.frames:,} frames over {(last - first) / 60e9:.1f} min "
        f"of market ({utc_text(first)} to {utc_text(last)})"
        if result.frames
        else f"wrote {result.path}: no frames"
    ]
    for symbol in result.symbols:
        skipped = ", ".join(f"{count:,} {kind}" for kind, count in symbol.skipped.most_common())
        dropped = (
            f"; {symbol.gaps} gap(s): {symbol.dropped_updates:,} updates and "
            f"{symbol.dropped_trades:,} trades left out"
            if symbol.gaps
            else ""
        )
        lines.append(
            f"{symbol.symbol} ({symbol.market.title}, {len(symbol.files)} file(s)): "
            f"{symbol.books:,} books15, {symbol.trades:,} trades; {symbol.stale_updates:,} "
            f"updates older than the snapshot{dropped}; skipped: {skipped or 'nothing'}"
        )
    for symbol in result.symbols:
        if symbol.instrument is None:
            lines.append(f"{symbol.symbol}: no contract stored: its frames give no price or size")
            continue
        given = f"--instrument gave {', '.join(symbol.given)}" if symbol.given else ""
        derived = [key for key in ("tick", "lot") if key not in symbol.given]
        origins = "; ".join(
            part
            for part in (given, f"{' and '.join(derived)} from the data" if derived else "")
            if part
        )
        lines.append(f"contract stored: {contracts_text((symbol.instrument,))} ({origins})")
    return "\n".join(lines)


class _ProgressLine:
    """One line on the terminal's stderr, redrawn in place."""

    def __init__(self) -> None:
        self._drawn = False

    def show(self, progress: ImportProgress) -> None:
        from engine.feed.binance_raw import utc_text

        sys.stderr.write(
            f"\r{progress_bar(progress.fraction)} {progress.frames:,} frames, at "
            f"{utc_text(progress.market_ns)}\x1b[K"
        )
        sys.stderr.flush()
        self._drawn = True

    def clear(self) -> None:
        if self._drawn:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
            self._drawn = False
