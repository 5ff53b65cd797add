"""Engine state as the console's view models: pure functions, run on the engine's side.

Books, the trading status, Kev's hub, latency histograms and engine events in; the frozen
`console.view` models out. Nothing here keeps state or touches a loop.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Protocol, runtime_checkable

from console.view import (
    DepthLevel,
    DepthView,
    EventKind,
    HistogramBin,
    ImbalanceReading,
    KevDecisionView,
    KevOutcome,
    KevState,
    KevStatusView,
    OwnOrder,
    PnlView,
    PositionLine,
    Severity,
    StageLatency,
    TradingView,
)
from engine.bitget.orders import OrderStatus
from engine.bitget.private_events import (
    FillUpdate,
    OrderUpdate,
    PrivateStreamChanged,
    PrivateStreamState,
)
from engine.book import BookView
from engine.feed.events import (
    BookResyncNeeded,
    ChannelError,
    FeedState,
    FeedStateChanged,
    RecordingEnded,
)
from engine.instance_lock import LockTakenOver
from engine.kev.hub import KevDecision, KevHub, KevStatus, KevWarmUpEnded
from engine.kev.hub import KevOutcome as HubOutcome
from engine.latency import LatencyHistogram
from engine.market.instruments import Instrument, price_text
from engine.pipeline import (
    LayaFault,
    LayaReady,
    LayaStillWarmingUp,
    LayaStoodAside,
    LayaWarmingUp,
)
from engine.risk.events import (
    CommandRejected,
    DailyPnlReset,
    EventsDropped,
    OrderDenied,
    PositionReconciled,
    RiskLimit,
    RiskLimitChanged,
    SymbolPauseChanged,
    TradingState,
    TradingStateChanged,
)
from engine.risk.intents import CancelIntent, OrderIntent, RiskRequest
from engine.risk.limits import RiskGatewayConfig
from engine.risk.overrides import RiskOverrides
from engine.trading.contract_watch import ContractChanged
from engine.trading.desk import TradingStatus
from engine.trading.events import (
    CommandExecuted,
    HedgeCapChanged,
    OrderAcknowledged,
    OrderCancelled,
    OrderFilled,
    OrderMissingAtVenue,
    OrderRejectedByVenue,
    ReconciliationDone,
    TradingFault,
    UnknownOrderAtVenue,
    VerdictActed,
)
from engine.trading.tracked_order import OrderState, OrderView
from engine.units import coin, fee_usdt, usdt

PANE_STAGES = ("parse", "book", "features", "infer", "decide", "total")
"""The fast-path stages the latency pane lists, in pipeline order (Kev's row follows)."""

DEFAULT_STAGE_BUDGETS_P99_US: Mapping[str, float] = MappingProxyType(
    {
        "parse": 10.0,
        "book": 2.0,
        "features": 10.0,
        "infer": 30.0,
        "decide": 5.0,
        "total": 60.0,
        "kev": 3_000_000.0,
    }
)
"""p99 budgets: about three times the development VM's p50 per stage (README, Benchmarks), and
Kev's request timeout (`KevClientConfig.request_timeout_s`)."""

_QUIET_EVENTS = (OrderAcknowledged, OrderCancelled)
"""Routine order traffic the event pane leaves to the orders pane and the journal (requoting
makes several a second)."""

_ORDER_STATUS = {
    OrderState.PARTIALLY_FILLED: OrderStatus.PARTIALLY_FILLED,
    OrderState.FILLED: OrderStatus.FILLED,
    OrderState.CANCELED: OrderStatus.CANCELED,
    OrderState.REJECTED: OrderStatus.CANCELED,
}
"""Tracked-order states as the orders pane's statuses; journaling, sending, live and unknown
(all still open) are `live`."""


@runtime_checkable
class NodeWithKev(Protocol):
    """An engine node that runs Kev: `kev` is its hub (None when Kev is off)."""

    kev: KevHub | None


# Pure mappings from engine state to view models


def imbalance_reading(book: BookView) -> ImbalanceReading:
    """OBI over the top 1, 5 and 15 levels and the microprice's offset from the mid (bps)."""

    def obi(levels: int) -> float:
        bid = sum(book.bid_sizes[:levels])
        ask = sum(book.ask_sizes[:levels])
        total = bid + ask
        return (bid - ask) / total if total > 0 else 0.0

    mid = book.mid
    offset = (book.microprice - mid) / mid * 1e4 if mid > 0 else 0.0
    return ImbalanceReading(obi(1), obi(5), obi(15), offset)


def decimals_of(values: Sequence[float], limit: int = 8) -> int:
    """The fewest decimals that print every value exactly (for books without a contract)."""
    decimals = 0
    for value in values:
        while decimals < limit and abs(value - round(value, decimals)) > 1e-9 * max(1, value):
            decimals += 1
    return decimals


def depth_view(
    book: BookView, own_orders: tuple[OwnOrder, ...], instrument: Instrument | None
) -> DepthView:
    if instrument is not None:
        price_decimals, size_decimals = instrument.price_decimals, instrument.size_decimals
    else:
        price_decimals = decimals_of(book.bid_prices + book.ask_prices)
        size_decimals = decimals_of(book.bid_sizes + book.ask_sizes)
    return DepthView(
        symbol=book.symbol,
        bids=tuple(map(DepthLevel, book.bid_prices, book.bid_sizes)),
        asks=tuple(map(DepthLevel, book.ask_prices, book.ask_sizes)),
        microprice=book.microprice,
        own_orders=own_orders,
        price_decimals=price_decimals,
        size_decimals=size_decimals,
        exchange_ts_ms=book.exchange_ts_ms,
        instrument=instrument,
    )


def own_orders_by_symbol(orders: Sequence[OrderView]) -> dict[str, tuple[OwnOrder, ...]]:
    """Our resting limit orders per symbol, with what is left of each."""
    found: dict[str, list[OwnOrder]] = {}
    for order in orders:
        if order.price is None:
            continue
        remaining = order.size - order.filled
        if remaining > 0:
            found.setdefault(order.symbol, []).append(OwnOrder(order.side, order.price, remaining))
    return {symbol: tuple(items) for symbol, items in found.items()}


def order_update(order: OrderView) -> OrderUpdate:
    return OrderUpdate(
        symbol=order.symbol,
        order_id=order.order_id or "",
        client_oid=order.client_oid,
        side=order.side,
        price=order.price,
        size=order.size,
        filled_size=order.filled,
        average_price=None,
        status=_ORDER_STATUS.get(order.state, OrderStatus.LIVE),
        reduce_only=order.reduce_only,
        updated_ms=order.created_ns // 1_000_000,
        recv_ns=order.created_ns,
        cancel_reason=order.reason,
    )


def fill_update(fill: OrderFilled) -> FillUpdate:
    return FillUpdate(
        symbol=fill.symbol,
        order_id="",
        client_oid=fill.client_oid,
        trade_id=fill.trade_id,
        side=fill.side,
        price=fill.price,
        size=fill.size,
        fee=fill.fee,
        maker=fill.maker,
        filled_ms=fill.at_ns // 1_000_000,
        recv_ns=fill.at_ns,
    )


def overrides_in_force(trading: TradingStatus) -> RiskOverrides:
    """The limits the gateway applies now, as the overrides dialog edits them (the hedge ratio
    and the betas in a book with a hedge: without one neither moves)."""
    risk = trading.risk
    limits = risk.limits
    hedged = risk.hedge_symbol is not None
    return RiskOverrides(
        max_position=dict(limits.max_position),
        max_net_delta=limits.max_net_delta,
        max_slippage_bps=limits.max_slippage_bps,
        orders_per_second=limits.orders_per_second,
        orders_per_minute=limits.orders_per_minute,
        risk_scale=risk.risk_scale,
        hedge_ratio=risk.hedge_ratio if hedged else None,
        betas=dict(risk.betas) if hedged else {},
    )


def trading_view(trading: TradingStatus, config: RiskGatewayConfig) -> TradingView:
    """The gateway's status with its `config`: the hard bounds, the re-arm phrase, and each
    symbol's weight in the net delta as configured beside the one in force."""
    risk = trading.risk
    return TradingView(
        state=risk.state,
        reason=risk.state_reason,
        flattening=trading.running is not None,
        positions=tuple(
            PositionLine(
                p.symbol,
                p.size,
                p.entry_price,
                p.mark_price,
                p.unrealized_pnl,
                p.realized_pnl,
                p.fees,
                p.stood_aside,
                p.delta_weight,
                config.delta_weight(p.symbol),
            )
            for p in risk.positions
        ),
        open_orders=risk.open_orders,
        net_delta=risk.net_delta,
        max_net_delta=risk.max_net_delta,
        pnl=PnlView(risk.realized_pnl, risk.unrealized_pnl, risk.fees, risk.daily_pnl),
        overrides=overrides_in_force(trading),
        bounds=config.bounds,
        rearm_phrase=config.rearm_confirmation,
    )


def watch_only_view(risk: RiskGatewayConfig) -> TradingView:
    """The engine watches the market and trades nothing: no positions, no orders, and the
    limits trading would start with (every command answers that trading is off)."""
    limits = risk.limits
    return TradingView(
        state=TradingState.PAUSED,
        reason="watch only: no --mode given, nothing is traded",
        flattening=False,
        positions=(),
        open_orders=0,
        net_delta=0.0,
        max_net_delta=limits.max_net_delta,
        pnl=PnlView(0.0, 0.0, 0.0, 0.0),
        overrides=RiskOverrides(
            max_position={symbol.symbol: symbol.max_position for symbol in limits.symbols},
            max_net_delta=limits.max_net_delta,
            max_slippage_bps=limits.max_slippage_bps,
            orders_per_second=limits.orders_per_second,
            orders_per_minute=limits.orders_per_minute,
            risk_scale=risk.risk_scale,
            hedge_ratio=risk.hedge_ratio if risk.hedge_symbol is not None else None,
            betas={symbol: risk.delta_weight(symbol) for symbol in risk.bounds.betas},
        ),
        bounds=risk.bounds,
        rearm_phrase=risk.rearm_confirmation,
    )


def kev_status_view(status: KevStatus | None) -> KevStatusView:
    """Kev's hub as the status pane shows it; None: this engine runs no hub (watch only, or
    Kev switched off)."""
    if status is None:
        detail = "Kev is off (it runs with trading and a [kev] client)"
        return KevStatusView(KevState.OFFLINE, "no model", None, detail)
    model = status.model or "no model"
    if status.state == "online":
        return KevStatusView(KevState.ONLINE, model, status.last_latency_ms)
    if status.state == "busy":
        waiting = f", {status.queue_depth} waiting" if status.queue_depth else ""
        return KevStatusView(
            KevState.BUSY, model, status.last_latency_ms, f"{status.in_flight} in flight{waiting}"
        )
    detail = status.detail or status.state
    if status.state == "loading":
        detail = f"loading: {status.detail}" if status.detail else "loading the model"
    return KevStatusView(KevState.OFFLINE, model, status.last_latency_ms, detail)


def kev_decision_view(decision: KevDecision) -> KevDecisionView:
    outcome = decision.outcome
    if outcome is HubOutcome.ACCEPTED:
        shown, why = KevOutcome.ACCEPTED, decision.reason
    elif outcome is HubOutcome.STALE:
        shown, why = KevOutcome.STALE, decision.reason
    elif outcome is HubOutcome.REFUSED:
        shown, why = KevOutcome.REJECTED, f"refused by the risk gateway: {decision.reason}"
    else:
        shown, why = KevOutcome.REJECTED, decision.reason
    command = decision.command
    return KevDecisionView(
        at_ns=decision.at_ns,
        latency_ms=decision.wall_ms,
        action=command.action.value if command is not None else "none",
        outcome=shown,
        why=why,
        reasoning=command.reasoning if command is not None else decision.raw,
    )


def kev_event(decision: KevDecision) -> tuple[Severity, str]:
    view = kev_decision_view(decision)
    severity = Severity.INFO if view.outcome is KevOutcome.ACCEPTED else Severity.WARNING
    why = f": {view.why}" if view.why else ""
    return severity, (
        f"Kev on {decision.symbol} {decision.verdict}: {view.action} {view.outcome.value} "
        f"({view.latency_ms:,.0f} ms){why}"
    )


def stage_latency(
    name: str, histogram: LatencyHistogram, overhead_ns: float, budget: float | None
) -> StageLatency:
    if histogram.count == 0:
        return StageLatency(name, 0, math.nan, math.nan, math.nan, math.nan, budget)
    figures = histogram.summary_us(overhead_ns)
    return StageLatency(
        name,
        histogram.count,
        figures["p50"],
        figures["p99"],
        figures["p999"],
        figures["max"],
        budget,
    )


def kev_latency(decisions: Sequence[KevDecision], budget: float | None) -> StageLatency:
    """Kev's request latency over the decisions the hub still holds (exact percentiles)."""
    walls = sorted(decision.wall_ms * 1e3 for decision in decisions if decision.wall_ms > 0)
    if not walls:
        return StageLatency("kev", 0, math.nan, math.nan, math.nan, math.nan, budget)

    def percentile(percent: float) -> float:
        return walls[min(len(walls) - 1, max(0, math.ceil(len(walls) * percent / 100) - 1))]

    return StageLatency(
        "kev", len(walls), percentile(50), percentile(99), percentile(99.9), walls[-1], budget
    )


def histogram_bins(histogram: LatencyHistogram, bins: int) -> tuple[HistogramBin, ...]:
    """The distribution in `bins` log-spaced bins from the shortest to the longest sample."""
    buckets = histogram.bins()
    if not buckets:
        return ()
    low = max(1, buckets[0].low_ns)
    high = max(low + 1, buckets[-1].high_ns)
    ratio = (high / low) ** (1 / bins)
    edges = [low * ratio**index for index in range(bins + 1)]
    counts = [0] * bins
    for bucket in buckets:
        counts[min(bins - 1, max(0, bisect_left(edges, bucket.low_ns + 0.5) - 1))] += bucket.count
    return tuple(
        HistogramBin(edges[index] / 1e3, edges[index + 1] / 1e3, counts[index])
        for index in range(bins)
    )


def console_event(
    event: object, now_ns: int, contracts: Mapping[str, Instrument]
) -> tuple[EventKind, Severity, str, int] | None:
    """An engine event as the event pane shows it (kind, severity, text, epoch ns), or None
    for routine order traffic. `now_ns` stamps the events that carry no time; `contracts`
    (by symbol) write prices at their decimals."""
    if isinstance(event, _QUIET_EVENTS):
        return None
    return _describe(event, now_ns, contracts)


_STATE_SEVERITY = {
    TradingState.ACTIVE: Severity.INFO,
    TradingState.PAUSED: Severity.WARNING,
    TradingState.REDUCING: Severity.WARNING,
    TradingState.HALTED: Severity.ERROR,
}
_FEED_SEVERITY = {
    FeedState.LIVE: Severity.INFO,
    FeedState.CONNECTING: Severity.INFO,
    FeedState.STOPPED: Severity.INFO,
    FeedState.STALE: Severity.WARNING,
    FeedState.RECONNECTING: Severity.WARNING,
    FeedState.FAILED: Severity.ERROR,
}
_STREAM_SEVERITY = {
    PrivateStreamState.CONNECTING: Severity.INFO,
    PrivateStreamState.LIVE: Severity.INFO,
    PrivateStreamState.STOPPED: Severity.INFO,
    PrivateStreamState.RECONNECTING: Severity.WARNING,
    PrivateStreamState.FAILED: Severity.ERROR,
}


def _request_text(request: RiskRequest) -> str:
    if isinstance(request, OrderIntent):
        return f"{request.symbol} {request.side.value} {coin(request.symbol, request.size)}"
    if isinstance(request, CancelIntent):
        return f"cancel ({request.scope.value} {request.symbol or ''})".replace(" )", ")")
    return f"close positions ({request.symbol or 'all'})"


def _describe(
    event: object, now_ns: int, contracts: Mapping[str, Instrument]
) -> tuple[EventKind, Severity, str, int]:
    info, warning, error = Severity.INFO, Severity.WARNING, Severity.ERROR
    if isinstance(event, OrderFilled):
        liquidity = "maker" if event.maker else "taker"
        price = price_text(contracts.get(event.symbol), event.price, grouped=True)
        text = (
            f"{event.symbol} {event.side.value} {coin(event.symbol, event.size)} @ "
            f"{price} {liquidity}, "
            f"fee {fee_usdt(event.fee)} ({event.client_oid})"
        )
        return EventKind.FILL, info, text, event.at_ns
    if isinstance(event, OrderDenied):
        text = f"{_request_text(event.intent)} denied ({event.reason.name}): {event.text}"
        return EventKind.DENIAL, warning, text, event.at_ns
    if isinstance(event, TradingStateChanged):
        text = f"{event.old.name} -> {event.new.name} ({event.source.value}: {event.reason})"
        return EventKind.STATE, _STATE_SEVERITY[event.new], text, event.at_ns
    if isinstance(event, SymbolPauseChanged | HedgeCapChanged):
        alarm = event.paused if isinstance(event, SymbolPauseChanged) else event.capped
        return EventKind.STATE, warning if alarm else info, event.text, event.at_ns
    if isinstance(event, CommandExecuted):
        outcome = "ok" if event.ok else "REFUSED"
        text = f"{event.command} {outcome} ({event.elapsed_ms:,.1f} ms): {event.message}"
        return EventKind.COMMAND, info if event.ok else error, text, event.at_ns
    if isinstance(event, FeedStateChanged):
        text = f"{event.symbol} {event.state.value} ({event.reason})"
        return EventKind.FEED, _FEED_SEVERITY.get(event.state, warning), text, event.at_ns
    if isinstance(event, LayaFault):
        text = f"Laya on {event.symbol}: {event.reason}; quotes pulled"
        return EventKind.FAULT, error, text, event.at_ns
    if isinstance(event, LayaStoodAside):
        text = f"Laya stands aside on {event.symbol}, no quotes: its model: {event.reason}"
        return EventKind.FAULT, error, text, event.at_ns
    if isinstance(event, LayaWarmingUp):
        text = (
            f"Laya warming up on {event.symbol} ({event.reason}): no verdicts or quotes for "
            f"{event.seconds:g} s of market data ([laya] warmup_s)"
        )
        return EventKind.SYSTEM, warning, text, event.at_ns
    if isinstance(event, LayaReady):
        return EventKind.SYSTEM, info, f"Laya ready on {event.symbol}", event.at_ns
    if isinstance(event, LayaStillWarmingUp):
        return EventKind.SYSTEM, warning, event.text, event.at_ns
    if isinstance(event, RecordingEnded):
        problem = event.problem
        if problem is None:
            text = (
                f"end of the recording: {event.frames:,} frames ({event.market_frames:,} of "
                f"market data) over {event.recorded_span_s:,.1f} s of market time"
            )
            return EventKind.FEED, info, text, event.at_ns
        return EventKind.FEED, error if problem.unreadable else warning, problem.text, event.at_ns
    if isinstance(event, TradingFault):
        return EventKind.FAULT, error, event.reason, event.at_ns
    if isinstance(event, LockTakenOver | ContractChanged):
        return EventKind.SYSTEM, warning, event.text, event.at_ns
    if isinstance(event, KevWarmUpEnded):
        return EventKind.KEV, info if event.ok else warning, f"Kev: {event.text}", event.at_ns
    if isinstance(event, VerdictActed):
        severity = warning if event.intent == "CANCEL_ALL" else info
        text = f"Laya {event.intent} on {event.symbol}: {event.action}"
        return EventKind.SYSTEM, severity, text, event.at_ns
    if isinstance(event, OrderRejectedByVenue):
        code = f" {event.code}" if event.code else ""
        text = f"{event.symbol} {event.client_oid} rejected{code}: {event.reason}"
        return EventKind.FAULT, warning, text, event.at_ns
    if isinstance(event, OrderMissingAtVenue | UnknownOrderAtVenue):
        text = f"reconcile {event.symbol} {event.client_oid}: {event.detail}"
        return EventKind.SYSTEM, warning, text, event.at_ns
    if isinstance(event, ReconciliationDone):
        text = (
            f"reconciled ({event.reason}): {event.venue_orders} open at the venue, "
            f"{event.missing} missing, {event.unknown} unknown, "
            f"{event.positions_synced} positions synced"
        )
        return EventKind.SYSTEM, info, text, event.at_ns
    if isinstance(event, PrivateStreamChanged):
        text = f"private stream {event.state.value} ({event.reason})"
        return EventKind.FEED, _STREAM_SEVERITY.get(event.state, warning), text, event.at_ns
    if isinstance(event, RiskLimitChanged):
        text = f"limit {_limit_change(event)} ({event.source.value})"
        return EventKind.STATE, info, text, event.at_ns
    if isinstance(event, CommandRejected):
        text = f"{event.command} refused ({event.source.value}): {event.text}"
        return EventKind.DENIAL, warning, text, event.at_ns
    if isinstance(event, PositionReconciled):
        sizes = (event.old_size, event.new_size)
        old, new = (coin(event.symbol, size, signed=True) for size in sizes)
        text = f"{event.symbol} position synced {old} -> {new}"
        return EventKind.SYSTEM, warning, text, event.at_ns
    if isinstance(event, DailyPnlReset):
        text = f"daily PnL reset (the day closed {usdt(event.closed_day_pnl)})"
        return EventKind.STATE, info, text, event.at_ns
    if isinstance(event, EventsDropped):
        text = f"the risk gateway dropped {event.count} events"
        return EventKind.SYSTEM, warning, text, event.last_at_ns
    if isinstance(event, BookResyncNeeded):
        text = f"{event.symbol} book resync ({event.reason})"
        return EventKind.FEED, warning, text, event.at_ns
    if isinstance(event, ChannelError):
        text = f"{event.symbol} {event.channel} error {event.code}: {event.message}"
        return EventKind.FEED, error, text, now_ns
    return EventKind.SYSTEM, info, f"{type(event).__name__}: {event}", now_ns


def _limit_change(event: RiskLimitChanged) -> str:
    """`max_position BTCUSDT: 0.01 BTC -> 0.02 BTC`, `max_net_delta: 2,500 -> 1,000 USDT`."""
    name, symbol = event.name, event.symbol
    if event.limit is RiskLimit.MAX_POSITION and symbol is not None:
        return f"{name}: {coin(symbol, event.old)} -> {coin(symbol, event.new)}"
    unit = _LIMIT_UNITS.get(event.limit, "")
    return f"{name}: {event.old:g} -> {event.new:g}{unit}"


_LIMIT_UNITS = {RiskLimit.MAX_NET_DELTA: " USDT", RiskLimit.MAX_SLIPPAGE_BPS: " bps"}


def depth_view_with_orders(view: DepthView, own_orders: tuple[OwnOrder, ...]) -> DepthView:
    return DepthView(
        view.symbol,
        view.bids,
        view.asks,
        view.microprice,
        own_orders,
        view.price_decimals,
        view.size_decimals,
        view.exchange_ts_ms,
        view.instrument,
    )
