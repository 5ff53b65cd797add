"""The bounded runner: a check that hangs is reported and left behind."""

from __future__ import annotations

import threading
import time

from engine.tools.doctor.bounded import gathered, in_daemon_thread


async def test_a_check_that_hangs_is_reported_and_left_behind() -> None:
    release = threading.Event()
    started = time.perf_counter()
    outcome = await gathered(in_daemon_thread(lambda: release.wait(30)), 0.2)
    assert time.perf_counter() - started < 5
    assert outcome.error == "no answer within 0.2 s"
    release.set()
