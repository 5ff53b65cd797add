"""Kev inside the engine node: non-HOLD verdicts reach the hub, an accepted command acts
through the trading desk's gateway, and without a server the node trades on, Kev offline."""

from __future__ import annotations

import asyncio

from scripted_llama import command

from engine.kev.client import KevClientConfig
from engine.kev.hub import KevHubConfig, KevOutcome
from engine.laya.classifier import LayaClassifierConfig
from engine.node import EngineConfig, EngineNode
from engine.trading.config import TradingConfig

CHAT = "/v1/chat/completions"
ALWAYS_LEAN_BUY = (1.0, 0.0, 1.0, 1.0)
"""Laya thresholds under which every verdict is LEAN_BUY (the model still runs)."""


def node_config(model, journal, kev_url: str) -> EngineConfig:
    return EngineConfig(
        laya=LayaClassifierConfig(model_path=model, prefer_gpu=False, thresholds=ALWAYS_LEAN_BUY),
        trading=TradingConfig(journal_path=journal),
        kev_client=KevClientConfig(base_url=kev_url, request_timeout_s=2.0),
        kev_hub=KevHubConfig(health_interval_s=0.2, max_mid_move_bps=500.0),
        status_interval_s=0.05,
    )


async def until(condition, timeout_s: float, what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not condition():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def test_a_verdict_reaches_kev_and_its_command_lowers_the_risk_scale(
    scripted, laya_model, tmp_path
):
    scripted.script(CHAT, command(act="hold", risk=40, hedge=60, skew=-5, ttl=8000, why="lean"))
    node = EngineNode(node_config(laya_model, tmp_path / "journal.sqlite", scripted.url))
    await node.start()
    try:
        hub, desk = node.kev, node.desk
        assert hub is not None and desk is not None
        await until(lambda: hub.decisions(), 20, "Kev's first decision")
        decision = hub.decisions()[0]
        assert decision.outcome is KevOutcome.ACCEPTED, decision.reason
        assert decision.verdict == "LEAN_BUY" and decision.symbol in ("BTCUSDT", "ETHUSDT")
        assert desk.gateway.snapshot().risk_scale == 0.4
        assert desk.quote_skew_bps("BTCUSDT") in (0.0, -0.5)  # only the consulted symbol's
        prompt = scripted.requests[0]["messages"][-1]["content"]
        assert decision.symbol in prompt and "LEAN_BUY" in prompt
        assert hub.status().offered >= 1
    finally:
        await node.stop()


async def test_without_a_server_the_node_trades_and_shows_kev_offline(laya_model, tmp_path):
    node = EngineNode(node_config(laya_model, tmp_path / "journal.sqlite", "http://127.0.0.1:9"))
    await node.start()
    try:
        hub, sim = node.kev, node.sim
        assert hub is not None and sim is not None
        await until(lambda: sim.open_orders(), 20, "quotes to rest with Kev offline")
        await until(lambda: hub.status().offered > 0, 10, "verdicts to be offered")
        status = hub.status()
        assert status.state == "offline" and status.detail
        assert not hub.decisions()
    finally:
        await node.stop()
