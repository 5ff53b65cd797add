"""Records raw websocket frames to disk without ever doing file I/O on the event loop.

`FrameRecorder.write` only appends to a bounded in-memory queue; a writer thread drains it,
writes complete lines and flushes every `flush_interval_s` (a gzip `Z_SYNC_FLUSH`), so a crash
loses at most that much and the file stays readable by `gzip -dc` while it grows. The
contracts of what is recorded are the file's first line.
"""

from __future__ import annotations

import gzip
import os
import threading
import time
import zlib
from collections import deque
from dataclasses import dataclass
from typing import BinaryIO

from engine.feed.recording import LINE_END, contracts_line, encode_line, is_gzip_path
from engine.market.instruments import Instrument

DEFAULT_MAX_PENDING_FRAMES = 100_000
"""About a minute of a busy multi-symbol feed; beyond it new frames are dropped and counted."""


@dataclass(frozen=True, slots=True)
class RecorderStats:
    """A snapshot of a recorder's counters.

    `frames` were accepted by `write`; `frames_written` and `bytes_written` (uncompressed line
    bytes) reached the file, whose size is `file_bytes`. Overflow policy: when the queue holds
    `max_pending_frames`, new frames are dropped (`dropped_overflow`); frames offered after
    `stop` or a fault are dropped as `dropped_inactive`.
    """

    path: str
    frames: int
    frames_written: int
    bytes_written: int
    file_bytes: int
    frames_per_s: float
    skipped_newline: int
    dropped_overflow: int
    dropped_inactive: int
    fault: str | None


class FrameRecorder:
    """Writes `<recv_ns> <raw frame>` lines to `path` (gzip when it ends in `.gz`), after a
    contracts line holding `instruments` (none when there are none).

    Refuses to replace an existing file unless `overwrite` is set. Every disk error becomes
    `fault` and stops recording; nothing here raises into the caller after construction.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        flush_interval_s: float = 1.0,
        *,
        max_pending_frames: int = DEFAULT_MAX_PENDING_FRAMES,
        compress_level: int = 6,
        overwrite: bool = False,
        instruments: tuple[Instrument, ...] = (),
    ) -> None:
        if not flush_interval_s > 0:
            raise ValueError(f"flush_interval_s must be > 0, got {flush_interval_s}")
        if max_pending_frames < 1:
            raise ValueError(f"max_pending_frames must be >= 1, got {max_pending_frames}")
        if not 0 <= compress_level <= 9:
            raise ValueError(f"compress_level must be in 0..9, got {compress_level}")
        self.path = os.fspath(path)
        self.flush_interval_s = flush_interval_s
        self._max_pending = max_pending_frames
        self._compress_level = compress_level
        self._overwrite = overwrite
        self._instruments = instruments
        self._header = b""
        # deque.append / popleft are atomic under the GIL: the event loop appends, the writer
        # thread pops, and no lock is taken on the hot path.
        self._pending: deque[tuple[int, bytes]] = deque()
        self._accepting = True
        self._stop_requested = threading.Event()
        self._writer: threading.Thread | None = None
        self._file: BinaryIO | None = None
        self._gzip: gzip.GzipFile | None = None
        self._fault: str | None = None
        self._frames = 0
        self._skipped_newline = 0
        self._dropped_overflow = 0
        self._dropped_inactive = 0
        self._frames_written = 0
        self._bytes_written = 0
        self._file_bytes = 0
        self._frames_per_s = 0.0

    @property
    def fault(self) -> str | None:
        """Why recording stopped on its own (a disk error), or None."""
        return self._fault

    @property
    def stats(self) -> RecorderStats:
        return RecorderStats(
            path=self.path,
            frames=self._frames,
            frames_written=self._frames_written,
            bytes_written=self._bytes_written,
            file_bytes=self._file_bytes,
            frames_per_s=self._frames_per_s,
            skipped_newline=self._skipped_newline,
            dropped_overflow=self._dropped_overflow,
            dropped_inactive=self._dropped_inactive,
            fault=self._fault,
        )

    def start(self) -> None:
        """Open the file and start the writer thread; a failure to open becomes `fault`."""
        if self._writer is not None or self._stop_requested.is_set():
            raise RuntimeError("a FrameRecorder can be started only once")
        try:
            self._file = open(self.path, "wb" if self._overwrite else "xb")  # noqa: SIM115
            if is_gzip_path(self.path):
                self._gzip = gzip.GzipFile(
                    fileobj=self._file, mode="wb", compresslevel=self._compress_level
                )
        except FileExistsError:
            self._fail(f"{self.path} already exists; refusing to overwrite a recording")
            return
        except OSError as error:
            self._fail(f"cannot open {self.path}: {error}")
            self._close_quietly()
            return
        if self._instruments:  # stamped like the frames, with the wall clock at receipt
            self._header = contracts_line(time.time_ns(), self._instruments)
        self._writer = threading.Thread(
            target=self._write_until_stopped, name=f"frame-recorder:{self.path}", daemon=True
        )
        self._writer.start()

    def write(self, recv_ns: int, raw: bytes) -> None:
        """Queue one frame; O(1), no I/O. Frames containing a newline cannot be stored."""
        if not self._accepting:
            self._dropped_inactive += 1
            return
        if LINE_END in raw:
            self._skipped_newline += 1
            return
        pending = self._pending
        if len(pending) >= self._max_pending:
            self._dropped_overflow += 1
            return
        pending.append((recv_ns, raw))
        self._frames += 1

    def stop(self) -> None:
        """Write and flush everything queued, then close the file. Blocks until done.

        From async code call it as `await asyncio.to_thread(recorder.stop)`.
        """
        self._accepting = False
        self._stop_requested.set()
        if self._writer is not None:
            self._writer.join()

    def _write_until_stopped(self) -> None:
        if self._header and not self._write(self._header):
            return
        last_flush = time.monotonic()
        written_at_last_flush = 0
        while not self._stop_requested.wait(self.flush_interval_s):
            if not self._drain():
                return
            now = time.monotonic()
            self._frames_per_s = (self._frames_written - written_at_last_flush) / (now - last_flush)
            last_flush, written_at_last_flush = now, self._frames_written
        if self._drain():
            self._close()

    def _drain(self) -> bool:
        """Write every queued frame and flush; False after a disk error (now `fault`)."""
        pending = self._pending
        lines = []
        try:
            while True:
                lines.append(encode_line(*pending.popleft()))
        except IndexError:
            pass
        if not lines:
            return True
        block = b"".join(lines)
        if not self._write(block):
            return False
        self._frames_written += len(lines)
        return True

    def _write(self, block: bytes) -> bool:
        """Write and flush `block`; False after a disk error (now `fault`)."""
        try:
            if self._gzip is not None:
                self._gzip.write(block)
                # A sync flush ends the deflate block on a byte boundary, so everything written
                # so far decompresses before the gzip trailer exists; it flushes the file too.
                self._gzip.flush(zlib.Z_SYNC_FLUSH)
            else:
                self._file.write(block)
                self._file.flush()
            self._file_bytes = self._file.tell()
        except (OSError, ValueError) as error:
            self._fail(f"write to {self.path} failed: {error}")
            self._close_quietly()
            return False
        self._bytes_written += len(block)
        return True

    def _close(self) -> None:
        try:
            if self._gzip is not None:
                self._gzip.close()  # writes the gzip trailer; leaves the file open
            self._file_bytes = self._file.tell()
            self._file.close()
        except (OSError, ValueError) as error:
            self._fail(f"closing {self.path} failed: {error}")
            self._close_quietly()

    def _close_quietly(self) -> None:
        """Release the file after a fault; the fault already says what went wrong."""
        for closable in (self._gzip, self._file):
            if closable is None:
                continue
            try:
                closable.close()
            except (OSError, ValueError):
                continue

    def _fail(self, reason: str) -> None:
        if self._fault is None:
            self._fault = reason
        self._accepting = False
        self._pending.clear()
        self._stop_requested.set()
