"""Binance raw captures as recordings of Bitget v2 public frames (`hft-console import`).

A raw capture is what hftbacktest's collector writes: gzip text, one message a line, `<local
receive time> <JSON as received>`, one symbol a file, a session's files continuing one stream
across midnight. Local times are ns, us or ms (told per file by their size). Its lines:
- the REST depth snapshot (no `"stream"`: `lastUpdateId`, `bids`, `asks`), in a session's
  first file only;
- `depthUpdate` (`U`, `u`, and `pu` on futures): each quantity the new size at its price,
  `"0"` removes the level;
- `trade` (`T`, `t`, `p`, `q`, `m`: true when the seller was the aggressor); the rest
  (`bookTicker`, `markPriceUpdate`, subscription answers) has no frame of ours and is skipped.

The book is rebuilt as Binance says: the snapshot, then each update with `u > lastUpdateId`
(those logged while the REST call was in flight, just before the snapshot line, included),
each continuing the chain (futures: `pu` = the previous `u`; spot: `U` = the previous `u` + 1).
After every applied update a `books15` snapshot frame (top 15 a side, `seq` = `u`) is written
at the update's receive time, and each trade is a `trade` frame (the trades before the
snapshot too). Prices and sizes are the capture's decimal strings without trailing zeros;
coin-margined sizes are converted from contracts to coin (contracts x face value / price, to
6 decimals), so they read like the others. Symbols are interleaved by receive time. This is
how the shared replay files were built from their raw captures.

The recording starts with a contracts line: each symbol's tick and lot are the finest price
and size increments of the frames written (`FinestIncrement`: the shared NEXOUSDT day gives
0.001 and 0.1), its minimum notional Instrument's default, unless `--instrument` gives them;
frames off a given tick or lot are refused. The frames are written to a scratch file and
copied after that line, which is known only at the end.

A break in the chain is said, and the symbol's frames stop until a later snapshot resyncs its
book; with none they stop there. Memory is bounded by the books, not the files: a symbol's
frames wait only for its first snapshot, which must come within `SNAPSHOT_WITHIN_LINES`.
"""

from __future__ import annotations

import bisect
import contextlib
import enum
import gzip
import heapq
import math
import os
import shutil
import tempfile
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import BinaryIO

import orjson

from engine.feed.increments import FinestIncrement, InstrumentOption
from engine.feed.recording import (
    RecordingReadStats,
    contracts_line,
    encode_line,
    is_gzip_path,
    iter_recording,
)
from engine.market.instruments import Instrument
from engine.user_files import check_output_file, replacing

BOOK_DEPTH = 15
SNAPSHOT_WITHIN_LINES = 10_000
"""A session's first file must give its depth snapshot within this many lines."""
IDENTIFY_WITHIN_LINES = 1_000
"""A file must show a depth update or a trade of its symbol within this many lines."""
COIN_FACE_VALUE_USD = {"BTC": 100}
"""Binance's coin-margined contract sizes, USD; every other coin's is 10."""
OTHER_COIN_FACE_VALUE_USD = 10
RESYNC_HELD_UPDATES = 1_000
"""After a gap, the latest updates kept for the next snapshot (those in flight during it)."""
_COIN_SIZE_DECIMALS = 6
_WRITE_BLOCK_LINES = 4_096
"""Lines written at a time; the progress callback hears of each block."""
_FIRST_FILE = "a session's first file starts with one, so give its files from the first day"


class RawCaptureError(ValueError):
    """Input that cannot be imported; the message is the one-line reason, naming the file."""


class Market(enum.StrEnum):
    """A capture's market, valued as the Bitget `instType` its frames get."""

    SPOT = "SPOT"
    USDM = "USDT-FUTURES"
    COINM = "COIN-FUTURES"

    @property
    def title(self) -> str:
        return {"SPOT": "spot", "USDT-FUTURES": "USD-M", "COIN-FUTURES": "coin-margined"}[self]


@dataclass(frozen=True, slots=True)
class CaptureFile:
    """One raw capture: Binance's symbol (`btcusd_perp`), the market, how many ns one unit of
    its local times is, and its first local time (ns)."""

    path: Path
    stream_symbol: str
    market: Market
    ns_per_unit: int
    first_ns: int

    @property
    def symbol(self) -> str:
        """Our instId: BTCUSDT, or BTCUSD for the coin-margined BTCUSD_PERP."""
        return self.stream_symbol.upper().removesuffix("_PERP")


@dataclass(frozen=True, slots=True)
class ImportNotice:
    """What the import says while it runs: a gap, a resync, a symbol stopped."""

    symbol: str
    at_ns: int
    text: str


@dataclass(slots=True)
class SymbolImport:
    """What one symbol's captures gave."""

    symbol: str
    market: Market
    files: tuple[Path, ...]
    books: int = 0
    trades: int = 0
    stale_updates: int = 0
    """Depth updates the snapshot already held (`u <= lastUpdateId`): dropped."""
    dropped_updates: int = 0
    """Depth updates dropped after a gap, before a snapshot resynced the book (or to the end)."""
    dropped_trades: int = 0
    gaps: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    """Lines with no frame of ours, by kind (`bookTicker`, `markPriceUpdate`, ...)."""
    problems: list[str] = field(default_factory=list)
    """What the reader found wrong with a file (cut short, corrupt data, malformed lines)."""
    first_ns: int = 0
    last_ns: int = 0
    instrument: Instrument | None = None
    """The contract stored for it; None when its frames give no price and no option does."""
    given: tuple[str, ...] = ()
    """The contract's keys `--instrument` gave (the rest are from the data, or defaults)."""


@dataclass(frozen=True, slots=True)
class ImportProgress:
    fraction: float
    """Of the captures' bytes read."""
    frames: int
    market_ns: int
    """The receive time reached."""


@dataclass(frozen=True, slots=True)
class ImportResult:
    path: Path
    frames: int
    symbols: tuple[SymbolImport, ...]
    notices: tuple[ImportNotice, ...]


def identify_capture(path: str | os.PathLike[str]) -> CaptureFile:
    """Read the start of `path` for its symbol, market and time unit; raises RawCaptureError
    when it is missing or not a raw capture."""
    path = Path(path)
    if path.is_dir():
        raise RawCaptureError(f"{path}: is a folder, not a raw capture file")
    if not path.is_file():
        raise RawCaptureError(f"{path}: no such file")
    stats = RecordingReadStats()
    first_time = None
    for index, (local_time, raw) in enumerate(iter_recording(path, stats)):
        if index >= IDENTIFY_WITHIN_LINES:
            break
        first_time = local_time if first_time is None else first_time
        message = _loads(raw)
        if not isinstance(message, dict):
            continue
        if "arg" in message and "action" in message:
            raise RawCaptureError(
                f"{path}: not a Binance raw capture: it holds Bitget frames (it is a recording "
                f"already: replay it as it is)"
            )
        stream, data = message.get("stream"), message.get("data")
        market = _market_of(stream, data)
        if market is None:
            continue
        assert isinstance(stream, str)
        ns_per_unit = _ns_per_unit(first_time)
        return CaptureFile(
            path, stream.partition("@")[0], market, ns_per_unit, first_time * ns_per_unit
        )
    problem = stats.problem(path)
    if problem is not None and problem.unreadable:
        raise RawCaptureError(f"{problem.text} (not a Binance raw capture)")
    raise RawCaptureError(
        f"{path}: not a Binance raw capture: none of its first {stats.lines:,} lines is "
        f'\'<local time> {{"stream": ..., "data": ...}}\' with a depthUpdate or a trade'
    )


def plan_import(paths: Sequence[str | os.PathLike[str]]) -> list[list[CaptureFile]]:
    """The captures grouped by symbol (in the order the symbols first appear), each symbol's
    files in the order given; raises RawCaptureError when a symbol's files are not in date
    order, a file is given twice, or two markets would give one instId."""
    if not paths:
        raise RawCaptureError("no capture files given")
    groups: dict[str, list[CaptureFile]] = {}
    seen: set[Path] = set()
    for path in paths:
        resolved = Path(path).resolve()
        if resolved in seen:
            raise RawCaptureError(f"{path}: given twice")
        seen.add(resolved)
        capture = identify_capture(path)
        files = groups.setdefault(capture.symbol, [])
        if files and files[0].market is not capture.market:
            raise RawCaptureError(
                f"{capture.path}: a {capture.market.title} capture of {capture.symbol}, and "
                f"{files[0].path} a {files[0].market.title} one: import each market apart"
            )
        if files and capture.first_ns <= files[-1].first_ns:
            raise RawCaptureError(
                f"{capture.path} starts at {utc_text(capture.first_ns)}, before "
                f"{files[-1].path} ({utc_text(files[-1].first_ns)}), which is given ahead "
                f"of it: give a symbol's files in date order"
            )
        files.append(capture)
    return list(groups.values())


def import_captures(
    paths: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    allow_truncated: bool = False,
    instruments: Sequence[InstrumentOption] = (),
    on_notice: Callable[[ImportNotice], None] | None = None,
    on_progress: Callable[[ImportProgress], None] | None = None,
) -> ImportResult:
    """Convert `paths` into the recording `out` (gzip when it ends in .gz), written whole: to
    a temporary file beside it, renamed at the end, removed on any error. Each symbol's
    contract is derived from its frames, but for what `instruments` give. A capture cut short
    is refused unless `allow_truncated` (then its frames up to the cut are imported and the
    symbol's `problems` say where). Raises RawCaptureError (an option for a symbol the
    captures lack or given twice, frames off a given tick or lot included) or OutputRefused
    (both ValueError, nothing written) or OSError."""
    out = check_output_file(out, f"--out {out}", force=overwrite, inputs=paths)
    groups = plan_import(paths)
    options = _options_by_symbol(instruments, [group[0].symbol for group in groups])
    notices: list[ImportNotice] = []

    def notice(item: ImportNotice) -> None:
        notices.append(item)
        if on_notice is not None:
            on_notice(item)

    symbols = [_SymbolStream(group, notice, allow_truncated) for group in groups]
    total_bytes = sum(os.path.getsize(capture.path) for group in groups for capture in group)
    compress = is_gzip_path(out)
    with (
        replacing(out, mode=0o644) as partial,
        tempfile.TemporaryFile(dir=partial.parent) as body,
    ):
        with _open_out(body, compress) as file:
            frames = _write_frames(symbols, file, total_bytes, on_progress)
        contracts = [symbol.contract(options.get(symbol.symbol)) for symbol in symbols]
        stored = [instrument for instrument in contracts if instrument is not None]
        first_ns = min((s.result.first_ns for s in symbols if s.result.first_ns), default=0)
        with partial.open("wb") as whole:
            if stored:
                with _open_out(whole, compress) as file:  # a gzip member of its own
                    file.write(contracts_line(first_ns, stored))
            body.seek(0)
            shutil.copyfileobj(body, whole)
    if on_progress is not None:
        on_progress(
            ImportProgress(1.0, frames, max((s.result.last_ns for s in symbols), default=0))
        )
    return ImportResult(out, frames, tuple(symbol.result for symbol in symbols), tuple(notices))


def _write_frames(
    symbols: list[_SymbolStream],
    file: BinaryIO,
    total_bytes: int,
    on_progress: Callable[[ImportProgress], None] | None,
) -> int:
    """Write the symbols' frames to `file`, interleaved by receive time; how many."""
    frames = 0
    block: list[bytes] = []
    merged = heapq.merge(*(symbol.frames() for symbol in symbols), key=_receive_time)
    for recv_ns, raw in merged:
        block.append(encode_line(recv_ns, raw))
        frames += 1
        if len(block) >= _WRITE_BLOCK_LINES:
            file.write(b"".join(block))
            block.clear()
            if on_progress is not None:
                read = sum(symbol.bytes_read() for symbol in symbols)
                on_progress(ImportProgress(read / max(1, total_bytes), frames, recv_ns))
    file.write(b"".join(block))
    return frames


def _options_by_symbol(
    options: Sequence[InstrumentOption], symbols: list[str]
) -> dict[str, InstrumentOption]:
    """`options` by symbol; RawCaptureError for one given twice or for a symbol not among
    the captures' `symbols`."""
    by_symbol: dict[str, InstrumentOption] = {}
    for option in options:
        if option.symbol in by_symbol:
            raise RawCaptureError(
                f"--instrument {option.symbol} is given twice: give its keys in one"
            )
        if option.symbol not in symbols:
            raise RawCaptureError(
                f"--instrument {option.symbol}: the captures have no {option.symbol}: they "
                f"have {', '.join(symbols)}"
            )
        by_symbol[option.symbol] = option
    return by_symbol


def face_value_usd(symbol: str) -> int:
    """The USD a coin-margined contract of `symbol` (our instId, BTCUSD) is worth."""
    return COIN_FACE_VALUE_USD.get(symbol.removesuffix("USD"), OTHER_COIN_FACE_VALUE_USD)


def utc_text(at_ns: int) -> str:
    """`2023-04-05 00:00:01.234 UTC`."""
    moment = datetime.fromtimestamp(at_ns / 1e9, UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d} UTC"


# Reading


def _loads(raw: bytes) -> object:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


def _market_of(stream: object, data: object) -> Market | None:
    """The market a depth update or trade message comes from; None for other messages."""
    if not isinstance(stream, str) or not isinstance(data, dict):
        return None
    kind = data.get("e")
    if kind == "depthUpdate":
        futures = "pu" in data
    elif kind == "trade":
        futures = "X" in data  # spot trades carry "M" instead
    else:
        return None
    if not futures:
        return Market.SPOT
    pair = stream.partition("@")[0].partition("_")[0]
    return Market.COINM if pair.endswith("usd") else Market.USDM


def _ns_per_unit(local_time: int) -> int:
    """Nanoseconds in one unit of a file's local time, by its size (epoch ms, us or ns)."""
    if local_time < 10**14:
        return 1_000_000
    if local_time < 10**17:
        return 1_000
    return 1


def _receive_time(item: tuple[int, bytes]) -> int:
    return item[0]


@contextlib.contextmanager
def _open_out(raw_file: BinaryIO, compress: bool) -> Iterator[BinaryIO]:
    """`raw_file` as it is, or through a gzip member ended (not closing the file) at the end."""
    if compress:
        with gzip.GzipFile(fileobj=raw_file, mode="wb", compresslevel=6, mtime=0) as file:
            yield file  # type: ignore[misc]
    else:
        yield raw_file


def _trim(number: str) -> str:
    """A decimal string without trailing zeros (`28146.00` -> `28146`, `0.020` -> `0.02`)."""
    if "." not in number:
        return number
    return number.rstrip("0").rstrip(".") or "0"


def _levels(levels: object) -> list[tuple[str, float, str, float]]:
    """A message's `[[price, quantity], ...]` as (price text, price, quantity text, quantity);
    ValueError or TypeError when it is not decimal strings, prices > 0, quantities >= 0."""
    if not isinstance(levels, list):
        raise TypeError("levels are a list")
    parsed = []
    for price_text, quantity_text in levels:
        if not (isinstance(price_text, str) and isinstance(quantity_text, str)):
            raise TypeError("prices and quantities are strings")
        if not (_is_plain_decimal(price_text) and _is_plain_decimal(quantity_text)):
            raise ValueError(f"not a level: {price_text} {quantity_text}")
        price, quantity = float(price_text), float(quantity_text)
        if not (math.isfinite(price) and price > 0 and math.isfinite(quantity) and quantity >= 0):
            raise ValueError(f"not a level: {price_text} {quantity_text}")
        parsed.append((price_text, price, quantity_text, quantity))
    return parsed


def _is_plain_decimal(text: str) -> bool:
    """Digits with at most one point (no sign, exponent or space), as Binance writes them."""
    return text.isascii() and text.replace(".", "", 1).isdigit()


# The book


class _BookSide:
    """One side's levels: price -> the (price, size) texts of the frame, kept in book order."""

    __slots__ = ("_keys", "_levels", "_sign")

    def __init__(self, descending: bool) -> None:
        self._sign = -1.0 if descending else 1.0
        self._keys: list[float] = []
        self._levels: dict[float, list[str]] = {}

    def clear(self) -> None:
        self._keys.clear()
        self._levels.clear()

    def set(self, price_text: str, price: float, quantity: float, size_text: str) -> None:
        key = self._sign * price
        levels = self._levels
        if quantity == 0.0:
            if levels.pop(key, None) is not None:
                del self._keys[bisect.bisect_left(self._keys, key)]
            return
        if key not in levels:
            bisect.insort(self._keys, key)
        levels[key] = [_trim(price_text), size_text]

    def top(self) -> list[list[str]]:
        levels = self._levels
        return [levels[key] for key in self._keys[:BOOK_DEPTH]]


class _SymbolStream:
    """One symbol's captures, read in order, as (receive ns, frame) pairs."""

    def __init__(
        self,
        files: Sequence[CaptureFile],
        notice: Callable[[ImportNotice], None],
        allow_truncated: bool,
    ):
        first = files[0]
        self._allow_truncated = allow_truncated
        self.files = tuple(files)
        self.market = first.market
        self.symbol = first.symbol
        self.result = SymbolImport(first.symbol, first.market, tuple(f.path for f in files))
        self._notice = notice
        self._reads: list[RecordingReadStats] = []
        self._bids = _BookSide(descending=True)
        self._asks = _BookSide(descending=False)
        self._prices = FinestIncrement()
        self._sizes = FinestIncrement()
        """Of the prices and sizes of the levels and trades written."""
        self._face_value = face_value_usd(first.symbol)
        self._coin_margined = first.market is Market.COINM
        self._spot = first.market is Market.SPOT
        inst_type = first.market.value
        self._book_arg = {"instType": inst_type, "channel": "books15", "instId": self.symbol}
        self._trade_arg = {"instType": inst_type, "channel": "trade", "instId": self.symbol}
        self._held: list[tuple[int, dict]] | None = []
        """Until the first snapshot: every trade and update, in order (then None)."""
        self._resync: deque[tuple[int, dict]] = deque(maxlen=RESYNC_HELD_UPDATES)
        """After a gap: the latest updates, for the snapshot that resyncs the book."""
        self._last_u: int | None = None
        """The last update id the book holds; None: no book (before a snapshot, after a gap)."""
        self._snapshot_id = 0
        self._applied_since_snapshot = False
        self._gap_ns = 0

    def bytes_read(self) -> int:
        return sum(stats.bytes_read for stats in self._reads)

    def contract(self, option: InstrumentOption | None) -> Instrument | None:
        """The contract to store, kept in `result`: what `option` gives, else the finest
        price and size increments of the frames (None when they have none); RawCaptureError
        when the frames are off a given tick or lot, or the contract cannot be held."""
        symbol = self.symbol
        given = {key: getattr(option, key) for key in option.given} if option else {}
        steps: dict[str, Decimal | None] = {}
        for key, seen, what in (
            ("tick", self._prices.step, "prices"),
            ("lot", self._sizes.step, "sizes"),
        ):
            step = given.get(key)
            if step is not None and seen is not None and seen % step:
                raise RawCaptureError(
                    f"{symbol}: its {what} are not all on --instrument {key}={step:f}: they "
                    f"move in steps of {seen:f}; nothing written"
                )
            steps[key] = step if step is not None else seen
        tick, lot = steps["tick"], steps["lot"]
        if tick is None or lot is None:
            return None
        minimum = given.get("min_notional")
        extra = {} if minimum is None else {"min_notional": float(minimum)}
        try:
            instrument = Instrument(symbol, float(tick), float(lot), **extra)
        except ValueError as error:
            raise RawCaptureError(
                f"{symbol}: its contract (tick {tick:f}, lot {lot:f}) cannot be stored: {error}; "
                f"give it with --instrument {symbol}:tick=..,lot=.."
            ) from None
        self.result.instrument = instrument
        self.result.given = tuple(given)
        return instrument

    def frames(self) -> Iterator[tuple[int, bytes]]:
        result = self.result
        previous: tuple[CaptureFile, int] | None = None
        for capture in self.files:
            stats = RecordingReadStats()
            self._reads.append(stats)
            unit = capture.ns_per_unit
            if previous is not None and capture.first_ns < previous[1]:
                raise RawCaptureError(
                    f"{capture.path} starts at {utc_text(capture.first_ns)}, before "
                    f"{previous[0].path} ends ({utc_text(previous[1])}): they overlap, so they "
                    f"are not one session's files"
                )
            recv_ns = capture.first_ns
            for line, (local_time, raw) in enumerate(iter_recording(capture.path, stats), 1):
                recv_ns = local_time * unit
                message = _loads(raw)
                if not isinstance(message, dict):
                    result.skipped["not JSON"] += 1
                    continue
                if "stream" not in message:
                    if "lastUpdateId" in message:
                        yield from self._on_snapshot(message, recv_ns)
                    else:
                        result.skipped["answer"] += 1
                    continue
                data = message.get("data")
                kind = data.get("e") if isinstance(data, dict) else None
                if kind != "depthUpdate" and kind != "trade":
                    result.skipped[str(kind or str(message["stream"]).partition("@")[2])] += 1
                elif self._held is not None:
                    if line >= SNAPSHOT_WITHIN_LINES:
                        raise RawCaptureError(
                            f"{capture.path}: no depth snapshot (a line with lastUpdateId) in "
                            f"its first {SNAPSHOT_WITHIN_LINES:,} lines: {_FIRST_FILE}"
                        )
                    self._held.append((recv_ns, data))
                else:
                    frame = self._on_market(recv_ns, data)
                    if frame is not None:
                        yield frame
            previous = (capture, recv_ns)
            problem = stats.problem(capture.path)
            if problem is not None and problem.truncated and not self._allow_truncated:
                raise RawCaptureError(
                    f"{problem.text}; nothing written (--allow-truncated imports it up to the cut)"
                )
            if problem is not None:
                result.problems.append(problem.text)
        if self._held is not None:
            raise RawCaptureError(
                f"{self.files[0].path}: no depth snapshot (a line with lastUpdateId) in "
                f"{self.symbol}'s captures: {_FIRST_FILE}"
            )
        if self._last_u is None:
            result.dropped_updates += len(self._resync)
            self._say(
                self._gap_ns,
                f"no snapshot came after the gap at {utc_text(self._gap_ns)}, so its frames "
                f"stop there ({result.dropped_updates:,} depth updates and "
                f"{result.dropped_trades:,} trades after it left out)",
            )

    def _on_snapshot(self, message: dict, recv_ns: int) -> Iterator[tuple[int, bytes]]:
        try:
            last_update_id = int(message["lastUpdateId"])
            bids, asks = _levels(message["bids"]), _levels(message["asks"])
        except (KeyError, TypeError, ValueError):
            self.result.skipped["malformed snapshot"] += 1
            return
        if self._held is not None:
            waiting, self._held = self._held, None
        elif self._last_u is None:
            waiting = list(self._resync)
            self._resync.clear()
        else:
            self.result.skipped["snapshot (the book was in sync)"] += 1
            return
        for side, levels in ((self._bids, bids), (self._asks, asks)):
            side.clear()
            self._set(side, levels)
        self._snapshot_id = self._last_u = last_update_id
        self._applied_since_snapshot = False
        if self.result.gaps:
            self._say(recv_ns, f"resynced from the snapshot at {utc_text(recv_ns)}")
        for waiting_ns, data in waiting:
            frame = self._on_market(waiting_ns, data)
            if frame is not None:
                yield frame

    def _on_market(self, recv_ns: int, data: dict) -> tuple[int, bytes] | None:
        """The frame of a depth update or a trade, None when there is none (the update is
        stale, or the book is out of sync)."""
        if self._last_u is None:
            if data["e"] == "trade":
                self.result.dropped_trades += 1
            else:
                if len(self._resync) == self._resync.maxlen:
                    self.result.dropped_updates += 1
                self._resync.append((recv_ns, data))
            return None
        try:
            if data["e"] == "trade":
                return self._trade(recv_ns, data)
            return self._apply(recv_ns, data)
        except (KeyError, TypeError, ValueError):
            # Left out whole; a malformed update then breaks the chain, which is said.
            self.result.skipped[f"malformed {data['e']}"] += 1
            return None

    def _set(self, side: _BookSide, levels: list[tuple[str, float, str, float]]) -> None:
        prices, sizes = self._prices, self._sizes
        for price_text, price, quantity_text, quantity in levels:
            size_text = self._size_text(price, quantity_text, quantity)
            prices.add(price_text)
            if quantity:
                sizes.add(size_text)
            side.set(price_text, price, quantity, size_text)

    def _size_text(self, price: float, quantity_text: str, quantity: float) -> str:
        if not self._coin_margined:
            return _trim(quantity_text)
        coin = quantity * self._face_value / price
        return _trim(f"{coin:.{_COIN_SIZE_DECIMALS}f}")

    def _apply(self, recv_ns: int, data: dict) -> tuple[int, bytes] | None:
        result = self.result
        last_u = self._last_u
        assert last_u is not None
        first_id, final_id = int(data["U"]), int(data["u"])
        bid_levels, ask_levels = _levels(data["b"]), _levels(data["a"])
        event_ms = int(data["E"])
        transaction_ms = int(data.get("T", event_ms))  # spot updates have no T
        if not self._applied_since_snapshot:
            if final_id <= self._snapshot_id:
                result.stale_updates += 1
                return None
            follows = first_id <= self._snapshot_id + 1
        elif self._spot:
            follows = first_id == last_u + 1
        else:
            follows = int(data["pu"]) == last_u
        if not follows:
            result.gaps += 1
            self._last_u = None
            self._gap_ns = recv_ns
            self._resync.append((recv_ns, data))
            follows_what = (
                "the previous update's" if self._applied_since_snapshot else ("the snapshot's")
            )
            self._say(
                recv_ns,
                f"depth-chain gap at {utc_text(recv_ns)}: update {first_id}..{final_id} does "
                f"not follow {follows_what} {last_u}; its frames stop until a snapshot "
                f"resyncs the book",
            )
            return None
        bids, asks = self._bids, self._asks
        self._set(bids, bid_levels)
        self._set(asks, ask_levels)
        self._last_u = final_id
        self._applied_since_snapshot = True
        result.books += 1
        self._seen(recv_ns)
        frame = {
            "action": "snapshot",
            "arg": self._book_arg,
            "data": [
                {
                    "asks": asks.top(),
                    "bids": bids.top(),
                    "checksum": 0,
                    "seq": final_id,
                    "pseq": 0,
                    "ts": str(transaction_ms),
                }
            ],
            "ts": event_ms,
        }
        return recv_ns, orjson.dumps(frame)

    def _trade(self, recv_ns: int, data: dict) -> tuple[int, bytes]:
        ((price_text, price, quantity_text, quantity),) = _levels([[data["p"], data["q"]]])
        seller_aggressor = data["m"]
        if not isinstance(seller_aggressor, bool) or not quantity:
            raise ValueError("not a trade")
        size_text = self._size_text(price, quantity_text, quantity)
        trade = {
            "ts": str(int(data["T"])),
            "price": _trim(price_text),
            "size": size_text,
            "side": "sell" if seller_aggressor else "buy",
            "tradeId": str(int(data["t"])),
        }
        frame = {"action": "update", "arg": self._trade_arg, "data": [trade], "ts": int(data["E"])}
        self._prices.add(price_text)
        self._sizes.add(size_text)
        self.result.trades += 1
        self._seen(recv_ns)
        return recv_ns, orjson.dumps(frame)

    def _seen(self, recv_ns: int) -> None:
        result = self.result
        result.first_ns = result.first_ns or recv_ns
        result.last_ns = recv_ns

    def _say(self, at_ns: int, text: str) -> None:
        self._notice(ImportNotice(self.symbol, at_ns, f"{self.symbol}: {text}"))
