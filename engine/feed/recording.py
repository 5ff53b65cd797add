"""The recording format: one `<receive time ns> <raw frame>` line per websocket frame.

Files whose name ends in `.gz` are gzip streams (possibly several members, possibly cut short
by a crash); anything else is plain bytes. The reader never raises for bad content: it skips
and counts malformed lines and stops at corrupt compressed data, reporting both in
`RecordingReadStats`.
"""

from __future__ import annotations

import errno
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

GZIP_SUFFIX = ".gz"
LINE_END = b"\n"
FIELD_SEPARATOR = b" "
_READ_CHUNK_BYTES = 1 << 18
_GZIP_WBITS = 16 + zlib.MAX_WBITS


@dataclass(slots=True)
class RecordingReadStats:
    """What a reader has seen so far; filled in while iterating."""

    lines: int = 0
    frames: int = 0
    malformed_lines: int = 0
    unterminated_tail: bool = False
    """The file ended inside a line (a crash mid-write); that partial line was skipped."""
    stream_error: str | None = None
    """Compressed data that could not be decoded; reading stopped there."""


def is_gzip_path(path: str | os.PathLike[str]) -> bool:
    return os.fspath(path).endswith(GZIP_SUFFIX)


def encode_line(recv_ns: int, raw: bytes) -> bytes:
    """One recording line; `raw` must not contain a newline byte."""
    return b"%d %b\n" % (recv_ns, raw)


def iter_recording(
    path: str | os.PathLike[str], stats: RecordingReadStats | None = None
) -> Iterator[tuple[int, bytes]]:
    """(recv_ns, raw frame) pairs of a recording, in file order.

    Raises FileNotFoundError right away when `path` is not a file; pass `stats` to learn
    what was skipped.
    """
    recording = Path(path)
    if not recording.is_file():
        raise FileNotFoundError(errno.ENOENT, "recording not found", str(recording))
    return _frames(recording, stats if stats is not None else RecordingReadStats())


def _frames(path: Path, stats: RecordingReadStats) -> Iterator[tuple[int, bytes]]:
    with path.open("rb") as file:
        chunks = _gzip_chunks(file, stats) if is_gzip_path(path) else _plain_chunks(file)
        partial = b""
        for chunk in chunks:
            lines = (partial + chunk if partial else chunk).split(LINE_END)
            partial = lines.pop()
            for line in lines:
                stats.lines += 1
                separator = line.find(FIELD_SEPARATOR)
                recv_text = line[:separator]
                if separator > 0 and recv_text.isdigit():
                    stats.frames += 1
                    yield int(recv_text), line[separator + 1 :]
                else:
                    stats.malformed_lines += 1
        if partial:
            stats.lines += 1
            stats.malformed_lines += 1
            stats.unterminated_tail = True


def _plain_chunks(file: BinaryIO) -> Iterator[bytes]:
    while chunk := file.read(_READ_CHUNK_BYTES):
        yield chunk


def _gzip_chunks(file: BinaryIO, stats: RecordingReadStats) -> Iterator[bytes]:
    """Decompressed data of every gzip member; a stream cut short yields what it holds."""
    decompressor = zlib.decompressobj(_GZIP_WBITS)
    while compressed := file.read(_READ_CHUNK_BYTES):
        while compressed:
            try:
                data = decompressor.decompress(compressed)
            except zlib.error as error:
                stats.stream_error = f"corrupt gzip data: {error}"
                return
            if data:
                yield data
            if decompressor.eof:
                compressed = decompressor.unused_data
                decompressor = zlib.decompressobj(_GZIP_WBITS)
            else:
                compressed = b""
