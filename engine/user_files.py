"""Where a user's files live, and how one is replaced.

Every per-user folder (platformdirs': XDG on Linux) is named `hft-console`, so the settings,
credentials, journal, recordings, caches and logs are found in one place. A file the app rewrites
is written beside its final name and renamed over it: a reader, or a start after a crash, finds
the old file or the whole new one, never half of one.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import platformdirs

APP_DIR_NAME = "hft-console"


def user_config_dir() -> Path:
    return platformdirs.user_config_path(APP_DIR_NAME)


def user_data_dir() -> Path:
    return platformdirs.user_data_path(APP_DIR_NAME)


def user_cache_dir() -> Path:
    return platformdirs.user_cache_path(APP_DIR_NAME)


def user_log_dir() -> Path:
    return platformdirs.user_log_path(APP_DIR_NAME)


@contextlib.contextmanager
def replacing(target: Path, *, mode: int | None = None) -> Iterator[Path]:
    """A new, empty file beside `target` (in its folder, which must exist) to write to. When
    the block ends without an error it is given `mode`, if one is named, and renamed over
    `target`; after an error it is removed and `target` is as it was."""
    descriptor, name = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.name}.", suffix=".partial"
    )
    os.close(descriptor)
    scratch = Path(name)
    try:
        yield scratch
        if mode is not None:
            os.chmod(scratch, mode)
        os.replace(scratch, target)
    finally:
        scratch.unlink(missing_ok=True)
