"""The whole engine trading a book on its in-process simulator: three quoted symbols that follow
their hedge through a common factor. Each symbol's quotes rest at the exchange, fills on any
of them are hedged on the book's net delta, and the kill leaves every symbol flat."""

from __future__ import annotations

import pytest
from support.sim_book import HEDGE, QUOTED, sim_book_engine
from support.waiting import eventually

from engine.node import EngineNode
from engine.trading.commands import Command, Kill


@pytest.mark.timeout(120)
async def test_a_book_quotes_each_symbol_hedges_and_the_kill_leaves_all_flat(laya_model, tmp_path):
    node = EngineNode(sim_book_engine(laya_model, tmp_path / "journal.sqlite"))
    await node.start()
    try:
        sim = node.sim
        assert sim is not None
        desk = node.desk

        def resting() -> set[str]:
            return {order.symbol for order in sim.open_orders()}

        await eventually(lambda: resting() >= set(QUOTED), 30, "quotes on every symbol")
        assert HEDGE not in resting()  # the hedge is never quoted

        def positions() -> dict[str, float]:
            return {p.symbol: p.size for p in desk.executor.risk_view().positions if p.size}

        await eventually(
            lambda: HEDGE in positions() and len(positions()) >= 2,
            60,
            "fills on the book and a hedge against them",
        )
        status = node.status()
        assert status.trading is not None
        shown = {position.symbol for position in status.trading.risk.positions}
        assert shown == {*QUOTED, HEDGE}
        result = await node.execute(Command(Kill("test: end of the book")))
        assert result.ok, result.message
        assert sim.open_orders() == []
        assert {p.symbol: p.size for p in sim.positions() if p.size} == {}
    finally:
        await node.stop()
