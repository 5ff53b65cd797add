"""KevHub: the slow hub between Laya's verdicts and the risk gateway.

The engine loop calls `offer` for every non-HOLD verdict; it queues (or coalesces) a snapshot
and returns at once. Up to `max_in_flight` workers take requests from the queue (EMERGENCY
first), build the context from the snapshot, the gateway's state and the pair's hedge
analytics, ask llama-server through `KevClient`, and judge the answer:

- REJECTED: no valid command came back (server down or loading, timeout, HTTP error, cut at
  max_tokens, invalid JSON, schema violation): nothing is applied.
- STALE: a valid command, but its context is older than the command's ttl, or the mid has
  since moved more than `max_mid_move_bps`: nothing is applied.
- REFUSED: the gateway refused at least part of it (raising the risk scale, leaving PAUSED,
  ...): what the gateway did accept stays applied (see `RiskGateway.apply_kev_command`), the
  quote skew is not applied.
- ACCEPTED: the gateway applied it (clamps are noted); the quote skew is in force for the
  symbol until the command's ttl runs out.

Every decision, whatever its outcome, ends in one place (`_conclude`): it goes into a bounded
log for the UI (the console's Kev pane and events) and, given a journal, into the journal as
one `kev_decision` entry. A request whose context waited longer than the longest ttl Kev may
give is expired without asking (counted, not logged). While the server is offline or loading,
requests wait in the queue (still coalesced and bounded); a health probe every
`health_interval_s` brings the hub back when the server appears, after one warm-up request
that fills llama-server's prompt cache (a cold CPU server spends longer on the system prompt
than a decision may take). The hub runs on the engine loop, so it may read the gateway
directly; it changes it only through `execute` (the trading desk's, in the engine).
"""

from __future__ import annotations

import asyncio
import enum
import logging
import math
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import NamedTuple, TypeVar

from engine.clock import EngineClock, WallClock
from engine.journal import EntryKind, Journal, JournalError, JournalFault
from engine.kev.answers import KevAnswerRecorder, RecordedKevClient
from engine.kev.client import (
    SERVER_DOWN,
    KevClient,
    KevFailure,
    KevHealth,
    KevReply,
    KevTimings,
)
from engine.kev.command import KevCommand, stale_reason
from engine.kev.config import KevHubConfig
from engine.kev.context import displayed_percent, format_context, warmup_context
from engine.kev.hedge import HedgeAnalytics, HedgeStats
from engine.kev.queue import KevQueue, KevRequest, KevSnapshot
from engine.laya.verdict import Verdict
from engine.risk.commands import KevCommandOutcome
from engine.risk.gateway import RiskGateway
from engine.risk.snapshot import RiskSnapshot
from engine.trading.commands import Command, CommandResult, CommandSource, KevOrder, kev_result
from engine.trading.events import TradingFault
from engine.trading.quote_skews import QuoteSkews

logger = logging.getLogger(__name__)

_VERDICT_NAMES = tuple(verdict.name for verdict in Verdict)
_T = TypeVar("_T")
_REAL_LIMIT_MARGIN_S = 0.5
"""In a replay, how long after the client's own limit a request is given up on the real clock."""
_JOURNALED_RAW_CHARS = 2_000
"""The most of an answer without a command that its journal entry keeps (a well-behaved
server sends at most `max_tokens`, a few hundred characters)."""

KevExecute = Callable[[Command], Awaitable[CommandResult]]
"""How an in-time command reaches the gateway: `TradingDesk.execute` in the engine, the one way
in for every command; its result's `kev` says what the gateway did."""


class KevOutcome(enum.Enum):
    ACCEPTED = "accepted"
    REFUSED = "refused"
    REJECTED = "rejected"
    STALE = "stale"


class KevLink(enum.Enum):
    OFFLINE = "offline"
    LOADING = "loading"
    WARMING = "warming"
    ONLINE = "online"


class KevDecision(NamedTuple):
    """One consultation of Kev and what became of it. `queue_wait_ms` runs from when the
    symbol started waiting to when the request was sent; `wall_ms` is the request itself;
    `context_age_ms` is the context's age when the answer was judged (the hub's clock).
    `gateway` is what the gateway did with the command (None: it never got that far)."""

    id: int
    at_ns: int
    symbol: str
    verdict: str
    outcome: KevOutcome
    reason: str
    command: KevCommand | None
    raw: str
    model: str
    wall_ms: float
    queue_wait_ms: float
    timings: KevTimings | None
    coalesced: int
    context_age_ms: float = math.nan
    gateway: KevCommandOutcome | None = None


class KevWarmUpEnded(NamedTuple):
    """The prompt cache's warm-up request came back (or failed): `ok` when the server
    evaluated the prompt, `duration_ms` its round trip, `text` what happened, for the operator."""

    ok: bool
    duration_ms: float
    text: str
    at_ns: int


class KevStatus(NamedTuple):
    """The hub at a glance: `state` is offline, loading, warming (the warm-up request in
    flight), online or busy (a decision in flight); `detail` says why when it is not online.
    `warmup` says what the last warm-up did, `warmup_ms` how long it took."""

    state: str
    detail: str
    model: str
    last_latency_ms: float | None
    queue_depth: int
    in_flight: int
    offered: int
    coalesced: int
    dropped: int
    expired: int
    outcomes: Mapping[str, int]
    warmup: str = ""
    warmup_ms: float | None = None


class KevHub:
    """Consumes the queue, asks Kev, applies in-time commands through `execute`.

    `clock` is the engine's clock in epoch ns (the gateway's `now_ns`): contexts' ages, ttls,
    skews and journal times all follow it. `mid_of(symbol)` gives the current mid for the
    staleness check; without it the gateway's marks are used. `hedge` holds each quoted
    symbol's analytics with the hedge, fed by the engine; a context on a symbol carries its
    pair's statistics (`_pair_stats`). `execute` takes a command to the
    gateway (without a desk: the gateway's own `apply_kev_command`). `journal` gets one
    `kev_decision` entry per decision. `on_event` gets the hub's events (the warm-up's end, a
    decision the journal refused) for the engine's event log.

    In a replay (`engine_clock` a MarketClock) market time stands still while a request is out
    to llama-server (its time limits then run on the real clock) and an answer takes effect
    `latency_scale` times its latency after its request, never earlier; `recorder` writes each
    answer for a rerun, which `client` (a RecordedKevClient) plays back.
    """

    def __init__(
        self,
        config: KevHubConfig,
        client: KevClient,
        gateway: RiskGateway,
        clock: Callable[[], int] = WallClock.time_ns,
        *,
        hedge: Mapping[str, HedgeAnalytics] | None = None,
        mid_of: Callable[[str], float | None] | None = None,
        execute: KevExecute | None = None,
        journal: Journal | None = None,
        on_event: Callable[[object], None] | None = None,
        engine_clock: EngineClock | None = None,
        recorder: KevAnswerRecorder | None = None,
        skews: QuoteSkews | None = None,
    ) -> None:
        self.config = config
        self._client = client
        self._engine_clock = engine_clock if engine_clock is not None else WallClock()
        self._recorder = recorder
        self._gateway = gateway
        self._clock = clock
        self._hedge: Mapping[str, HedgeAnalytics] = hedge or {}
        self._mid_of = mid_of or self._gateway_mid
        self._execute = execute or self._apply_to_gateway
        self._journal = journal
        self._on_event = on_event
        self._journal_fault_said = False
        self._warmup = ""
        self._warmup_ms: float | None = None
        self._queue = KevQueue(config.queue_capacity, config.overflow)
        self._max_context_age_ms = client.spec.ttl_ms[1]
        self._pending = asyncio.Event()
        # Bound once: `offer` runs on the fast path.
        self._enqueue = self._queue.offer
        self._wake = self._pending.set
        self._online = asyncio.Event()
        self._link = KevLink.OFFLINE
        self._link_detail = "not started"
        self._model = ""
        self._tasks: list[asyncio.Task[None]] = []
        self._in_flight = 0
        self._expired = 0
        self._last_latency_ms: float | None = None
        self._log: deque[KevDecision] = deque(maxlen=config.decision_log_size)
        self._next_id = 0
        self._outcomes = dict.fromkeys((outcome.value for outcome in KevOutcome), 0)
        self.skews = skews if skews is not None else QuoteSkews(clock)
        """The quote skews of Kev's accepted commands (the desk quotes with the same)."""
        self._movable_betas = frozenset(
            symbol for symbol, (low, high) in gateway.config.bounds.betas.items() if low < high
        )
        """The quoted symbols whose beta Kev may move: the ranges the gateway's bounds hold
        (none without a hedge, none at the default beta band)."""

    # Lifecycle

    async def start(self) -> None:
        if self._tasks:
            raise RuntimeError("KevHub is already started")
        self._link_detail = "waiting for the first health probe"
        self._tasks.append(asyncio.create_task(self._watch_health(), name="kev-health"))
        for worker in range(self.config.max_in_flight):
            self._tasks.append(asyncio.create_task(self._work(), name=f"kev-worker-{worker}"))

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._set_link(KevLink.OFFLINE, "stopped")

    # The engine loop

    def offer(self, snapshot: KevSnapshot) -> bool:
        """Queue the context of a non-HOLD verdict; never blocks. False when it was dropped."""
        if self._enqueue(snapshot, self._clock()):
            self._wake()  # a no-op while already set
            return True
        return False

    # The UI's view

    def decisions(self, limit: int = 50) -> tuple[KevDecision, ...]:
        """The latest decisions, oldest first."""
        if limit <= 0:
            return ()
        return tuple(self._log)[-limit:]

    def status(self) -> KevStatus:
        link = self._link
        state = "busy" if link is KevLink.ONLINE and self._in_flight else link.value
        queue = self._queue
        return KevStatus(
            state,
            self._link_detail,
            self._model,
            self._last_latency_ms,
            len(queue),
            self._in_flight,
            queue.offered,
            queue.coalesced,
            queue.dropped,
            self._expired,
            dict(self._outcomes),
            self._warmup,
            self._warmup_ms,
        )

    # Workers

    def _set_link(self, link: KevLink, detail: str) -> None:
        self._link = link
        self._link_detail = detail
        if link is KevLink.ONLINE:
            self._online.set()
        else:
            self._online.clear()

    async def _watch_health(self) -> None:
        client = self._client
        probe_s = _probe_timeout_s(client)
        while True:
            health = await self._on_real_clock(
                client.health(), probe_s, KevHealth("unreachable", f"no answer in {probe_s:g} s")
            )
            if health.state == "ok":
                if self._link is not KevLink.ONLINE:
                    props = await self._on_real_clock(client.props(), probe_s, None)
                    if props is not None and props.model:
                        self._model = props.model
                    # Recorded answers have no server behind them: no prompt cache to warm.
                    if self.config.warmup_timeout_s is None or isinstance(
                        client, RecordedKevClient
                    ):
                        self._set_link(KevLink.ONLINE, "")
                    else:
                        await self._warm_up_safely(self.config.warmup_timeout_s)
            elif health.state == "loading":
                self._set_link(KevLink.LOADING, health.detail)
            else:
                self._set_link(KevLink.OFFLINE, health.detail)
            if self._recorder is not None:  # a rerun's probe finds the link this one left
                self._recorder.record_link(KevHealth(_LINK_HEALTH[self._link], self._link_detail))
            await asyncio.sleep(self.config.health_interval_s)

    async def _warm_up_safely(self, timeout_s: float) -> None:
        try:
            await self._warm_up(timeout_s)
        except Exception as error:  # a bug here must not keep Kev offline for the session
            logger.exception("Kev's warm-up failed")
            text = f"warm-up failed: internal error: {error!r}"
            self._warmup, self._warmup_ms = text, None
            self._set_link(KevLink.ONLINE, "")
            self._emit(KevWarmUpEnded(False, 0.0, text, self._clock()))

    async def _warm_up(self, timeout_s: float) -> None:
        """One request with the real system prompt and a neutral context before any decision,
        so that the first decision after the server came (back) finds the prompt cached. Not a
        decision: its answer is never applied nor journaled; its end is an event."""
        self._set_link(KevLink.WARMING, f"warming the prompt cache (up to {timeout_s:g} s)")
        self._warmup = "warming the prompt cache"
        symbol = self._gateway.config.limits.symbols[0].symbol
        context = warmup_context(
            symbol, self._gateway.snapshot(), self._pair_stats(symbol), self._clock()
        )
        client = self._client
        assert isinstance(client, KevClient)
        reply = await self._on_real_clock(
            client.ask(context, timeout_s=timeout_s), timeout_s, _timed_out(timeout_s)
        )
        if reply.model:
            self._model = reply.model
        seconds = reply.wall_ms / 1e3
        timings, failure = reply.timings, reply.failure
        if failure is not None and timings is None:
            warmed = False
            text = f"warm-up failed after {seconds:.1f} s: {failure.value}: {reply.reason}"
        else:  # the server evaluated the prompt, whatever its answer's own faults
            warmed = True
            tokens = (
                f" ({timings.prompt_n} prompt tokens evaluated, {timings.cache_n} cached)"
                if timings is not None
                else ""
            )
            text = f"prompt cache warmed in {seconds:.1f} s{tokens}"
            if failure is not None:
                text += f"; its answer was {failure.value}: {reply.reason}"
        self._warmup, self._warmup_ms = text, reply.wall_ms
        if failure in SERVER_DOWN:
            link = KevLink.LOADING if failure is KevFailure.LOADING else KevLink.OFFLINE
            self._set_link(link, f"warm-up: {reply.reason}")
        else:  # the server answered: decisions may go ahead (and say why if they fail)
            self._set_link(KevLink.ONLINE, "")
        self._emit(KevWarmUpEnded(warmed, reply.wall_ms, text, self._clock()))

    async def _work(self) -> None:
        queue = self._queue
        while True:
            await self._online.wait()
            request = queue.take()
            if request is None:
                self._pending.clear()
                await self._pending.wait()
                continue
            if (self._clock() - request.context_ns) / 1e6 > self._max_context_age_ms:
                self._expired += 1
                continue
            self._in_flight += 1
            try:
                await self._consult(request)
            except Exception as error:  # a bug here must not stop Kev for the session
                logger.exception("Kev consultation failed")
                reason = f"internal error: {error!r}"
                self._conclude(request, KevOutcome.REJECTED, reason, None, 0.0, self._clock())
            finally:
                self._in_flight -= 1

    async def _consult(self, request: KevRequest) -> None:
        risk = self._gateway.snapshot()
        hedge = self._pair_stats(request.snapshot.symbol)
        waited_ms = (self._clock() - request.first_queued_ns) / 1e6
        reply = await self._answer(request, format_context(request, risk, hedge, waited_ms))
        self._last_latency_ms = reply.wall_ms
        if reply.model:
            self._model = reply.model
        now_ns = self._clock()
        command = reply.command
        if command is None:
            failure = reply.failure
            if failure in SERVER_DOWN:
                link = KevLink.LOADING if failure is KevFailure.LOADING else KevLink.OFFLINE
                self._set_link(link, reply.reason)
            reason = f"{failure.value if failure else 'failed'}: {reply.reason}"
            self._conclude(request, KevOutcome.REJECTED, reason, reply, waited_ms, now_ns)
            return
        snapshot = request.snapshot
        stale = stale_reason(
            command.ttl_ms,
            (now_ns - request.context_ns) / 1e6,
            snapshot.mid,
            self._mid_of(snapshot.symbol),
            self.config.max_mid_move_bps,
        )
        if stale:
            self._conclude(request, KevOutcome.STALE, stale, reply, waited_ms, now_ns)
            return
        order = KevOrder(
            command.action,
            _changed(command.risk_scale, risk.risk_scale),
            _changed(command.hedge_ratio, risk.hedge_ratio),
            _beta_changed(command, snapshot.symbol, risk, self._movable_betas),
        )
        outcome = (await self._execute(Command(order, CommandSource.KEV))).kev
        assert outcome is not None
        notes = "; ".join(outcome.notes)
        if not outcome.accepted:
            self._conclude(request, KevOutcome.REFUSED, notes, reply, waited_ms, now_ns, outcome)
            return
        self.skews.set(
            snapshot.symbol, command.skew_bps, request.context_ns + command.ttl_ms * 1_000_000
        )
        beta_set = "" if outcome.beta is None else f", beta {snapshot.symbol} {outcome.beta:g}"
        summary = (
            f"{command.action.value}: {outcome.state.name}, risk {outcome.risk_scale:g}, "
            f"hedge {outcome.hedge_ratio:g}{beta_set}, skew {command.skew_bps:+g} bps for "
            f"{command.ttl_ms} ms"
        )
        reason = f"{summary}; {notes}" if notes else summary
        self._conclude(request, KevOutcome.ACCEPTED, reason, reply, waited_ms, now_ns, outcome)

    async def _answer(self, request: KevRequest, context: str) -> KevReply:
        """Kev's reply to `request`, in force from now: live, once it arrived; in a replay,
        its latency (scaled) of market time after the request."""
        snapshot = request.snapshot
        verdict = Verdict(snapshot.verdict).name
        client = self._client
        if isinstance(client, RecordedKevClient):
            reply = client.answer(snapshot.symbol, verdict, request.context_ns)
        else:
            limit_s = client.config.request_timeout_s
            reply = await self._on_real_clock(client.ask(context), limit_s, _timed_out(limit_s))
            if self._recorder is not None:
                self._recorder.record(snapshot.symbol, verdict, request.context_ns, reply)
        if self._engine_clock.market:
            await asyncio.sleep(reply.wall_ms / 1e3 * self.config.latency_scale)
        return reply

    async def _on_real_clock(self, call: Awaitable[_T], limit_s: float, timed_out: _T) -> _T:
        """A request to llama-server. In a replay market time stands still while it is out,
        and the client's own time limits (on the loop's market time) with it: this one runs on
        the real clock, a little after the client's."""
        if not self._engine_clock.market:
            return await call
        try:
            return await self._engine_clock.real_wait(call, limit_s + _REAL_LIMIT_MARGIN_S)
        except TimeoutError:
            return timed_out

    async def _apply_to_gateway(self, command: Command) -> CommandResult:
        order = command.request
        assert isinstance(order, KevOrder)
        return kev_result(
            self._gateway.apply_kev_command(
                order.action, order.risk_scale, order.hedge_ratio, self._clock(), order.beta
            )
        )

    def _pair_stats(self, symbol: str) -> HedgeStats | None:
        """The statistics of `symbol`'s pair with the hedge; for the hedge itself (or a
        symbol without one), the first quoted symbol's pair (a pair's only one)."""
        analytics = self._hedge.get(symbol) or next(iter(self._hedge.values()), None)
        return analytics.stats() if analytics is not None else None

    def _gateway_mid(self, symbol: str) -> float | None:
        for view in self._gateway.snapshot().positions:
            if view.symbol == symbol:
                return view.mark_price
        return None

    def _conclude(
        self,
        request: KevRequest,
        outcome: KevOutcome,
        reason: str,
        reply: KevReply | None,
        waited_ms: float,
        now_ns: int,
        gateway: KevCommandOutcome | None = None,
    ) -> None:
        """The one end of every decision: counted, logged for the console, journaled."""
        snapshot = request.snapshot
        # A failed request names no model: the one the server last named answered for it.
        model = (reply.model if reply is not None else "") or self._model
        decision = KevDecision(
            self._next_id,
            now_ns,
            snapshot.symbol,
            _VERDICT_NAMES[snapshot.verdict],
            outcome,
            reason,
            reply.command if reply is not None else None,
            reply.raw if reply is not None else "",
            model,
            reply.wall_ms if reply is not None else 0.0,
            waited_ms,
            reply.timings if reply is not None else None,
            request.coalesced,
            (now_ns - request.context_ns) / 1e6,
            gateway,
        )
        self._next_id += 1
        self._outcomes[outcome.value] += 1
        self._log.append(decision)
        self._journal_decision(decision, snapshot)

    def _journal_decision(self, decision: KevDecision, snapshot: KevSnapshot) -> None:
        journal = self._journal
        if journal is None:
            return
        entry = decision_entry(decision, snapshot)
        unjournaled = f"Kev decision {decision.id} not journaled"
        try:
            journal.append(EntryKind.KEV_DECISION, entry, decision.at_ns)
        except JournalFault as error:  # trading has halted and said why; say it here once
            if not self._journal_fault_said:
                self._journal_fault_said = True
                self._emit(TradingFault(f"{unjournaled}: {error}", decision.at_ns))
        except (JournalError, RuntimeError, TypeError, ValueError) as error:
            # Backpressure, a journal not running, a time the journal cannot store.
            self._emit(TradingFault(f"{unjournaled}: {error}", decision.at_ns))

    def _emit(self, event: object) -> None:
        if self._on_event is not None:
            self._on_event(event)


def gateway_result(outcome: KevCommandOutcome) -> str:
    """`refused` when the gateway refused any part, `clamped` when it applied everything but
    clamped a value, else `accepted`."""
    if not outcome.accepted:
        return "refused"
    return "clamped" if outcome.notes else "accepted"


def decision_entry(decision: KevDecision, snapshot: KevSnapshot) -> dict[str, object]:
    """A decision as its journal entry (`kev_decision`): what triggered it, what Kev said,
    what the gateway did and why."""
    command = decision.command
    gateway = decision.gateway
    timings = decision.timings
    return {
        "decision": decision.id,
        "symbol": decision.symbol,
        "verdict": decision.verdict,
        "probabilities": [round(float(p), 4) for p in snapshot.probabilities],
        "coalesced": decision.coalesced,
        "outcome": decision.outcome.value,
        "reason": decision.reason,
        "model": decision.model,
        "context_age_ms": round(decision.context_age_ms, 3),
        "queue_wait_ms": round(decision.queue_wait_ms, 3),
        "latency_ms": round(decision.wall_ms, 3),
        "command": None
        if command is None
        else {
            "action": command.action.value,
            "risk_scale": command.risk_scale,
            "hedge_ratio": command.hedge_ratio,
            "beta": command.beta,
            "skew_bps": command.skew_bps,
            "ttl_ms": command.ttl_ms,
        },
        "reasoning": command.reasoning if command is not None else "",
        "raw": "" if command is not None else decision.raw[:_JOURNALED_RAW_CHARS],
        "gateway": None
        if gateway is None
        else {
            "result": gateway_result(gateway),
            "notes": list(gateway.notes),
            "state": gateway.state.name,
            "risk_scale": gateway.risk_scale,
            "hedge_ratio": gateway.hedge_ratio,
            "beta": gateway.beta,
        },
        "timings": None if timings is None else timings._asdict(),
    }


def _changed(proposed: float, current: float) -> float | None:
    """Kev's value, or None when it only repeats what the context showed (whole percent,
    rounded down), so that echoing the shown value never moves the real one."""
    if round(proposed * 100) == displayed_percent(current):
        return None
    return proposed


def _beta_changed(
    command: KevCommand, symbol: str, risk: RiskSnapshot, movable: frozenset[str]
) -> tuple[str, float] | None:
    """The flagged symbol and Kev's beta for it, or None when there is nothing to move: the
    symbol's beta is not `movable` (the hedge, a book without a hedge, a range of one value),
    the beta only repeats the shown one (`_changed`), or the answer was recorded without one."""
    if command.beta is None or symbol not in movable:
        return None
    beta = _changed(command.beta, risk.betas[symbol])
    return None if beta is None else (symbol, beta)


_LINK_HEALTH = {KevLink.ONLINE: "ok", KevLink.LOADING: "loading", KevLink.OFFLINE: "unreachable"}
"""The health a probe must report for the hub to end up at a link (after a probe the link
is never WARMING: the warm-up ends within it)."""


def _timed_out(limit_s: float) -> KevReply:
    return KevReply(
        None, KevFailure.TIMEOUT, f"no answer within {limit_s:g} s", "", "", limit_s * 1e3, None, ""
    )


def _probe_timeout_s(client: KevClient | RecordedKevClient) -> float:
    return client.config.probe_timeout_s if isinstance(client, KevClient) else 1.0
