"""TradingDesk: the book's quoting strategies, its hedge, the risk gateway, the executor and
the venue of one engine.

The pipeline calls `on_book` after Laya has judged each books15 frame, on the engine loop.
On EMERGENCY the desk's first act is the cancel-all request (before it even records the new
mark): that is the reaction path the benchmark times, from the frame's receive to the cancel's
bytes on the socket. One request pulls every symbol's orders, the fastest way there is; then
the symbol whose verdict it was cools down (the hedge's, the market's leader, cools down every
quoted symbol) and the others quote again on their next book. Then the mark reaches the gateway
and, for a quoted symbol, its quotes are compared with what rests and replaced where they
drifted. The hedge, on the book's net delta, is looked at after every fill and every
`hedge_interval_ms`.

Every command that changes risk or orders (the operator's keys, the run's exit policy, a
journal that cannot write, Kev's) comes in through `execute` as a `Command` with its source,
runs on the engine loop and returns a `CommandResult`; the source says whether it is journaled
as an operator command (Kev's are in KevHub's decision entries). The gateway's own state
changes (a daily loss that halts, Kev's flatten) start the same cancel-and-close sequence the
commands do.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import secrets
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.bitget.orders import OrderSide, OrderType, TimeInForce
from engine.bitget.private_events import FillUpdate
from engine.book import OrderBook
from engine.clock import EngineClock, Periodic, WallClock
from engine.feed.events import BookResyncNeeded, BookSnapshot, FeedState, FeedStateChanged
from engine.feed.sink import FeedNotice
from engine.feed.tape import Trades
from engine.journal import EntryKind, Journal, JournalEntry, JournalError, read_journal
from engine.latency import LatencyHistogram
from engine.laya.decide import QuoteGate, QuoteIntent
from engine.market.instruments import Instrument
from engine.pipeline import EventLog
from engine.risk.commands import CommandOutcome
from engine.risk.events import RiskEvent, SymbolPauseChanged, TradingState, TradingStateChanged
from engine.risk.gateway import RiskGateway
from engine.risk.intents import OrderIntent, Source
from engine.risk.snapshot import RiskSnapshot
from engine.trading.close_sequence import SequenceOutcome, holds_nothing, run_close_sequence
from engine.trading.commands import (
    Command,
    CommandResult,
    CommandSource,
    Flatten,
    KevOrder,
    Kill,
    Pause,
    PauseSymbol,
    Rearm,
    Request,
    Resume,
    ResumeSymbol,
    SetLimits,
    kev_result,
)
from engine.trading.config import TradingConfig
from engine.trading.events import CommandExecuted, HedgeCapChanged, TradingFault, VerdictActed
from engine.trading.executor import ExecutorStats, OrderExecutor
from engine.trading.paper_venue import PaperVenue
from engine.trading.quote_skews import QuoteSkews
from engine.trading.strategy import BookHedger, QuotingStrategy
from engine.trading.tracked_order import OrderRole, OrderState, OrderView
from engine.trading.venue import CancelAllTicket, Venue

logger = logging.getLogger(__name__)

_CANCEL_ALL = QuoteIntent.CANCEL_ALL
_PULL_ASKS = QuoteIntent.PULL_ASKS
_PULL_BIDS = QuoteIntent.PULL_BIDS
_WAITING_STATES = (OrderState.JOURNALING, OrderState.SENDING, OrderState.UNKNOWN)
_JOURNAL_ORDER_KINDS = (
    EntryKind.ORDER_APPROVED,
    EntryKind.ORDER_ACK,
    EntryKind.ORDER_REJECT,
    EntryKind.FILL,
)


@dataclass(frozen=True, slots=True)
class ReactionFigures:
    """Receive of an EMERGENCY frame -> cancel-all bytes handed to the socket (microseconds)."""

    count: int
    p50_us: float
    p99_us: float
    max_us: float


@dataclass(frozen=True, slots=True)
class TradingStatus:
    """Everything the console shows about trading, frozen. `risk` holds the state, positions,
    net delta, PnL, limits in force and the denial counts per reason."""

    mode: str
    venue: str
    session: str
    risk: RiskSnapshot
    open_orders: tuple[OrderView, ...]
    recent_orders: tuple[OrderView, ...]
    """Finished orders, oldest first (bounded)."""
    private_stream: str
    venue_stats: Mapping[str, object]
    """The venue's counters: REST requests and errors by code, retries, the cancel lane."""
    executor: ExecutorStats
    reaction: ReactionFigures
    running: str | None
    """The kill or flatten sequence in progress, if any."""
    last_kill: CommandResult | None
    cooldowns_ms: Mapping[str, float]
    """What is left of each quoted symbol's EMERGENCY cooldown (0 when it may quote)."""

    @property
    def state(self) -> TradingState:
        return self.risk.state


def orders_open_in_journal(entries: Sequence[JournalEntry], venue: str) -> list[dict[str, object]]:
    """The orders a journal shows approved for `venue` and not finished: each with its
    approval's fields and `acknowledged` (whether an ack was journaled)."""
    approved: dict[str, dict[str, object]] = {}
    acknowledged: set[str] = set()
    filled: dict[str, float] = {}
    finished: set[str] = set()
    for entry in entries:
        payload = entry.payload
        client_oid = payload.get("client_oid")
        if not isinstance(client_oid, str):
            continue
        kind = entry.kind
        if kind == EntryKind.ORDER_APPROVED:
            if payload.get("venue") == venue:
                approved[client_oid] = dict(payload)
        elif kind == EntryKind.ORDER_ACK:
            event = payload.get("event")
            if event == "placed":
                acknowledged.add(client_oid)
            elif event in ("canceled", "missing_at_venue"):
                finished.add(client_oid)
        elif kind == EntryKind.ORDER_REJECT:
            finished.add(client_oid)
        elif kind == EntryKind.FILL:
            size = payload.get("size")
            if isinstance(size, int | float):
                filled[client_oid] = filled.get(client_oid, 0.0) + float(size)
    open_orders = []
    for client_oid, payload in approved.items():
        if client_oid in finished:
            continue
        size = payload.get("size")
        if isinstance(size, int | float) and filled.get(client_oid, 0.0) >= size * (1 - 1e-9):
            continue
        open_orders.append({**payload, "acknowledged": client_oid in acknowledged})
    return open_orders


class _QuotedSymbol:
    """One quoted symbol's strategy and the client oids of its resting quotes."""

    __slots__ = ("quotes", "strategy", "symbol", "time_in_force")

    def __init__(self, strategy: QuotingStrategy) -> None:
        self.strategy = strategy
        self.symbol = strategy.config.symbol
        self.quotes: dict[OrderRole, str | None] = {OrderRole.BID: None, OrderRole.ASK: None}
        self.time_in_force = TimeInForce.POST_ONLY if strategy.config.post_only else TimeInForce.GTC


class TradingDesk:
    """See the module docstring. Build it, `start` it before the market feed, `stop` it
    after the feed has stopped."""

    def __init__(
        self,
        config: TradingConfig,
        venue: Venue,
        journal: Journal,
        events: EventLog,
        books: Mapping[str, OrderBook],
        *,
        clock: EngineClock | None = None,
        gate: QuoteGate = QuoteGate.LAYA,
        quote_skews: QuoteSkews | None = None,
    ) -> None:
        """`quote_skews`: Kev's, when Kev runs (none: quotes are not skewed)."""
        self.config = config
        self.venue = venue
        self.journal = journal
        self.events = events
        self._books = books
        self._actor = gate.actor  # who pulls quotes, named in the journaled reasons
        self._engine_clock = clock if clock is not None else WallClock()
        self._clock = self._engine_clock.time_ns
        self.quote_skews = quote_skews
        # Live, a fresh session per start keeps clientOids unique at the exchange across
        # restarts; in a replay the recording's start names it, so a rerun is identical.
        engine_clock = self._engine_clock
        self.session = (
            f"{engine_clock.time_ns() // 1_000_000 % 0xFFFFFF:06x}"
            if engine_clock.market
            else secrets.token_hex(3)
        )
        prefix = config.executor.client_oid_prefix
        self.gateway = RiskGateway(
            dataclasses.replace(config.risk, closing_client_oid_prefix=f"{prefix}{self.session}x")
        )
        self.strategies = {
            strategy.symbol: QuotingStrategy(
                strategy,
                config.instrument(strategy.symbol),
                config.risk.limits.for_symbol(strategy.symbol),
            )
            for strategy in config.strategies
        }
        """Each quoted symbol's, in the book's order."""
        self.hedger = (
            BookHedger(
                config.hedge,
                config.instrument(config.hedge.symbol),
                config.risk.limits.for_symbol(config.hedge.symbol),
            )
            if config.hedge is not None
            else None
        )
        self._hedge_capped = False
        """Whether the hedge is at its cap with the net delta outside the deadband (said once)."""
        self.executor = OrderExecutor(
            config.executor,
            self.gateway,
            venue,
            journal,
            events,
            session=self.session,
            clock=self._clock,
            on_fill=self._on_fill,
            on_risk_event=self._on_risk_event,
        )
        self.reaction = LatencyHistogram()
        self.paper = venue if isinstance(venue, PaperVenue) else None
        self._quoted = {
            symbol: _QuotedSymbol(strategy) for symbol, strategy in self.strategies.items()
        }
        self._hedge_spare = 1 if config.hedge is not None else 0
        """Orders a second the quotes leave to the hedge."""
        self._intents: dict[str, QuoteIntent] = {}
        self._resyncing: set[str] = set()
        self._sequence: asyncio.Task[CommandResult] | None = None
        self._sequence_name: str | None = None
        self.last_kill: CommandResult | None = None
        self.last_sequence: SequenceOutcome | None = None
        self._maintenance: Periodic | None = None
        self._hedge_scheduled = False
        self._hedge_interval_s = config.executor.hedge_interval_ms / 1000.0

    # Lifecycle

    async def start(self) -> None:
        """Reconcile with the venue and the journal, then start the periodic hedge check."""
        await self.executor.start(self._journal_open_orders())
        self._maintenance = Periodic(self._hedge_interval_s, self._maintain)

    async def stop(self) -> None:
        if self._maintenance is not None:
            self._maintenance.cancel()
        if self._sequence is not None and not self._sequence.done():
            self._sequence.cancel()
            await asyncio.gather(self._sequence, return_exceptions=True)
        await self.executor.stop()

    def _journal_open_orders(self) -> list[dict[str, object]]:
        path = self.journal.config.path
        if not path.is_file():
            return []
        since = self._clock() - int(self.config.executor.journal_lookback_h * 3_600e9)
        try:
            entries = read_journal(path, since_ns=since, kinds=_JOURNAL_ORDER_KINDS)
        except (OSError, ValueError, sqlite3.Error) as error:
            # Reconciliation with the exchange still runs; only the journal's view is missing.
            self.events.append(TradingFault(f"journal not read at start: {error}", self._clock()))
            return []
        return orders_open_in_journal(entries, self.venue.name)

    # The hot path

    def on_book(self, snapshot: BookSnapshot, intent: QuoteIntent) -> None:
        """After Laya's decision on a books15 frame (engine loop, synchronous)."""
        try:
            if intent is _CANCEL_ALL:
                self._on_emergency(snapshot)
            symbol = snapshot.symbol
            paper = self.paper
            if paper is not None:  # the venue matches on the whole book: one numpy call for both
                levels = snapshot.levels.tolist()
                bid_price, bid_size = levels[0][0], levels[1][0]
                ask_price, ask_size = levels[2][0], levels[3][0]
            else:
                bid_price, bid_size, ask_price, ask_size = snapshot.levels[:, 0].tolist()
            now = self._clock()
            if symbol in self._resyncing:
                self._resyncing.discard(symbol)
                self.executor.on_feed_health(symbol, True, "")
            self.executor.on_mark(symbol, bid_price, bid_size, ask_price, ask_size, now)
            if paper is not None:
                paper.on_levels(symbol, levels, snapshot.n_bids, snapshot.n_asks)
            previous = self._intents.get(symbol)
            self._intents[symbol] = intent
            quoted = self._quoted.get(symbol)
            if quoted is not None:
                self._requote(
                    quoted, bid_price, bid_size, ask_price, ask_size, intent, previous, now
                )
        except Exception as error:  # the feed goes on; the operator sees why trading did not
            logger.exception("trading desk failed on a book")
            self.events.append(
                TradingFault(f"desk: {type(error).__name__}: {error}", self._clock())
            )

    def on_trades(self, trades: Trades) -> None:
        if self.paper is not None:
            self.paper.on_trades(trades)

    def on_feed_event(self, event: FeedNotice) -> None:
        """A stale, reconnecting or resyncing feed blocks risk-increasing orders."""
        if isinstance(event, FeedStateChanged):
            healthy = event.state is FeedState.LIVE
            self.executor.on_feed_health(event.symbol, healthy, event.reason)
        elif isinstance(event, BookResyncNeeded):
            self._resyncing.add(event.symbol)
            self.executor.on_feed_health(event.symbol, False, f"resyncing: {event.reason}")

    def _on_emergency(self, snapshot: BookSnapshot) -> None:
        executor = self.executor
        ticket = None
        reaction_ns = None
        if executor.has_uncancelled_orders():
            ticket = executor.cancel_all_now(
                Source.STRATEGY, f"{self._actor} EMERGENCY on {snapshot.symbol}"
            )
            if ticket.sent_ns is not None:  # sent on this stack (the lane, the paper venue)
                reaction_ns = self._reaction(ticket, snapshot.recv_ns)
            else:  # the REST client stamps its send later, from the socket's write
                ticket.result.add_done_callback(
                    lambda _done, recv_ns=snapshot.recv_ns: self._reaction(ticket, recv_ns)
                )
        now = self._clock()
        quoted = self._quoted.get(snapshot.symbol)
        # The leader's (the hedge's, or a watched one's) EMERGENCY is the whole market's.
        cooled = (quoted.strategy,) if quoted is not None else tuple(self.strategies.values())
        first = any(not strategy.in_cooldown(now) for strategy in cooled)
        for strategy in cooled:
            strategy.on_emergency(now)
        if ticket is not None or first:
            action = f"cancel all ({ticket.path})" if ticket is not None else "cool down"
            self._verdict_acted(snapshot.symbol, _CANCEL_ALL, action, now, snapshot, reaction_ns)

    def _reaction(self, ticket: CancelAllTicket, recv_ns: int) -> int | None:
        """The frame's receive to the cancel's bytes leaving, recorded; on the engine clock's
        terms (CPU time in a replay, where market time stands still during the frame)."""
        if ticket.sent_ns is None:
            return None
        reaction_ns = max(0, self._engine_clock.reaction_ns(recv_ns, ticket.sent_ns))
        self.reaction.record(reaction_ns)
        return reaction_ns

    def _verdict_acted(
        self,
        symbol: str,
        intent: QuoteIntent,
        action: str,
        now: int,
        snapshot: BookSnapshot | None = None,
        reaction_ns: int | None = None,
    ) -> None:
        payload: dict[str, object] = {"symbol": symbol, "intent": intent.name, "action": action}
        if snapshot is not None:
            payload["exchange_ts_ms"] = snapshot.exchange_ts_ms
            payload["recv_ns"] = snapshot.recv_ns
        if reaction_ns is not None:
            payload["reaction_us"] = reaction_ns / 1e3
        with contextlib.suppress(JournalError):
            self.journal.append(EntryKind.VERDICT_ACTION, payload, now)
        self.events.append(VerdictActed(symbol, intent.name, action, now))

    def _requote(
        self,
        quoted: _QuotedSymbol,
        bid_price: float,
        bid_size: float,
        ask_price: float,
        ask_size: float,
        intent: QuoteIntent,
        previous: QuoteIntent | None,
        now: int,
    ) -> None:
        if self._sequence is not None and not self._sequence.done():
            return  # kill or flatten owns the orders now
        gateway = self.gateway
        symbol = quoted.symbol
        if gateway.stood_aside(symbol):
            return  # its quotes were pulled when it was stood aside (`_on_risk_event`)
        plan = quoted.strategy.quotes(
            bid_price,
            bid_size,
            ask_price,
            ask_size,
            gateway.position(symbol),
            gateway.position_cap(symbol),
            gateway.risk_scale,
            gateway.state,
            intent,
            now,
            self.quote_skews.bps(symbol) if self.quote_skews is not None else 0.0,
        )
        self._work_side(quoted, OrderRole.BID, OrderSide.BUY, plan.bid, intent, previous, now)
        self._work_side(quoted, OrderRole.ASK, OrderSide.SELL, plan.ask, intent, previous, now)

    def _work_side(
        self,
        quoted: _QuotedSymbol,
        role: OrderRole,
        side: OrderSide,
        wanted: Any,
        intent: QuoteIntent,
        previous: QuoteIntent | None,
        now: int,
    ) -> None:
        executor = self.executor
        client_oid = quoted.quotes[role]
        order = executor.order(client_oid) if client_oid is not None else None
        if order is None:
            quoted.quotes[role] = None
            gateway = self.gateway
            if wanted is None or not gateway.has_order_room(now, self._hedge_spare):
                return  # no room in the order rate now: the next book asks again
            if not wanted.reduce_only and not gateway.net_delta_fits(
                quoted.symbol, side, wanted.size
            ):
                return  # the book's net delta has no room on this side: a later book asks again
            intent_order = OrderIntent(
                quoted.symbol,
                side,
                wanted.size,
                wanted.price,
                OrderType.LIMIT,
                executor.new_client_oid(role),
                Source.STRATEGY,
                quoted.time_in_force,
                wanted.reduce_only,
                f"quote {role.value}",
            )
            if executor.submit(intent_order, role).approved:
                quoted.quotes[role] = intent_order.client_oid
            else:
                quoted.strategy.on_denied(side, now)
            return
        if order.cancel_requested:
            return
        pulled = (intent is _PULL_ASKS and side is OrderSide.SELL) or (
            intent is _PULL_BIDS and side is OrderSide.BUY
        )
        if wanted is None:
            reason = f"{self._actor} {intent.name}" if pulled else "not quoted now"
            executor.cancel(order.intent.client_oid, Source.STRATEGY, reason)
            if pulled and previous is not intent:
                self._verdict_acted(quoted.symbol, intent, f"pull {role.value}", now)
            return
        if order.state in _WAITING_STATES:
            return
        price = order.intent.price
        # A quote that drifted stays until its replacement has room in the order rate: a
        # slightly stale quote rests better than none.
        if (
            price is not None
            and quoted.strategy.wants_requote(price, order.remaining, wanted)
            and self.gateway.has_order_room(now, self._hedge_spare)
        ):
            executor.cancel(order.intent.client_oid, Source.STRATEGY, "requote")

    # Hedge

    def _on_fill(self, fill: FillUpdate) -> None:
        if not self._hedge_scheduled:
            self._hedge_scheduled = True
            asyncio.get_running_loop().call_soon(self._hedge)

    def _hedge(self) -> None:
        self._hedge_scheduled = False
        hedger = self.hedger
        if hedger is None or (self._sequence is not None and not self._sequence.done()):
            return
        executor = self.executor
        if executor.has_open_role(OrderRole.HEDGE):
            return  # one hedge at a time: the next one sees its fills
        gateway = self.gateway
        hedge_symbol = hedger.config.symbol
        if gateway.flatten_requested or gateway.stood_aside(hedge_symbol):
            return  # a hedge stood aside is not asked to trade (its orders would be denied)
        book = self._books.get(hedge_symbol)
        if book is None or not book.ready:
            return
        book_delta = gateway.book_delta()
        if book_delta is None:
            return  # a symbol holds a position without a mark yet: its delta is unknown
        bid, _, ask, _ = book.best()
        microprice = book.microprice()
        plan = hedger.plan(
            book_delta,
            gateway.position(hedge_symbol),
            bid,
            ask,
            microprice,
            gateway.hedge_ratio,
            gateway.max_slippage_bps,
            gateway.state,
            gateway.position_cap(hedge_symbol),
        )
        if plan is None:
            return
        # A state, said once each way: at the cap once what it leaves is beyond the deadband,
        # back under it once the target is within it (between the two it stays as it was).
        unhedged = plan.unhedged
        if self._hedge_capped:
            capped = unhedged != 0.0
        else:
            capped = abs(unhedged) > hedger.config.deadband_usdt
        if capped is not self._hedge_capped:
            self._hedge_capped = capped
            cap = hedger.grid.floor_size(plan.position_cap)
            now = self._clock()
            payload = {
                "hedge_capped": capped,
                "symbol": hedge_symbol,
                "position_cap": cap,
                "unhedged_usdt": unhedged,
            }
            with contextlib.suppress(JournalError):
                self.journal.append(EntryKind.STATE_CHANGE, payload, now)
            self.events.append(HedgeCapChanged(hedge_symbol, capped, cap, unhedged, now))
        order = plan.order
        if order is None or not gateway.has_order_room(self._clock()):
            return  # no room in the order rate now: the next check (a fill, the period) tries
        intent = OrderIntent(
            hedge_symbol,
            order.side,
            order.size,
            order.price,
            OrderType.LIMIT,
            executor.new_client_oid(OrderRole.HEDGE),
            Source.HEDGE,
            TimeInForce.IOC,
            order.reduce_only,
            f"hedge net delta {order.net_delta:+,.0f} USDT",
        )
        executor.submit(intent, OrderRole.HEDGE)

    def _maintain(self) -> None:
        try:
            self._hedge()
        except Exception as error:  # keep hedging alive; say what broke
            logger.exception("hedge check failed")
            self.events.append(TradingFault(f"hedge: {error}", self._clock()))

    # Gateway state changes

    def change_contract(self, instrument: Instrument) -> None:
        """The venue changed a traded contract's grid: new quotes and hedges follow it."""
        hedger = self.hedger
        if hedger is not None and instrument.symbol == hedger.config.symbol:
            hedger.change_grid(instrument)
        else:
            self.strategies[instrument.symbol].change_grid(instrument)

    def on_journal_fault(self, reason: str) -> None:
        """The journal cannot write: trading must not go on unjournaled, so HALT."""
        if self.gateway.state is TradingState.HALTED:
            self.executor.drain_risk_events()
        else:  # the kill's first half only: nobody waits for its answer
            self._apply(Command(Kill(f"journal fault: {reason}"), CommandSource.RISK))

    def _on_risk_event(self, event: RiskEvent) -> None:
        if isinstance(event, SymbolPauseChanged):
            if event.paused:
                self._pull_symbol(event.symbol, f"{event.symbol} stood aside: {event.reason}")
            return
        if not isinstance(event, TradingStateChanged):
            return
        new = event.new
        # A command's own kill or flatten has started (`_apply`) before its events come here:
        # what starts here is the gateway's own (a daily loss) or Kev's, carried out by risk.
        source = Source.RISK
        if new is TradingState.HALTED:
            self._start_sequence("kill", event.reason, source)
        elif new is TradingState.PAUSED:
            if self.executor.has_open_orders():
                self.executor.cancel_all_now(Source.RISK, f"paused: {event.reason}")
        elif new is TradingState.REDUCING:
            if self.gateway.snapshot().flatten_requested:
                self._start_sequence("flatten", event.reason, source)
            else:
                for quoted in self._quoted.values():
                    for client_oid in quoted.quotes.values():
                        if client_oid is not None:
                            self.executor.cancel(client_oid, Source.RISK, "reducing: requote")

    def _pull_symbol(self, symbol: str, reason: str) -> None:
        """Cancel every open order of `symbol`; the other symbols' orders stay."""
        executor = self.executor
        for order in executor.open_orders():
            if order.symbol == symbol:
                executor.cancel(order.client_oid, Source.RISK, reason)

    def _start_sequence(
        self, name: str, reason: str, source: Source
    ) -> asyncio.Task[CommandResult]:
        running = self._sequence
        if running is not None and not running.done():
            if self._sequence_name == name or name == "flatten":
                return running
            running.cancel()  # kill overrides a flatten in progress
        timeout_s = (
            self.config.executor.kill_timeout_s
            if name == "kill"
            else self.config.executor.flatten_timeout_s
        )
        self._sequence_name = name
        self._sequence = asyncio.get_running_loop().create_task(
            self._run_sequence(name, reason, source, timeout_s), name=f"desk-{name}"
        )
        return self._sequence

    async def _run_sequence(
        self, name: str, reason: str, source: Source, timeout_s: float
    ) -> CommandResult:
        outcome = await run_close_sequence(self.executor, source, f"{name}: {reason}", timeout_s)
        self.last_sequence = outcome
        if outcome.ok and self.gateway.state is TradingState.REDUCING:
            now = self._clock()
            for position in self.gateway.snapshot().positions:  # flat: flatten completes
                self.gateway.on_position_sync(position.symbol, 0.0, 0.0, now)
        self.executor.drain_risk_events()
        result = CommandResult(name, outcome.ok, outcome.message, outcome.elapsed_ms)
        if name == "kill":
            self.last_kill = result
        return result

    # Commands

    async def execute(self, command: Command) -> CommandResult:
        """The one way in for every command that changes risk or orders: the gateway judges
        and applies it by its rules for the source (Kev may only tighten), a kill or flatten is
        carried until the venue confirms flat, then it is journaled and emitted as its source
        says (`CommandSource.journaled`)."""
        loop = asyncio.get_running_loop()
        started = loop.time()  # the engine clock's
        request = command.request
        nothing = False
        if isinstance(request, Flatten):
            # Checked again after the venue's answer: an order or a fill may have come meanwhile.
            nothing = await holds_nothing(self.executor) and not self.executor.has_open_orders()
        applied = self._apply(command, nothing)
        if isinstance(applied, asyncio.Task):
            try:
                result = await asyncio.shield(applied)
            except asyncio.CancelledError:
                if not applied.cancelled():  # this command itself is cancelled, not its sequence
                    raise
                # A kill took over the flatten's sequence (`_start_sequence`): say so.
                result = CommandResult(request.name, False, "superseded by the kill switch")
            if isinstance(request, Flatten) and result.ok:
                state = self.gateway.state.name
                result = dataclasses.replace(result, message=f"{result.message}; now {state}")
        else:
            result = applied
        if isinstance(request, Kill | Flatten):
            result = dataclasses.replace(result, elapsed_ms=(loop.time() - started) * 1000)
            if isinstance(request, Kill):
                self.last_kill = result
        if command.source.journaled:
            self._journal_command(result, _journaled_arguments(request))
        return result

    def _apply(
        self, command: Command, nothing: bool = False
    ) -> CommandResult | asyncio.Task[CommandResult]:
        """The gateway's part of a command, at once, its events drained (so a flatten or a
        pause acts now, not at the next frame): the result, or the close sequence under way.
        `nothing`: a flatten found no orders and no positions here or at the venue."""
        request = command.request
        gateway = self.gateway
        now = self._clock()
        try:
            match request:
                case Kill(reason=reason):
                    gateway.kill(now, reason)
                    return self._start_sequence("kill", reason, command.source.sequence)
                case Flatten():
                    outcome = gateway.flatten(now)
                    if nothing and gateway.state is not TradingState.REDUCING:
                        message = (
                            f"nothing to flatten: no orders, no positions; now {gateway.state.name}"
                        )
                        return CommandResult("flatten", True, message)
                    reason = f"operator flatten ({outcome.text})"
                    return self._start_sequence("flatten", reason, command.source.sequence)
                case Pause():
                    outcome = gateway.pause(now)
                case Resume():
                    outcome = gateway.resume(now)
                case PauseSymbol(symbol=symbol, reason=reason):
                    outcome = gateway.pause_symbol(symbol, now, reason, command.source.sequence)
                case ResumeSymbol(symbol=symbol, reason=reason):
                    outcome = gateway.resume_symbol(symbol, now, reason, command.source.sequence)
                case Rearm(confirmation=confirmation):
                    outcome = gateway.rearm(now, confirmation)
                case SetLimits(overrides=overrides):
                    problems = (
                        ["no override given"]
                        if overrides.empty
                        else overrides.problems(gateway.config.bounds)
                    )
                    outcome = (
                        CommandOutcome(False, "; ".join(problems))
                        if problems
                        else gateway.set_limits(overrides, now)
                    )
                case KevOrder(
                    action=action, risk_scale=risk_scale, hedge_ratio=hedge_ratio, beta=beta
                ):
                    return self._said_if_unquotable(
                        kev_result(
                            gateway.apply_kev_command(action, risk_scale, hedge_ratio, now, beta)
                        )
                    )
            result = CommandResult(request.name, outcome.accepted, outcome.text)
            return self._said_if_unquotable(result) if isinstance(request, SetLimits) else result
        finally:
            self.executor.drain_risk_events()

    def _said_if_unquotable(self, result: CommandResult) -> CommandResult:
        """A limit change that leaves a symbol's quote size (times the risk scale) or position
        cap (`RiskGateway.position_cap`) under one lot stops its quoting (TradingConfig refuses
        that at start): say so."""
        if not result.ok:
            return result
        gateway = self.gateway
        notes = []
        for symbol, strategy in self.strategies.items():
            grid = strategy.grid
            quote = strategy.config.quote_size * gateway.risk_scale
            room = gateway.position_cap(symbol)
            if grid.floor_size(quote) <= 0 or grid.floor_size(room) <= 0:
                notes.append(
                    f"the quote size {quote:g} or the position cap {room:g} {symbol} is now "
                    f"under one lot ({grid.lot:g}): {symbol} is not quoted until it is raised"
                )
        if not notes:
            return result
        return dataclasses.replace(result, message="; ".join((result.message, *notes)))

    @property
    def clock(self) -> Callable[[], int]:
        """The desk's clock (epoch ns); Kev's hub runs on the same one."""
        return self._clock

    def _journal_command(self, result: CommandResult, arguments: dict[str, object]) -> None:
        now = self._clock()
        payload = {
            "command": result.command,
            "ok": result.ok,
            "message": result.message,
            "elapsed_ms": round(result.elapsed_ms, 3),
            **arguments,
        }
        with contextlib.suppress(JournalError):
            self.journal.append(EntryKind.OPERATOR_COMMAND, payload, now)
        self.events.append(
            CommandExecuted(result.command, result.ok, result.message, result.elapsed_ms, now)
        )

    # Status

    def status(self) -> TradingStatus:
        risk = self.gateway.snapshot()
        histogram = self.reaction
        now = self._clock()
        running = (
            self._sequence_name
            if self._sequence is not None and not self._sequence.done()
            else None
        )
        return TradingStatus(
            mode=self.config.mode.value,
            venue=self.venue.name,
            session=self.session,
            risk=risk,
            open_orders=self.executor.open_orders(),
            recent_orders=self.executor.recent_orders(),
            private_stream=self.venue.stream_state.value,
            venue_stats=self.venue.stats(),
            executor=self.executor.stats(),
            reaction=ReactionFigures(
                histogram.count,
                histogram.percentile_ns(50) / 1e3,
                histogram.percentile_ns(99) / 1e3,
                histogram.max_ns / 1e3,
            ),
            running=running,
            last_kill=self.last_kill,
            cooldowns_ms={
                symbol: max(0.0, (strategy.cooldown_until_ns - now) / 1e6)
                for symbol, strategy in self.strategies.items()
            },
        )


def _journaled_arguments(request: Request) -> dict[str, object]:
    """What an operator command's journal entry adds to its outcome."""
    if isinstance(request, Kill):
        return {"reason": request.reason}
    if isinstance(request, SetLimits):
        return request.overrides.journaled()
    if isinstance(request, PauseSymbol | ResumeSymbol):
        return {"symbol": request.symbol, "reason": request.reason}
    return {}
