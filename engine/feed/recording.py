"""The recording format: one `<receive time ns> <raw frame>` line per websocket frame.

A line whose JSON starts `{"hft":` is the recording's own, not a frame; every reader passes
over it. The one kind so far is the contracts line, `{"hft":"contracts","data":[{"symbol":
"NEXOUSDT","tick":"0.001","lot":"0.1","min_notional":"5","maker_fee_rate":null,
"taker_fee_rate":null}]}` (numbers as decimal text, fee rates text or null), written before
the first frame by whoever writes a recording; `recording_instruments` reads those before the
first frame. One after it would be a contract changed while recording (no writer writes one
yet). A recording without one (older ones) reads as before.

Data that starts with gzip's magic bytes is read as gzip streams (possibly several members,
possibly cut short by a crash), whatever the file is called; a file whose name ends in `.gz`
must be gzip. Anything else is plain bytes. The reader never raises for bad content: it skips
and counts malformed lines and stops at corrupt compressed data, recording both in
`RecordingReadStats`, whose `problem()` is the one judgement every command gives of what it
read (`check_recording` judges a recording's start before a run).
"""

from __future__ import annotations

import errno
import itertools
import math
import os
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import BinaryIO

import orjson

from engine.market.instruments import Instrument
from engine.user_files import content_digest

GZIP_SUFFIX = ".gz"
GZIP_MAGIC = b"\x1f\x8b"
LINE_END = b"\n"
FIELD_SEPARATOR = b" "
LINE_FORMAT = "<receive time ns> <frame>"
CHECK_LINES = 1_000
"""Lines `check_recording` reads at most looking for the first frame."""
_READ_CHUNK_BYTES = 1 << 18
_GZIP_WBITS = 16 + zlib.MAX_WBITS


METADATA_PREFIX = b'{"hft":'
"""How a line of the recording's own (not a frame) starts."""
CONTRACTS_KIND = "contracts"
_CONTRACT_FIELDS = ("symbol", "tick", "lot", "min_notional", "maker_fee_rate", "taker_fee_rate")


class RecordingUnreadable(ValueError):
    """A recording holds no frame that can be read; the message is the one-line reason."""


class RecordingContractsError(ValueError):
    """A contracts line that does not read, or frames off its tick; the message is one line
    naming the file and the line."""


@dataclass(frozen=True, slots=True)
class RecordingProblem:
    """What was wrong with a recording, in one line (`text`, which names the file).

    `unreadable`: no frame could be read, and a command that needs the recording must fail.
    `truncated`: the data stops early (cut short, corrupt, or a line without its end); the
    frames before that point were read. `malformed_lines`: lines skipped inside the data.
    """

    path: str
    unreadable: bool
    truncated: bool
    malformed_lines: int
    text: str

    def raise_if_unreadable(self) -> None:
        if self.unreadable:
            raise RecordingUnreadable(self.text)


@dataclass(slots=True)
class RecordingReadStats:
    """What a reader has seen so far; filled in while iterating."""

    lines: int = 0
    frames: int = 0
    metadata_lines: int = 0
    """The recording's own lines (its contracts), passed over."""
    malformed_lines: int = 0
    """Lines skipped, the unterminated tail included."""
    first_malformed_line: int = 0
    """The line number (from 1) of the first one skipped; 0 when none was."""
    unterminated_tail: bool = False
    """The data ended inside a line (a crash mid-write); that partial line was skipped."""
    bytes_read: int = 0
    """Bytes of the file read so far (compressed bytes for gzip)."""
    stream_truncated: bool = False
    """The gzip data ended inside a member: a copy cut short, or a recorder that crashed."""
    stream_error: str | None = None
    """Data that could not be decoded (not gzip, corrupt gzip); reading stopped there."""
    stream_error_at: int = 0
    """The file offset of the first byte that could not be decoded."""
    complete: bool = False
    """The reader reached the end of the data, or the point where it could read no further."""

    def problem(self, path: str | os.PathLike[str]) -> RecordingProblem | None:
        """What was wrong with the recording at `path`, or None for a clean read. Before the
        read is `complete` only the malformed lines seen so far are judged."""
        name = os.fspath(path)
        if self.complete and not self.frames:
            return RecordingProblem(
                name, True, False, 0, f"{name}: unreadable recording: {self._why_no_frame()}"
            )
        parts = []
        cut = self._cut_short() if self.complete else None
        if cut is not None:
            parts.append(cut)
        skipped = self.malformed_lines - self.unterminated_tail
        if skipped:
            plural = "s" if skipped > 1 else ""
            of = "" if cut is not None else f" of {self.lines:,}"
            parts.append(
                f"{skipped:,} malformed line{plural} skipped{of} (the first is line "
                f"{self.first_malformed_line:,}; each must be {LINE_FORMAT!r})"
            )
        if not parts:
            return None
        return RecordingProblem(
            name, False, cut is not None, skipped, f"{name}: {'; '.join(parts)}"
        )

    def _why_no_frame(self) -> str:
        if self.stream_error is not None:
            where = f" at byte {self.stream_error_at:,}" if self.stream_error_at else ""
            return f"{self.stream_error}{where}"
        if not self.bytes_read:
            return "the file is empty"
        if self.stream_truncated and not self.lines:
            return f"the gzip data stops at byte {self.bytes_read:,}, before the end of a line"
        if not self.lines:
            return "it holds no lines"
        if self.lines == self.metadata_lines:
            return "it holds its contracts and no frame"
        return f"none of its {self.lines:,} lines is {LINE_FORMAT!r}"

    def _cut_short(self) -> str | None:
        after = f"after {self.frames:,} frame{'s' if self.frames > 1 else ''}"
        kept = "the frames before it were read"
        if self.stream_error is not None:
            return f"{self.stream_error} at byte {self.stream_error_at:,} {after}; {kept}"
        if self.stream_truncated:
            return (
                f"truncated at byte {self.bytes_read:,} {after} (the gzip data stops "
                f"mid-stream: a copy cut short, or a recorder that stopped mid-write); {kept}"
            )
        if self.unterminated_tail:
            return (
                f"truncated at byte {self.bytes_read:,} {after} (the last line has no end: a "
                f"recorder that stopped mid-write); {kept}"
            )
        return None


def is_gzip_path(path: str | os.PathLike[str]) -> bool:
    return os.fspath(path).endswith(GZIP_SUFFIX)


def encode_line(recv_ns: int, raw: bytes) -> bytes:
    """One recording line; `raw` must not contain a newline byte."""
    return b"%d %b\n" % (recv_ns, raw)


def contracts_line(recv_ns: int, instruments: Iterable[Instrument]) -> bytes:
    """The recording line that stores `instruments`' contracts."""
    data = [
        {
            "symbol": instrument.symbol,
            "tick": _decimal_text(instrument.tick_size),
            "lot": _decimal_text(instrument.size_step),
            "min_notional": _decimal_text(instrument.min_notional),
            "maker_fee_rate": _optional_decimal_text(instrument.maker_fee_rate),
            "taker_fee_rate": _optional_decimal_text(instrument.taker_fee_rate),
        }
        for instrument in instruments
    ]
    return encode_line(recv_ns, orjson.dumps({"hft": CONTRACTS_KIND, "data": data}))


def contracts_text(instruments: Iterable[Instrument]) -> str:
    """Contracts as a person reads them: `NEXOUSDT tick 0.001 lot 0.1 min 5 USDT; ...`."""
    return "; ".join(
        f"{instrument.symbol} tick {_decimal_text(instrument.tick_size)} lot "
        f"{_decimal_text(instrument.size_step)} min {_decimal_text(instrument.min_notional)} USDT"
        for instrument in instruments
    )


def recording_instruments(path: str | os.PathLike[str]) -> dict[str, Instrument]:
    """The contracts `path` starts with, by symbol: those of its contracts lines before its
    first frame (a later line for a symbol replaces an earlier one); empty for a recording
    without one. Raises `RecordingContractsError` for a contracts line that does not read, or
    a price within its first `CHECK_LINES` lines that is not on its symbol's stored tick."""
    name = os.fspath(path)
    stats = RecordingReadStats()
    header: list[tuple[int, bytes]] = []
    frames = _frames(existing_recording(path), stats, CHECK_LINES, header)
    first = next(frames, None)
    instruments = _header_instruments(name, header)
    if first is None or not instruments:
        return instruments
    for _, raw in itertools.chain((first,), frames):  # stats.lines: this frame's line
        if stats.lines > CHECK_LINES:
            break
        _require_on_tick(name, stats.lines, raw, instruments, _STORED_TICK)
    return instruments


def require_prices_on_ticks(
    path: str | os.PathLike[str], instruments: Mapping[str, Instrument], source: str
) -> None:
    """Raises `RecordingContractsError` when a price within the first `CHECK_LINES` lines of
    `path` is off its symbol's tick in `instruments`; `source` says whose tick it is, with
    `{symbol}` and `{tick}` in it ("[engine.instruments.{symbol}] tick_size {tick}")."""
    name = os.fspath(path)
    stats = RecordingReadStats()
    for _, raw in _frames(existing_recording(path), stats, CHECK_LINES):
        _require_on_tick(name, stats.lines, raw, instruments, source)


def iter_recording(
    path: str | os.PathLike[str], stats: RecordingReadStats | None = None
) -> Iterator[tuple[int, bytes]]:
    """(recv_ns, raw frame) pairs of a recording, in file order; its own lines (contracts)
    are passed over.

    Raises FileNotFoundError (IsADirectoryError for a folder) right away when `path` is not a
    file; pass `stats` to learn what was skipped.
    """
    return _frames(existing_recording(path), stats if stats is not None else RecordingReadStats())


def check_recording(path: str | os.PathLike[str], max_lines: int = CHECK_LINES) -> None:
    """Before a run: raises FileNotFoundError (IsADirectoryError for a folder), or
    RecordingUnreadable when the recording yields no frame within its first `max_lines` lines
    (not gzip, empty, corrupt, not recording lines) or is a raw capture to import first, and
    RecordingContractsError for a contracts line before its first frame that does not read.
    Reads only that far, so truncation further on is found by the run."""
    stats = RecordingReadStats()
    header: list[tuple[int, bytes]] = []
    first = next(_frames(existing_recording(path), stats, max_lines, header), None)
    _header_instruments(os.fspath(path), header)
    if first is not None:
        if _is_raw_capture_line(first[1]):
            name = os.fspath(path)
            raise RecordingUnreadable(
                f"{name}: looks like a Binance raw capture, not a recording: import it first "
                f"(hft-console import --from binance-raw {name} --out REC)"
            )
        return
    if not stats.complete:  # stopped looking: the lines are junk as far as it read
        name = os.fspath(path)
        raise RecordingUnreadable(
            f"{name}: unreadable recording: none of its first {stats.lines:,} lines is "
            f"{LINE_FORMAT!r}"
        )
    problem = stats.problem(path)
    assert problem is not None  # complete without a frame is unreadable
    problem.raise_if_unreadable()


def existing_recording(path: str | os.PathLike[str]) -> Path:
    """`path`, a file; raises IsADirectoryError for a folder, FileNotFoundError for nothing."""
    recording = Path(path)
    if recording.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a folder, not a recording", str(recording))
    if not recording.is_file():
        raise FileNotFoundError(errno.ENOENT, "recording not found", str(recording))
    return recording


def require_distinct_recordings(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """The `content_digest` of each recording of `paths`, in order; raises ValueError naming
    the first whose bytes another one given before it already holds (the same file twice, a
    copy), or what `existing_recording` raises for one that is not a file."""
    seen: dict[str, str | os.PathLike[str]] = {}
    digests = []
    for path in paths:
        digest = content_digest(existing_recording(path))
        if digest in seen:
            first = seen[digest]
            same = "is given twice" if os.path.samefile(first, path) else f"is a copy of {first}"
            raise ValueError(f"{path} {same}: give each recording once")
        seen[digest] = path
        digests.append(digest)
    return digests


def _is_raw_capture_line(raw: bytes) -> bool:
    """A line of hftbacktest's collector (`hft-console import` reads those): a Binance stream
    message, or the REST depth snapshot a capture starts with."""
    try:
        message = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False
    return isinstance(message, dict) and (
        ("stream" in message and "data" in message) or "lastUpdateId" in message
    )


def _frames(
    path: Path,
    stats: RecordingReadStats,
    max_lines: int | None = None,
    metadata: list[tuple[int, bytes]] | None = None,
) -> Iterator[tuple[int, bytes]]:
    """The frames of `path`; the recording's own lines are counted, and added to `metadata`
    (with their line numbers) when it is given."""
    with path.open("rb") as file:
        magic = file.peek(len(GZIP_MAGIC))[: len(GZIP_MAGIC)]
        if magic == GZIP_MAGIC:
            chunks = _gzip_chunks(file, stats)
        elif magic and is_gzip_path(path):
            stats.stream_error = f"not gzip data, though its name ends in {GZIP_SUFFIX}"
            stats.complete = True
            return
        else:
            chunks = _plain_chunks(file, stats)
        partial = b""
        for chunk in chunks:
            lines = (partial + chunk if partial else chunk).split(LINE_END)
            partial = lines.pop()
            for line in lines:
                stats.lines += 1
                recv_text, separator, raw = line.partition(FIELD_SEPARATOR)
                if separator and recv_text.isdigit():
                    if raw.startswith(METADATA_PREFIX):
                        stats.metadata_lines += 1
                        if metadata is not None:
                            metadata.append((stats.lines, raw))
                        continue
                    stats.frames += 1
                    yield int(recv_text), raw
                else:
                    _skipped(stats)
                    if max_lines is not None and stats.lines >= max_lines:
                        return  # not complete: the caller stopped looking
        if partial:
            stats.lines += 1
            _skipped(stats)
            stats.unterminated_tail = True
        stats.complete = True


def _header_instruments(name: str, lines: list[tuple[int, bytes]]) -> dict[str, Instrument]:
    """The contracts of the recording's own `lines` (numbered), the last per symbol; other
    kinds of line are passed over."""
    instruments: dict[str, Instrument] = {}
    for number, raw in lines:
        where = f"{name}: line {number:,}: contracts line"
        try:
            document = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise RecordingContractsError(f"{where}: not JSON") from None
        if not isinstance(document, dict) or document.get("hft") != CONTRACTS_KIND:
            continue
        entries = document.get("data")
        if not isinstance(entries, list):
            raise RecordingContractsError(f"{where}: its data is not a list")
        for index, entry in enumerate(entries):
            instrument = _stored_instrument(entry, f"{where}: entry {index}")
            instruments[instrument.symbol] = instrument
    return instruments


def _stored_instrument(entry: object, where: str) -> Instrument:
    if not isinstance(entry, dict):
        raise RecordingContractsError(f"{where}: not an object")
    missing = [key for key in _CONTRACT_FIELDS if key not in entry]
    if missing:
        raise RecordingContractsError(f"{where}: lacks {', '.join(missing)}")
    symbol = entry["symbol"]
    if not isinstance(symbol, str):
        raise RecordingContractsError(f"{where}: symbol is not text")
    values: list[float | None] = []
    for key in _CONTRACT_FIELDS[1:]:
        value = entry[key]
        optional = key.endswith("fee_rate")
        if value is None and optional:
            values.append(None)
            continue
        number = _decimal_or_nan(value)
        if not number.is_finite():
            kind = "decimal text or null" if optional else "decimal text"
            raise RecordingContractsError(
                f"{where}: {symbol} {key}: expected {kind}, got {value!r}"
            )
        values.append(float(number))
    tick, lot, min_notional, maker, taker = values
    assert tick is not None and lot is not None and min_notional is not None
    try:
        return Instrument(symbol, tick, lot, min_notional, maker, taker)
    except ValueError as error:
        raise RecordingContractsError(f"{where}: {symbol}: {error}") from None


def _decimal_or_nan(value: object) -> Decimal:
    if not isinstance(value, str):
        return Decimal("NaN")
    try:
        return Decimal(value)
    except InvalidOperation:
        return Decimal("NaN")


def _decimal_text(value: float) -> str:
    """`value` as the decimal it stands for, without an exponent (1e-05: 0.00001, 5.0: 5)."""
    return format(Decimal(repr(value)).normalize(), "f")


def _optional_decimal_text(value: float | None) -> str | None:
    return None if value is None else _decimal_text(value)


_STORED_TICK = "the recording's stored tick {tick} (its contracts line does not fit its frames)"


def _require_on_tick(
    name: str, line: int, raw: bytes, instruments: Mapping[str, Instrument], source: str
) -> None:
    """Raises `RecordingContractsError` when a book or trade frame of a symbol in `instruments`
    has a price off its tick (`source`, see `require_prices_on_ticks`); passes over what it
    cannot read (the readers count it)."""
    try:
        frame = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return
    if not isinstance(frame, dict) or not isinstance(frame.get("arg"), dict):
        return
    instrument = instruments.get(frame["arg"].get("instId"))
    entries = frame.get("data")
    if instrument is None or not isinstance(entries, list):
        return
    for price in _frame_prices(entries):
        if not instrument.is_on_tick(price):
            raise RecordingContractsError(
                f"{name}: line {line:,}: {instrument.symbol} price {price!r} is not on "
                + source.format(symbol=instrument.symbol, tick=_decimal_text(instrument.tick_size))
            )


def _frame_prices(entries: list[object]) -> Iterator[float]:
    """The prices of a book frame's levels and a trade frame's trades that read as numbers."""
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        texts = [entry.get("price")]
        for side in ("bids", "asks"):
            levels = entry.get(side)
            if isinstance(levels, list):
                texts.extend(level[0] for level in levels if isinstance(level, list) and level)
        for text in texts:
            try:
                price = float(text)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                continue
            if math.isfinite(price) and price > 0:
                yield price


def _skipped(stats: RecordingReadStats) -> None:
    stats.malformed_lines += 1
    if not stats.first_malformed_line:
        stats.first_malformed_line = stats.lines


def _plain_chunks(file: BinaryIO, stats: RecordingReadStats) -> Iterator[bytes]:
    while chunk := file.read(_READ_CHUNK_BYTES):
        stats.bytes_read += len(chunk)
        yield chunk


def _gzip_chunks(file: BinaryIO, stats: RecordingReadStats) -> Iterator[bytes]:
    """Decompressed data of every gzip member; a stream cut short yields what it holds, and
    corrupt data what decodes before its first bad byte."""
    decompressor = zlib.decompressobj(_GZIP_WBITS)
    in_member = False
    offset = 0  # the file offset of `compressed`'s first byte
    while compressed := file.read(_READ_CHUNK_BYTES):
        stats.bytes_read += len(compressed)
        while compressed:
            before = decompressor.copy()  # a failed decompress leaves nothing to resume from
            try:
                data = decompressor.decompress(compressed)
            except zlib.error as error:
                decoded, bad_at = _decodable_prefix(before, compressed)
                if decoded:
                    yield decoded
                detail = str(error).partition(": ")[2] or str(error)
                stats.stream_error = f"corrupt gzip data ({detail})"
                stats.stream_error_at = offset + bad_at
                return
            if data:
                yield data
            in_member = not decompressor.eof
            if in_member:
                offset += len(compressed)
                compressed = b""
            else:
                rest = decompressor.unused_data
                offset += len(compressed) - len(rest)
                compressed = rest
                decompressor = zlib.decompressobj(_GZIP_WBITS)
    stats.stream_truncated = in_member


def _decodable_prefix(decompressor: zlib._Decompress, data: bytes) -> tuple[bytes, int]:
    """What `data` decodes to before its first byte zlib refuses, and that byte's index
    (a bisection on copies of the decompressor as it was before `data`)."""
    good, bad = 0, len(data)  # data[:good] decodes, data[:bad] raises
    while bad - good > 1:
        middle = (good + bad) // 2
        try:
            decompressor.copy().decompress(data[:middle])
        except zlib.error:
            bad = middle
        else:
            good = middle
    return decompressor.copy().decompress(data[:good]), good


SYMBOL_SCAN_LINES = 200_000
"""How far into a recording its symbols are looked for."""
_MARKET_CHANNELS = ("books", "trade")
_ARG_KEY = b'"arg"'


def recording_symbols(path: str | os.PathLike[str], max_lines: int = SYMBOL_SCAN_LINES):
    """The symbols a recording has books or trades for, by how many book frames each has
    (most first; a tie by first appearance), from its first `max_lines` frames."""
    books: Counter[str] = Counter()
    for index, (_, raw) in enumerate(iter_recording(path)):
        if index >= max_lines:
            break
        if b'"instId"' not in raw or b'"data"' not in raw:
            continue
        arg = _frame_arg(raw)
        if not isinstance(arg, dict):
            continue
        symbol, channel = arg.get("instId"), str(arg.get("channel", ""))
        if isinstance(symbol, str) and symbol and channel.startswith(_MARKET_CHANNELS):
            books[symbol] += channel.startswith("books")
    return tuple(symbol for symbol, _ in books.most_common())


def require_recording_symbols(
    path: str | os.PathLike[str],
    symbols: Sequence[str] | None,
    *,
    hedge: str | None = None,
    leader: str | None = None,
) -> tuple[str, ...]:
    """The symbols a replay of `path` runs on: `symbols`, a book's market symbols (its quoted
    ones, then `hedge` or `leader`), or the recording's two busiest (traded, then hedge).
    Before a run (backtest, `run --replay`): raises ValueError naming those the recording
    lacks, the hedge and the leader as such, and those it has."""
    found = recording_symbols(path)
    chosen = tuple(symbols) if symbols else found[:2]
    name = os.fspath(path)
    if not chosen:
        raise ValueError(f"{name}: no books or trades in its first frames")
    roles = {
        symbol: role for symbol, role in ((hedge, "the hedge"), (leader, "the leader")) if symbol
    }
    missing = [
        f"{symbol} ({roles[symbol]})" if symbol in roles else symbol
        for symbol in chosen
        if symbol not in found
    ]
    if missing:
        raise ValueError(f"{name} has no {', '.join(missing)}: it has {', '.join(found) or 'none'}")
    return chosen


def _frame_arg(raw: bytes) -> object:
    """A pushed frame's `arg`: sliced out and parsed alone when it is the flat object Bitget
    sends (a books frame is mostly its levels: half the time of parsing it whole), else from
    the whole frame; None when the frame is not JSON or has no `data` (a frame cut short, the
    usual damage, is caught by its end)."""
    if not raw.rstrip().endswith(b"}"):
        return None
    start = raw.find(_ARG_KEY)
    opening = raw.find(b"{", start)
    closing = raw.find(b"}", opening)
    if 0 <= start < opening < closing and raw[start + len(_ARG_KEY) : opening].strip() == b":":
        try:
            return orjson.loads(raw[opening : closing + 1])
        except orjson.JSONDecodeError:
            pass  # not flat after all (a brace inside a string)
    try:
        frame = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return frame.get("arg") if isinstance(frame, dict) and "data" in frame else None
