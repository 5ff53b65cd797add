"""The venue's contract table, read again while trading: Bitget changes a contract's tick or
lot now and then, and an order off the new grid is refused."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from typing import NamedTuple

from engine.bitget.contracts import ContractTableError, fetch_contracts
from engine.bitget.rest import BitgetRestClient, BitgetRestError
from engine.market.instruments import Instrument

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
    `on_event` as a `ContractChanged`. A table that cannot be read is logged and tried again
    at the next period: the grid in force stands."""

    def __init__(
        self,
        interval_s: float,
        client: BitgetRestClient,
        instruments: Iterable[Instrument],
        *,
        apply: Callable[[Instrument], None],
        on_event: Callable[[object], None],
        clock: Callable[[], int],
    ) -> None:
        self._interval_s = interval_s
        self._client = client
        self._in_force = {instrument.symbol: instrument for instrument in instruments}
        self._apply = apply
        self._on_event = on_event
        self._clock = clock
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
        """Read the table once; apply and say each change."""
        table = await fetch_contracts(self._client)
        changes = []
        for symbol, old in list(self._in_force.items()):
            spec = table.specs.get(symbol)
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

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self._interval_s)
            try:
                await self.check()
            except (BitgetRestError, ContractTableError) as error:
                logger.warning(
                    "contract table not read again (%s): the grid in force stands", error
                )
