"""A backtest is the whole engine on a recording in market time: it repeats to the last digit,
does not depend on how fast the replay plays, and its PnL is the paper account's."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from engine.journal import read_journal
from engine.laya.decide import QuoteGate
from engine.node import EngineNode
from engine.settings.reader import load_settings
from engine.tools.backtest.metrics import session_metrics
from engine.tools.backtest.plan import backtest_specs, grid
from engine.tools.backtest.session import run_backtest

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
