"""The recording format: one `<receive time ns> <raw frame>` line per websocket frame.

Data that starts with gzip's magic bytes is read as gzip streams (possibly several members,
possibly cut short by a crash), whatever the file is called; a file whose name ends in `.gz`
must be gzip. Anything else is plain bytes. The reader never raises for bad content: it skips
and counts malformed lines and stops at corrupt compressed data, recording both in
`RecordingReadStats`, whose `problem()` is the one judgement every command gives of what it
read (`check_recording` judges a recording's start before a run).
"""

from __future__ import annotations

import errno
import os
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import orjson

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


class RecordingUnreadable(ValueError):
    """A recording holds no frame that can be read; the message is the one-line reason."""


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


def iter_recording(
    path: str | os.PathLike[str], stats: RecordingReadStats | None = None
) -> Iterator[tuple[int, bytes]]:
    """(recv_ns, raw frame) pairs of a recording, in file order.

    Raises FileNotFoundError (IsADirectoryError for a folder) right away when `path` is not a
    file; pass `stats` to learn what was skipped.
    """
    return _frames(existing_recording(path), stats if stats is not None else RecordingReadStats())


def check_recording(path: str | os.PathLike[str], max_lines: int = CHECK_LINES) -> None:
    """Before a run: raises FileNotFoundError (IsADirectoryError for a folder), or
    RecordingUnreadable when the recording yields no frame within its first `max_lines` lines
    (not gzip, empty, corrupt, not recording lines) or is a raw capture to import first. Reads
    only that far, so truncation further on is found by the run."""
    stats = RecordingReadStats()
    first = next(_frames(existing_recording(path), stats, max_lines), None)
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
    path: Path, stats: RecordingReadStats, max_lines: int | None = None
) -> Iterator[tuple[int, bytes]]:
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
    path: str | os.PathLike[str], symbols: tuple[str, ...] | None
) -> tuple[str, ...]:
    """The symbols a replay of `path` runs on: `symbols` (the traded one, then the hedge), or
    the recording's two busiest. Before a run (backtest, `run --replay`): raises ValueError
    naming those the recording lacks, the hedge as such, and those it has."""
    found = recording_symbols(path)
    chosen = symbols or found[:2]
    name = os.fspath(path)
    if not chosen:
        raise ValueError(f"{name}: no books or trades in its first frames")
    missing = [
        f"{symbol} (the hedge)" if index == 1 else symbol
        for index, symbol in enumerate(chosen)
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
