"""Another process holding an engine's lock (engine/instance_lock.py), as a second engine
would: the lock's own code, run by a real child process until the block ends."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from support.cli import checkout_env

_HOLD = """
import sys
from pathlib import Path
from engine.instance_lock import InstanceLock
lock = InstanceLock(Path(sys.argv[1]), "the test's")
print(lock.acquire(), flush=True)
sys.stdin.read()  # held until the test closes this stdin
lock.release()
"""


@contextlib.contextmanager
def held_by_another_process(path: Path) -> Iterator[int]:
    """The lock on `path` held by a child process while the block runs (then released);
    yields its pid."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=checkout_env(),
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "None\n", "the child did not take the lock"
        yield holder.pid
    finally:
        holder.communicate("", timeout=30)
