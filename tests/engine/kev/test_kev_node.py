"""Kev inside the engine node: the prompt cache warmed first, non-HOLD verdicts reach the hub,
a command acts through the trading desk, every decision is journaled once (with the real
llama-server too), and without a server the node trades on, Kev offline."""

from __future__ import annotations

from support.scripted_llama import command
from support.waiting import eventually

from engine.config import EngineConfig
from engine.journal import EntryKind, read_journal
from engine.kev.config import KevClientConfig, KevHubConfig
from engine.kev.hub import KevOutcome, KevWarmUpEnded
from engine.laya.config import LayaClassifierConfig
from engine.node import EngineNode
from engine.trading.config import TradingConfig

CHAT = "/v1/chat/completions"
ALWAYS_LEAN_BUY = (1.0, 0.0, 1.0, 1.0)
"""Laya thresholds under which every verdict is LEAN_BUY (the model still runs)."""


def node_config(model, journal, kev_url: str, request_timeout_s: float = 2.0) -> EngineConfig:
    return EngineConfig(
        laya=LayaClassifierConfig(model_path=model, prefer_gpu=False, thresholds=ALWAYS_LEAN_BUY),
        trading=TradingConfig(journal_path=journal),
        kev_client=KevClientConfig(base_url=kev_url, request_timeout_s=request_timeout_s),
        kev_hub=KevHubConfig(health_interval_s=0.2, max_mid_move_bps=500.0),
        status_interval_s=0.05,
    )


def kev_entries(journal) -> list[dict]:
    return [entry.payload for entry in read_journal(journal, kinds=[EntryKind.KEV_DECISION])]


def warm_ups(node: EngineNode) -> list[KevWarmUpEnded]:
    return [event for _, event in node.events.since(-1)[0] if isinstance(event, KevWarmUpEnded)]


async def test_a_verdict_reaches_kev_and_its_command_lowers_the_risk_scale(
    scripted, laya_model, tmp_path
):
    scripted.script(CHAT, command(act="hold", risk=40, hedge=60, skew=-5, ttl=8000, why="lean"))
    journal = tmp_path / "journal.sqlite"
    node = EngineNode(node_config(laya_model, journal, scripted.url))
    await node.start()
    try:
        hub, desk = node.kev, node.desk
        assert hub is not None and desk is not None
        await eventually(lambda: hub.decisions(), 20, "Kev's first decision", interval_s=0.05)
        decision = hub.decisions()[0]
        assert decision.outcome is KevOutcome.ACCEPTED, decision.reason
        assert decision.verdict == "LEAN_BUY" and decision.symbol in ("BTCUSDT", "ETHUSDT")
        assert desk.gateway.snapshot().risk_scale == 0.4
        assert desk.quote_skews is hub.skews  # the desk quotes with what Kev set
        assert hub.skews.bps("BTCUSDT") in (0.0, -0.5)  # only the consulted symbol's
        warm_up, asked = (r["messages"][-1]["content"] for r in scripted.requests[:2])
        assert " HOLD p 100 0 0 0" in warm_up  # the warm-up came first: a neutral context
        assert decision.symbol in asked and "LEAN_BUY" in asked
        assert [event.ok for event in warm_ups(node)] == [True]
        assert hub.status().offered >= 1
    finally:
        await node.stop()
    decisions = hub.decisions(256)
    entries = kev_entries(journal)
    assert [entry["decision"] for entry in entries] == [d.id for d in decisions]
    first = entries[0]
    assert first["outcome"] == "accepted" and first["reasoning"] == "lean"
    assert first["gateway"]["risk_scale"] == 0.4 and first["model"] == "scripted.gguf"
    # The desk drained the gateway's events with the command: the change is journaled too.
    changes = [e.payload for e in read_journal(journal, kinds=[EntryKind.STATE_CHANGE])]
    assert {
        "limit": "risk_scale",
        "symbol": None,
        "old": 1.0,
        "new": 0.4,
        "source": "kev",
    } in changes


async def test_decisions_of_the_real_model_are_journaled_once_each(
    llama_server, laya_model, tmp_path
):
    journal = tmp_path / "journal.sqlite"
    # Room for a whole decision of the tiny model on a busy 2-core VM.
    node = EngineNode(node_config(laya_model, journal, llama_server.url, request_timeout_s=30.0))
    await node.start()
    try:
        hub = node.kev
        assert hub is not None
        await eventually(
            lambda: len(hub.decisions()) >= 2,
            180,
            "two decisions of the tiny model",
            interval_s=0.05,
        )
        print(f"Kev's status: {hub.status()}")
    finally:
        await node.stop()
    decisions = hub.decisions(256)
    entries = kev_entries(journal)
    assert [entry["decision"] for entry in entries] == [d.id for d in decisions]
    for entry, decision in zip(entries, decisions, strict=True):
        print(entry)
        assert entry["outcome"] == decision.outcome.value and entry["reason"] == decision.reason
        assert (
            entry["verdict"] == "LEAN_BUY" and entry["model"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
        )
        assert entry["latency_ms"] == round(decision.wall_ms, 3) > 0
        assert entry["context_age_ms"] == round(decision.context_age_ms, 3) >= 0
        if decision.command is not None:  # the grammar makes the tiny model's answers valid
            assert entry["command"]["action"] == decision.command.action.value
            assert entry["reasoning"] == decision.command.reasoning
        reached = decision.outcome in (KevOutcome.ACCEPTED, KevOutcome.REFUSED)
        assert (entry["gateway"] is not None) == reached
        if reached:
            assert entry["gateway"]["result"] in ("accepted", "clamped", "refused")
    warmed = warm_ups(node)[0]  # a decision that timed out would bring another
    assert warmed.ok, warmed.text


async def test_without_a_server_the_node_trades_and_shows_kev_offline(laya_model, tmp_path):
    node = EngineNode(node_config(laya_model, tmp_path / "journal.sqlite", "http://127.0.0.1:9"))
    await node.start()
    try:
        hub, sim = node.kev, node.sim
        assert hub is not None and sim is not None
        await eventually(
            lambda: sim.open_orders(), 20, "quotes to rest with Kev offline", interval_s=0.05
        )
        await eventually(
            lambda: hub.status().offered > 0, 10, "verdicts to be offered", interval_s=0.05
        )
        status = hub.status()
        assert status.state == "offline" and status.detail
        assert not hub.decisions()
    finally:
        await node.stop()
