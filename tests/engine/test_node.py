"""EngineNode: what it refuses to build, its own simulator with trading, paper trading on a
recording, commands from another thread, the published status."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest
from support.laya_models import NEWER_LABEL_VERSION, with_metadata, write_mlp_model
from support.locks import held_by_another_process
from support.recordings import shared_spot, write_books
from support.risk import BTC, T0, make_gateway, mark, open_position
from support.waiting import eventually

from engine.bitget.credentials import Credentials
from engine.config import EngineConfig
from engine.feed.events import FeedState
from engine.feed.replay import START_LEAD_NS
from engine.instance_lock import EngineLocked, InstanceLock, account_lock_path, journal_lock_path
from engine.journal import read_journal
from engine.laya.config import LayaClassifierConfig
from engine.laya.decide import QuoteIntent
from engine.laya.model import LayaModelError, ModelMismatchError, ModelNotFoundError
from engine.market.instruments import BTCUSDT, Instrument
from engine.node import EngineNode, EngineStatus, SymbolStatus, format_status, format_trading
from engine.pipeline import LayaStoodAside
from engine.tools.bench.trading import NEVER_EMERGENCY
from engine.trading.commands import Command, Kill, Pause, Resume
from engine.trading.config import TradingConfig, TradingMode, default_risk_config
from engine.trading.desk import TradingStatus

HOUR = 3_600_000_000_000
UNHEDGED = TradingConfig(
    hedge=None, risk=dataclasses.replace(default_risk_config(), hedge_symbol=None)
)


def laya(model) -> LayaClassifierConfig:
    return LayaClassifierConfig(model_path=model, prefer_gpu=False, thresholds=NEVER_EMERGENCY)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"replay_path": "x.gz", "trading": TradingConfig()}, "only be traded on paper"),
        ({"trading": TradingConfig(mode=TradingMode.DEMO)}, "needs Bitget's public feed"),
        ({"live_url": "ws://127.0.0.1:1/v2/ws/public", "trading": TradingConfig()}, "REST url"),
        ({"trading": TradingConfig(rest_url="http://127.0.0.1:1")}, "that simulator.s public feed"),
        ({"symbols": ("BTCUSDT",), "trading": TradingConfig()}, "must be the book's"),
        ({"symbols": ("ETHUSDT", "BTCUSDT"), "trading": TradingConfig()}, "must be the book's"),
        (
            {"symbols": ("BTCUSDT", "ETHUSDT", "SOLUSDT"), "trading": TradingConfig()},
            "must be the book's BTCUSDT, ETHUSDT$",
        ),
        (
            {"symbols": ("BTCUSDT", "SOLUSDT", "XRPUSDT"), "trading": UNHEDGED},
            "then at most a leader it does not trade",
        ),
        ({"symbols": ("BTCUSDT", "BTCUSDT")}, "names a symbol twice"),
        ({"symbols": ("btcusdt",)}, "must be a symbol like BTCUSDT"),
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


async def test_the_warmer_keeps_every_model_of_the_book_warm(laya_model, tmp_path):
    own = write_mlp_model(tmp_path / "eth.onnx")
    config = EngineConfig(
        laya=laya(laya_model),
        laya_models=(("ETHUSDT", str(own)),),
        trading=TradingConfig(journal_path=tmp_path / "journal.sqlite"),
    )
    node = EngineNode(config)
    await node.start()
    try:
        assert node.warmer is not None
        models = {classifier.model_path for classifier in node.warmer.warmed}
        assert models == {laya_model, own}
        await eventually(lambda: node.warmer.runs >= 4, 5, "both models warmed")
    finally:
        await node.stop()


@pytest.fixture
def recording(tmp_path):
    asks = [["64000.2", "0.5"], ["64000.3", "1"]]
    bids = [["64000.0", "0.5"], ["63999.9", "1"]]
    return write_books(tmp_path / "btc.bitget.gz", 40, asks, bids)


def paper_replay(recording: Path, laya_model: Path, tmp_path: Path) -> EngineNode:
    """An engine trading `recording` on paper at full speed, journalling to tmp_path/j.sqlite."""
    return EngineNode(
        EngineConfig(
            replay_path=str(recording),
            replay_speed=None,
            laya=laya(laya_model),
            trading=TradingConfig(mode=TradingMode.PAPER, journal_path=tmp_path / "j.sqlite"),
        )
    )


def test_a_recording_trades_on_paper_in_its_own_time(recording, laya_model, tmp_path):
    node = paper_replay(recording, laya_model, tmp_path)
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


def test_the_status_line_gives_the_sessions_pnl_and_the_days_apart(recording, laya_model, tmp_path):
    """A session across the daily reset: the day's PnL is only what came after the reset, the
    session's all of it (the headless run's closing line printed the day's as "PnL")."""
    node = paper_replay(recording, laya_model, tmp_path)

    async def main() -> TradingStatus | None:
        await node.start()
        try:
            return node.status().trading
        finally:
            await node.stop()

    trading = node.clock.run(main())
    assert trading is not None
    gateway = make_gateway()
    open_position(gateway, BTC, 0.5)
    mark(gateway, BTC, T0 + 23 * HOUR, mid=59_800.0)  # -100 on the first day
    mark(gateway, BTC, T0 + 24 * HOUR, mid=59_700.0)  # the reset, then -50 on the next
    risk = gateway.snapshot()
    line = format_trading(dataclasses.replace(trading, risk=risk))
    assert "session PnL -150.00 USDT (day -50.00) " in line
    assert risk.session_pnl == pytest.approx(risk.realized_pnl - risk.fees + risk.unrealized_pnl)


async def test_a_second_engine_on_an_account_is_refused_before_it_connects(
    tmp_path, monkeypatch, laya_model
):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    key = "bg_" + "0123456789abcdef" * 2
    journal = tmp_path / "j.sqlite"
    config = EngineConfig(
        live_url="ws://127.0.0.1:9/v2/ws/public",  # never reached: the refusal comes first
        laya=laya(laya_model),
        trading=TradingConfig(mode=TradingMode.DEMO, journal_path=journal),
    )
    node = EngineNode(config, Credentials(key, "secret", "passphrase"))
    holding = held_by_another_process(account_lock_path(key))
    with holding as holder, pytest.raises(EngineLocked) as refused:
        await node.start()
    assert str(refused.value).startswith(
        f"the Bitget account of API key bg_…cdef is in use by another engine (pid {holder}; "
    )
    assert not journal.exists()  # nothing of it started
    released = InstanceLock(journal_lock_path(journal), "the journal")
    assert released.acquire() is None  # the journal's lock, taken first, was let go
    released.release()


def test_the_status_line_writes_each_book_at_its_contracts_decimals():
    ada = Instrument("ADAUSDT", 0.0001, 1.0)
    books = (
        SymbolStatus("ADAUSDT", FeedState.LIVE, 3, 0.25, 0.2501, 4.0, 10.0),
        SymbolStatus("BTCUSDT", FeedState.LIVE, 3, 64_010.6, 64_010.7, 0.02, 10.0),
    )
    status = EngineStatus("sim", books, 6, {}, False, "CPU", {})
    line = format_status(status, (ada, BTCUSDT))
    # Was ",.2f": ADA's one-tick book read 0.25/0.25.
    assert "ADAUSDT live 0.2500/0.2501 (4.00 bps)" in line
    assert "BTCUSDT live 64,010.6/64,010.7" in line


ALWAYS_EMERGENCY_MODEL = (1.0, 1.0, 1.0, 0.0)
"""Thresholds only EMERGENCY reaches: a model with them says EMERGENCY on every book."""


def models_config(recording: Path, laya_model: Path, models: dict[str, Path]) -> EngineConfig:
    """A watch-only replay of `recording` (BTCUSDT books), BTCUSDT and ETHUSDT mapped by
    `models` ([laya.models]), `laya_model` the default, which never says EMERGENCY."""
    return EngineConfig(
        replay_path=str(recording),
        replay_speed=None,
        laya=laya(laya_model),
        laya_models=tuple((key, str(path)) for key, path in models.items()),
    )


def replayed(config: EngineConfig) -> EngineNode:
    node = EngineNode(config)

    async def main() -> None:
        await node.start()
        try:
            while not node.finished:
                await asyncio.sleep(0.05)
        finally:
            await node.stop()

    node.clock.run(main())
    return node


def test_each_symbol_runs_on_the_model_laya_models_gives_it(recording, laya_model, tmp_path):
    emergency = write_mlp_model(tmp_path / "emergency.onnx", thresholds=ALWAYS_EMERGENCY_MODEL)
    config = models_config(recording, laya_model, {"BTC*": emergency, "SOLUSDT": tmp_path})
    node = replayed(config)
    by_symbol = node.symbol_classifiers
    assert by_symbol["BTCUSDT"].model_path == emergency
    assert by_symbol["ETHUSDT"] is node.classifier and node.classifier.model_path == laya_model
    # The default model never says EMERGENCY (NEVER_EMERGENCY): BTCUSDT's books ran on its own.
    assert node.pipeline.decisions.counts()["EMERGENCY"] == 40
    assert node.pipeline.classifiers == by_symbol


def test_a_model_that_will_not_start_stands_its_symbol_aside(recording, laya_model, tmp_path):
    broken = write_mlp_model(tmp_path / "btc.onnx")
    config = models_config(recording, laya_model, {"BTCUSDT": broken})  # sound when checked ...
    broken.write_bytes(b"not a model any more")  # ... and not when the engine starts
    node = replayed(config)
    assert "is not a loadable ONNX model" in node.model_faults["BTCUSDT"]
    assert node.pipeline.intents["BTCUSDT"] is QuoteIntent.STAND_ASIDE
    assert sum(node.pipeline.decisions.counts().values()) == 0
    stood_aside = [e for _, e in node.events.since(-1)[0] if isinstance(e, LayaStoodAside)]
    assert [event.symbol for event in stood_aside] == ["BTCUSDT"]
    assert node.status().laya_stood_aside == {"BTCUSDT": node.model_faults["BTCUSDT"]}


def test_a_model_of_an_unknown_label_version_at_start_stands_its_symbol_aside(
    recording, laya_model, tmp_path
):
    newer = write_mlp_model(tmp_path / "btc.onnx")
    config = models_config(recording, laya_model, {"BTCUSDT": newer})  # sound when checked ...
    with_metadata(
        newer, label_version=str(NEWER_LABEL_VERSION)
    )  # ... and a newer engine's when the engine starts
    node = replayed(config)
    assert (
        f"label version {NEWER_LABEL_VERSION} is newer than this engine knows"
        in node.model_faults["BTCUSDT"]
    )
    assert node.pipeline.intents["BTCUSDT"] is QuoteIntent.STAND_ASIDE
    assert sum(node.pipeline.decisions.counts().values()) == 0


def test_a_shadow_model_of_an_unknown_label_version_is_refused_at_start(tmp_path):
    shadow = with_metadata(
        write_mlp_model(tmp_path / "newer.onnx"), label_version=str(NEWER_LABEL_VERSION)
    )
    node = EngineNode(
        EngineConfig(
            replay_path=str(shared_spot()),
            replay_speed=None,
            kev_client=None,
            laya=dataclasses.replace(EngineConfig().laya, prefer_gpu=False),
            laya_shadow_model=str(shadow),
        )
    )

    async def start() -> None:
        try:
            await node.start()
        finally:
            await node.stop()

    with pytest.raises(
        LayaModelError, match=rf"newer\.onnx: .*label version {NEWER_LABEL_VERSION} is newer"
    ):
        node.clock.run(start())


@pytest.mark.parametrize(
    ("models", "error", "message"),
    [
        ({"btc usdt": "m.onnx"}, ValueError, r"key 'btc usdt' is neither a symbol"),
        (
            {"BTCUSDT": "missing.onnx"},
            ModelNotFoundError,
            r"maps BTCUSDT to .*missing\.onnx, and there is no model",
        ),
        ({"ETH*": "old.onnx"}, ModelMismatchError, r"old\.onnx was trained on feature set 'f-old'"),
        (
            {"ETH*": "newer.onnx"},
            LayaModelError,
            rf"newer\.onnx: invalid Laya metadata: label version {NEWER_LABEL_VERSION} is newer",
        ),
    ],
)
def test_laya_models_are_refused_naming_the_key_or_model(
    models, error, message, laya_model, tmp_path
):
    write_mlp_model(tmp_path / "old.onnx", feature_set="f-old")
    with_metadata(write_mlp_model(tmp_path / "newer.onnx"), label_version=str(NEWER_LABEL_VERSION))
    pairs = tuple((key, str(tmp_path / path)) for key, path in models.items())
    with pytest.raises(error, match=message):
        EngineConfig(laya=laya(laya_model), laya_models=pairs)


def test_a_pattern_that_matches_none_of_the_symbols_is_no_mistake(laya_model, tmp_path):
    config = EngineConfig(laya=laya(laya_model), laya_models=(("SOL*", str(tmp_path / "no")),))
    assert config.laya_models == (("SOL*", str(tmp_path / "no")),)
