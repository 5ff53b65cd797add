"""One engine per journal and per exchange account.

Two engines on one journal or one account are two risk gateways that cannot see each other:
each counts only its own orders, and reports the other's as missing at the venue. So an engine
holds an exclusive `fcntl.flock` for its life on a lock file for each: beside the journal, and
for demo and live trading one per account (a hash of the API key) in the per-user data
directory. The file holds the holder's pid, which a refused start names.

The OS drops a flock when its process dies, so a lock file that still names a pid while nobody
holds the lock was left by an engine that died without stopping: the lock is taken over, and
the engine says so (its orders may still rest at the venue).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from pathlib import Path
from typing import NamedTuple

from engine.user_files import user_data_dir

_ACCOUNT_LOCK_DIR = "accounts"


class EngineLocked(Exception):
    """Another running process holds the lock: this engine must not start."""


class LockTakenOver(NamedTuple):
    """A lock left by an engine that died was taken over (an event for the operator)."""

    text: str
    at_ns: int


def journal_lock_path(journal_path: Path) -> Path:
    """The journal's lock file, beside it."""
    return journal_path.with_name(journal_path.name + ".lock")


def account_lock_path(api_key: str) -> Path:
    """The account's lock file, named by a hash of its API key (never the key itself)."""
    digest = hashlib.sha256(api_key.encode()).hexdigest()[:32]
    return user_data_dir() / _ACCOUNT_LOCK_DIR / f"{digest}.lock"


class InstanceLock:
    """An exclusive lock on `path`, held from `acquire` to `release` (or the process's end).
    `what` names the guarded thing in messages, e.g. "the journal /x/journal.sqlite"."""

    def __init__(self, path: Path, what: str) -> None:
        self.path = path
        self.what = what
        self._descriptor: int | None = None

    def acquire(self) -> str | None:
        """Take the lock; raises `EngineLocked` naming the holder's pid when another process
        holds it. Returns what to tell the operator when a dead engine's lock was taken over
        (None: the lock was free and clean)."""
        if self._descriptor is not None:
            raise RuntimeError(f"the lock on {self.what} is already held")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as error:
            raise OSError(
                f"{self.what}: its lock file cannot be created or opened: {self.path} "
                f"({error.strerror or error})"
            ) from None
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _pid_in(descriptor)
            os.close(descriptor)
            by = f"pid {holder}" if holder is not None else "a process that is still starting"
            raise EngineLocked(
                f"{self.what} is in use by another engine ({by}; lock {self.path}): "
                "stop that one first"
            ) from None
        except BaseException:
            os.close(descriptor)
            raise
        previous = _pid_in(descriptor)
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
        self._descriptor = descriptor
        if previous is None:
            return None
        return (
            f"took over the lock on {self.what} left by pid {previous}, which ended without "
            "stopping: check the venue for its orders"
        )

    def release(self) -> None:
        """Empty the lock file (a clean end leaves no pid behind) and unlock. Safe to call
        more than once."""
        descriptor = self._descriptor
        if descriptor is None:
            return
        self._descriptor = None
        with contextlib.suppress(OSError):  # unlocked and closed below all the same
            os.ftruncate(descriptor, 0)
        os.close(descriptor)  # closing drops the flock


def _pid_in(descriptor: int) -> int | None:
    """The pid a lock file holds (None: empty or not a pid)."""
    text = os.pread(descriptor, 32, 0).decode("ascii", "replace").strip()
    return int(text) if text.isdigit() and int(text) > 0 else None
