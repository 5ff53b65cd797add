"""The venue protocol: what the executor needs from an exchange, whichever it is.

Every venue (the simulator or Bitget over REST, the in-process paper venue) takes orders by
clientOid, answers with acks and refusals, and reports what happens afterwards as the private
stream's events (`engine.bitget.private_events`) through the sink given to it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import NamedTuple, Protocol

from engine.bitget.orders import OrderSide, OrderStatus
from engine.bitget.private_events import FillUpdate, PositionEntry, PrivateEvent, PrivateStreamState
from engine.risk.intents import OrderIntent

PrivateSink = Callable[[PrivateEvent], None]


class VenueOrder(NamedTuple):
    """An order the venue reports open."""

    symbol: str
    order_id: str
    client_oid: str
    side: OrderSide
    price: float | None
    size: float
    filled_size: float
    reduce_only: bool


class PlaceAck(NamedTuple):
    client_oid: str
    order_id: str | None
    reconciled: bool
    """Confirmed by a clientOid lookup after an attempt whose outcome was unknown."""


class VenueSnapshot(NamedTuple):
    """Open orders and positions as the venue reports them: `exchange_ms` is the venue's own
    time of the positions' answer, `position_ms` each open symbol's last position change."""

    orders: tuple[VenueOrder, ...]
    positions: tuple[PositionEntry, ...]
    exchange_ms: int
    position_ms: Mapping[str, int]

    def fills_through(self, symbol: str) -> int:
        """The last exchange millisecond whose fills on `symbol` the positions surely hold:
        every one stamped before the answer, and every one up to the position's last change
        (a fill in the answer's own millisecond may come after it, unless it moved the
        position). Both stamps are the venue's: our estimate of its clock plays no part."""
        return max(self.exchange_ms - 1, self.position_ms.get(symbol, 0))


class VenueOrderRecord(NamedTuple):
    """One order as the venue reports it when asked by id or clientOid, open or finished, with
    every fill it made (oldest first): how an order whose pushes were lost is settled."""

    symbol: str
    order_id: str
    client_oid: str
    status: OrderStatus
    filled_size: float
    cancel_reason: str
    fills: tuple[FillUpdate, ...]


class VenueRejected(Exception):
    """The venue refused the request; `code` is Bitget's (or the simulator's) error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}" if code else message)
        self.code = code
        self.message = message


class VenueOutcomeUnknown(Exception):
    """The request may or may not have taken effect: reconcile before assuming either."""


class VenueUnavailable(Exception):
    """The request never left (no connection): it certainly did not take effect."""


class PlacementWithdrawn(VenueUnavailable):
    """A placement whose `departing` said no before it left: it was never sent."""


VENUE_ERRORS = (VenueRejected, VenueOutcomeUnknown, VenueUnavailable)
"""Every way a venue request can fail."""


class CancelAllTicket:
    """A cancel-all on its way: `sent_ns` (epoch ns) is stamped when its request bytes were
    handed to the socket (None until then), `result` resolves to the clientOids the venue
    cancelled, or to the venue's exception."""

    __slots__ = ("path", "result", "sent_ns")

    def __init__(self, result: asyncio.Future[tuple[str, ...]], path: str) -> None:
        self.result = result
        self.sent_ns: int | None = None
        self.path = path
        """How it went out: `lane` (pre-connected socket), `client` (the REST client) or
        `paper`."""


class Venue(Protocol):
    """An exchange as the executor sees it. `start` connects and begins delivering private
    events to the sink; every coroutine raises `VenueRejected`, `VenueOutcomeUnknown` or
    `VenueUnavailable` (nothing else) when it does not succeed."""

    name: str
    """For journals and the UI: `sim`, `paper`, `demo`, `live`."""

    async def start(self, sink: PrivateSink) -> None: ...

    async def stop(self) -> None: ...

    @property
    def stream_state(self) -> PrivateStreamState: ...

    @property
    def clock_offset_ms(self) -> int:
        """Exchange time minus local time."""
        ...

    async def place(
        self, intent: OrderIntent, departing: Callable[[], bool] | None = None
    ) -> PlaceAck:
        """Place the order. `departing` is asked right before the request leaves (after any
        wait for the venue's request limits, and again before a resend that cannot duplicate
        it); when it says no, nothing is sent and `PlacementWithdrawn` is raised."""
        ...

    async def cancel(self, symbol: str, client_oid: str) -> None: ...

    def cancel_all_now(self) -> CancelAllTicket:
        """Cancel every open order, starting the request before returning (the reaction
        path: no await between the decision and the bytes leaving when a lane is ready). Each
        placement still waiting to leave is asked its `departing` again at once."""
        ...

    async def close_positions(self, symbol: str | None = None) -> None:
        """Flash-close at market (one symbol, or all)."""
        ...

    async def snapshot(self) -> VenueSnapshot: ...

    async def order_record(
        self, symbol: str, client_oid: str, order_id: str | None
    ) -> VenueOrderRecord | None:
        """The order (by `order_id` when known, else `client_oid`) and its fills; None when
        the venue has no such order."""
        ...

    def stats(self) -> dict[str, object]: ...
