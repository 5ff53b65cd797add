"""KevHub with a scripted llama-server and the real risk gateway: what is accepted, refused,
rejected or stale, and why; offline and recovery; queue order; the decision log."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest
from conftest import BTC, ETH, MIDS, MS, T0, make_gateway
from scripted_llama import ScriptedLlama, command, completion, delayed

from engine.kev.client import KevClient, KevClientConfig
from engine.kev.command import KevCommandSpec
from engine.kev.context import KEY_FEATURE_INDEX
from engine.kev.hedge import HedgeAnalytics, HedgeAnalyticsConfig
from engine.kev.hub import KevHub, KevHubConfig, KevOutcome
from engine.kev.queue import KevQueueOverflow, KevSnapshot
from engine.kev.server import free_port
from engine.laya.features import FEATURE_COUNT
from engine.laya.verdict import Verdict
from engine.risk import RiskLimitChanged, Source, TradingState

CHAT = "/v1/chat/completions"
KEY_VALUES = (0.4, 0.3, 0.1, 0.8, 0.2, 0.6, -0.5, -0.3, 3.1, 2.2)
FEATURES = np.zeros((1, FEATURE_COUNT), np.float32)
FEATURES[0, KEY_FEATURE_INDEX] = KEY_VALUES
FAST = KevHubConfig(health_interval_s=0.05)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now

    def advance_ms(self, ms: float) -> None:
        self.now += int(ms * MS)


def snap(symbol: str = BTC, verdict: Verdict = Verdict.EMERGENCY, mid: float | None = None):
    mid = MIDS[symbol] if mid is None else mid
    return KevSnapshot(
        symbol, 1_700_006_400_000, int(verdict), (0.05, 0.07, 0.05, 0.83), mid, FEATURES
    )


async def decisions(hub: KevHub, count: int, timeout_s: float = 5.0):
    async with asyncio.timeout(timeout_s):
        while len(hub.decisions()) < count:
            await asyncio.sleep(0.01)
    return hub.decisions()


async def online(hub: KevHub, timeout_s: float = 5.0) -> None:
    async with asyncio.timeout(timeout_s):
        while hub.status().state not in ("online", "busy"):
            await asyncio.sleep(0.01)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def gateway():
    return make_gateway()


@pytest.fixture
async def start_hub(scripted, clock, gateway):
    started = []

    async def start(config: KevHubConfig = FAST, url: str | None = None, **kwargs) -> KevHub:
        client = KevClient(
            KevClientConfig(base_url=url or scripted.url, request_timeout_s=1.0),
            KevCommandSpec(),
        )
        await client.start()
        hub = KevHub(config, client, gateway, clock, **kwargs)
        await hub.start()
        started.append((hub, client))
        return hub

    yield start
    for hub, client in started:
        await hub.stop()
        await client.stop()


async def test_an_accepted_command_is_applied_through_the_gateway(
    scripted, start_hub, gateway, clock
):
    scripted.script(CHAT, command(act="reduce", risk=80, hedge=60, skew=-12, ttl=3000, why="vpin"))
    hub = await start_hub()
    assert hub.offer(snap())
    (decision,) = await decisions(hub, 1)
    assert decision.outcome is KevOutcome.ACCEPTED
    assert decision.reason == "reduce: REDUCING, risk 0.8, hedge 0.6, skew -1.2 bps for 3000 ms"
    assert (decision.symbol, decision.verdict, decision.model) == (
        BTC,
        "EMERGENCY",
        "scripted.gguf",
    )
    assert decision.timings.cache_n == 236 and decision.wall_ms > 0
    risk = gateway.snapshot()
    assert (risk.state, risk.risk_scale, risk.hedge_ratio) == (TradingState.REDUCING, 0.8, 0.6)
    changes = [e for e in gateway.drain_events() if isinstance(e, RiskLimitChanged)]
    assert {(e.name, e.new, e.source) for e in changes} == {
        ("risk_scale", 0.8, Source.KEV),
        ("hedge_ratio", 0.6, Source.KEV),
    }
    assert hub.quote_skew_bps(BTC) == pytest.approx(-1.2) and hub.quote_skew_bps(ETH) == 0.0
    clock.advance_ms(3000)
    assert hub.quote_skew_bps(BTC) == 0.0


async def test_raising_the_risk_scale_is_refused_by_the_gateway(scripted, start_hub, gateway):
    gateway.set_risk_scale(0.5, T0)
    scripted.script(CHAT, command(act="hold", risk=100, skew=20))
    hub = await start_hub()
    hub.offer(snap())
    (decision,) = await decisions(hub, 1)
    assert decision.outcome is KevOutcome.REFUSED
    assert decision.reason == "Kev cannot raise the risk scale (0.5 -> 1)"
    assert gateway.snapshot().risk_scale == 0.5
    assert hub.quote_skew_bps(BTC) == 0.0  # nothing more of a refused command is applied


async def test_leaving_paused_is_refused_by_the_gateway(scripted, start_hub, gateway):
    gateway.pause(T0)
    scripted.script(CHAT, command(act="reduce"))
    hub = await start_hub()
    hub.offer(snap())
    (decision,) = await decisions(hub, 1)
    assert decision.outcome is KevOutcome.REFUSED
    assert decision.reason == "Kev cannot leave PAUSED"
    assert gateway.snapshot().state is TradingState.PAUSED


async def test_a_command_past_its_ttl_is_stale(scripted, start_hub, gateway, clock):
    scripted.script(
        CHAT, delayed(0.01, command(act="flatten", ttl=3000), lambda: clock.advance_ms(3500))
    )
    hub = await start_hub()
    hub.offer(snap())
    (decision,) = await decisions(hub, 1)
    assert decision.outcome is KevOutcome.STALE
    assert decision.reason == "context is 3500 ms old, past its ttl of 3000 ms"
    assert decision.command.ttl_ms == 3000
    assert gateway.snapshot().state is TradingState.ACTIVE


async def test_a_command_after_the_mid_moved_is_stale(scripted, start_hub, gateway):
    def move_the_market() -> None:
        mid = MIDS[BTC] * 1.001
        gateway.on_mark(BTC, mid, mid, mid - 0.5, mid + 0.5, T0)

    scripted.script(CHAT, delayed(0.01, command(act="flatten"), move_the_market))
    hub = await start_hub()
    hub.offer(snap())
    (decision,) = await decisions(hub, 1)
    assert decision.outcome is KevOutcome.STALE
    assert decision.reason == "mid moved 10.0 bps since the context (limit 5)"
    assert gateway.snapshot().state is TradingState.ACTIVE


async def test_the_mid_source_can_be_given(scripted, start_hub):
    scripted.script(CHAT, command(act="reduce"))
    hub = await start_hub(mid_of=lambda symbol: None)
    hub.offer(snap())
    (decision,) = await decisions(hub, 1)
    assert decision.outcome is KevOutcome.STALE
    assert decision.reason == "no current mid to check the move against"


async def test_invalid_output_is_rejected_and_nothing_applied(scripted, start_hub, gateway):
    scripted.script(CHAT, completion("I think we should reduce."))
    hub = await start_hub()
    hub.offer(snap())
    (decision,) = await decisions(hub, 1)
    assert decision.outcome is KevOutcome.REJECTED
    assert decision.reason.startswith("invalid_json: not JSON")
    assert decision.raw == "I think we should reduce." and decision.command is None
    assert gateway.snapshot().state is TradingState.ACTIVE
    assert hub.status().outcomes == {"accepted": 0, "refused": 0, "rejected": 1, "stale": 0}


async def test_repeating_the_shown_percent_changes_nothing(scripted, start_hub, gateway):
    gateway.set_risk_scale(0.335, T0)
    gateway.drain_events()
    scripted.script(CHAT, command(act="hold", risk=33, hedge=50))
    hub = await start_hub()
    hub.offer(snap())
    (decision,) = await decisions(hub, 1)
    assert decision.outcome is KevOutcome.ACCEPTED
    assert gateway.snapshot().risk_scale == 0.335
    assert not [e for e in gateway.drain_events() if isinstance(e, RiskLimitChanged)]
    context = scripted.requests[0]["messages"][1]["content"]
    assert context.startswith("ACTIVE risk 33 hedge 50 limits 26800 -500 -1000\npos flat")


async def test_the_context_carries_market_risk_and_hedge_analytics(
    scripted, start_hub, gateway, clock
):
    hedge = HedgeAnalytics(HedgeAnalyticsConfig(window=60, min_samples=30))
    for k in range(60):
        traded = 60_000 * math.exp(1e-4 * math.sin(k / 3) + 3e-4 * k)
        spread = math.exp(5e-5 * math.sin(1.7 * k))  # a stationary spread around the beta
        hedge_mid = 3_000 * (traded / 60_000) ** 0.8 * spread
        hedge.on_mids(1_700_006_400_000 + 1_000 * k, traded, hedge_mid)
    gateway.on_position_sync(BTC, 0.2, 59_000.0, T0)
    gateway.on_position_sync(ETH, -2.5, 3_100.0, T0)
    scripted.script(CHAT, command())
    hub = await start_hub(hedge=hedge)
    hub.offer(snap(verdict=Verdict.LEAN_BUY))
    clock.advance_ms(1_234)
    hub.offer(snap(verdict=Verdict.EMERGENCY))
    await decisions(hub, 1)
    lines = scripted.requests[0]["messages"][1]["content"].splitlines()
    stats = hedge.stats()
    half_life = "none" if stats.half_life_s is None else f"{stats.half_life_s:.0f}s"
    assert lines == [
        "ACTIVE risk 100 hedge 50 limits 80000 -500 -1000",
        "pos BTCUSDT 0.2 +12000 +200.0, ETHUSDT -2.5 -7500 +250.0 delta +8250 pnl +0.0",
        f"pair 0.80 z {stats.spread_z:+.1f} eg {stats.engle_granger:.1f}/"
        f"{stats.critical_5pct:.1f} {half_life}",
        "BTCUSDT EMERGENCY p 5 7 5 83; 1.2s: LEAN_BUY 1 EMERGENCY 1",
        "imb 40 30 10 vpin 60 flow -50 -30 micro 0.8 spread 0.2 vol 3.1 2.2",
    ]


async def test_offline_until_the_server_appears(clock, gateway, start_hub):
    port = free_port()
    hub = await start_hub(url=f"http://127.0.0.1:{port}")
    hub.offer(snap())
    await asyncio.sleep(0.2)
    status = hub.status()
    assert status.state == "offline" and status.detail.startswith("ClientConnectorError")
    assert status.queue_depth == 1 and not hub.decisions()
    server = ScriptedLlama(port)
    server.script(CHAT, command(act="reduce"))
    await server.start()
    try:
        (decision,) = await decisions(hub, 1)
        assert decision.outcome is KevOutcome.ACCEPTED
        assert hub.status().state == "online" and hub.status().model == "scripted.gguf"
    finally:
        await server.stop()


async def test_a_context_older_than_any_ttl_expires_without_a_request(clock, start_hub):
    port = free_port()
    hub = await start_hub(url=f"http://127.0.0.1:{port}")
    hub.offer(snap())
    clock.advance_ms(10_001)  # the longest ttl Kev may give is 10 s
    server = ScriptedLlama(port)
    server.script(CHAT, command())
    await server.start()
    try:
        await online(hub)
        async with asyncio.timeout(5):
            while hub.status().expired != 1:
                await asyncio.sleep(0.01)
        assert not server.requests and not hub.decisions()
    finally:
        await server.stop()


async def test_emergency_is_consulted_first(clock, start_hub):
    port = free_port()
    hub = await start_hub(url=f"http://127.0.0.1:{port}")
    hub.offer(snap(BTC, Verdict.LEAN_BUY))
    hub.offer(snap(ETH, Verdict.EMERGENCY))
    server = ScriptedLlama(port)
    server.script(CHAT, command())
    await server.start()
    try:
        first, second = await decisions(hub, 2)
        assert [first.symbol, second.symbol] == [ETH, BTC]
    finally:
        await server.stop()


async def test_a_timeout_is_rejected_and_takes_the_hub_offline(scripted, start_hub):
    scripted.script(CHAT, delayed(1.5, command()), command(act="reduce"))
    hub = await start_hub()
    hub.offer(snap())
    await online(hub)
    async with asyncio.timeout(5):
        while hub.status().state != "busy":
            await asyncio.sleep(0.005)
    assert hub.status().in_flight == 1
    (decision,) = await decisions(hub, 1)
    assert decision.outcome is KevOutcome.REJECTED
    assert decision.reason == "timeout: no answer within 1 s"
    hub.offer(snap())
    _, recovered = await decisions(hub, 2)
    assert recovered.outcome is KevOutcome.ACCEPTED


async def test_counters_and_a_bounded_log(scripted, start_hub):
    scripted.script(CHAT, command())
    config = KevHubConfig(
        health_interval_s=0.05,
        decision_log_size=2,
        queue_capacity=1,
        overflow=KevQueueOverflow.DROP_NEWEST,
    )
    hub = await start_hub(config)
    for _ in range(3):
        hub.offer(snap(BTC))
        assert not hub.offer(snap(ETH, Verdict.LEAN_SELL))  # full: one symbol at a time
        await decisions(hub, min(len(hub.decisions()) + 1, 2))
        await asyncio.sleep(0.05)
    status = hub.status()
    assert status.dropped == 3 and status.offered == 6
    assert [d.id for d in hub.decisions()] == [1, 2]
    assert hub.decisions(1)[0].id == 2 and hub.decisions(0) == ()


async def test_a_failing_callback_is_a_rejected_decision_not_a_dead_hub(scripted, start_hub):
    calls = []

    def flaky_mid(symbol: str) -> float:
        calls.append(symbol)
        if len(calls) == 1:
            raise ZeroDivisionError("mid source broke")
        return MIDS[symbol]

    scripted.script(CHAT, command())
    hub = await start_hub(mid_of=flaky_mid)
    hub.offer(snap())
    (first,) = await decisions(hub, 1)
    assert first.outcome is KevOutcome.REJECTED
    assert first.reason == "internal error: ZeroDivisionError('mid source broke')"
    hub.offer(snap())
    _, second = await decisions(hub, 2)
    assert second.outcome is KevOutcome.ACCEPTED


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_in_flight": 0},
        {"queue_capacity": 0},
        {"decision_log_size": 0},
        {"max_mid_move_bps": 0},
        {"health_interval_s": math.inf},
        {"overflow": "drop_oldest"},
    ],
)
def test_a_config_out_of_bounds_is_refused(kwargs):
    with pytest.raises(ValueError, match="KevHubConfig"):
        KevHubConfig(**kwargs)
