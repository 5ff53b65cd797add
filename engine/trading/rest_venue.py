"""RestVenue: the simulator, Bitget demo or Bitget live, over signed REST and the private
websocket.

Orders go out through `BitgetRestClient` (retries that never duplicate, reconciliation by
clientOid); what happens to them comes back on `BitgetPrivateFeed`. Cancel-all goes through
the `CancelLane` when it is ready (the reaction path), else through the client. Errors become
the venue protocol's three kinds: refused, outcome unknown, never sent.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterable
from types import SimpleNamespace

import aiohttp
import orjson

from engine.bitget.cancel_lane import CancelLane, LaneAnswer
from engine.bitget.credentials import Credentials
from engine.bitget.endpoints import CANCEL_ALL_ORDERS
from engine.bitget.errors import SUCCESS_CODE, describe_error
from engine.bitget.models import MalformedAnswer, OpenPosition, parse_batch_result
from engine.bitget.orders import OrderStatus
from engine.bitget.private_events import FillUpdate, PositionEntry, PrivateStreamState
from engine.bitget.private_ws import BitgetPrivateFeed, BitgetPrivateFeedConfig
from engine.bitget.rest import (
    BitgetApiError,
    BitgetRequestWithdrawn,
    BitgetRestClient,
    BitgetRestConfig,
    BitgetRestError,
    BitgetTransportError,
)
from engine.clock import WallClock
from engine.market.instruments import Instrument
from engine.risk.intents import OrderIntent
from engine.trading.venue import (
    CancelAllTicket,
    PlaceAck,
    PlacementWithdrawn,
    PrivateSink,
    VenueOrder,
    VenueOrderRecord,
    VenueOutcomeUnknown,
    VenueRejected,
    VenueSnapshot,
    VenueUnavailable,
)

_NOTHING_TO_CANCEL = frozenset({"22001", "43004"})
_ORDER_NOT_FOUND = frozenset({"40109", "43001", "40768"})
_LANE_RETRIED = frozenset({"429", "40008"})
"""Lane answers the client copes with better (it backs off, or re-measures the clock)."""


def venue_error(error: BitgetRestError) -> Exception:
    """The REST client's failure as the venue protocol's."""
    if isinstance(error, BitgetApiError):
        return VenueRejected(error.code, error.message_for_operator)
    if isinstance(error, BitgetTransportError) and not error.request_sent:
        return VenueUnavailable(str(error))
    return VenueOutcomeUnknown(str(error))


class RestVenue:
    """A Bitget-speaking exchange (the simulator, demo or live) as a venue."""

    def __init__(
        self,
        name: str,
        rest: BitgetRestConfig,
        credentials: Credentials,
        instruments: Iterable[Instrument],
        *,
        private_ws_url: str,
        cancel_lane: bool = True,
        wall_clock_ns: Callable[[], int] = WallClock.time_ns,
    ) -> None:
        self.name = name
        self._credentials = credentials
        self._instruments = {instrument.symbol: instrument for instrument in instruments}
        self._clock = wall_clock_ns
        trace = aiohttp.TraceConfig()
        trace.on_request_chunk_sent.append(self._on_chunk_sent)
        self.client = BitgetRestClient(rest, credentials, trace_configs=(trace,))
        self._private_config = BitgetPrivateFeedConfig(url=private_ws_url)
        self._feed: BitgetPrivateFeed | None = None
        self.lane = (
            CancelLane(
                rest.base_url,
                credentials,
                demo=rest.demo,
                clock_offset_ms=lambda: self.client.clock_offset_ms,
                wall_clock_ns=wall_clock_ns,
                limiter=self.client.limiter_for(CANCEL_ALL_ORDERS),
            )
            if cancel_lane
            else None
        )
        self.lane_enabled = True
        """False sends every cancel-all through the REST client (the benchmark's other path)."""
        self._unstamped: deque[CancelAllTicket] = deque()
        self.cancels_by_path = {"lane": 0, "client": 0}

    # Lifecycle

    async def start(self, sink: PrivateSink) -> None:
        await self.client.start()
        try:
            await self.client.sync_time()
        except BitgetRestError as error:
            await self.client.stop()
            raise VenueUnavailable(f"{self.name}: the exchange does not answer: {error}") from None
        if self.lane is not None:
            await self.lane.start()
        self._feed = BitgetPrivateFeed(
            self._private_config,
            self._credentials,
            sink,
            self._clock,
            exchange_offset_ms=lambda: self.client.clock_offset_ms,
        )
        await self._feed.start()

    async def stop(self) -> None:
        if self._feed is not None:
            await self._feed.stop()
        if self.lane is not None:
            await self.lane.stop()
        await self.client.stop()

    @property
    def stream_state(self) -> PrivateStreamState:
        return self._feed.state if self._feed is not None else PrivateStreamState.STOPPED

    @property
    def clock_offset_ms(self) -> int:
        return self.client.clock_offset_ms

    # Requests

    async def place(
        self, intent: OrderIntent, departing: Callable[[], bool] | None = None
    ) -> PlaceAck:
        instrument = self._instrument(intent.symbol)
        # Off the grid is refused here, never rounded: what is sent is what was approved.
        if not instrument.is_on_step(intent.size):
            raise VenueRejected(
                "",
                f"size {intent.size} is not a multiple of {intent.symbol}'s lot "
                f"{instrument.size_step}",
            )
        if intent.price is not None and not instrument.is_on_tick(intent.price):
            raise VenueRejected(
                "",
                f"price {intent.price} is not a multiple of {intent.symbol}'s tick "
                f"{instrument.tick_size}",
            )
        try:
            ack = await self.client.place_order(
                intent.symbol,
                intent.side,
                instrument.format_size(intent.size),
                order_type=intent.order_type,
                price=None if intent.price is None else instrument.format_price(intent.price),
                force=intent.force,
                reduce_only=intent.reduce_only,
                client_oid=intent.client_oid,
                departing=departing,
            )
        except BitgetRequestWithdrawn as error:
            raise PlacementWithdrawn(str(error)) from None
        except BitgetRestError as error:
            raise venue_error(error) from None
        except ValueError as error:  # the body failed validation: nothing was sent
            raise VenueRejected("", str(error)) from None
        return PlaceAck(ack.client_oid, ack.order_id, ack.reconciled)

    async def cancel(self, symbol: str, client_oid: str) -> None:
        try:
            await self.client.cancel_order(symbol, client_oid=client_oid)
        except BitgetRestError as error:
            raise venue_error(error) from None

    def cancel_all_now(self) -> CancelAllTicket:
        loop = asyncio.get_running_loop()
        self.client.recheck_queued_placements()
        lane = self.lane
        sent = lane.send_cancel_all() if lane is not None and self.lane_enabled else None
        if sent is not None:
            answer, sent_ns = sent
            ticket = CancelAllTicket(loop.create_future(), "lane")
            ticket.sent_ns = sent_ns
            self.cancels_by_path["lane"] += 1
            answer.add_done_callback(lambda done: self._lane_answered(done, ticket))
            return ticket
        return self._cancel_all_by_client(CancelAllTicket(loop.create_future(), "client"))

    async def close_positions(self, symbol: str | None = None) -> None:
        try:
            result = await self.client.close_positions(symbol)
        except BitgetRestError as error:
            raise venue_error(error) from None
        if result.failed:
            failure = result.failed[0]
            raise VenueRejected(failure.code, f"{failure.symbol}: {failure.message}")

    async def snapshot(self) -> VenueSnapshot:
        try:
            pending, positions = await asyncio.gather(
                self.client.pending_orders(), self.client.positions_at()
            )
        except BitgetRestError as error:
            raise venue_error(error) from None
        orders = tuple(
            VenueOrder(
                order.symbol,
                order.order_id,
                order.client_oid,
                order.side,
                float(order.price) if order.price is not None else None,
                float(order.size),
                float(order.filled_size),
                order.reduce_only,
            )
            for order in pending
        )
        position_ms: dict[str, int] = {}
        for position in positions.positions:
            position_ms[position.symbol] = max(
                position_ms.get(position.symbol, 0), position.updated_ms
            )
        return VenueSnapshot(
            orders, _net_positions(positions.positions), positions.exchange_ms, position_ms
        )

    async def order_record(
        self, symbol: str, client_oid: str, order_id: str | None
    ) -> VenueOrderRecord | None:
        try:
            detail = await self.client.order_detail(
                symbol, order_id=order_id or None, client_oid=None if order_id else client_oid
            )
            fills = (
                await self.client.order_fills(symbol, detail.order_id)
                if detail.filled_size > 0
                else []
            )
        except BitgetApiError as error:
            if error.code in _ORDER_NOT_FOUND:
                return None
            raise venue_error(error) from None
        except BitgetRestError as error:
            raise venue_error(error) from None
        recv_ns = self._clock()
        oid = detail.client_oid or client_oid
        updates = tuple(
            FillUpdate(
                fill.symbol,
                fill.order_id,
                oid,
                fill.trade_id,
                fill.side,
                float(fill.price),
                float(fill.size),
                float(fill.fee) + 0.0,
                fill.maker,
                fill.filled_ms,
                recv_ns,
            )
            for fill in sorted(fills, key=lambda fill: (fill.filled_ms, fill.trade_id))
        )
        return VenueOrderRecord(
            detail.symbol,
            detail.order_id,
            oid,
            OrderStatus(detail.status),
            float(detail.filled_size),
            detail.cancel_reason,
            updates,
        )

    def stats(self) -> dict[str, object]:
        stats = self.client.stats()
        lane = self.lane
        return {
            "requests": dict(stats.requests),
            "errors": dict(stats.errors),
            "retries": stats.retries,
            "reconciliations": stats.reconciliations,
            "clock_offset_ms": stats.clock_offset_ms,
            "clock_resyncs": stats.clock_resyncs,
            "cancel_all_by_path": dict(self.cancels_by_path),
            "lane": None
            if lane is None
            else {"ready": lane.ready, "connects": lane.connects, "last_error": lane.last_error},
            "private_stream": self.stream_state.value,
        }

    # Internals

    def change_instrument(self, instrument: Instrument) -> None:
        """Orders on `instrument`'s symbol are checked against and written at its new grid."""
        self._instruments[instrument.symbol] = instrument

    def _instrument(self, symbol: str) -> Instrument:
        instrument = self._instruments.get(symbol)
        if instrument is None:
            raise VenueRejected("", f"no instrument spec for {symbol}")
        return instrument

    def _cancel_all_by_client(self, ticket: CancelAllTicket) -> CancelAllTicket:
        # After a lane failure the lane's request did leave first: its stamp stands.
        ticket.path = "client" if ticket.sent_ns is None else "lane, then client"
        self.cancels_by_path["client"] += 1
        if ticket.sent_ns is None:
            self._unstamped.append(ticket)

        async def cancel() -> None:
            try:
                result = await self.client.cancel_all()
            except BitgetRestError as error:
                _settle(ticket.result, error=venue_error(error))
            else:
                _settle(ticket.result, tuple(ref.client_oid for ref in result.succeeded))
            finally:
                if ticket in self._unstamped:
                    self._unstamped.remove(ticket)

        asyncio.get_running_loop().create_task(cancel(), name="cancel-all")
        return ticket

    def _lane_answered(self, done: asyncio.Future[LaneAnswer], ticket: CancelAllTicket) -> None:
        error = done.exception() if not done.cancelled() else VenueUnavailable("cancelled")
        if error is not None:
            # The request may have worked; cancel-all is idempotent, so ask again the safe way.
            self._cancel_all_by_client(ticket)
            return
        answer = done.result()
        try:
            envelope = orjson.loads(answer.body)
        except orjson.JSONDecodeError:
            envelope = None
        if not isinstance(envelope, dict):
            envelope = {}
        code = str(envelope.get("code", ""))
        if code == SUCCESS_CODE and 200 <= answer.status < 300:
            try:
                result = parse_batch_result(envelope.get("data"))
            except MalformedAnswer as malformed:
                _settle(ticket.result, error=VenueOutcomeUnknown(f"cancel-all answer: {malformed}"))
                return
            _settle(ticket.result, tuple(ref.client_oid for ref in result.succeeded))
        elif code in _NOTHING_TO_CANCEL:
            _settle(ticket.result, ())
        elif code in _LANE_RETRIED or answer.status >= 500 or not code:
            self._cancel_all_by_client(ticket)
        else:
            _settle(ticket.result, error=VenueRejected(code, describe_error(code)))

    async def _on_chunk_sent(
        self,
        session: aiohttp.ClientSession,
        context: SimpleNamespace,
        params: aiohttp.TraceRequestChunkSentParams,
    ) -> None:
        """Stamp the oldest unstamped cancel-all the moment its body was written."""
        if params.url.path == CANCEL_ALL_ORDERS and self._unstamped:
            ticket = self._unstamped.popleft()
            ticket.sent_ns = self._clock()


def _settle(
    future: asyncio.Future[tuple[str, ...]],
    value: tuple[str, ...] = (),
    *,
    error: Exception | None = None,
) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


def _net_positions(positions: Iterable[OpenPosition]) -> tuple[PositionEntry, ...]:
    """One signed entry per symbol (one-way mode has one side; hedge mode nets both)."""
    by_symbol: dict[str, PositionEntry] = {}
    for position in positions:
        size = float(position.total) * (1.0 if position.hold_side == "long" else -1.0)
        mark = float(position.mark_price) if position.mark_price is not None else None
        previous = by_symbol.get(position.symbol)
        if previous is not None:
            size += previous.size
        by_symbol[position.symbol] = PositionEntry(
            position.symbol,
            size,
            float(position.open_price_avg),
            mark,
            float(position.unrealized_pl) + (previous.unrealized_pnl if previous else 0.0),
        )
    return tuple(entry for entry in by_symbol.values() if entry.size)
