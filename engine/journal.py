"""Append-only event journal: SQLite in WAL mode, written by a background thread.

Hot-path contract:
- `append` serialises the payload (a snapshot: later mutation of the dict does not matter) and
  puts it on a bounded queue: no I/O, no lock held during I/O, O(1) in the journal's size.
- The queue never drops. When it is full, `append` raises `JournalBackpressure` at once (and
  counts it): the caller decides to retry, shed its own work, or halt. Silently blocking the
  event loop, or silently losing an order record, are both worse.
- `append_durable` (and `append_durable_async`) return only once the entry is committed with
  `synchronous=FULL`, i.e. fsynced to the WAL. Journal an order this way before sending it, so an
  order is never sent unjournaled; a kill -9 after it returns loses nothing.
- The writer commits whatever is queued as one transaction, so durable appends made while the
  disk is busy share one fsync.

A failed write (disk full, `max_bytes` reached, unwritable location, I/O error, the file removed
or replaced while open) puts the journal in a permanent fault: `fault` is set, `on_fault` is
called once from the writer thread, pending durable appends raise `JournalFault`, and so does
every later call. The engine turns that into HALTED: trading stops with a clear fault rather
than running unjournaled.

Secrets: `register_secret` values are replaced by `<redacted>` wherever they occur in a payload
(keys, values, substrings) before anything is written to disk. Register them before `start`.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import math
import queue
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import NamedTuple
from urllib.parse import quote

import orjson

from engine.clock import EngineClock, WallClock
from engine.user_files import user_data_dir

REDACTED = "<redacted>"
_STOP_TIMEOUT_S = 30.0
_TABLE_PAYLOAD_CHARS = 160
_NS_PER_S = 1_000_000_000
_MAX_AT_NS = 2**63 - 1
"""SQLite's largest integer (the year 2262 in epoch nanoseconds)."""
_JOURNAL_FILE_NAME = "journal.sqlite"


def default_journal_path() -> Path:
    """Where the engine keeps its journal unless told otherwise: `journal.sqlite` in the
    per-user data directory (`$XDG_DATA_HOME/hft-console` on Linux)."""
    return user_data_dir() / _JOURNAL_FILE_NAME


class EntryKind(enum.StrEnum):
    VERDICT_ACTION = "verdict_action"
    ORDER_INTENT = "order_intent"
    ORDER_APPROVED = "order_approved"
    ORDER_DENIED = "order_denied"
    ORDER_ACK = "order_ack"
    ORDER_REJECT = "order_reject"
    FILL = "fill"
    POSITION = "position"
    KEV_DECISION = "kev_decision"
    STATE_CHANGE = "state_change"
    OPERATOR_COMMAND = "operator_command"
    FAULT = "fault"
    LAYA_SCORECARD = "laya_scorecard"


class JournalError(Exception):
    """Base of the journal's errors."""


class JournalBackpressure(JournalError):
    """The entry was not accepted (queue full) or not committed in time; nothing was dropped
    that the caller was told had been accepted."""


_ROOM_POLL_S = 0.001
"""How often a blocking append looks again for room in a full queue."""
_GATHER_S = 0.5
"""How long a journal that is not durable lets entries gather before it commits them: each wake
of the writer takes the GIL from the engine's loop several times (a wait, a stat, the
statements), which cost a compiled backtest 5-8% at 20 wakes a second. A full batch, a flush,
a durable append or `stop` wakes it at once."""


class JournalFault(JournalError):
    """The journal cannot write; trading must halt. Permanent until a new journal starts."""


@dataclass(frozen=True, slots=True)
class JournalConfig:
    """Where the journal lives and how much it may buffer.

    `queue_capacity` bounds the entries waiting for the writer (memory); `max_bytes` caps the
    database size, reaching it is a fault like a full disk (None: only the disk limits it).
    """

    path: Path
    queue_capacity: int = 65_536
    batch_max: int = 4_096
    """Most entries committed in one transaction."""
    durable_timeout_s: float = 5.0
    """How long `append_durable` and `flush` wait for the commit before giving up."""
    durable: bool = True
    """False for backtests, where a crash loses nothing worth keeping: commits are not fsynced
    (`synchronous=OFF`) and `append_durable_async` only queues its entry, in order with the
    rest, instead of waiting for the commit (a wait per order was most of a backtest's time)."""
    max_bytes: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))
        if not self.path.name or self.path.name in (".", ".."):
            raise ValueError(f"path must name a database file, got {str(self.path)!r}")
        if not 1 <= self.queue_capacity <= 10_000_000:
            raise ValueError(
                f"queue_capacity must be within 1..10000000, got {self.queue_capacity}"
            )
        if not 1 <= self.batch_max <= 1_000_000:
            raise ValueError(f"batch_max must be within 1..1000000, got {self.batch_max}")
        if not (math.isfinite(self.durable_timeout_s) and self.durable_timeout_s > 0):
            raise ValueError(f"durable_timeout_s must be > 0, got {self.durable_timeout_s!r}")
        if self.max_bytes is not None and self.max_bytes < 16_384:
            raise ValueError(f"max_bytes must be None or >= 16384, got {self.max_bytes}")


@dataclass(frozen=True, slots=True)
class JournalEntry:
    seq: int
    """Commit order; gap-free within one journal file."""
    at_ns: int
    """Epoch nanoseconds given by the caller (the engine's clock)."""
    kind: str
    payload: dict[str, object]


@dataclass(frozen=True, slots=True)
class JournalStats:
    appended: int
    committed: int
    commits: int
    backpressure: int
    """Appends refused because the queue was full (or a durable commit was too slow)."""
    queued: int
    durable_appends: int
    durable_mean_ms: float
    durable_max_ms: float
    last_commit_ms: float
    fault: str | None


class _Ticket:
    """Completion of one durable append or flush, signalled by the writer thread."""

    __slots__ = ("_done", "error", "seq")

    def __init__(self) -> None:
        self._done = threading.Event()
        self.seq: int | None = None
        self.error: JournalFault | None = None

    def resolve(self, seq: int | None, error: JournalFault | None) -> None:
        self.seq, self.error = seq, error
        self._done.set()

    def wait(self, timeout_s: float) -> bool:
        return self._done.wait(timeout_s)


class _AsyncTicket(_Ticket):
    """A ticket that also wakes an asyncio future on the loop that waits for it."""

    __slots__ = ("_future", "_loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._loop = loop
        self._future: asyncio.Future[None] = loop.create_future()

    def resolve(self, seq: int | None, error: JournalFault | None) -> None:
        super().resolve(seq, error)
        # The loop may be gone if its owner shut down while the commit was in flight.
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(_set_done, self._future)

    async def wait_async(self, timeout_s: float, clock: EngineClock) -> bool:
        # The clock's real_wait: in a replay market time stands still while the disk answers.
        try:
            await clock.real_wait(asyncio.shield(self._future), timeout_s)
        except TimeoutError:
            return False
        return True


def _set_done(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class _Record(NamedTuple):
    kind: str
    at_ns: int
    payload: bytes
    ticket: _Ticket | None


@dataclass(frozen=True, slots=True)
class _Barrier:
    ticket: _Ticket


_STOP = object()

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS entries ("
    " seq INTEGER PRIMARY KEY,"
    " at_ns INTEGER NOT NULL,"
    " kind TEXT NOT NULL,"
    " payload BLOB NOT NULL)",
    "CREATE INDEX IF NOT EXISTS entries_at_ns ON entries (at_ns)",
    "CREATE INDEX IF NOT EXISTS entries_kind ON entries (kind, seq)",
)
_INSERT_MAX_ROWS = 64
_INSERTS = {
    rows: "INSERT INTO entries (at_ns, kind, payload) VALUES " + ", ".join(["(?, ?, ?)"] * rows)
    for rows in (1 << power for power in range(_INSERT_MAX_ROWS.bit_length()))
}
"""Multi-row inserts of 1, 2, 4 ... 64 rows: sqlite3 lets go of the GIL at every statement
step, and each time the writer wants it back it may wait out the engine loop's switch interval
and then interrupt the loop; one step for up to 64 rows instead of one a row."""


class Journal:
    """The engine's event journal; `start` before use, `stop` to flush and close."""

    def __init__(
        self,
        config: JournalConfig,
        on_fault: Callable[[JournalFault], None] | None = None,
        clock: EngineClock | None = None,
    ) -> None:
        self.config = config
        self._on_fault = on_fault
        self._clock = clock if clock is not None else WallClock()
        # SimpleQueue (C, no locks of its own to take) with the bound kept here: a plain
        # append is on the order path, and queue.Queue's put took ~1.5 us of it.
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        # Not `_thread`: compiled (backtest --compiled), its C field would be `__thread`, a
        # C keyword.
        self._writer: threading.Thread | None = None
        self._wake_writer = threading.Event()
        """Ends the writer's gathering wait (a journal that is not durable)."""
        self._gather_max = min(config.batch_max, max(1, config.queue_capacity // 2))
        """Entries waiting that end the gathering: a batch, or half the queue's room."""
        self._fault: JournalFault | None = None
        self._secret_needles: tuple[tuple[str, bytes], ...] = ()
        self._counter_lock = threading.Lock()
        self._appended = 0
        self._backpressure = 0
        self._durable_appends = 0
        self._durable_total_s = 0.0
        self._durable_max_s = 0.0
        self._committed = 0
        self._commits = 0
        self._last_commit_s = 0.0
        self._file_identity: tuple[int, int] | None = None
        """(device, inode) of the database file the writer opened."""

    def __repr__(self) -> str:
        return f"Journal(path={str(self.config.path)!r}, fault={self._fault is not None})"

    # Lifecycle

    def start(self) -> None:
        """Open the database and start the writer; raises `JournalFault` if it cannot write."""
        if self._writer is not None:
            raise RuntimeError("Journal is already started")
        if self._fault is not None:
            raise self._fault
        ready = threading.Event()
        self._writer = threading.Thread(
            target=self._run_writer, args=(ready,), name="journal-writer", daemon=True
        )
        self._writer.start()
        ready.wait()
        if self._fault is not None:
            raise self._fault

    def stop(self) -> None:
        """Commit everything appended so far and close. Safe to call more than once."""
        thread = self._writer
        if thread is None:
            return
        if thread.is_alive():
            try:
                # Queued behind every entry appended before it, so they are committed first.
                self._put_waiting(_STOP, _STOP_TIMEOUT_S)
            except queue.Full:
                raise JournalBackpressure(
                    f"journal writer did not drain its queue within {_STOP_TIMEOUT_S:g} s; "
                    "entries not yet committed are lost if the process exits"
                ) from None
            thread.join(_STOP_TIMEOUT_S)
        self._writer = None

    # State

    @property
    def fault(self) -> JournalFault | None:
        """Set once a write failed; the engine must halt trading."""
        return self._fault

    def stats(self) -> JournalStats:
        with self._counter_lock:
            durable = self._durable_appends
            mean_ms = self._durable_total_s / durable * 1000 if durable else 0.0
            return JournalStats(
                appended=self._appended,
                committed=self._committed,
                commits=self._commits,
                backpressure=self._backpressure,
                queued=self._queue.qsize(),
                durable_appends=durable,
                durable_mean_ms=mean_ms,
                durable_max_ms=self._durable_max_s * 1000,
                last_commit_ms=self._last_commit_s * 1000,
                fault=str(self._fault) if self._fault is not None else None,
            )

    def register_secret(self, value: str) -> None:
        """Never write `value` to disk: it is replaced by `<redacted>` in every later commit."""
        if not isinstance(value, str) or not value:
            raise ValueError("a secret must be a non-empty string")
        # The needle is the secret as orjson writes it inside a JSON string, for a fast check.
        needle = orjson.dumps(value)[1:-1]
        self._secret_needles = (*self._secret_needles, (value, needle))

    # Appending

    def append(self, kind: EntryKind | str, payload: Mapping[str, object], at_ns: int) -> None:
        """Queue an entry for the writer; raises `JournalBackpressure` if the queue is full."""
        record = self._record(kind, payload, at_ns, None)
        self._queue_now(record)

    def append_durable(
        self, kind: EntryKind | str, payload: Mapping[str, object], at_ns: int
    ) -> int:
        """Append and block until committed and fsynced; returns the entry's seq."""
        started = time.perf_counter()
        ticket = _Ticket()
        record = self._record(kind, payload, at_ns, ticket)
        self._check_usable()
        deadline = started + self.config.durable_timeout_s
        try:
            self._put_waiting(record, self.config.durable_timeout_s)
        except queue.Full:
            raise self._refused() from None
        self._count_appended()
        committed = ticket.wait(max(0.0, deadline - time.perf_counter()))
        return self._durable_result(ticket, committed, started)

    async def append_durable_async(
        self, kind: EntryKind | str, payload: Mapping[str, object], at_ns: int
    ) -> int:
        """`append_durable` for the event loop: awaits the commit instead of blocking.

        Never blocks the loop: a full queue raises `JournalBackpressure` at once. A journal
        that is not `durable` returns once the entry is queued, with seq -1.
        """
        if not self.config.durable:
            self.append(kind, payload, at_ns)
            return -1
        started = time.perf_counter()
        ticket = _AsyncTicket(asyncio.get_running_loop())
        record = self._record(kind, payload, at_ns, ticket)
        self._queue_now(record)
        committed = await ticket.wait_async(self.config.durable_timeout_s, self._clock)
        return self._durable_result(ticket, committed, started)

    def _queue_now(self, record: _Record) -> None:
        """Queue without waiting; a full queue refuses with `JournalBackpressure`."""
        self._check_usable()
        queued = self._queue
        waiting = queued.qsize()
        if waiting >= self.config.queue_capacity:
            raise self._refused()
        queued.put(record)
        if waiting + 1 >= self._gather_max:  # enough waiting: no reason to gather longer
            self._wake_writer.set()
        self._count_appended()

    def _put_waiting(self, item: object, timeout_s: float) -> None:
        """Queue `item` once there is room, waiting at most `timeout_s`; raises queue.Full."""
        queued = self._queue
        deadline = time.perf_counter() + timeout_s
        while queued.qsize() >= self.config.queue_capacity:
            if time.perf_counter() >= deadline:
                raise queue.Full
            time.sleep(_ROOM_POLL_S)
        queued.put(item)
        if not self.config.durable:
            self._wake_writer.set()  # someone waits for this one: no gathering

    def flush(self) -> None:
        """Block until everything appended before this call is committed and fsynced."""
        self._check_usable()
        ticket = _Ticket()
        timeout_s = self.config.durable_timeout_s
        started = time.perf_counter()
        try:
            self._put_waiting(_Barrier(ticket), timeout_s)
        except queue.Full:
            raise self._refused() from None
        if not ticket.wait(max(0.0, started + timeout_s - time.perf_counter())):
            raise JournalBackpressure(f"journal flush not committed within {timeout_s:g} s")
        if ticket.error is not None:
            raise ticket.error

    # Reading

    def query(
        self,
        since_ns: int | None = None,
        kinds: Collection[EntryKind | str] | None = None,
        limit: int | None = None,
    ) -> list[JournalEntry]:
        """Committed entries; see `read_journal`."""
        return read_journal(self.config.path, since_ns=since_ns, kinds=kinds, limit=limit)

    # Caller side helpers

    def _record(
        self,
        kind: EntryKind | str,
        payload: Mapping[str, object],
        at_ns: int,
        ticket: _Ticket | None,
    ) -> _Record:
        if kind not in EntryKind._value2member_map_:
            raise ValueError(
                f"unknown journal kind {kind!r}; kinds: {[k.value for k in EntryKind]}"
            )
        if isinstance(at_ns, bool) or not isinstance(at_ns, int) or not 0 <= at_ns <= _MAX_AT_NS:
            raise ValueError(f"at_ns must be epoch nanoseconds (0..2**63-1), got {at_ns!r}")
        if type(payload) is not dict and not isinstance(payload, Mapping):  # ABC check: slow
            raise TypeError(f"payload must be a mapping, got {type(payload).__name__}")
        try:
            blob = orjson.dumps(payload, default=_json_default)
        except orjson.JSONEncodeError as error:
            # orjson names the offending type, never the value, so the text is safe to raise.
            raise TypeError(f"journal payload is not JSON-serialisable: {error}") from None
        return _Record(str(kind), at_ns, blob, ticket)

    def _check_usable(self) -> None:
        if self._fault is not None:
            raise self._fault
        if self._writer is None:
            raise RuntimeError("Journal is not started")

    def _refused(self) -> JournalBackpressure:
        with self._counter_lock:
            self._backpressure += 1
        return JournalBackpressure(
            f"journal queue full ({self.config.queue_capacity} entries waiting for the disk)"
        )

    def _count_appended(self) -> None:
        with self._counter_lock:
            self._appended += 1

    def _durable_result(self, ticket: _Ticket, committed: bool, started: float) -> int:
        if not committed:
            if self._fault is not None:
                raise self._fault
            with self._counter_lock:
                self._backpressure += 1
            raise JournalBackpressure(
                f"journal entry not committed within {self.config.durable_timeout_s:g} s; "
                "it may still be committed later"
            )
        if ticket.error is not None:
            raise ticket.error
        elapsed = time.perf_counter() - started
        with self._counter_lock:
            self._durable_appends += 1
            self._durable_total_s += elapsed
            self._durable_max_s = max(self._durable_max_s, elapsed)
        assert ticket.seq is not None  # set with every successful resolve of a record
        return ticket.seq

    # Writer thread

    def _run_writer(self, ready: threading.Event) -> None:
        try:
            connection = self._open()
        except (sqlite3.Error, OSError) as error:
            self._enter_fault(_fault_from(error, self.config.path))
            ready.set()
            self._fail_until_stopped()
            return
        ready.set()
        try:
            self._write_until_stopped(connection)
        finally:
            connection.close()

    def _open(self) -> sqlite3.Connection:
        config = self.config
        config.path.parent.mkdir(parents=True, exist_ok=True)
        # Autocommit mode: transactions are opened and committed explicitly per batch.
        connection = sqlite3.connect(config.path, isolation_level=None, check_same_thread=True)
        try:
            mode = connection.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise sqlite3.OperationalError(f"WAL mode refused (journal_mode is {mode})")
            connection.execute(f"PRAGMA synchronous={'FULL' if config.durable else 'OFF'}")
            if config.max_bytes is not None:
                page_size = connection.execute("PRAGMA page_size").fetchone()[0]
                connection.execute(f"PRAGMA max_page_count={config.max_bytes // page_size}")
            for statement in _SCHEMA:
                connection.execute(statement)
            self._file_identity = _file_identity(config.path)
        except BaseException:
            connection.close()
            raise
        return connection

    def _write_until_stopped(self, connection: sqlite3.Connection) -> None:
        while True:
            if not self.config.durable:
                # Nobody waits on a commit: gather a while first, so appends do not wake this
                # thread one by one. Cleared before the look at the queue, so a wake-up set
                # after the look is not lost.
                self._wake_writer.clear()
                if self._queue.qsize() < self._gather_max:
                    self._wake_writer.wait(_GATHER_S)
            batch = [self._queue.get()]
            while len(batch) < self.config.batch_max:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                self._commit(connection, batch)
            except Exception as error:  # any failure to write is a fault, never a dead thread
                fault = _fault_from(error, self.config.path)
                self._enter_fault(fault)
                _fail_tickets(batch, fault)
                if _STOP not in batch:
                    self._fail_until_stopped()
                return
            if _STOP in batch:
                return

    def _commit(self, connection: sqlite3.Connection, batch: list[object]) -> None:
        started = time.perf_counter()
        needles = self._secret_needles
        records = [item for item in batch if isinstance(item, _Record)]
        rows = [
            (r.at_ns, r.kind, _scrubbed(r.payload, needles) if needles else r.payload)
            for r in records
        ]
        # SQLite in WAL mode goes on writing through its open descriptors to a file that was
        # deleted or moved away: every entry would vanish with the process. Not a write, then.
        if _file_identity(self.config.path) != self._file_identity:
            raise _JournalFileGone("the journal file was removed or replaced while in use")
        connection.execute("BEGIN IMMEDIATE")
        try:
            _insert(connection, rows)
            last_seq = connection.execute("SELECT last_insert_rowid()").fetchone()[0]
            connection.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                connection.execute("ROLLBACK")
            raise
        with self._counter_lock:
            self._committed += len(rows)
            self._commits += 1
            self._last_commit_s = time.perf_counter() - started
        # One writer in one transaction, never deleting: the batch got consecutive seqs.
        first_seq = last_seq - len(records) + 1
        for offset, record in enumerate(records):
            if record.ticket is not None:
                record.ticket.resolve(first_seq + offset, None)
        for item in batch:
            if isinstance(item, _Barrier):
                item.ticket.resolve(None, None)

    def _enter_fault(self, fault: JournalFault) -> None:
        self._fault = fault
        if self._on_fault is not None:
            self._on_fault(fault)

    def _fail_until_stopped(self) -> None:
        """After a fault, answer every waiter with it until `stop` (nothing is written)."""
        fault = self._fault
        assert fault is not None
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            _fail_tickets([item], fault)


def _insert(connection: sqlite3.Connection, rows: list[tuple[int, str, bytes]]) -> None:
    """`rows` in as few statement steps as the cached inserts allow, in order."""
    start = 0
    while start < len(rows):
        left = len(rows) - start
        count = _INSERT_MAX_ROWS if left >= _INSERT_MAX_ROWS else 1 << (left.bit_length() - 1)
        chunk = rows[start : start + count]
        connection.execute(_INSERTS[count], [value for row in chunk for value in row])
        start += count


class _JournalFileGone(Exception):
    """The database file's path no longer names the file the writer has open. (Not an OSError:
    mypyc compiles no subclass of one.)"""


def _file_identity(path: Path) -> tuple[int, int] | None:
    try:
        status = path.stat()
    except OSError:
        return None
    return status.st_dev, status.st_ino


def _fail_tickets(batch: Iterable[object], fault: JournalFault) -> None:
    for item in batch:
        if isinstance(item, (_Record, _Barrier)) and item.ticket is not None:
            item.ticket.resolve(None, fault)


def _fault_from(error: BaseException, path: Path) -> JournalFault:
    text = str(error)
    lowered = text.lower()
    if isinstance(error, _JournalFileGone):
        reason = "journal file removed or replaced"
    elif "full" in lowered:
        reason = "disk full (or the journal's max_bytes reached)"
    elif "readonly" in lowered or "read-only" in lowered or isinstance(error, PermissionError):
        reason = "journal location is read-only"
    elif "unable to open" in lowered or isinstance(error, OSError):
        reason = "journal file cannot be created or opened"
    else:
        reason = "journal write failed"
    return JournalFault(f"{reason}: {path} ({type(error).__name__}: {text}); trading must halt")


def _json_default(value: object) -> object:
    if isinstance(value, Decimal):
        return str(value)
    raise TypeError(f"unsupported type {type(value).__name__}")


def _scrubbed(payload: bytes, needles: tuple[tuple[str, bytes], ...]) -> bytes:
    if not any(needle in payload for _, needle in needles):
        return payload
    secrets = [secret for secret, _ in needles]
    return orjson.dumps(_scrub_value(orjson.loads(payload), secrets))


def _scrub_value(value: object, secrets: list[str]) -> object:
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, dict):
        return {_scrub_value(k, secrets): _scrub_value(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_value(item, secrets) for item in value]
    return value


# Reading and presenting


def read_journal(
    path: Path | str,
    *,
    since_ns: int | None = None,
    kinds: Collection[EntryKind | str] | None = None,
    limit: int | None = None,
) -> list[JournalEntry]:
    """Committed entries of a journal file, oldest first (a running writer is no obstacle).

    `since_ns` keeps entries with `at_ns >= since_ns`; `kinds` keeps those kinds; `limit` keeps
    the most recent N of what matches. Opens the file read-only; raises `FileNotFoundError`
    when there is no journal there.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no journal at {path}")
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    clauses: list[str] = []
    parameters: list[object] = []
    if since_ns is not None:
        clauses.append("at_ns >= ?")
        parameters.append(since_ns)
    if kinds is not None:
        names = sorted({str(kind) for kind in kinds})
        clauses.append(f"kind IN ({','.join('?' * len(names))})" if names else "0")
        parameters.extend(names)
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    sql = f"SELECT seq, at_ns, kind, payload FROM entries{where} ORDER BY seq DESC"
    if limit is not None:
        sql += " LIMIT ?"
        parameters.append(limit)
    connection = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True)
    try:
        rows = connection.execute(sql, parameters).fetchall()
    finally:
        connection.close()
    rows.reverse()
    return [
        JournalEntry(seq, at_ns, kind, orjson.loads(payload)) for seq, at_ns, kind, payload in rows
    ]


def format_entries(entries: Iterable[JournalEntry], *, as_json: bool = False) -> str:
    """`hft-console journal` output: an aligned table, or JSON Lines with `as_json`."""
    if as_json:
        return "\n".join(
            orjson.dumps(
                {
                    "seq": entry.seq,
                    "at_ns": entry.at_ns,
                    "time": _utc_text(entry.at_ns),
                    "kind": entry.kind,
                    "payload": entry.payload,
                }
            ).decode()
            for entry in entries
        )
    rows = [
        (str(entry.seq), _utc_text(entry.at_ns), entry.kind, _clipped(entry.payload))
        for entry in entries
    ]
    header = ("SEQ", "TIME (UTC)", "KIND", "PAYLOAD")
    widths = [max([len(header[i])] + [len(row[i]) for row in rows]) for i in range(3)]
    lines = [
        "  ".join(
            [*(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True)), row[3]]
        ).rstrip()
        for row in [header, *rows]
    ]
    return "\n".join(lines)


_DURATION = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d)$")
_DURATION_NS = {"ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9, "d": 86_400e9}
DURATION_FORMS = "a number and a unit (500ms, 90s, 15m, 8h, 1d)"


def duration_ns(text: str) -> float | None:
    """A duration written as `DURATION_FORMS` says, in ns (inf for one too long to count);
    None for text that is not one."""
    match = _DURATION.match(text.strip())
    return float(match.group(1)) * _DURATION_NS[match.group(2)] if match else None


_SINCE_FORMS = "a duration (15m, 2h), an ISO time (2024-06-01T12:00:00Z) or epoch seconds/ms/ns"


def parse_since(text: str, now_ns: int | None = None) -> int:
    """`--since` as epoch ns: a duration ago (`90s`, `15m` or `-15m`, `2h`, `1d`), an ISO-8601 time
    (UTC unless it carries an offset), or epoch seconds, milliseconds or nanoseconds. Raises
    ValueError for anything else, and for a time before 1970 or beyond what the journal holds
    (2262)."""
    value = text.strip()
    now = time.time_ns() if now_ns is None else now_ns
    # A leading minus reads as "ago" too (-5m): the journal holds no future to mean otherwise.
    ago_ns = duration_ns(value.removeprefix("-"))
    if ago_ns is not None:
        since = now - round(ago_ns) if math.isfinite(ago_ns) else -1
    elif value.isascii() and value.isdigit():
        number = int(value)
        if number < 10**11:
            since = number * _NS_PER_S
        elif number < 10**14:
            since = number * 1_000_000
        else:
            since = number
    else:
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"cannot read --since {text!r}: use {_SINCE_FORMS}") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        since = round(moment.timestamp() * _NS_PER_S)
    if not 0 <= since <= _MAX_AT_NS:
        raise ValueError(
            f"--since {text!r} is outside the journal's times (1970 to 2262); use {_SINCE_FORMS}"
        )
    return since


def _utc_text(at_ns: int) -> str:
    seconds, nanos = divmod(at_ns, _NS_PER_S)
    moment = datetime.fromtimestamp(seconds, UTC)
    return f"{moment:%Y-%m-%d %H:%M:%S}.{nanos // 1000:06d}"


def _clipped(payload: Mapping[str, object]) -> str:
    text = orjson.dumps(payload).decode()
    if len(text) <= _TABLE_PAYLOAD_CHARS:
        return text
    return text[: _TABLE_PAYLOAD_CHARS - 1] + "…"
