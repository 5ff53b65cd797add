"""Kev against a real llama-server with the tiny model (SmolLM2-135M-Instruct), started once
for the session: structured commands, the prompt cache, truncation, a stopped and continued
server, the gateway refusing what Kev may not do; and a server of its own restarted, whose
prompt cache the hub warms before the first decision."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import numpy as np
import orjson
import pytest
from support.kev import make_gateway, tiny_llama_server
from support.risk import BTC, ETH, MIDS, T0

from engine.kev.client import KevClient, KevFailure
from engine.kev.command import COMMAND_KEYS, KevCommandSpec
from engine.kev.config import KevClientConfig, KevHubConfig
from engine.kev.context import KEY_FEATURE_INDEX, format_context
from engine.kev.hub import KevHub, KevOutcome, KevWarmUpEnded
from engine.kev.model_fetch import TINY_MODEL_FILE
from engine.kev.queue import KevRequest, KevSnapshot
from engine.kev.server import LlamaServerProcess
from engine.laya.feature_set import FEATURE_COUNT
from engine.laya.verdict import Verdict
from engine.risk.commands import KevAction
from engine.risk.events import TradingState
from engine.risk.overrides import RiskOverrides

# (symbol, verdict, probabilities, key features in KEY_FEATURES order)
MARKETS = [
    (
        BTC,
        Verdict.EMERGENCY,
        (0.05, 0.07, 0.05, 0.83),
        (0.9, 0.7, 0.4, 2.1, 0.3, 0.8, 0.9, 0.7, 9.5, 2.0),
    ),
    (
        ETH,
        Verdict.LEAN_SELL,
        (0.2, 0.05, 0.7, 0.05),
        (-0.4, -0.3, -0.1, -0.6, 0.5, 0.3, -0.5, -0.3, 2.2, 2.0),
    ),
    (
        BTC,
        Verdict.LEAN_BUY,
        (0.3, 0.6, 0.05, 0.05),
        (0.2, 0.1, 0.05, 0.3, 0.1, 0.2, 0.3, 0.1, 1.1, 1.5),
    ),
]


def snapshot(index: int) -> KevSnapshot:
    symbol, verdict, probabilities, key_values = MARKETS[index % len(MARKETS)]
    features = np.zeros((1, FEATURE_COUNT), np.float32)
    features[0, KEY_FEATURE_INDEX] = key_values
    return KevSnapshot(
        symbol, 1_700_006_400_000, int(verdict), probabilities, MIDS[symbol], features
    )


def context(index: int) -> str:
    request = KevRequest(snapshot(index), T0, T0, 0, (0, 1, 0, 1), True)
    return format_context(request, make_gateway().snapshot(), None, 120.0)


DEFAULT_SPEC = KevCommandSpec()


def client_for(server, spec: KevCommandSpec = DEFAULT_SPEC, **settings) -> KevClient:
    config = {"base_url": server.url, "request_timeout_s": 30.0}
    config.update(settings)
    return KevClient(KevClientConfig(**config), spec)


async def test_schema_valid_commands_come_back(llama_server):
    async with client_for(llama_server) as client:
        replies = [await client.ask(context(k)) for k in range(3)]
    for reply in replies:
        assert reply.failure is None, (reply.reason, reply.raw)
        assert list(orjson.loads(reply.raw)) == list(COMMAND_KEYS)
        assert reply.command.action in KevAction
        assert 0.0 <= reply.command.risk_scale <= 1.0
        assert 250 <= reply.command.ttl_ms <= 10_000
        assert reply.timings.predicted_n <= 96
        assert reply.model == TINY_MODEL_FILE


async def test_the_second_call_reuses_the_cached_prefix(llama_server):
    async with client_for(llama_server) as client:
        await client.ask(context(0))
        second = await client.ask(context(1))
    assert second.failure is None, second.reason
    # At least the system prompt (well over 200 tokens) came from the cache.
    assert second.timings.cache_n > 200
    assert second.timings.prompt_n < second.timings.cache_n


async def test_a_tiny_max_tokens_is_a_clean_truncation(llama_server):
    async with client_for(llama_server) as client:
        reply = await client.ask(context(2), max_tokens=8)
    assert reply.command is None and reply.failure is KevFailure.TRUNCATED
    assert reply.reason == "output cut at max_tokens=8"
    assert reply.finish_reason == "length" and reply.timings.predicted_n == 8
    assert reply.raw.startswith("{")


async def consult(hub: KevHub, index: int, timeout_s: float = 60.0):
    before = len(hub.decisions())
    assert hub.offer(snapshot(index))
    async with asyncio.timeout(timeout_s):
        while len(hub.decisions()) == before:
            await asyncio.sleep(0.01)
    return hub.decisions(1)[0]


async def wait_for_state(hub: KevHub, states: tuple[str, ...], timeout_s: float = 30.0) -> None:
    async with asyncio.timeout(timeout_s):
        while hub.status().state not in states:
            await asyncio.sleep(0.02)


@pytest.fixture
async def start_hub(llama_server):
    started = []

    async def start(gateway, spec: KevCommandSpec, clock=time.time_ns, **client_settings):
        client = client_for(llama_server, spec, **client_settings)
        await client.start()
        hub = KevHub(KevHubConfig(health_interval_s=0.2), client, gateway, clock)
        await hub.start()
        started.append((hub, client))
        # The warm-up first: a cold prompt cache takes ~20 s on one busy core.
        await wait_for_state(hub, ("online",), timeout_s=120)
        return hub

    yield start
    for hub, client in started:
        await hub.stop()
        await client.stop()


# The grammar can pin what the model writes: a spec with one action and a one-value range makes
# even the tiny model ask for exactly the thing the gateway must refuse. The hub's clock stands
# still there, so that a slow shared machine cannot turn the answer stale before the gateway
# judges it (staleness has its own tests).
SLOW_TTL = (10_000, 10_000)


def frozen_clock() -> int:
    return T0


async def test_a_command_raising_the_risk_scale_is_refused(start_hub):
    gateway = make_gateway()
    gateway.set_limits(RiskOverrides(risk_scale=0.5), T0)
    spec = KevCommandSpec(actions=(KevAction.HOLD,), risk_pct=(100, 100), ttl_ms=SLOW_TTL)
    hub = await start_hub(gateway, spec.for_gateway(gateway.config), frozen_clock)
    decision = await consult(hub, 0)
    assert orjson.loads(decision.raw)["risk"] == 100
    assert decision.outcome is KevOutcome.REFUSED
    assert decision.reason == "Kev cannot raise the risk scale (0.5 -> 1)"
    assert gateway.snapshot().risk_scale == 0.5


async def test_a_command_leaving_paused_is_refused(start_hub):
    gateway = make_gateway()
    gateway.pause(T0)
    spec = KevCommandSpec(actions=(KevAction.REDUCE,), ttl_ms=SLOW_TTL)
    hub = await start_hub(gateway, spec.for_gateway(gateway.config), frozen_clock)
    decision = await consult(hub, 1)
    assert decision.command.action is KevAction.REDUCE
    assert decision.outcome is KevOutcome.REFUSED
    assert decision.reason == "Kev cannot leave PAUSED"
    assert gateway.snapshot().state is TradingState.PAUSED


async def test_a_stopped_server_times_out_and_a_continued_one_recovers(llama_server, start_hub):
    gateway = make_gateway()
    # The timeout must fit a whole decision of the tiny model on a busy 2-core VM (several
    # seconds), since the same hub has to succeed again after the server continues.
    hub = await start_hub(
        gateway, KevCommandSpec(ttl_ms=SLOW_TTL), request_timeout_s=15.0, probe_timeout_s=0.5
    )
    os.kill(llama_server.pid, signal.SIGSTOP)
    try:
        decision = await consult(hub, 0)
        assert decision.outcome is KevOutcome.REJECTED
        assert decision.reason == "timeout: no answer within 15 s"
        await wait_for_state(hub, ("offline",))
        assert hub.status().detail.startswith("no answer within")
    finally:
        os.kill(llama_server.pid, signal.SIGCONT)
    await wait_for_state(hub, ("online", "busy"), timeout_s=120)
    # The server may first finish what it was doing when stopped; a command comes back within
    # a few attempts.
    async with asyncio.timeout(120):
        while True:
            decision = await consult(hub, 1)
            if decision.command is not None:
                break
    assert decision.outcome is not KevOutcome.REJECTED


async def test_after_a_restart_the_warm_up_comes_before_the_first_decision(tmp_path):
    server = tiny_llama_server(tmp_path)
    await asyncio.to_thread(server.start)
    restarted = LlamaServerProcess(server.config)
    gateway = make_gateway()
    warm_ups: list[tuple[KevWarmUpEnded, int]] = []
    hubs: list[KevHub] = []
    client = client_for(server, KevCommandSpec(ttl_ms=SLOW_TTL), probe_timeout_s=0.5)
    await client.start()
    # Each warm-up with the count of decisions made before it ended.
    hub = KevHub(
        KevHubConfig(health_interval_s=0.2),
        client,
        gateway,
        frozen_clock,  # the context waits through the outage and the warm-up without expiring
        on_event=lambda event: warm_ups.append((event, len(hubs[0].decisions()))),
    )
    hubs.append(hub)
    await hub.start()
    try:
        await wait_for_state(hub, ("online",), timeout_s=120)
        await asyncio.to_thread(server.stop)
        await wait_for_state(hub, ("offline",))
        assert hub.offer(snapshot(0))  # waits for the server and its warm-up
        await asyncio.to_thread(restarted.start)
        async with asyncio.timeout(180):
            while not hub.decisions():
                await asyncio.sleep(0.05)
    finally:
        await hub.stop()
        await client.stop()
        await asyncio.to_thread(restarted.stop)
    (decision,) = hub.decisions()
    (first, _), (after_restart, decided_before) = warm_ups
    assert first.ok and after_restart.ok, (first.text, after_restart.text)
    assert decided_before == 0
    print(
        f"warm-ups {first.duration_ms:,.0f} ms and {after_restart.duration_ms:,.0f} ms after "
        f"the restart ({after_restart.text}); the first decision after it "
        f"{decision.wall_ms:,.0f} ms, {decision.timings}"
    )
    # The decision found the system prompt (well over 200 tokens) in the cache.
    assert decision.command is not None, decision.reason
    assert decision.timings.cache_n > 200
    assert hub.status().warmup == after_restart.text
