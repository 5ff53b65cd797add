"""The one wait of the suite: poll a condition until it holds, or fail saying what was awaited;
and how many items a reader handles between two turns of the loop."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable

WAIT_S = 5.0
"""How long `eventually` waits unless told."""


async def eventually(
    condition: Callable[[], object],
    timeout_s: float = WAIT_S,
    what: str = "the condition",
    *,
    interval_s: float = 0.005,
    explain: Callable[[], str] | None = None,
) -> None:
    """Return once `condition()` is true, checking every `interval_s` on the running loop's
    clock; after `timeout_s` fail with an AssertionError naming `what` (and what `explain`
    says, where given: a screen, a log)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not condition():
        if loop.time() > deadline:
            detail = f"\n{explain()}" if explain is not None else ""
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}{detail}")
        await asyncio.sleep(interval_s)


def eventually_blocking(
    condition: Callable[[], object],
    timeout_s: float = WAIT_S,
    what: str = "the condition",
    *,
    interval_s: float = 0.005,
) -> None:
    """`eventually` for a test without an event loop: sleeps the thread between checks."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(interval_s)


async def most_per_loop_turn(handled: Callable[[], int], total: int) -> int:
    """The most items `handled()` grew by between two turns of the loop, until `total`: start
    it as a task before a burst arrives (1 or 2 means the reader let the loop run between)."""
    seen: list[int] = []
    while (count := handled()) < total:
        seen.append(count)
        await asyncio.sleep(0)
    return max(after - before for before, after in itertools.pairwise([*seen, total]))
