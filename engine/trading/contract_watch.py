"""The venue's contract table, read again while trading: Bitget changes a contract's tick or
lot now and then, and an order off the new grid is refused; it also stops a contract's
trading (its status leaves "normal", or the table lists it no longer), and a symbol that does
is stood aside alone until it trades again."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import NamedTuple

from engine.bitget.contracts import ContractTableError, fetch_contracts
from engine.bitget.rest import BitgetRestClient, BitgetRestError
from engine.market.instruments import Instrument
from engine.trading.commands import (
    Command,
    CommandResult,
    CommandSource,
    PauseSymbol,
    ResumeSymbol,
)

logger = logging.getLogger(__name__)


class ContractChanged(NamedTuple):
    """A traded contract's grid changed at the venue; orders from now on follow `new`."""

    old: Instrument
    new: Instrument
    at_ns: int

    @property
    def text(self) -> str:
        old, new = self.old, self.new
        changes = [
            f"{name} {getattr(old, field):g} -> {getattr(new, field):g}"
            for name, field in (
                ("tick", "tick_size"),
                ("lot", "size_step"),
                ("min notional", "min_notional"),
            )
            if getattr(old, field) != getattr(new, field)
        ]
        changed = ", ".join(changes)
        return f"{new.symbol} contract changed at the venue: {changed}; new orders follow it"


def grid_changed(old: Instrument, new: Instrument) -> bool:
    """Whether an order valid on `old` may be refused on `new` (fee rates aside: those are
    the run's, set at start)."""
    return (old.tick_size, old.size_step, old.min_notional) != (
        new.tick_size,
        new.size_step,
        new.min_notional,
    )


class ContractWatcher:
    """Reads the venue's table every `interval_s` (through `client`, public); each traded
    contract whose grid changed goes to `apply` (the desk and the venue take it) and to
    `on_event` as a `ContractChanged`. A traded contract the table lists no longer, or whose
    status is not normal trading, is stood aside through `command` (the desk's one way in:
    `PauseSymbol` from `CommandSource.RISK`, which pulls its orders; the gateway's
    `SymbolPauseChanged` says it), and let back (`ResumeSymbol`) when it trades again. A table
    that cannot be read is logged and tried again at the next period: what is in force
    stands."""

    def __init__(
        self,
        interval_s: float,
        client: BitgetRestClient,
        instruments: Iterable[Instrument],
        *,
        apply: Callable[[Instrument], None],
        on_event: Callable[[object], None],
        clock: Callable[[], int],
        command: Callable[[Command], Awaitable[CommandResult]],
    ) -> None:
        self._interval_s = interval_s
        self._client = client
        self._in_force = {instrument.symbol: instrument for instrument in instruments}
        self._apply = apply
        self._on_event = on_event
        self._command = command
        self._clock = clock
        self._not_trading: dict[str, str] = {}
        """The symbols this watcher stood aside, and why."""
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._watch(), name="contract-watch")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def check(self) -> list[ContractChanged]:
        """Read the table once; stand aside or let back each symbol whose trading stopped or
        resumed; apply and say each grid change (the grid of a symbol stood aside too: it
        comes back on the venue's grid)."""
        table = await fetch_contracts(self._client)
        changes = []
        for symbol, old in list(self._in_force.items()):
            spec = table.specs.get(symbol)
            refusal = f"{symbol} is no longer listed by the venue" if spec is None else spec.refusal
            if refusal is not None and symbol not in self._not_trading:
                self._not_trading[symbol] = refusal
                await self._carry_out(PauseSymbol(symbol, refusal))
            elif refusal is None and symbol in self._not_trading:
                del self._not_trading[symbol]
                await self._carry_out(ResumeSymbol(symbol, f"{symbol} trades again at the venue"))
            if spec is None:
                continue
            new = Instrument(
                symbol,
                spec.instrument.tick_size,
                spec.instrument.size_step,
                spec.instrument.min_notional,
                maker_fee_rate=old.maker_fee_rate,
                taker_fee_rate=old.taker_fee_rate,
            )
            if not grid_changed(old, new):
                continue
            self._in_force[symbol] = new
            self._apply(new)
            change = ContractChanged(old, new, self._clock())
            logger.warning("%s", change.text)
            self._on_event(change)
            changes.append(change)
        return changes

    async def _carry_out(self, request: PauseSymbol | ResumeSymbol) -> None:
        result = await self._command(Command(request, CommandSource.RISK))
        logger.warning("%s: %s", request.reason, result.message)

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self._interval_s)
            try:
                await self.check()
            except (BitgetRestError, ContractTableError) as error:
                logger.warning(
                    "contract table not read again (%s): the grids and statuses in force stand",
                    error,
                )
