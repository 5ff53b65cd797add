"""Kill and flatten: cancel everything and close every position, again and again, until the
venue itself reports no open order and no position."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, NamedTuple

from engine.risk.events import TradingState
from engine.risk.intents import ClosePositionsIntent, Source
from engine.trading.reconciliation import sync_positions
from engine.trading.tracked_order import OrderRole
from engine.trading.venue import VENUE_ERRORS
from engine.units import coin

if TYPE_CHECKING:
    from engine.trading.executor import OrderExecutor


class SequenceOutcome(NamedTuple):
    """How a kill or flatten sequence ended."""

    ok: bool
    message: str
    elapsed_ms: float
    attempts: int


async def holds_nothing(executor: OrderExecutor) -> bool:
    """No order tracked, no position in the gateway, and the venue reports neither (a
    venue that cannot answer holds something, as far as anyone knows)."""
    if executor.has_open_orders() or any(p.size for p in executor.gateway.snapshot().positions):
        return False
    try:
        snapshot = await executor.venue.snapshot()
    except VENUE_ERRORS:
        return False
    return not snapshot.orders and not any(p.size for p in snapshot.positions)


async def run_close_sequence(
    executor: OrderExecutor, source: Source, reason: str, timeout_s: float
) -> SequenceOutcome:
    """Cancel all and close all, repeated until the venue reports no open order and no
    position, or `timeout_s` has passed (on the engine clock: market time in a replay)."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    deadline = started + timeout_s
    retry_s = executor.config.kill_retry_interval_ms / 1000.0
    attempts = 0
    last_error = ""
    while True:
        attempts += 1
        ticket = executor.cancel_all_now(source, reason)
        closing = asyncio.ensure_future(_close_all(executor, source, reason))
        for waited in (ticket.result, closing):
            try:
                await waited
            except VENUE_ERRORS as error:
                last_error = str(error)
        # A quote on its way when the cancel-all left may reach the venue after it: only once
        # it is answered does the snapshot show it, so "flat" is never said with it resting
        # (the next attempt cancels it). HALTED or REDUCING withdraws unsent one still being
        # journaled (not waited for) or waiting for the venue's request limit (at once: the
        # cancel-all has it asked again).
        answered = await executor.placements_answered(max(0.0, deadline - loop.time()))
        try:
            snapshot = await executor.venue.snapshot()
        except VENUE_ERRORS as error:
            executor._venue_error("snapshot", error)
            last_error = str(error)
            snapshot = None
        confirmed = False
        if not answered:
            last_error = "an order placed before the kill is not answered yet"
        elif snapshot is not None:
            open_positions = [p for p in snapshot.positions if p.size]
            if not snapshot.orders and not open_positions:
                sync_positions(executor, snapshot, executor._clock(), reason)
                confirmed = True
            else:
                last_error = f"{len(snapshot.orders)} orders open, positions " + (
                    ", ".join(coin(p.symbol, p.size, signed=True) for p in open_positions) or "flat"
                )
        if confirmed or loop.time() >= deadline:
            elapsed = (loop.time() - started) * 1000
            message = (
                f"venue confirms no open orders and flat after {elapsed:.1f} ms "
                f"({attempts} attempt{'s' if attempts > 1 else ''})"
                if confirmed
                else f"not confirmed flat after {elapsed:,.0f} ms and {attempts} attempts; "
                f"last: {last_error}"
            )
            return SequenceOutcome(confirmed, message, elapsed, attempts)
        await asyncio.sleep(min(retry_s * 2 ** min(attempts - 1, 10), 0.5))


async def _close_all(executor: OrderExecutor, source: Source, reason: str) -> None:
    """Flash close (1 request a second at Bitget); inside that limit, the gateway's
    reduce-only market orders close instead."""
    gateway = executor.gateway
    if gateway.state is TradingState.PAUSED:
        # A flatten that found no position paused: PAUSED keeps positions, so a close
        # would only be denied.
        return
    now = executor._clock()
    decision = gateway.check_close_positions(ClosePositionsIntent(source), now)
    if decision.approved:
        executor._journal_cancel("close_positions", source, reason, now)
        await executor.venue.close_positions()
        return
    closing = [
        intent.client_oid
        for intent in gateway.closing_intents()
        if executor.submit(intent, OrderRole.CLOSE).approved
    ]
    await executor.placements_answered(of=closing)
