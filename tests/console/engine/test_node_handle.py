"""EngineNodeHandle over a real EngineNode: the simulated exchange on loopback (on the test's
loop), the engine in its own process, and what the console reads and sends."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import time
from collections.abc import AsyncIterator, Callable, Iterator

import pytest
from support.console_engine import ENGINE_WAIT_S, FAST, sim_engine, sim_exchange  # noqa: F401
from support.laya_models import write_mlp_model
from support.recordings import write_recording
from support.waiting import eventually

from console.engine.config import EngineAdapterConfig
from console.engine.handle import EngineLost, ShutdownPolicy
from console.engine.node_handle import EngineNodeHandle
from console.engine.views import (
    PANE_STAGES,
    imbalance_reading,
)
from console.view import (
    EventKind,
    KevState,
)
from engine.book import BookView
from engine.config import EngineConfig
from engine.feed.events import FeedState
from engine.laya.config import LayaClassifierConfig
from engine.laya.feature_set import FEATURE_SET_VERSION
from engine.pipeline import TIMED_STAGES
from engine.risk.events import TradingState
from engine.risk.overrides import RiskOverrides
from engine.sim.server import SimExchange
from engine.trading.commands import (
    Command,
    CommandResult,
    Kill,
    Pause,
    Rearm,
    Resume,
    SetLimits,
)
from engine.trading.config import TradingMode


@pytest.fixture
async def running(sim, laya_model, tmp_path) -> AsyncIterator[EngineNodeHandle]:
    handle = EngineNodeHandle(sim_engine(sim, laya_model, tmp_path / "journal.sqlite"), FAST)
    await asyncio.to_thread(handle.start)
    try:
        yield handle
    finally:
        await asyncio.to_thread(handle.shutdown, ShutdownPolicy.FLATTEN)


def ours(sim: SimExchange, symbol: str = "BTCUSDT") -> list:
    return [order for order in sim.open_orders(symbol) if order.client_oid.startswith("hc")]


async def test_the_snapshot_shows_the_running_engine(sim, running, laya_model):
    handle = running

    def quoting() -> bool:
        snapshot = handle.snapshot()
        sides = {o.side.value for o in snapshot.orders if o.symbol == "BTCUSDT" and o.order_id}
        rates = [feed.frames_per_s for feed in snapshot.status.feeds]
        return sides == {"buy", "sell"} and len(snapshot.depth) == 2 and all(rates)

    await eventually(quoting, ENGINE_WAIT_S)
    snapshot = handle.snapshot()
    status = snapshot.status
    assert status.mode is TradingMode.SIM
    assert [feed.symbol for feed in status.feeds] == ["BTCUSDT", "ETHUSDT"]
    for feed in status.feeds:
        assert feed.state is FeedState.LIVE
        assert feed.frames_per_s > 0
        assert feed.last_frame_age_ms is not None and 0 <= feed.last_frame_age_ms < 2_000
    trading = status.trading
    assert trading.state is TradingState.ACTIVE
    assert trading.overrides.max_position == {"BTCUSDT": 0.02, "ETHUSDT": 0.6}
    assert trading.bounds.max_position == {"BTCUSDT": 0.05, "ETHUSDT": 1.5}
    assert trading.rearm_phrase == "REARM"
    assert status.laya.runs_on == "CPU native kernel"  # checked against ONNX Runtime
    # In the same words on the start line and the headless status line.
    started = [event.text for event in handle.events_since(-1)[0]]
    assert f"Laya on CPU native kernel, model {status.laya.model_version}" in started
    assert "| Laya (CPU native kernel) " in (handle.status_line or "")
    assert status.laya.model_version.startswith(laya_model.stem)
    assert status.laya.model_version.endswith(f"({FEATURE_SET_VERSION})")
    assert status.kev.state is KevState.OFFLINE and status.kev.detail

    btc, eth = snapshot.depth
    assert (btc.symbol, eth.symbol) == ("BTCUSDT", "ETHUSDT")
    assert len(btc.bids) == len(btc.asks) == 15
    assert btc.bids[0].price < btc.asks[0].price
    assert (btc.price_decimals, btc.size_decimals) == (1, 3)  # the instrument's tick and lot
    # The books carry the engine's contracts; the status bar's, the quoted one's first.
    contracts = {instrument.symbol: instrument for instrument in handle.engine_config.instruments}
    assert (btc.instrument, eth.instrument) == (contracts["BTCUSDT"], contracts["ETHUSDT"])
    assert btc.spread_ticks is not None and btc.spread_ticks >= 1
    assert [contract.symbol for contract in status.contracts] == ["BTCUSDT", "ETHUSDT"]
    quotes = [order for order in snapshot.orders if order.symbol == "BTCUSDT"]
    assert {(own.side, own.price) for own in btc.own_orders} == {
        (order.side, order.price) for order in quotes
    }
    for order in quotes:  # orders the simulator took, under our client ids
        taken = sim.engine("BTCUSDT").order(order.order_id)
        assert taken is not None and taken.client_oid == order.client_oid

    imbalance = snapshot.imbalance[0]
    assert imbalance.symbol == "BTCUSDT" and imbalance.current is not None
    book = BookView(
        btc.symbol,
        tuple(level.price for level in btc.bids),
        tuple(level.size for level in btc.bids),
        tuple(level.price for level in btc.asks),
        tuple(level.size for level in btc.asks),
        btc.exchange_ts_ms,
        0,
    )
    assert imbalance.current == imbalance_reading(book)
    assert all(-1 <= value <= 1 for value in imbalance.current[:3])

    stages = {stage.name: stage for stage in snapshot.latency.stages}
    assert list(stages) == [*PANE_STAGES, "kev"]
    for name in PANE_STAGES:
        stage = stages[name]
        assert stage.count > 0, name
        assert stage.p50_us <= stage.p99_us <= stage.p999_us <= stage.max_us, name
        assert stage.budget_p99_us is not None
    assert stages["kev"].count == 0
    assert sum(item.count for item in snapshot.latency.total_histogram) == stages["total"].count
    assert snapshot.verdicts.total == sum(snapshot.verdicts.counts.values()) > 0


async def test_the_ladders_levels_come_at_the_detail_rate_the_status_at_the_publish_rate(
    sim, laya_model, tmp_path
):
    adapter = dataclasses.replace(FAST, publish_hz=20, detail_hz=2)
    handle = EngineNodeHandle(sim_engine(sim, laya_model, tmp_path / "journal.sqlite"), adapter)
    await asyncio.to_thread(handle.start)
    try:
        await eventually(lambda: len(handle.snapshot().depth) == 2, ENGINE_WAIT_S)
        levels, statuses = set(), set()
        started = time.monotonic()
        while (elapsed := time.monotonic() - started) < 3.0:
            snapshot = handle.snapshot()
            levels.add(snapshot.depth[0].bids)
            statuses.add(snapshot.status.feeds)  # their rates and ages move with every picture
            await asyncio.sleep(0.01)
    finally:
        await asyncio.to_thread(handle.shutdown, ShutdownPolicy.FLATTEN)
    # The simulator moves each book about 7 times a second; the ladder takes it twice.
    assert len(levels) <= elapsed * 2 + 2, len(levels)
    assert len(statuses) >= elapsed * 20 / 2, len(statuses)


async def test_events_arrive_in_order_each_once(sim, running, tmp_path):
    handle = running
    await eventually(
        lambda: any("live" in e.text for e in handle.events_since(-1)[0]), ENGINE_WAIT_S
    )
    events, missed = handle.events_since(-1)
    assert missed == 0
    assert [event.event_id for event in events] == list(range(len(events)))
    started = [event.text for event in events if event.kind is EventKind.SYSTEM]
    assert f"engine started: market data from {sim.ws_url}" in started
    assert f"orders go to sim@{sim.rest_url} with the simulator's own key" in started
    assert f"journal {tmp_path / 'journal.sqlite'}" in started
    newer, missed = handle.events_since(events[-1].event_id)
    assert all(event.event_id > events[-1].event_id for event in newer) and missed == 0


async def test_commands_act_on_the_engine_and_kill_leaves_the_exchange_flat(sim, running):
    """Each answer comes after the picture the command left: the state it set is in the
    snapshot as soon as the answer is, not a picture or two later."""
    handle = running
    await eventually(lambda: len(ours(sim)) == 2, ENGINE_WAIT_S)

    def state() -> TradingState:
        return handle.snapshot().status.trading.state

    paused = await handle.execute(Command(Pause()))
    assert paused.ok, paused.message
    assert state() is TradingState.PAUSED
    await eventually(lambda: not ours(sim), 5)
    resumed = await handle.execute(Command(Resume()))
    assert resumed.ok, resumed.message

    bounds = handle.snapshot().status.trading.bounds
    too_much = RiskOverrides({"BTCUSDT": 0.04, "ETHUSDT": 2.0}, 1_000, 5, 5, 100, 0.5)
    refused = await handle.execute(Command(SetLimits(too_much)))
    assert not refused.ok and "ETHUSDT" in refused.message
    assert too_much.problems(bounds)
    # The whole form, as the dialog sends it: the hedge ratio and BTCUSDT's beta with it.
    wanted = RiskOverrides(
        {"BTCUSDT": 0.01, "ETHUSDT": 0.3}, 1_000, 5, 5, 100, 0.5, 0.75, {"BTCUSDT": 1.0}
    )
    applied = await handle.execute(Command(SetLimits(wanted)))
    assert applied.ok, applied.message
    await eventually(lambda: handle.snapshot().status.trading.overrides == wanted, 5)

    await eventually(lambda: len(ours(sim)) == 2, ENGINE_WAIT_S)

    def shown(kind: EventKind) -> list[str]:
        return [event.text for event in handle.events_since(-1)[0] if event.kind is kind]

    # The kill's state comes ahead of its answer: HALTED is in the snapshot when the handle
    # says the kill progressed, before the venue confirmed flat.
    progressed: list[TradingState] = []
    handle.on_progress = lambda: progressed.append(state())
    killed = await handle.execute(Command(Kill()))
    assert progressed == [TradingState.HALTED]
    assert killed.ok, killed.message
    assert killed.elapsed_ms is not None and killed.elapsed_ms > 0
    assert state() is TradingState.HALTED
    assert handle.snapshot().status.trading.open_orders == 0
    assert any("-> HALTED" in text for text in shown(EventKind.STATE))
    assert not sim.open_orders()
    assert all(position.size == 0 for position in sim.positions())
    for _ in range(5):  # the pictures after it never go back to the state before the kill
        await asyncio.sleep(0.05)
        assert state() is TradingState.HALTED

    wrong = await handle.execute(Command(Rearm("rearm please")))
    assert not wrong.ok
    rearmed = await handle.execute(Command(Rearm("REARM")))
    assert rearmed.ok, rearmed.message
    assert state() is TradingState.PAUSED
    commands = shown(EventKind.COMMAND)
    assert [text.split()[0] for text in commands] == [
        "pause",
        "resume",
        "apply_overrides",
        "apply_overrides",
        "kill",
        "rearm",
        "rearm",
    ]

    result = await asyncio.to_thread(handle.shutdown, ShutdownPolicy.FLATTEN)
    assert result.ok and "halted and flat" in result.message and "engine stopped" in result.message
    assert not handle.running
    assert await asyncio.to_thread(handle.shutdown, ShutdownPolicy.KEEP) is result
    after = await handle.execute(Command(Pause()))
    assert not after.ok and "not running" in after.message
    assert handle.snapshot().status.trading.state is TradingState.HALTED  # the last picture


async def test_shutdown_keep_stops_and_says_what_stays_open(sim, laya_model, tmp_path):
    handle = EngineNodeHandle(sim_engine(sim, laya_model, tmp_path / "journal.sqlite"), FAST)
    await asyncio.to_thread(handle.start)
    await eventually(lambda: len(ours(sim)) == 2, ENGINE_WAIT_S)
    result = await asyncio.to_thread(handle.shutdown, ShutdownPolicy.KEEP)
    assert result.ok
    assert result.message.startswith("resting orders cancelled, positions kept:")
    assert not ours(sim)


@pytest.fixture
def replay_handle(tmp_path, laya_model) -> Iterator[Callable[..., EngineNodeHandle]]:
    handles: list[EngineNodeHandle] = []

    def build(speed: float | None = None, **adapter: object) -> EngineNodeHandle:
        engine = EngineConfig(
            replay_path=str(write_recording(tmp_path / "two-symbols.bitget.gz")),
            replay_speed=speed,
            laya=LayaClassifierConfig(model_path=laya_model, prefer_gpu=False),
            status_interval_s=0.05,
        )
        handle = EngineNodeHandle(engine, EngineAdapterConfig(gpu=None, **adapter))  # type: ignore[arg-type]
        handle.start()
        handles.append(handle)
        return handle

    yield build
    for handle in handles:
        handle.shutdown(ShutdownPolicy.KEEP)


def test_a_replay_ends_with_the_bench_figures_and_trades_nothing(replay_handle):
    handle = replay_handle()
    deadline = time.monotonic() + 20
    while not handle.finished:
        assert time.monotonic() < deadline, "the replay did not finish"
        time.sleep(0.05)
    stats = handle.stats()
    assert set(stats) >= {
        "frames",
        "frames_per_s",
        "provider",
        "timer_overhead_ns",
        "depth_frames",
        "trade_frames",
        "passes",
        "stages_us",
        "parser",
    }
    assert list(stats["stages_us"]) == list(TIMED_STAGES)
    assert stats["depth_frames"] == 600 and stats["trade_frames"] == 150
    assert stats["frames"] == 750 and stats["frames_per_s"] > 0
    for name, figures in stats["stages_us"].items():
        assert 0 <= figures["p50"] <= figures["p99"] <= figures["max"], name
    snapshot = handle.snapshot()
    assert snapshot.status.mode is TradingMode.PAPER
    assert snapshot.status.trading.state is TradingState.PAUSED
    assert "watch only" in snapshot.status.trading.reason
    refused = asyncio.run(handle.execute(Command(Pause())))
    assert not refused.ok and "trading is off" in refused.message
    result = handle.shutdown(ShutdownPolicy.FLATTEN)  # nothing to flatten: stops
    assert result.ok and result.message == "engine stopped"
    assert handle.stats() == stats  # the figures stay readable once stopped


def test_the_status_says_while_laya_stands_aside_warming_up(tmp_path, laya_model):
    engine = EngineConfig(
        replay_path=str(write_recording(tmp_path / "two-symbols.bitget.gz")),
        laya=LayaClassifierConfig(model_path=laya_model, prefer_gpu=False),
        status_interval_s=0.05,
        laya_warmup_s=30,
    )
    handle = EngineNodeHandle(engine, FAST)
    handle.start()
    try:
        deadline = time.monotonic() + 20
        while not handle.snapshot().status.laya.warming:
            assert time.monotonic() < deadline, "no warm-up shown"
            time.sleep(0.05)
        warming = handle.snapshot().status.laya.warming
    finally:
        handle.shutdown(ShutdownPolicy.KEEP)
    assert warming.startswith("warming up: BTCUSDT ") and warming.endswith(
        " s of market data to go"
    )


def test_the_status_and_start_line_say_which_model_each_symbol_runs_on(tmp_path, laya_model):
    nexo = write_mlp_model(tmp_path / "nexo.onnx")
    engine = EngineConfig(
        replay_path=str(write_recording(tmp_path / "two-symbols.bitget.gz")),
        laya=LayaClassifierConfig(model_path=laya_model, prefer_gpu=False),
        laya_models=(("ETH*", str(nexo)),),
        status_interval_s=0.05,
    )
    handle = EngineNodeHandle(engine, FAST)
    handle.start()
    try:
        version = handle.snapshot().status.laya.model_version
        started = [event.text for event in handle.events_since(-1)[0]]
    finally:
        handle.shutdown(ShutdownPolicy.KEEP)
    assert version.startswith(laya_model.stem)
    assert version.endswith(f"; BTCUSDT {laya_model.stem}, ETHUSDT nexo")
    assert f"Laya on CPU native kernel, model {version}" in started


def test_a_stuck_engine_answers_not_ok_in_time_and_keeps_its_last_picture(replay_handle):
    handle = replay_handle(speed=1.0, command_timeout_s=0.5)
    before = handle.snapshot()
    os.kill(handle.pid, signal.SIGSTOP)  # the engine hangs: nothing of it runs
    try:
        started = time.monotonic()
        result = asyncio.run(handle.execute(Command(Pause())))
        assert time.monotonic() - started < 2.0
        assert not result.ok
        assert "did not answer within 0.5 s" in result.message
        assert handle.snapshot().at_ns >= before.at_ns  # the last picture, at once
    finally:
        os.kill(handle.pid, signal.SIGCONT)
    deadline = time.monotonic() + 10
    while not asyncio.run(handle.execute(Command(Pause()))).message.startswith(
        "trading is off"
    ):  # alive again: answers
        assert time.monotonic() < deadline, "the engine did not answer after it resumed"
    assert handle.shutdown(ShutdownPolicy.KEEP).ok


def test_a_dead_engine_fails_commands_at_once_and_lets_the_console_go(replay_handle):
    handle = replay_handle(speed=1.0)
    os.kill(handle.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while handle.running:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert handle.lost() == EngineLost(
        "the engine process was killed by SIGKILL", "it traded nothing (watch only)"
    )
    started = time.monotonic()
    result = asyncio.run(handle.execute(Command(Kill())))
    assert time.monotonic() - started < 0.5
    assert result == CommandResult("kill", False, "kill: the engine process was killed by SIGKILL")
    for _ in range(2):  # never ok: nothing was stopped, the launcher's exit status says so
        refused = handle.shutdown(ShutdownPolicy.FLATTEN)
        assert refused == CommandResult("shutdown", False, str(handle.lost()))


async def test_the_engine_flattens_and_exits_when_the_console_dies(sim, laya_model, tmp_path):
    handle = EngineNodeHandle(sim_engine(sim, laya_model, tmp_path / "journal.sqlite"), FAST)
    await asyncio.to_thread(handle.start)
    await eventually(lambda: len(ours(sim)) == 2, ENGINE_WAIT_S)
    handle._connection.close()  # what the console's death does to the engine's socket
    await eventually(lambda: not handle.running, 30)  # the engine process has exited
    assert not sim.open_orders()
    assert all(position.size == 0 for position in sim.positions())
