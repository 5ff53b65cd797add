"""A contract's grid changed at the venue while the engine trades: said, and followed by every
order from then on (Bitget changes ticks and lots now and then; an order off the new grid is
refused)."""

from __future__ import annotations

import pytest
from support.waiting import eventually

from engine.risk.events import SymbolPauseChanged, TradingState
from engine.risk.intents import Source
from engine.trading.contract_watch import ContractChanged, ContractWatcher


def ours(sim, node, symbol):
    prefix = f"hc{node.desk.session}"
    return [
        order for order in sim.engine(symbol).open_orders() if order.client_oid.startswith(prefix)
    ]


async def test_a_tick_changed_at_the_venue_is_said_and_new_quotes_follow_it(sim, node):
    await eventually(lambda: len(ours(sim, node, "BTCUSDT")) == 2, 15)
    watch = node.contract_watch
    assert watch is not None
    assert await watch.check() == []  # nothing changed yet: nothing said
    sim.relist("BTCUSDT", priceEndStep="5")  # 0.1 -> 0.5
    (change,) = await watch.check()
    assert isinstance(change, ContractChanged)
    assert (change.old.tick_size, change.new.tick_size) == (0.1, 0.5)
    assert change.text == (
        "BTCUSDT contract changed at the venue: tick 0.1 -> 0.5; new orders follow it"
    )
    events, _ = node.events.since(-1)
    assert change in [event for _, event in events]
    assert node.desk.strategies["BTCUSDT"].grid.tick == 0.5
    before = {order.client_oid for order in ours(sim, node, "BTCUSDT")}

    def requoted_on_the_new_grid() -> bool:
        new = [o for o in ours(sim, node, "BTCUSDT") if o.client_oid not in before]
        return len(new) >= 2 and all(round(o.price * 10) % 5 == 0 for o in new)

    # The touch moves: quotes are replaced, each at a multiple of 0.5.
    await eventually(requoted_on_the_new_grid, 30)


async def test_a_table_that_cannot_be_read_leaves_the_grid_in_force(sim, node):
    await eventually(lambda: len(ours(sim, node, "BTCUSDT")) == 2, 15)
    sim.relist("BTCUSDT", pricePlace="x")
    watch = node.contract_watch
    assert watch is not None
    with pytest.raises(ValueError, match="BTCUSDT: pricePlace"):
        await watch.check()
    assert node.desk.strategies["BTCUSDT"].grid.tick == 0.1


def node_watch(node) -> ContractWatcher:
    """The node's own watcher (the simulator's table, the desk's command path)."""
    watch = node.contract_watch
    assert watch is not None
    return watch


def pause_changes(node) -> list[SymbolPauseChanged]:
    events, _ = node.events.since(-1)
    return [event for _, event in events if isinstance(event, SymbolPauseChanged)]


def stood_aside(node) -> dict[str, str]:
    return {view.symbol: view.stood_aside for view in node.desk.gateway.snapshot().positions}


async def test_a_symbol_that_stops_trading_is_stood_aside_alone_and_let_back(sim, node):
    await eventually(lambda: len(ours(sim, node, "BTCUSDT")) == 2, 15)
    watch = node_watch(node)
    sim.relist("BTCUSDT", symbolStatus="maintain")
    assert await watch.check() == []  # the grid is unchanged
    reason = "BTCUSDT is not trading: its status is 'maintain'"
    assert [(e.symbol, e.paused, e.reason, e.source) for e in pause_changes(node)] == [
        ("BTCUSDT", True, reason, Source.RISK)
    ]
    assert stood_aside(node) == {"BTCUSDT": reason, "ETHUSDT": ""}
    await eventually(lambda: not ours(sim, node, "BTCUSDT"), 15)  # its quotes pulled
    # Twenty more books of a moving market: the desk would have requoted, it does not.
    frames = node.feed.stats.symbols["BTCUSDT"].book_frames
    await eventually(lambda: node.feed.stats.symbols["BTCUSDT"].book_frames > frames + 20, 15)
    assert not ours(sim, node, "BTCUSDT")
    assert await watch.check() == []  # still not trading: said once
    assert len(pause_changes(node)) == 1

    sim.relist("BTCUSDT", symbolStatus="normal")
    await watch.check()
    let_back = pause_changes(node)[-1]
    assert (let_back.symbol, let_back.paused, let_back.reason) == (
        "BTCUSDT",
        False,
        "BTCUSDT trades again at the venue",
    )
    assert stood_aside(node) == {"BTCUSDT": "", "ETHUSDT": ""}
    await eventually(lambda: len(ours(sim, node, "BTCUSDT")) == 2, 15)


async def test_a_hedge_the_venue_lists_no_longer_is_stood_aside_and_quoting_goes_on(sim, node):
    await eventually(lambda: len(ours(sim, node, "BTCUSDT")) == 2, 15)
    watch = node_watch(node)
    sim.delist("ETHUSDT")
    await watch.check()
    assert stood_aside(node) == {
        "BTCUSDT": "",
        "ETHUSDT": "ETHUSDT is no longer listed by the venue",
    }
    assert node.desk.gateway.state is TradingState.ACTIVE
    before = {order.client_oid for order in ours(sim, node, "BTCUSDT")}

    def requoted() -> bool:
        new = [o for o in ours(sim, node, "BTCUSDT") if o.client_oid not in before]
        return len(new) >= 2

    await eventually(requoted, 30)  # BTCUSDT goes on quoting the moving market
