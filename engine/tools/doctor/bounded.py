"""The bounded runner: a check on a daemon thread, under a timeout, its crash a finding."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from engine.tools.doctor.report import CheckResult, CheckStatus, shorten

_T = TypeVar("_T")


async def in_daemon_thread(function: Callable[[], _T]) -> _T:
    """`function()` on a daemon thread: a caller that stops waiting (a timeout) moves on, and
    a thread hung in a driver call cannot hold up the interpreter's exit."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[_T] = loop.create_future()

    def settle(outcome: Callable[[], None]) -> None:
        if not future.done():
            outcome()

    def target() -> None:
        try:
            value = function()
        except Exception as error:  # handed to the awaiting coroutine
            failure = error
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits
                loop.call_soon_threadsafe(settle, lambda: future.set_exception(failure))
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle, lambda: future.set_result(value))

    threading.Thread(target=target, name="doctor-check", daemon=True).start()
    return await future


@dataclass(frozen=True, slots=True)
class Outcome:
    """A gathered fact, or why it could not be had."""

    value: Any
    error: str = ""


async def gathered(work: Awaitable[Any], timeout_s: float) -> Outcome:
    try:
        return Outcome(await asyncio.wait_for(work, timeout_s))
    except TimeoutError:
        return Outcome(None, f"no answer within {timeout_s:g} s")
    except ImportError as error:
        return Outcome(None, f"cannot import {error.name or error}: {error}")
    except Exception as error:  # a check's own crash is reported, never raised
        return Outcome(None, f"{type(error).__name__}: {error}")


def failed_check(name: str, error: str) -> CheckResult:
    return CheckResult(
        name,
        CheckStatus.FAIL,
        f"the check could not run: {shorten(error)}",
        "run the doctor again; if this repeats, reinstall hft-console "
        "(pip install --force-reinstall hft-console)",
    )


def derived(
    name: str, build: Callable[..., CheckResult], sources: Sequence[Outcome], *args: Any
) -> CheckResult:
    """The check `build` makes of gathered facts; failed when one of them could not be had."""
    for source in sources:
        if source.error:
            return failed_check(name, source.error)
    try:
        return build(*(source.value for source in sources), *args)
    except Exception as error:  # a bug in one check must not hide the others
        return failed_check(name, f"{type(error).__name__}: {error}")
