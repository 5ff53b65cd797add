"""Chaos on the exchange's private REST: a storm of 429s, answers slower than the client's
timeout during a kill, 5xx on cancels, and the exchange's clock more than 30 s off. Each runs
its own simulator and engine (engine/tools/chaos/harness.py) and ends with the shared checks."""

from __future__ import annotations

import asyncio
import time
from functools import partial

from engine.bitget.orders import OrderSide, OrderType, TimeInForce
from engine.risk.events import TradingState
from engine.risk.intents import OrderIntent, Source
from engine.tools.chaos.harness import (
    ChaosRig,
    ChaosRigConfig,
    nothing_lost,
    reconcile,
    run_in_rig,
    still_running,
)
from engine.tools.chaos.scenario import CheckList, Scenario
from engine.trading.commands import Command, Kill, Pause, Resume
from engine.trading.strategy import Grid
from engine.trading.tracked_order import OrderRole, OrderState

STORM_429S = 40
KILL_REST_TIMEOUT_S = 0.4
KILL_SLOW_REST_S = 0.6
"""Every REST answer this late: past the client's timeout, so each call's outcome is unknown."""
KILL_SLOW_WINDOW_S = 1.5
CANCEL_5XX = 8
CLOCK_SKEW_S = -45.0
"""The exchange's clock 45 s behind ours: beyond Bitget's 30 s signing window."""


def _quoting_again(rig: ChaosRig, known: set[str]) -> bool:
    return rig.desk.gateway.state is TradingState.ACTIVE and bool(rig.our_open_at_sim() - known)


def _known(rig: ChaosRig) -> set[str]:
    return {order.client_oid for order in rig.our_sim_orders()}


async def _rest_429_storm(rig: ChaosRig, checks: CheckList) -> tuple[float | None, str]:
    venue_stats = rig.desk.venue.stats
    retries = int(venue_stats()["retries"])  # type: ignore[call-overload]
    refused = rig.sim.rest_refusals().get("429", 0)
    faults = rig.sim.faults
    started = time.monotonic()
    faults.rest_error(429, STORM_429S)
    consumed = await rig.until(lambda: faults.describe()["restError"] is None, 20)
    storm_s = time.monotonic() - started
    answered = rig.sim.rest_refusals().get("429", 0) - refused
    checks.check(
        f"the storm hits the engine ({STORM_429S} answers 429)",
        consumed is not None and answered >= STORM_429S,
        f"{answered} answered 429 in {storm_s:.2f} s",
    )
    retried = int(venue_stats()["retries"]) - retries  # type: ignore[call-overload]
    checks.check(
        "the engine backs off and retries",
        retried > 0,
        f"{retried} retries after backing off",
    )
    known = _known(rig)
    storm_end = time.monotonic()
    quoting = await rig.until(lambda: _quoting_again(rig, known), 15)
    checks.check(
        "quoting again after the storm",
        quoting is not None,
        f"state {rig.desk.gateway.state.name}",
    )
    recover_s = time.monotonic() - storm_end if quoting is not None else None
    await still_running(rig, checks)
    await reconcile(rig, checks)
    await nothing_lost(rig, checks)
    return recover_s, f"{STORM_429S} x 429 over {storm_s:.1f} s, {retried} retries"


async def _open_positions(rig: ChaosRig) -> None:
    """Positions on both symbols (marketable IOC orders) beside the resting quotes."""
    executor = rig.executor
    executor.invalidate_risk_view()
    marks = {p.symbol: p.mark_price for p in executor.risk_view().positions}
    placed = []
    for symbol, side, size, factor in (
        ("BTCUSDT", OrderSide.BUY, 0.004, 1.0005),
        ("ETHUSDT", OrderSide.SELL, 0.06, 0.9995),
    ):
        grid = Grid(rig.desk.config.instrument(symbol))
        price = marks[symbol] * factor
        intent = OrderIntent(
            symbol,
            side,
            size,
            grid.floor_price(price) if side is OrderSide.BUY else grid.ceil_price(price),
            OrderType.LIMIT,
            executor.new_client_oid(OrderRole.OPERATOR),
            Source.OPERATOR,
            TimeInForce.IOC,
            False,
            "chaos: open a position",
        )
        if executor.submit(intent, OrderRole.OPERATOR).approved:
            placed.append(intent.client_oid)
    await rig.until(lambda: all(executor.order(oid) is None for oid in placed), 5)
    await rig.until(lambda: len(rig.our_open_at_sim()) >= 1, 5)


async def _rest_timeouts_during_kill(rig: ChaosRig, checks: CheckList) -> tuple[float | None, str]:
    await _open_positions(rig)
    held = {p.symbol: p.size for p in rig.sim.positions() if p.size}
    checks.check(
        "before the kill the engine holds positions and resting orders",
        bool(held) and bool(rig.our_open_at_sim()),
        f"positions {held}, {len(rig.our_open_at_sim())} orders resting",
    )
    transport = rig.desk.venue.stats()["errors"].get("transport", 0)  # type: ignore[union-attr]
    faults = rig.sim.faults
    faults.slow_rest(KILL_SLOW_REST_S)
    kill = asyncio.ensure_future(rig.node.execute(Command(Kill())))
    await asyncio.sleep(KILL_SLOW_WINDOW_S)
    faults.slow_rest(0.0)
    timeout_s = rig.desk.config.executor.kill_timeout_s + 5
    try:
        result = await asyncio.wait_for(kill, timeout_s)
    except TimeoutError:
        checks.check("the kill returns", False, f"no answer within {timeout_s:g} s")
        return None, ""
    timeouts = rig.desk.venue.stats()["errors"].get("transport", 0) - transport  # type: ignore[union-attr]
    checks.check(
        "REST calls timed out during the kill",
        timeouts > 0,
        f"{timeouts} transport failures (answers {KILL_SLOW_REST_S:g} s, timeout "
        f"{KILL_REST_TIMEOUT_S:g} s)",
    )
    checks.check("the kill reports success", result.ok, result.message)
    positions = {p.symbol: p.size for p in rig.sim.positions() if p.size}
    resting = rig.our_open_at_sim()
    checks.check(
        "the venue confirms flat: no open order, no position",
        not positions and not resting,
        f"positions {positions or 'none'}, {len(resting)} orders resting",
    )
    await asyncio.sleep(0.5)
    checks.check(
        "HALTED stays latched and nothing new rests after the kill",
        rig.desk.gateway.state is TradingState.HALTED and not rig.our_open_at_sim(),
        f"state {rig.desk.gateway.state.name}, {len(rig.our_open_at_sim())} resting",
    )
    await still_running(rig, checks)
    await reconcile(rig, checks)
    await nothing_lost(rig, checks)
    return result.elapsed_ms / 1000, f"kill took {result.elapsed_ms:,.0f} ms"


async def _cancel_5xx(rig: ChaosRig, checks: CheckList) -> tuple[float | None, str]:
    refused = rig.sim.rest_refusals().get("503", 0)
    faults = rig.sim.faults
    violations: set[str] = set()

    def believed_cancelled_but_resting() -> None:
        resting = rig.our_open_at_sim()
        for view in rig.executor.recent_orders():
            if view.state is OrderState.CANCELED and view.client_oid in resting:
                violations.add(view.client_oid)

    faults.cancel_error(503, CANCEL_5XX)
    paused_at = time.monotonic()
    paused = await rig.node.execute(
        Command(Pause())
    )  # cancels every quote: the cancels meet the 5xx

    def cleared() -> bool:
        believed_cancelled_but_resting()
        return not rig.our_open_at_sim() and not rig.executor.has_open_orders()

    done = await rig.until(cleared, 15)
    recover_s = time.monotonic() - paused_at if done is not None else None
    answered = rig.sim.rest_refusals().get("503", 0) - refused
    checks.check(
        f"cancels meet the 5xx ({CANCEL_5XX} injected)",
        answered >= 1,
        f"{answered} cancels answered 503",
    )
    checks.check(
        "paused: the cancels are retried until no quote rests",
        paused.ok and done is not None,
        f"{len(rig.our_open_at_sim())} resting at the venue; {paused.message}",
    )
    checks.check(
        "no order rests that the engine believes cancelled",
        not violations,
        f"{sorted(violations)}" if violations else "none",
    )
    faults.cancel_error(503, 0)
    resumed = await rig.node.execute(Command(Resume()))
    known = _known(rig)
    quoting = await rig.until(lambda: _quoting_again(rig, known), 15)
    checks.check(
        "quoting again after resume",
        resumed.ok and quoting is not None,
        resumed.message,
    )
    await still_running(rig, checks)
    await reconcile(rig, checks)
    await nothing_lost(rig, checks)
    return recover_s, f"{answered} cancels answered 503"


def _events_text(rig: ChaosRig) -> list[str]:
    events, _ = rig.node.events.since(-1)
    return [str(event) for _, event in events]


async def _clock_skew(rig: ChaosRig, checks: CheckList) -> tuple[float | None, str]:
    client = rig.desk.venue.client  # type: ignore[attr-defined]
    refused = rig.sim.rest_refusals().get("40008", 0)
    known = _known(rig)
    skewed_at = time.monotonic()
    rig.sim.faults.clock_skew(CLOCK_SKEW_S)
    expected_ms = CLOCK_SKEW_S * 1000

    def resynced() -> bool:
        return abs(client.clock_offset_ms - expected_ms) < 2_000

    await rig.until(lambda: rig.sim.rest_refusals().get("40008", 0) > refused and resynced(), 15)
    refusals = rig.sim.rest_refusals().get("40008", 0) - refused
    checks.check(
        "the exchange refuses signed requests stamped over 30 s off (40008)",
        refusals > 0,
        f"{refusals} refused with 40008",
    )
    checks.check(
        "the REST client re-measures the offset from server time",
        resynced(),
        f"offset {client.clock_offset_ms / 1000:+.1f} s (skew {CLOCK_SKEW_S:+g} s)",
    )
    quoting = await rig.until(lambda: _quoting_again(rig, known), 15)
    recover_s = time.monotonic() - skewed_at if quoting is not None else None
    checks.check(
        "orders are accepted again (recovered by the resync)",
        quoting is not None,
        f"{len(rig.our_open_at_sim() - known)} new quotes resting",
    )
    errors = rig.desk.status().venue_stats["errors"]

    def explaining() -> list[str]:
        return [text for text in _events_text(rig) if "clock" in text.lower()]

    # Explained at the executor's next maintenance tick (250 ms), which may come after the
    # resync has already let quotes rest again: waited for, not read at once.
    await rig.until(lambda: bool(explaining()), 5)
    explained = explaining()
    checks.check(
        "the engine explains it: an event names the clock skew",
        bool(explained),
        explained[-1] if explained else f"no event names it; status errors {errors}",
    )
    await still_running(rig, checks)
    await reconcile(rig, checks)
    await nothing_lost(rig, checks)
    return recover_s, f"exchange clock {CLOCK_SKEW_S:+g} s"


def exchange_scenarios() -> tuple[Scenario, ...]:
    rig = ChaosRigConfig()
    return (
        Scenario(
            "rest-429-storm",
            f"{STORM_429S} answers 429: no order duplicated, backoff, state reconciles",
            partial(run_in_rig, "rest-429-storm", rig, _rest_429_storm),
        ),
        Scenario(
            "rest-timeouts-during-kill",
            "REST slower than the client's timeout while killing: the kill still ends flat",
            partial(
                run_in_rig,
                "rest-timeouts-during-kill",
                ChaosRigConfig(rest_timeout_s=KILL_REST_TIMEOUT_S),
                _rest_timeouts_during_kill,
            ),
        ),
        Scenario(
            "cancel-5xx",
            "5xx on cancels: retried, no order rests that the engine believes cancelled",
            partial(run_in_rig, "cancel-5xx", rig, _cancel_5xx),
        ),
        Scenario(
            "clock-skew-30s",
            "the exchange clock 45 s off: 40008 refused, explained, resynced and recovered",
            partial(run_in_rig, "clock-skew-30s", rig, _clock_skew),
        ),
    )


SCENARIOS = exchange_scenarios()
