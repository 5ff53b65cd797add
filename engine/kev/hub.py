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

Every decision goes into a bounded log for the UI, with the reason. A request whose context
waited longer than the longest ttl Kev may give is expired without asking (counted, not
logged). While the server is offline or loading, requests wait in the queue (still coalesced
and bounded); a health probe every `health_interval_s` brings the hub back online when the
server appears. The hub runs on the engine loop, so it may read the gateway directly.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from engine.kev.client import SERVER_DOWN, KevClient, KevFailure, KevReply, KevTimings
from engine.kev.command import KevCommand, stale_reason
from engine.kev.context import displayed_percent, format_context
from engine.kev.hedge import HedgeAnalytics
from engine.kev.queue import KevQueue, KevQueueOverflow, KevRequest, KevSnapshot
from engine.laya.verdict import Verdict
from engine.risk.gateway import RiskGateway

logger = logging.getLogger(__name__)

_VERDICT_NAMES = tuple(verdict.name for verdict in Verdict)


class KevOutcome(enum.Enum):
    ACCEPTED = "accepted"
    REFUSED = "refused"
    REJECTED = "rejected"
    STALE = "stale"


class KevLink(enum.Enum):
    OFFLINE = "offline"
    LOADING = "loading"
    ONLINE = "online"


class KevDecision(NamedTuple):
    """One consultation of Kev and what became of it. `queue_wait_ms` runs from when the
    symbol started waiting to when the request was sent; `wall_ms` is the request itself."""

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


class KevStatus(NamedTuple):
    """The hub at a glance: `state` is offline, loading, online or busy (a request in flight);
    `detail` says why when it is not online."""

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


@dataclass(frozen=True, slots=True)
class KevHubConfig:
    """`max_in_flight`: concurrent requests (1: one GPU, one slot). `queue_capacity` symbols
    may wait, `overflow` says who is dropped beyond that. A command is stale when the mid moved
    more than `max_mid_move_bps` since its context. `decision_log_size` decisions are kept."""

    max_in_flight: int = 1
    queue_capacity: int = 8
    overflow: KevQueueOverflow = KevQueueOverflow.DROP_OLDEST
    max_mid_move_bps: float = 5.0
    decision_log_size: int = 256
    health_interval_s: float = 2.0

    def __post_init__(self) -> None:
        for name in ("max_in_flight", "queue_capacity", "decision_log_size"):
            value = getattr(self, name)
            if not (isinstance(value, int) and value >= 1):
                raise ValueError(f"KevHubConfig.{name} must be an integer >= 1, got {value!r}")
        if not isinstance(self.overflow, KevQueueOverflow):
            raise ValueError(
                f"KevHubConfig.overflow must be a KevQueueOverflow, got {self.overflow!r}"
            )
        for name in ("max_mid_move_bps", "health_interval_s"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and 0 < value < math.inf):
                raise ValueError(f"KevHubConfig.{name} must be a positive number, got {value!r}")


class KevHub:
    """Consumes the queue, asks Kev, applies accepted commands through the gateway.

    `clock` is the engine's clock in epoch ns (the gateway's `now_ns`). `mid_of(symbol)` gives
    the current mid for the staleness check; without it the gateway's marks are used. `hedge`
    is the pair's analytics, fed by the engine; its statistics join every context.
    """

    def __init__(
        self,
        config: KevHubConfig,
        client: KevClient,
        gateway: RiskGateway,
        clock: Callable[[], int] = time.time_ns,
        *,
        hedge: HedgeAnalytics | None = None,
        mid_of: Callable[[str], float | None] | None = None,
    ) -> None:
        self.config = config
        self._client = client
        self._gateway = gateway
        self._clock = clock
        self._hedge = hedge
        self._mid_of = mid_of or self._gateway_mid
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
        self._skews: dict[str, tuple[float, int]] = {}

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

    def quote_skew_bps(self, symbol: str) -> float:
        """The quote skew Kev's last accepted command set for `symbol`, until its ttl ends."""
        skew = self._skews.get(symbol)
        if skew is None:
            return 0.0
        if self._clock() >= skew[1]:
            del self._skews[symbol]
            return 0.0
        return skew[0]

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
        while True:
            health = await client.health()
            if health.state == "ok":
                if self._link is not KevLink.ONLINE:
                    props = await client.props()
                    if props is not None and props.model:
                        self._model = props.model
                self._set_link(KevLink.ONLINE, "")
            elif health.state == "loading":
                self._set_link(KevLink.LOADING, health.detail)
            else:
                self._set_link(KevLink.OFFLINE, health.detail)
            await asyncio.sleep(self.config.health_interval_s)

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
                self._record(request, KevOutcome.REJECTED, f"internal error: {error!r}", None, 0.0)
            finally:
                self._in_flight -= 1

    async def _consult(self, request: KevRequest) -> None:
        risk = self._gateway.snapshot()
        hedge = self._hedge.stats() if self._hedge is not None else None
        waited_ms = (self._clock() - request.first_queued_ns) / 1e6
        reply = await self._client.ask(format_context(request, risk, hedge, waited_ms))
        self._last_latency_ms = reply.wall_ms
        if reply.model:
            self._model = reply.model
        command = reply.command
        if command is None:
            failure = reply.failure
            if failure in SERVER_DOWN:
                link = KevLink.LOADING if failure is KevFailure.LOADING else KevLink.OFFLINE
                self._set_link(link, reply.reason)
            reason = f"{failure.value if failure else 'failed'}: {reply.reason}"
            self._record(request, KevOutcome.REJECTED, reason, reply, waited_ms)
            return
        now_ns = self._clock()
        snapshot = request.snapshot
        stale = stale_reason(
            command.ttl_ms,
            (now_ns - request.context_ns) / 1e6,
            snapshot.mid,
            self._mid_of(snapshot.symbol),
            self.config.max_mid_move_bps,
        )
        if stale:
            self._record(request, KevOutcome.STALE, stale, reply, waited_ms)
            return
        outcome = self._gateway.apply_kev_command(
            command.action,
            _changed(command.risk_scale, risk.risk_scale),
            _changed(command.hedge_ratio, risk.hedge_ratio),
            now_ns,
        )
        notes = "; ".join(outcome.notes)
        if not outcome.accepted:
            self._record(request, KevOutcome.REFUSED, notes, reply, waited_ms)
            return
        self._skews[snapshot.symbol] = (
            command.skew_bps,
            request.context_ns + command.ttl_ms * 1_000_000,
        )
        summary = (
            f"{command.action.value}: {outcome.state.name}, risk {outcome.risk_scale:g}, "
            f"hedge {outcome.hedge_ratio:g}, skew {command.skew_bps:+g} bps for "
            f"{command.ttl_ms} ms"
        )
        self._record(
            request,
            KevOutcome.ACCEPTED,
            f"{summary}; {notes}" if notes else summary,
            reply,
            waited_ms,
        )

    def _gateway_mid(self, symbol: str) -> float | None:
        for view in self._gateway.snapshot().positions:
            if view.symbol == symbol:
                return view.mark_price
        return None

    def _record(
        self,
        request: KevRequest,
        outcome: KevOutcome,
        reason: str,
        reply: KevReply | None,
        waited_ms: float,
    ) -> None:
        snapshot = request.snapshot
        self._outcomes[outcome.value] += 1
        self._log.append(
            KevDecision(
                self._next_id,
                self._clock(),
                snapshot.symbol,
                _VERDICT_NAMES[snapshot.verdict],
                outcome,
                reason,
                reply.command if reply is not None else None,
                reply.raw if reply is not None else "",
                reply.model if reply is not None else self._model,
                reply.wall_ms if reply is not None else 0.0,
                waited_ms,
                reply.timings if reply is not None else None,
                request.coalesced,
            )
        )
        self._next_id += 1


def _changed(proposed: float, current: float) -> float | None:
    """Kev's value, or None when it only repeats what the context showed (whole percent,
    rounded down), so that echoing the shown value never moves the real one."""
    if round(proposed * 100) == displayed_percent(current):
        return None
    return proposed
