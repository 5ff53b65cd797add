"""The one interface between the console and the engine it watches.

The App polls `snapshot()` and `events_since()` on its own loop, so both must return at once
(hand over the latest published objects; never wait on the engine loop). A command is sent at
once and its answer awaited on that loop until the engine has acted, never blocking it: the App
sends them one at a time in the order the operator gave them, except the kill switch, which
never waits for its turn and so may arrive while another command is still running. `shutdown`
may block (it waits for the engine process to exit): the App runs it off its loop. An exception
from a command is shown as a failure.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Sequence
from typing import NamedTuple, Protocol

from console.view import ConsoleEvent, ConsoleSnapshot
from engine.trading.commands import Command, CommandResult


class EngineLost(NamedTuple):
    """The engine ended without being asked: `cause` says how its process ended ("the engine
    process was killed by SIGKILL"), `unknown` what that leaves the operator to check at the
    exchange ("the exchange may still hold 2 orders and a position of +0.002 BTC: check it")."""

    cause: str
    unknown: str

    def __str__(self) -> str:
        return f"{self.cause}; {self.unknown}"


class ShutdownPolicy(enum.StrEnum):
    """What stopping the engine does with open positions and resting orders.

    FLATTEN (the default, also for SIGHUP and SIGTERM): halt, cancel every order, close every
    position, then stop. KEEP: stop the engine and leave orders and positions as they are.
    """

    FLATTEN = "flatten"
    KEEP = "keep"


async def answered(result: CommandResult) -> CommandResult:
    """An answer known at once (a command that could not even be sent), to await like any."""
    return result


class EngineHandle(Protocol):
    on_progress: Callable[[], None] | None
    """Called, from another thread, when a kill or flatten under way has set its state (the
    latest snapshot shows HALTED or REDUCING) before its answer: the console draws it then."""

    def snapshot(self) -> ConsoleSnapshot:
        """The latest published snapshot, without waiting."""
        ...

    def events_since(self, last_id: int) -> tuple[Sequence[ConsoleEvent], int]:
        """Events with `event_id > last_id`, oldest first, and how many of those are no longer
        held (dropped by the bounded log before the console read them). Pass -1 first."""
        ...

    def lost(self) -> EngineLost | None:
        """Set, at once, when the engine died without being asked to stop (None while it runs
        and after a shutdown); without waiting."""
        ...

    def execute(self, command: Command) -> Awaitable[CommandResult]:
        """Send `command` now, before returning (the kill switch must not wait for the loop's
        next turn), and return its answer to await. The kill switch (`Kill`): HALTED, latched
        until a `Rearm` with the phrase the operator typed; cancels everything and flattens.
        `SetLimits` applies every value at once, or none (and says which one was refused)."""
        ...

    def shutdown(self, policy: ShutdownPolicy) -> CommandResult:
        """Stop the engine as `policy` says; ok only once it is done (never for a lost one:
        nothing was stopped or flattened)."""
        ...
