"""EngineNode: what it refuses to build, its own simulator with trading, paper trading on a
recording, commands from another thread, the published status."""

from __future__ import annotations

import asyncio

import pytest
from support.recordings import write_books
from support.waiting import eventually

from engine.feed.replay import START_LEAD_NS
from engine.journal import read_journal
from engine.laya.classifier import LayaClassifierConfig
from engine.node import EngineConfig, EngineNode, format_status
from engine.tools.bench.trading import NEVER_EMERGENCY
from engine.trading.commands import Command, Kill, Pause, Resume
from engine.trading.config import TradingConfig, TradingMode


def laya(model) -> LayaClassifierConfig:
    return LayaClassifierConfig(model_path=model, prefer_gpu=False, thresholds=NEVER_EMERGENCY)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"replay_path": "x.gz", "trading": TradingConfig()}, "only be traded on paper"),
        ({"trading": TradingConfig(mode=TradingMode.DEMO)}, "needs Bitget's public feed"),
        ({"live_url": "ws://127.0.0.1:1/v2/ws/public", "trading": TradingConfig()}, "REST url"),
        ({"trading": TradingConfig(rest_url="http://127.0.0.1:1")}, "that simulator.s public feed"),
        ({"symbols": ("BTCUSDT",), "trading": TradingConfig()}, "not among the market"),
    ],
)
def test_config_refuses_trading_it_cannot_do(settings, message):
    with pytest.raises(ValueError, match=message):
        EngineConfig(**settings)


def test_live_needs_the_confirmation_and_demo_needs_keys(tmp_path):
    with pytest.raises(ValueError, match="--live"):
        TradingConfig(mode=TradingMode.LIVE)
    config = EngineConfig(
        live_url="wss://wspap.bitget.com/v2/ws/public",
        trading=TradingConfig(mode=TradingMode.DEMO, journal_path=tmp_path / "j.sqlite"),
    )
    with pytest.raises(ValueError, match="credentials"):
        EngineNode(config)


async def test_without_trading_commands_say_so():
    node = EngineNode(EngineConfig())
    result = await node.execute(Command(Kill()))
    assert not result.ok and "trading is off" in result.message
    with pytest.raises(RuntimeError, match="not running"):
        node.call_threadsafe(node.execute(Command(Pause())))


async def test_the_default_node_trades_on_its_own_simulator(laya_model, tmp_path):
    config = EngineConfig(
        laya=laya(laya_model),
        trading=TradingConfig(journal_path=tmp_path / "journal.sqlite"),
        status_interval_s=0.05,
    )
    node = EngineNode(config)
    await node.start()
    try:
        sim = node.sim
        assert sim is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        await eventually(
            lambda: len(sim.open_orders()) >= 2,
            20,
            "quotes resting on the simulator",
            interval_s=0.05,
        )
        await asyncio.sleep(0.1)
        published = node.latest_status
        assert published is not None and published.trading is not None
        assert published.trading.venue == "sim" and published.trading.mode == "sim"
        assert published.trading.private_stream == "live"
        paused = await asyncio.to_thread(
            lambda: node.call_threadsafe(node.execute(Command(Pause()))).result(10)
        )
        assert paused.ok
        await eventually(
            lambda: not sim.open_orders(),
            deadline + 5 - loop.time(),
            "the pause to take the quotes off",
            interval_s=0.05,
        )
        assert (await node.execute(Command(Resume()))).ok
    finally:
        await node.stop()
    assert sim.open_orders() == []  # stopping cancels what rests


@pytest.fixture
def recording(tmp_path):
    asks = [["64000.2", "0.5"], ["64000.3", "1"]]
    bids = [["64000.0", "0.5"], ["63999.9", "1"]]
    return write_books(tmp_path / "btc.bitget.gz", 40, asks, bids)


def test_a_recording_trades_on_paper_in_its_own_time(recording, laya_model, tmp_path):
    config = EngineConfig(
        replay_path=str(recording),
        replay_speed=None,
        laya=laya(laya_model),
        trading=TradingConfig(mode=TradingMode.PAPER, journal_path=tmp_path / "j.sqlite"),
    )
    node = EngineNode(config)
    start_ns = 1_726_000_000_000 * 1_000_000 - START_LEAD_NS  # up before the first frame
    assert node.clock.market and node.clock.time_ns() == start_ns

    async def main() -> str:
        await node.start()
        try:
            while not node.finished:
                await asyncio.sleep(0.05)  # market time: the replay ends within 4 s of it
            return format_status(node.status())
        finally:
            await node.stop()

    status_line = node.clock.run(main())
    assert status_line.startswith("REPLAY") and "PAPER ACTIVE" in status_line
    # The recording's 40 books span 3.9 s of market time; the engine lived in that time.
    assert node.clock.time_ns() >= (1_726_000_000_000 + 3_900) * 1_000_000
    journal = read_journal(tmp_path / "j.sqlite")
    assert journal and all(start_ns <= entry.at_ns <= node.clock.time_ns() for entry in journal)


async def test_a_replay_refuses_to_start_on_a_loop_that_is_not_its_clocks(recording, laya_model):
    node = EngineNode(EngineConfig(replay_path=str(recording), laya=laya(laya_model)))
    with pytest.raises(RuntimeError, match="MarketClock's loop"):
        await node.start()
