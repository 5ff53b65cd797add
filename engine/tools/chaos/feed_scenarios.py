"""Chaos on the public market feed: a websocket cut mid-frame, a long silence, bursts of
malformed frames, a lost `books` update. Each runs its own simulator and engine (see
engine/tools/chaos/harness.py) and ends with the shared checks: still running, nothing lost,
orders and positions reconciled."""

from __future__ import annotations

import asyncio
import math
import time
from functools import partial

from engine.feed.events import BookResyncNeeded, BookSnapshot, FeedState
from engine.feed.sink import FeedNotice
from engine.laya.decide import QuoteIntent
from engine.market.matching import Order
from engine.risk.events import TradingState
from engine.risk.intents import DenialReason, RiskDecision
from engine.tools.chaos.harness import (
    ChaosRig,
    ChaosRigConfig,
    nothing_lost,
    reconcile,
    run_in_rig,
    still_running,
)
from engine.tools.chaos.scenario import CheckList, Scenario

MIN_SILENCE_S = 3.0
"""A silence must outlast the feed's 2 s stale threshold to be noticed at all."""
_MALFORMED_BURSTS = 3
_MALFORMED_PER_BURST = 30
FILLS_UNHEARD = "fills during the silence (their private pushes lost)"
_GARBAGE_BAND = 0.005
"""A quote more than 50 bps from the market was priced off something other than its book."""


def _increases_risk(order: Order, position: float) -> bool:
    """Whether an order, were it to fill, would leave `position` larger in size."""
    if order.reduce_only:
        return False
    signed = order.size if order.side.value == "buy" else -order.size
    return abs(position + signed) > abs(position) + 1e-12


def _quoting_again(rig: ChaosRig, known: set[str]) -> bool:
    """Back to normal: ACTIVE, every symbol live and healthy at the gateway, and a quote placed
    after the fault resting at the venue."""
    if rig.desk.gateway.state is not TradingState.ACTIVE or not rig.all_live():
        return False
    rig.executor.invalidate_risk_view()
    if not all(p.feed_healthy for p in rig.executor.risk_view().positions):
        return False
    return bool(rig.our_open_at_sim() - known)


async def _ws_drop_mid_frame(rig: ChaosRig, checks: CheckList) -> tuple[float | None, str]:
    feed = rig.feed
    symbols = rig.node.config.symbols
    books = rig.node.pipeline.books
    reconnects = feed.stats.reconnects
    updates = {symbol: books[symbol].updates for symbol in symbols}
    known = {order.client_oid for order in rig.our_sim_orders()}
    cut_at = time.monotonic()
    rig.sim.faults.cut_frame()
    back = await rig.until(
        lambda: (
            feed.stats.reconnects > reconnects
            and rig.all_live()
            and all(books[s].updates > updates[s] + 5 for s in symbols)
        ),
        15,
    )
    checks.check(
        "the feed reconnects and resubscribes; books resume",
        back is not None,
        f"reconnects {feed.stats.reconnects - reconnects}, "
        + ", ".join(f"{s} {feed.state(s).value}" for s in symbols),
    )
    cause = feed.stats.last_disconnect
    checks.check(
        "the client saw the connection end mid-frame (no close frame)",
        "without a close frame" in cause,
        cause or "no disconnect recorded",
    )
    quoting = await rig.until(lambda: _quoting_again(rig, known), 15)
    recover_s = time.monotonic() - cut_at if quoting is not None else None
    checks.check(
        "trading back to normal: ACTIVE, feeds healthy, quoting again",
        quoting is not None,
        f"state {rig.desk.gateway.state.name}, {len(rig.our_open_at_sim() - known)} new quotes",
    )
    await still_running(rig, checks)
    await reconcile(rig, checks)
    await nothing_lost(rig, checks)
    return recover_s, f"reconnected after {back:.2f} s" if back is not None else ""


async def _silence(rig: ChaosRig, checks: CheckList, silence_s: float) -> tuple[float | None, str]:
    feed = rig.feed
    symbols = rig.node.config.symbols
    denials_before = rig.denials()
    silent_from = time.monotonic()
    silent_from_ms = rig.sim.now_ms()
    rig.sim.faults.silence(silence_s)
    stale = await rig.until(
        lambda: all(feed.state(s) is FeedState.STALE for s in symbols),
        feed.config.stale_after_s + 2,
    )
    checks.check(
        "the feed is marked stale",
        stale is not None,
        ", ".join(f"{s} {feed.state(s).value}" for s in symbols)
        + (f" after {stale:.2f} s" if stale is not None else ""),
    )
    probes = {symbol: rig.probe(symbol) for symbol in symbols}
    checks.check(
        "while stale the gateway denies a risk-increasing order (FEED_UNHEALTHY)",
        all(d.reason is DenialReason.FEED_UNHEALTHY for d in probes.values()),
        "; ".join(f"{s}: {_decision_text(d)}" for s, d in probes.items()),
    )
    # Orders already on their way when the feed went stale may still land; judge the rest.
    exempt = {view.client_oid for view in rig.executor.open_orders()}
    exempt |= {order.client_oid for order in rig.our_sim_orders()}
    violations: list[str] = []
    silence_end = silent_from + silence_s
    while time.monotonic() < silence_end:
        positions = {p.symbol: p.size for p in rig.sim.positions()}
        for order in rig.our_sim_orders():
            if order.client_oid in exempt:
                continue
            exempt.add(order.client_oid)
            if feed.state(order.symbol) is not FeedState.LIVE and _increases_risk(
                order, positions.get(order.symbol, 0.0)
            ):
                violations.append(f"{order.client_oid} {order.side.value} {order.size:g}")
        await asyncio.sleep(0.05)
    checks.check(
        "no risk-increasing order placed while the feed was stale",
        not violations,
        f"placed {violations}" if violations else "none placed",
    )
    silent_until_ms = rig.sim.now_ms()
    unheard = sum(
        fill.client_oid.startswith(rig.prefix) and silent_from_ms <= fill.ts_ms <= silent_until_ms
        for fill in rig.sim.fills()
    )
    known = {order.client_oid for order in rig.our_sim_orders()}
    resumed_at = time.monotonic()
    quoting = await rig.until(lambda: _quoting_again(rig, known), 15)
    recover_s = time.monotonic() - resumed_at if quoting is not None else None
    checks.check(
        "quotes resume after the pushes return",
        quoting is not None,
        ", ".join(f"{s} {feed.state(s).value}" for s in symbols),
    )
    denied = rig.denials() - denials_before
    await still_running(rig, checks)
    await reconcile(rig, checks)
    await nothing_lost(rig, checks)
    note = "denials: " + (", ".join(f"{k} {v}" for k, v in sorted(denied.items())) or "none")
    return recover_s, f"silence {silence_s:g} s; {note}; {FILLS_UNHEARD} {unheard}"


def _decision_text(decision: RiskDecision) -> str:
    if decision.approved:
        return "APPROVED"
    reason = decision.reason.name if decision.reason is not None else "?"
    return f"{reason} ({decision.text})"


def _bad_book(snapshot: BookSnapshot) -> str | None:
    """Why a book that reached the trading desk is not a valid book, or None."""
    if snapshot.n_bids < 1 or snapshot.n_asks < 1:
        return "an empty side"
    prices = [*snapshot.bid_prices.tolist(), *snapshot.ask_prices.tolist()]
    sizes = [*snapshot.bid_sizes.tolist(), *snapshot.ask_sizes.tolist()]
    if not all(math.isfinite(v) and v > 0 for v in prices + sizes):
        return "a non-positive or non-finite price or size"
    if snapshot.bid_prices[0] >= snapshot.ask_prices[0]:
        return "crossed"
    return None


async def _malformed_burst(rig: ChaosRig, checks: CheckList) -> tuple[float | None, str]:
    node = rig.node
    pipeline = node.pipeline
    symbols = node.config.symbols
    faults = rig.sim.faults
    seen_books = 0
    bad_books: list[str] = []

    def tap(snapshot: BookSnapshot, intent: QuoteIntent) -> None:
        nonlocal seen_books
        seen_books += 1
        problem = _bad_book(snapshot)
        if problem is not None:
            bad_books.append(f"{snapshot.symbol}: {problem}")

    rejected = sum(node.parser.stats.rejected.values())
    reconnects = rig.feed.stats.reconnects
    known = {order.client_oid for order in rig.our_sim_orders()}
    rig.taps.decided.append(tap)
    try:
        sent = 0
        for _ in range(_MALFORMED_BURSTS):
            faults.malformed(_MALFORMED_PER_BURST)
            sent += _MALFORMED_PER_BURST
            await rig.until(lambda: faults.describe()["malformedLeft"] == 0, 5)
            await asyncio.sleep(0.2)
        burst_end = time.monotonic()
        updates = {s: pipeline.books[s].updates for s in symbols}
        fresh = await rig.until(
            lambda: all(pipeline.books[s].updates > updates[s] for s in symbols), 5
        )
    finally:
        rig.taps.decided.remove(tap)
    recover_s = time.monotonic() - burst_end if fresh is not None else None
    rejected_now = sum(node.parser.stats.rejected.values()) - rejected
    by_reason = ", ".join(f"{k} {v}" for k, v in sorted(node.parser.stats.rejected.items()))
    checks.check(
        "the parser rejects and counts every malformed frame",
        rejected_now >= sent,
        f"{rejected_now} rejected of {sent} sent ({by_reason})",
    )
    checks.check(
        "the connection stays up through the garbage",
        rig.feed.stats.reconnects == reconnects,
        f"{rig.feed.stats.reconnects - reconnects} reconnects",
    )
    checks.check(
        "every book that reached trading was valid (never crossed)",
        not bad_books,
        f"{len(bad_books)} bad of {seen_books}: {bad_books[:3]}" if bad_books else f"{seen_books}",
    )
    mids = rig.sim.stats().mids
    off = [
        f"{o.client_oid} {o.price:g} vs mid {mids[o.symbol]:g}"
        for o in rig.our_sim_orders()
        if o.client_oid not in known
        and o.price is not None
        and abs(o.price / mids[o.symbol] - 1) > _GARBAGE_BAND
    ]
    checks.check(
        "no quote placed off a garbage book (all within 50 bps of the market)",
        not off,
        f"{off[:3]}" if off else f"{len(rig.our_sim_orders()) - len(known)} orders placed",
    )
    await still_running(rig, checks)
    await reconcile(rig, checks)
    await nothing_lost(rig, checks)
    return recover_s, f"{sent} malformed frames in {_MALFORMED_BURSTS} bursts"


async def _books_seq_gap(rig: ChaosRig, checks: CheckList) -> tuple[float | None, str]:
    pipeline = rig.node.pipeline
    feed = rig.feed
    resyncs: list[BookResyncNeeded] = []
    probes: list[RiskDecision] = []

    def tap(event: FeedNotice) -> None:
        if type(event) is BookResyncNeeded:
            resyncs.append(event)
            probes.append(rig.probe(event.symbol))  # while the book is being rebuilt

    resubscribed = feed.stats.resyncs
    rig.taps.notices.append(tap)
    try:
        gap_at = time.monotonic()
        rig.sim.faults.seq_gap(1)
        await rig.until(lambda: bool(resyncs), 5)
    finally:
        rig.taps.notices.remove(tap)
    checks.check(
        "the lost update is seen as a sequence gap",
        any("sequence gap" in event.reason for event in resyncs),
        "; ".join(f"{e.symbol}: {e.reason}" for e in resyncs) or "no resync asked",
    )
    checks.check(
        "trading is blocked for that symbol while it resyncs",
        bool(probes) and all(d.reason is DenialReason.FEED_UNHEALTHY for d in probes),
        "; ".join(_decision_text(d) for d in probes) or "nothing probed",
    )
    symbol = resyncs[0].symbol if resyncs else rig.node.config.symbols[0]
    updates = pipeline.books[symbol].updates

    def rebuilt() -> bool:
        rig.executor.invalidate_risk_view()
        healthy = all(p.feed_healthy for p in rig.executor.risk_view().positions)
        return (
            feed.stats.resyncs > resubscribed
            and pipeline.books[symbol].updates > updates + 3
            and healthy
        )

    back = await rig.until(rebuilt, 10)
    recover_s = time.monotonic() - gap_at if back is not None else None
    bid, _, ask, _ = pipeline.books[symbol].best()
    checks.check(
        "the feed resubscribes, the book is rebuilt and trading unblocked",
        back is not None and bid < ask,
        f"{feed.stats.resyncs - resubscribed} resubscriptions, {symbol} {bid:g}/{ask:g}",
    )
    await still_running(rig, checks)
    await reconcile(rig, checks)
    await nothing_lost(rig, checks)
    return recover_s, f"gap on {symbol}"


def feed_scenarios(silence_s: float = 30.0) -> tuple[Scenario, ...]:
    """The feed scenarios; `silence_s` is the silence's length (30 s in the documented run)."""
    if not (math.isfinite(silence_s) and silence_s >= MIN_SILENCE_S):
        raise ValueError(f"silence must be at least {MIN_SILENCE_S:g} s, got {silence_s!r}")
    rig = ChaosRigConfig()
    return (
        Scenario(
            "ws-drop-mid-frame",
            "the public websocket cut mid-frame: reconnect, books resume, quoting again",
            partial(run_in_rig, "ws-drop-mid-frame", rig, _ws_drop_mid_frame),
        ),
        Scenario(
            "silence-30s",
            f"{silence_s:g} s without pushes: stale, no risk-increasing order, then quotes resume",
            partial(run_in_rig, "silence-30s", rig, partial(_silence, silence_s=silence_s)),
        ),
        Scenario(
            "malformed-burst",
            "bursts of malformed frames: counted and skipped, books valid, no quote off garbage",
            partial(run_in_rig, "malformed-burst", rig, _malformed_burst),
        ),
        Scenario(
            "books-seq-gap",
            "a lost `books` update: gap seen, symbol blocked while it resyncs, book rebuilt",
            partial(
                run_in_rig,
                "books-seq-gap",
                ChaosRigConfig(feed_channels=("books", "trade")),
                _books_seq_gap,
            ),
        ),
    )


SCENARIOS = feed_scenarios()
