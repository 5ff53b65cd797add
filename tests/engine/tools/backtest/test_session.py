"""A backtest is the whole engine on a recording in market time: it repeats to the last digit,
does not depend on how fast the replay plays, and its PnL is the paper account's."""

from __future__ import annotations

import asyncio
import dataclasses

import numpy as np
import pytest
from support.book_backtest import BOOK_QUOTED, book_spec
from support.scripted_llama import ScriptedLlama, command, on_a_thread

from engine.journal import read_journal
from engine.kev.config import KevClientConfig
from engine.laya.decide import QuoteGate
from engine.node import EngineNode, engine_clock
from engine.settings.reader import load_settings
from engine.tools.backtest.metrics import session_metrics
from engine.tools.backtest.plan import backtest_specs, grid
from engine.tools.backtest.report import metrics_json, session_text
from engine.tools.backtest.session import BacktestSpec, journal_config_for, run_backtest

SETTINGS = load_settings(environ={"HFT_CONSOLE_LAYA__PREFER_GPU": "false"})


def spec_for(recording, gate=QuoteGate.LAYA, sets=()):
    (spec,) = backtest_specs(SETTINGS, [recording], None, grid(sets), [gate])
    return spec


def _decided(record) -> list[tuple]:
    """The journal's entries but a cancel-all's `reaction_us`: the CPU time its bytes took to
    leave, measured on this machine (the paper venue charges the configured reaction)."""
    return [
        (e.kind, e.at_ns, {key: value for key, value in e.payload.items() if key != "reaction_us"})
        for e in record.entries
    ]


def test_a_backtest_repeats_to_the_last_digit(simulated_session):
    spec = spec_for(simulated_session)
    first, second = run_backtest(spec), run_backtest(spec)
    assert _decided(first) == _decided(second)
    one, two = session_metrics(first), session_metrics(second)
    assert one.fill_count > 0 and one.orders_sent > 0  # it traded: the comparison means something
    assert (one.net, one.realized, one.fees) == (two.net, two.realized, two.fees)
    assert repr(one.fills) == repr(two.fills)  # markouts past the end are NaN: never ==


def test_the_pnl_is_the_paper_accounts(simulated_session):
    record = run_backtest(spec_for(simulated_session, QuoteGate.NONE))
    metrics = session_metrics(record)
    initial = SETTINGS.trading.paper.initial_balance_usdt
    assert metrics.fill_count > 20
    # The account's balance moves by realized PnL and fees; its equity by the unrealized too.
    assert metrics.realized + metrics.fees == pytest.approx(
        record.venue["balance"] - initial, abs=1e-6
    )
    assert metrics.net == pytest.approx(record.venue["equity"] - initial, abs=1e-6)
    assert record.venue["fills"] == metrics.fill_count


def _orders_and_fills(path):
    return [
        (entry.kind, entry.at_ns, entry.payload)
        for entry in read_journal(path)
        if entry.kind in ("order_approved", "order_ack", "fill")
    ]


@pytest.mark.parametrize("speed", [20.0])
def test_a_replay_gives_the_same_orders_and_fills_at_any_speed(simulated_session, tmp_path, speed):
    """`run --replay --mode paper` at --speed 20 and at max: one journal, to the nanosecond."""
    spec = spec_for(simulated_session, QuoteGate.NONE)
    journals = []
    for pace in (speed, None):
        journal = tmp_path / f"journal-{pace}.sqlite"
        trading = dataclasses.replace(spec.engine.trading, journal_path=journal)
        config = dataclasses.replace(spec.engine, trading=trading, replay_speed=pace)
        node = EngineNode(config)

        async def main(node=node) -> None:
            await node.start()
            try:
                # At 20x the first 20 market seconds take one real second.
                await asyncio.sleep(20.0)
            finally:
                await node.stop()

        node.clock.run(main())
        journals.append(_orders_and_fills(journal))
    paced, at_max = journals
    assert len(paced) > 10
    assert paced == at_max


def test_a_books_delta_is_its_weighted_positions_at_the_mid_and_the_hedge_offsets_it(
    simulated_book,
):
    spec = book_spec(simulated_book, BOOK_QUOTED, "BTCUSDT", QuoteGate.NONE, betas={"SOLUSDT": 1.5})
    record = run_backtest(spec)
    weights = {"ETHUSDT": 1.0, "SOLUSDT": 1.5, "XRPUSDT": 1.0, "BTCUSDT": 1.0}
    assert dict(record.delta_weights) == weights  # the gateway's: betas, the hedge ratio
    run = session_metrics(record)
    # The book's PnL, every symbol's summed, is the one paper account's.
    initial = spec.engine.trading.paper.initial_balance
    assert run.net == pytest.approx(record.venue["equity"] - initial, abs=1e-6)
    assert record.venue["fills"] == run.fill_count
    ended = {
        result.symbol: weights[result.symbol]
        * result.end_position
        * float(record.mids[result.symbol].mid[-1])
        for result in run.symbols
    }
    assert any(ended[symbol] for symbol in BOOK_QUOTED)  # the book ends holding something
    series = run.series
    assert series.book_delta[-1] == pytest.approx(sum(ended[s] for s in BOOK_QUOTED))
    assert series.net_delta[-1] == pytest.approx(series.book_delta[-1] + ended["BTCUSDT"])
    # The hedge trades the book's delta back inside its deadband: the net is the smaller.
    assert run.result("BTCUSDT").taker_fills > 0
    assert np.abs(series.net_delta).mean() < np.abs(series.book_delta).mean() / 2
    text = session_text(run)
    assert "the quoted symbols (what the hedge offsets)" in text
    assert "net, with the hedge BTCUSDT" in text
    shown = metrics_json(run)
    assert shown["quoted"] == list(BOOK_QUOTED) and shown["hedge"] == "BTCUSDT"
    assert shown["delta"]["net"]["end"] == pytest.approx(series.net_delta[-1])


EVERY_VERDICT_LEAN_BUY = (1.0, 0.0, 1.0, 1.0)
"""Laya's thresholds (HOLD, LEAN_BUY, LEAN_SELL, EMERGENCY) that make every verdict LEAN_BUY:
Kev is asked about every symbol on every book."""


def _asking_kev(spec: BacktestSpec, **kev: object) -> BacktestSpec:
    """`spec` with Kev asked on every book (`kev`: where its answers come from or go), free to
    move the hedge ratio within 0.25-1 and each beta within 0.5-1.5 times its own."""
    trading = spec.engine.trading
    risk = dataclasses.replace(trading.risk, hedge_ratio_band=(0.25, 1.0), beta_band=(0.5, 1.5))
    engine = dataclasses.replace(
        spec.engine,
        laya=dataclasses.replace(spec.engine.laya, thresholds=EVERY_VERDICT_LEAN_BUY),
        trading=dataclasses.replace(trading, risk=risk),
        **kev,
    )
    return dataclasses.replace(spec, engine=engine)


def test_a_books_delta_weighs_each_symbol_as_the_gateway_did_when_kev_moved_it(
    simulated_book, tmp_path
):
    """Kev moves the hedge ratio and the betas twice mid-run: the report's delta before and
    after the hedge is the risk gateway's at every sampled time. The run records Kev's answers;
    a rerun of the same engine from them (exact) reads the gateway at the report's times."""
    spec = book_spec(simulated_book, BOOK_QUOTED, "BTCUSDT", QuoteGate.NONE)
    answers = tmp_path / "answers.jsonl"
    server = ScriptedLlama()
    # 40 questions a market second (4 symbols, a book each 100 ms): the weights stay as they
    # are for about 30 s, move for about 60 s, then move again.
    unchanged, moved, moved_back = (
        command(hedge=100, beta=100),
        command(hedge=60, beta=130),
        command(hedge=85, beta=70),
    )
    server.script("/v1/chat/completions", *[unchanged] * 1200, *[moved] * 2400, moved_back)
    with on_a_thread(server):
        kev = KevClientConfig(base_url=server.url, request_timeout_s=2.0)
        record = run_backtest(_asking_kev(spec, kev_client=kev, kev_answers_out=str(answers)))
    changes = [
        (
            (entry.payload["limit"], entry.payload["symbol"]),
            entry.payload["new"],
            (entry.at_ns - record.start_ns) / 1e9,
        )
        for entry in record.entries
        if entry.kind == "state_change" and "limit" in entry.payload
    ]
    assert {limit: new for limit, new, at_s in changes if at_s > 20} == {
        ("hedge_ratio", None): 0.85,
        **{("beta", symbol): 0.7 for symbol in BOOK_QUOTED},
    }
    assert (("hedge_ratio", None), 0.6) in [(limit, new) for limit, new, _ in changes]
    series = session_metrics(record).series

    replay = journal_config_for(
        dataclasses.replace(_asking_kev(spec, kev_client=kev).engine, kev_answers_in=str(answers)),
        tmp_path,
    )
    clock = engine_clock(replay)
    node = EngineNode(replay, clock=clock)
    sampled: list[tuple[int, float | None, float]] = []

    async def sample() -> None:
        gateway = node.desk.gateway
        for at_ns in series.at_ns[:-1].tolist():
            await clock.sleep_until(at_ns + 1_000)  # after the books of that instant
            sampled.append((at_ns, gateway.book_delta(), gateway.snapshot().net_delta))

    async def main() -> None:
        await node.start()
        sampling = asyncio.ensure_future(sample())
        try:
            await node.feed.wait()
        finally:
            sampling.cancel()
            await node.stop()

    clock.run(main())
    # The same run: its orders and fills to the nanosecond.
    assert _orders_and_fills(replay.trading.journal_path) == [
        (entry.kind, entry.at_ns, entry.payload)
        for entry in record.entries
        if entry.kind in ("order_approved", "order_ack", "fill")
    ]
    # The report counts a fill from its millisecond on the matching engine, the gateway from
    # when its push arrives, within the millisecond after: times that close to one differ.
    arrived = np.array([entry.at_ns for entry in record.entries if entry.kind == "fill"])
    compared = 0
    for index, (at_ns, book_delta, net_delta) in enumerate(sampled):
        if np.any(np.abs(arrived - at_ns) <= 1_000_000):
            continue
        compared += 1
        assert series.book_delta[index] == pytest.approx(book_delta, rel=1e-9, abs=1e-9)
        assert series.net_delta[index] == pytest.approx(net_delta, rel=1e-9, abs=1e-9)
    assert compared > 0.9 * len(series.at_ns)
