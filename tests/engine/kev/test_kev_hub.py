"""KevHub with a scripted llama-server and the real risk gateway: what is accepted, refused,
rejected or stale, and why; offline and recovery; queue order; the decision log and the
journal; the prompt cache's warm-up."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import orjson
import pytest
from support.kev import make_gateway
from support.risk import BTC, ETH, MIDS, MS, T0
from support.scripted_llama import TIMINGS, ScriptedLlama, command, completion, delayed

from engine.journal import EntryKind, Journal, JournalConfig, read_journal
from engine.kev.client import KevClient
from engine.kev.command import KevCommandSpec
from engine.kev.config import KevClientConfig, KevHubConfig
from engine.kev.context import KEY_FEATURE_INDEX
from engine.kev.hedge import HedgeAnalytics, HedgeAnalyticsConfig
from engine.kev.hub import KevHub, KevOutcome, KevWarmUpEnded
from engine.kev.queue import KevQueueOverflow, KevSnapshot
from engine.kev.server import free_port
from engine.laya.feature_set import FEATURE_COUNT
from engine.laya.verdict import Verdict
from engine.risk.commands import KevAction
from engine.risk.events import RiskLimitChanged, TradingState
from engine.risk.intents import Source
from engine.risk.overrides import RiskOverrides
from engine.trading.events import TradingFault

CHAT = "/v1/chat/completions"
KEY_VALUES = (0.4, 0.3, 0.1, 0.8, 0.2, 0.6, -0.5, -0.3, 3.1, 2.2)
FEATURES = np.zeros((1, FEATURE_COUNT), np.float32)
FEATURES[0, KEY_FEATURE_INDEX] = KEY_VALUES
DEFAULT_SPEC = KevCommandSpec()
FAST = KevHubConfig(health_interval_s=0.05, warmup_timeout_s=None)
"""Without the warm-up request (it has tests of its own), so a script's first reply is the
first decision's."""


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
def gateway(request):
    """The test book's gateway; a test's indirect parameter overrides its config."""
    return make_gateway(**getattr(request, "param", {}))


@pytest.fixture
def journal(tmp_path):
    journal = Journal(JournalConfig(tmp_path / "journal.sqlite"))
    journal.start()
    yield journal
    journal.stop()


def journaled(journal: Journal):
    journal.flush()
    return read_journal(journal.config.path, kinds=[EntryKind.KEV_DECISION])


@pytest.fixture
async def start_hub(scripted, clock, gateway):
    started = []

    async def start(
        config: KevHubConfig = FAST,
        url: str | None = None,
        spec: KevCommandSpec = DEFAULT_SPEC,
        **kwargs,
    ) -> KevHub:
        client = KevClient(
            KevClientConfig(base_url=url or scripted.url, request_timeout_s=1.0), spec
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
    assert hub.skews.bps(BTC) == pytest.approx(-1.2) and hub.skews.bps(ETH) == 0.0
    clock.advance_ms(3000)
    assert hub.skews.bps(BTC) == 0.0


async def test_raising_the_risk_scale_is_refused_by_the_gateway(scripted, start_hub, gateway):
    gateway.set_limits(RiskOverrides(risk_scale=0.5), T0)
    scripted.script(CHAT, command(act="hold", risk=100, skew=20))
    hub = await start_hub()
    hub.offer(snap())
    (decision,) = await decisions(hub, 1)
    assert decision.outcome is KevOutcome.REFUSED
    assert decision.reason == "Kev cannot raise the risk scale (0.5 -> 1)"
    assert gateway.snapshot().risk_scale == 0.5
    assert hub.skews.bps(BTC) == 0.0  # nothing more of a refused command is applied


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
    gateway.set_limits(RiskOverrides(risk_scale=0.335), T0)
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
    hub = await start_hub(hedge={BTC: hedge})
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
        f"beta 100 fit {0.5 / stats.hedge_ratio * 100:.0f} pair 0.80 z {stats.spread_z:+.1f} "
        f"eg {stats.engle_granger:.1f}/{stats.critical_5pct:.1f} {half_life}",
        "BTCUSDT EMERGENCY p 5 7 5 83; 1.2s: LEAN_BUY 1 EMERGENCY 1",
        "imb 40 30 10 vpin 60 flow -50 -30 micro 0.8 spread 0.2 vol 3.1 2.2",
    ]


def pair_with_beta(beta: float) -> HedgeAnalytics:
    """A pair whose hedge moves `beta` times its quoted symbol (in logs)."""
    pair = HedgeAnalytics(HedgeAnalyticsConfig(window=60, min_samples=30))
    for k in range(60):
        quoted = 60_000 * math.exp(1e-4 * math.sin(k / 3) + 3e-4 * k)
        spread = math.exp(5e-5 * math.sin(1.7 * k))
        pair.on_mids(
            1_700_006_400_000 + 1_000 * k, quoted, 3_000 * (quoted / 60_000) ** beta * spread
        )
    return pair


async def test_a_context_on_a_symbol_of_a_book_carries_that_symbols_pair(scripted, start_hub):
    scripted.script(CHAT, command(), command())
    hub = await start_hub(hedge={BTC: pair_with_beta(0.8), ETH: pair_with_beta(1.3)})
    hub.offer(snap(ETH))
    await decisions(hub, 1)
    hub.offer(snap(BTC))
    await decisions(hub, 2)
    pairs = [
        next(line for line in request["messages"][1]["content"].splitlines() if "pair" in line)
        for request in scripted.requests
    ]
    assert [line[line.index("pair") :].split()[1] for line in pairs] == ["1.30", "0.80"]


@pytest.mark.parametrize("gateway", [{"beta_band": (0.8, 1.25)}], indirect=True)
async def test_kev_sets_the_flagged_symbols_beta_and_the_hedge_offsets_it(
    scripted, start_hub, gateway
):
    gateway.on_position_sync(BTC, 0.5, MIDS[BTC], T0)
    assert gateway.book_delta() == pytest.approx(30_000)
    gateway.drain_events()
    spec = KevCommandSpec().for_gateway(gateway.config)
    assert spec.beta_pct == (80, 125)
    scripted.script(
        CHAT,
        command(act="hold", beta=120),
        command(act="hold", beta=120),  # repeats the beta shown: nothing moves
        command(act="hold", beta=80),  # about the hedge, which has no beta: ignored
    )
    pair = pair_with_beta(0.8)
    hub = await start_hub(spec=spec, hedge={BTC: pair, ETH: pair})
    hub.offer(snap(BTC))
    (moved,) = await decisions(hub, 1)
    assert moved.outcome is KevOutcome.ACCEPTED
    assert (
        moved.reason == "hold: ACTIVE, risk 1, hedge 0.5, beta BTCUSDT 1.2, skew +0 bps for 3000 ms"
    )
    assert moved.gateway.beta == 1.2
    assert gateway.book_delta() == pytest.approx(36_000)  # what the hedge trades against
    assert dict(gateway.snapshot().betas) == {BTC: 1.2}
    assert [(e.name, e.old, e.new, e.source) for e in gateway.drain_events()] == [
        ("beta BTCUSDT", 1.0, 1.2, Source.KEV)
    ]
    hub.offer(snap(BTC))
    hub.offer(snap(ETH))
    _, repeated, hedge = await decisions(hub, 3)
    assert (
        repeated.reason
        == hedge.reason
        == "hold: ACTIVE, risk 1, hedge 0.5, skew +0 bps for 3000 ms"
    )
    assert gateway.drain_events() == () and dict(gateway.snapshot().betas) == {BTC: 1.2}
    contexts = [request["messages"][1]["content"].splitlines()[2] for request in scripted.requests]
    fit = f"fit {0.5 / pair.stats().hedge_ratio * 100:.0f}"
    assert [line[: line.index("pair")].strip() for line in contexts] == [
        f"beta 100 {fit}",
        f"beta 120 {fit}",
        "",  # the hedge's own line names its pair only
    ]


@pytest.mark.parametrize(
    "gateway", [{"hedge_symbol": None, "beta_band": (0.8, 1.25)}], indirect=True
)
async def test_without_a_hedge_a_beta_is_not_shown_and_changes_nothing(
    scripted, start_hub, gateway
):
    scripted.script(CHAT, command(act="hold", beta=120))
    hub = await start_hub()  # a spec wider than the gateway's: Kev writes a beta it may not set
    hub.offer(snap(BTC))
    (decision,) = await decisions(hub, 1)
    assert decision.outcome is KevOutcome.ACCEPTED
    assert decision.reason == "hold: ACTIVE, risk 1, hedge 0.5, skew +0 bps for 3000 ms"
    assert decision.gateway.beta is None
    assert dict(gateway.snapshot().betas) == {BTC: 1.0, ETH: 1.0}
    assert "beta" not in scripted.requests[0]["messages"][1]["content"]


async def test_a_beta_the_gateway_holds_still_is_not_sent(scripted, start_hub, gateway):
    """With a hedge, at the default beta band (1, 1) the gateway's range for BTCUSDT is its
    configured beta alone: a beta Kev writes beyond it (a spec wider than the gateway's) moves
    nothing, so it is not sent to be clamped back."""
    assert gateway.config.beta_range(BTC) == (1.0, 1.0)
    scripted.script(CHAT, command(act="hold", beta=120))
    hub = await start_hub()
    hub.offer(snap(BTC))
    (decision,) = await decisions(hub, 1)
    assert decision.outcome is KevOutcome.ACCEPTED
    assert decision.reason == "hold: ACTIVE, risk 1, hedge 0.5, skew +0 bps for 3000 ms"
    assert decision.gateway.beta is None
    assert dict(gateway.snapshot().betas) == {BTC: 1.0}


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
        warmup_timeout_s=None,
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


ENTRY_KEYS = {
    "decision",
    "symbol",
    "verdict",
    "probabilities",
    "coalesced",
    "outcome",
    "reason",
    "model",
    "context_age_ms",
    "queue_wait_ms",
    "latency_ms",
    "command",
    "reasoning",
    "raw",
    "gateway",
    "timings",
}


async def test_each_decision_is_journaled_once_with_what_became_of_it(
    scripted, start_hub, gateway, clock, journal
):
    gateway.set_limits(RiskOverrides(risk_scale=0.5), T0)
    answers = [
        command(act="hold", risk=100, why="calm"),  # raises the risk scale: refused
        command(act="hold", risk=50, hedge=120),  # outside the gateway's hedge band: clamped
        command(act="reduce", risk=40, hedge=60, skew=-12, ttl=3000, why="vpin high"),
        delayed(0.01, command(act="flatten", ttl=3000), lambda: clock.advance_ms(3500)),
        command(act="resume"),  # not in the schema
        delayed(1.5, command()),  # past the client's 1 s
    ]
    # A hedge band wider than the gateway's, so that the gateway has something to clamp.
    hub = await start_hub(spec=KevCommandSpec(hedge_pct=(0, 200)), journal=journal)
    for count, answer in enumerate(answers, start=1):
        scripted.script(CHAT, answer)
        assert hub.offer(snap())
        await decisions(hub, count)
    logged = hub.decisions()
    entries = journaled(journal)
    assert [entry.payload["decision"] for entry in entries] == [d.id for d in logged]
    assert [d.outcome for d in logged] == [
        KevOutcome.REFUSED,
        KevOutcome.ACCEPTED,
        KevOutcome.ACCEPTED,
        KevOutcome.STALE,
        KevOutcome.REJECTED,
        KevOutcome.REJECTED,
    ]
    for entry, decision in zip(entries, logged, strict=True):
        payload = entry.payload
        assert set(payload) == ENTRY_KEYS
        assert entry.at_ns == decision.at_ns  # the hub's clock
        assert (payload["outcome"], payload["reason"]) == (decision.outcome.value, decision.reason)
        assert (payload["symbol"], payload["verdict"]) == (BTC, "EMERGENCY")
        assert payload["probabilities"] == [0.05, 0.07, 0.05, 0.83]
        assert payload["model"] == "scripted.gguf" and payload["latency_ms"] > 0
    refused, clamped, accepted, stale, invalid, timed_out = (e.payload for e in entries)
    assert refused["command"] == {
        "action": "hold",
        "risk_scale": 1.0,
        "hedge_ratio": 0.5,
        "beta": 1.0,
        "skew_bps": 0.0,
        "ttl_ms": 3000,
    }
    assert refused["reasoning"] == "calm" and refused["raw"] == ""
    assert refused["gateway"] == {
        "result": "refused",
        "notes": ["Kev cannot raise the risk scale (0.5 -> 1)"],
        "state": "ACTIVE",
        "risk_scale": 0.5,
        "hedge_ratio": 0.5,
        "beta": None,
    }
    assert refused["context_age_ms"] == 0.0 and refused["timings"] == TIMINGS
    assert clamped["gateway"]["result"] == "clamped"
    assert clamped["gateway"]["notes"] == ["hedge ratio 1.2 clamped to 1"]
    assert clamped["reason"].endswith("; hedge ratio 1.2 clamped to 1")
    assert accepted["gateway"] == {
        "result": "accepted",
        "notes": [],
        "state": "REDUCING",
        "risk_scale": 0.4,
        "hedge_ratio": 0.6,
        "beta": None,
    }
    assert accepted["reasoning"] == "vpin high" and accepted["command"]["skew_bps"] == -1.2
    assert stale["gateway"] is None and stale["command"]["action"] == "flatten"
    assert stale["context_age_ms"] == 3500.0
    assert stale["reason"] == "context is 3500 ms old, past its ttl of 3000 ms"
    assert entries[3].at_ns == T0 + 3500 * MS
    assert invalid["command"] is None and invalid["gateway"] is None
    assert invalid["reason"].startswith("schema_violation: act must be one of")
    assert orjson.loads(invalid["raw"])["act"] == "resume"
    assert timed_out["reason"] == "timeout: no answer within 1 s"
    assert timed_out["command"] is None and timed_out["timings"] is None
    assert timed_out["latency_ms"] >= 1000
    assert gateway.snapshot().state is TradingState.REDUCING  # only the accepted acted


async def test_a_decision_the_journal_cannot_take_is_said_and_kev_goes_on(
    scripted, start_hub, tmp_path
):
    events = []
    never_started = Journal(JournalConfig(tmp_path / "journal.sqlite"))
    scripted.script(CHAT, command())
    hub = await start_hub(journal=never_started, on_event=events.append)
    for count in (1, 2):
        hub.offer(snap())
        await decisions(hub, count)
    assert events == [
        TradingFault("Kev decision 0 not journaled: Journal is not started", T0),
        TradingFault("Kev decision 1 not journaled: Journal is not started", T0),
    ]
    assert [d.outcome for d in hub.decisions()] == [KevOutcome.ACCEPTED] * 2


WARMING = KevHubConfig(health_interval_s=0.05, warmup_timeout_s=5.0)


def context_of(request: dict) -> str:
    return request["messages"][1]["content"]


async def test_the_warm_up_comes_before_the_first_decision_and_is_not_one(
    scripted, start_hub, gateway, journal
):
    events = []
    # Were the warm-up's answer applied, the gateway would be flattening.
    scripted.script(CHAT, delayed(0.3, command(act="flatten")), command(act="hold"))
    hub = await start_hub(WARMING, journal=journal, on_event=events.append)
    assert hub.offer(snap())  # waits for the warm-up
    async with asyncio.timeout(5):
        while hub.status().state != "warming":
            await asyncio.sleep(0.005)
    assert hub.status().detail == "warming the prompt cache (up to 5 s)"
    (decision,) = await decisions(hub, 1)
    warm_up, asked = scripted.requests
    system = warm_up["messages"][0]["content"]
    assert system == asked["messages"][0]["content"] and system.startswith("You are Kev")
    assert warm_up["response_format"] == asked["response_format"]
    assert context_of(warm_up).splitlines() == [
        "ACTIVE risk 100 hedge 50 limits 80000 -500 -1000",
        "pos flat delta +0 pnl +0.0",
        "beta 100",
        "BTCUSDT HOLD p 100 0 0 0; 0.0s: HOLD 1",
        "imb 0 0 0 vpin 0 flow 0 0 micro 0.0 spread 0.0 vol 0.0 0.0",
    ]
    assert "BTCUSDT EMERGENCY" in context_of(asked)
    (ended,) = events
    text = "prompt cache warmed in 0.3 s (88 prompt tokens evaluated, 236 cached)"
    assert isinstance(ended, KevWarmUpEnded) and (ended.ok, ended.text, ended.at_ns) == (
        True,
        text,
        T0,
    )
    assert ended.duration_ms >= 300
    status = hub.status()
    assert (status.warmup, status.warmup_ms) == (text, ended.duration_ms)
    assert decision.command.action is KevAction.HOLD
    assert gateway.snapshot().state is TradingState.ACTIVE
    assert [entry.payload["decision"] for entry in journaled(journal)] == [decision.id]
    assert status.outcomes["accepted"] == 1 and status.last_latency_ms == decision.wall_ms


async def test_a_server_coming_back_is_warmed_up_before_its_next_decision(start_hub):
    events = []
    port = free_port()
    hub = await start_hub(WARMING, url=f"http://127.0.0.1:{port}", on_event=events.append)
    first = ScriptedLlama(port)
    first.script(CHAT, command())
    await first.start()
    try:
        await online(hub)
    finally:
        await first.stop()
    async with asyncio.timeout(5):
        while hub.status().state != "offline":
            await asyncio.sleep(0.01)
    hub.offer(snap())
    second = ScriptedLlama(port)
    second.script(CHAT, command(act="reduce"))
    await second.start()
    try:
        (decision,) = await decisions(hub, 1)
    finally:
        await second.stop()
    assert [event.ok for event in events] == [True, True]
    assert len(first.requests) == 1  # its warm-up only
    warm_up, asked = (context_of(request) for request in second.requests)
    assert "BTCUSDT HOLD" in warm_up and "BTCUSDT EMERGENCY" in asked
    assert decision.outcome is KevOutcome.ACCEPTED


async def test_a_warm_up_that_times_out_keeps_kev_offline_and_is_tried_again(scripted, start_hub):
    seen = []
    hubs = []

    def on_event(event):
        status = hubs[0].status()
        seen.append((event.ok, event.text, status.state, status.detail))

    scripted.script(CHAT, delayed(0.6, command()), command())
    config = KevHubConfig(health_interval_s=0.05, warmup_timeout_s=0.2)
    hubs.append(await start_hub(config, on_event=on_event))
    hubs[0].offer(snap())
    (decision,) = await decisions(hubs[0], 1)
    failed, warmed = seen
    assert failed == (
        False,
        "warm-up failed after 0.2 s: timeout: no answer within 0.2 s",
        "offline",
        "warm-up: no answer within 0.2 s",
    )
    assert warmed[0] and warmed[2] == "online"
    assert len(scripted.requests) == 3 and decision.outcome is KevOutcome.ACCEPTED


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_in_flight": 0},
        {"queue_capacity": 0},
        {"decision_log_size": 0},
        {"max_mid_move_bps": 0},
        {"health_interval_s": math.inf},
        {"warmup_timeout_s": 0},
        {"overflow": "drop_oldest"},
    ],
)
def test_a_config_out_of_bounds_is_refused(kwargs):
    with pytest.raises(ValueError, match="KevHubConfig"):
        KevHubConfig(**kwargs)
