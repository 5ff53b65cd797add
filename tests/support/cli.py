"""The `hft-console` command line as a real subprocess, run from this checkout."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLI = (sys.executable, "-m", "console.cli")
"""The command that runs this checkout's command line (with `checkout_env`)."""


def with_sigint_default() -> None:
    """`preexec_fn` of a command a test interrupts with SIGINT: a shell that starts its jobs in
    the background (`nohup ... &`, CI) hands them SIGINT ignored, and Python then installs no
    KeyboardInterrupt handler, so the interruption the test sends would never arrive."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def checkout_env(base: Mapping[str, str] = os.environ, **extra: str) -> dict[str, str]:
    """`base` with this checkout first on the import path, and `extra` over it."""
    return {**base, "PYTHONPATH": str(REPO), **extra}


def run_cli(
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: Path = REPO,
    stdin: str | int = "",
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """`hft-console ARGS` to its end; `env` defaults to `checkout_env()`, and `stdin` is text
    to send or a file descriptor to read."""
    return subprocess.run(
        [*CLI, *args],
        input=stdin if isinstance(stdin, str) else None,
        stdin=stdin if isinstance(stdin, int) else None,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=checkout_env() if env is None else dict(env),
    )
