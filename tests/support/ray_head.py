"""A real Ray head on this machine's loopback, started as a user starts one (`ray start --head`),
for the tests and scripts/ray-bench."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

OBJECT_STORE_BYTES = 200 * 2**20
"""Ray's shared memory is kept small: the runs pass only metrics and the odd recording."""


@contextlib.contextmanager
def local_ray_head(cpus: int, env: Mapping[str, str]) -> Iterator[str]:
    """A head on 127.0.0.1 with `cpus` CPUs, its workers started with `env`: its address.
    Stopped at the end with its process group, which holds everything it started."""
    # Ray's socket paths must stay short (108 bytes): a folder of its own directly in /tmp.
    folder = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    command = [
        str(Path(sys.executable).parent / "ray"),
        *("start", "--head", "--block", "--port", "0", "--num-cpus", str(cpus)),
        *("--object-store-memory", str(OBJECT_STORE_BYTES), "--node-ip-address", "127.0.0.1"),
        *("--include-dashboard", "false", "--disable-usage-stats", "--temp-dir", str(folder)),
    ]
    with (folder / "head.log").open("w") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=dict(env), start_new_session=True
        )
    try:
        address_file = folder / "ray_current_cluster"
        deadline = time.monotonic() + 120
        while not address_file.is_file() or not address_file.read_text().strip():
            if process.poll() is not None:
                raise RuntimeError(f"ray start failed: {(folder / 'head.log').read_text()}")
            if time.monotonic() > deadline:
                raise RuntimeError("the Ray head did not start in 120 s")
            time.sleep(0.2)
        # The file names the machine's address; the head listens on every interface, and the
        # runs' own traffic stays on the loopback the node was started on.
        port = address_file.read_text().strip().rpartition(":")[2]
        yield f"127.0.0.1:{port}"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(30)
        with contextlib.suppress(ProcessLookupError):  # what outlived the head's own stop
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        shutil.rmtree(folder, ignore_errors=True)
