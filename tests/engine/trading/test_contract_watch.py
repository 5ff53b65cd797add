"""A contract's grid changed at the venue while the engine trades: said, and followed by every
order from then on (Bitget changes ticks and lots now and then; an order off the new grid is
refused)."""

from __future__ import annotations

import pytest
from support.waiting import eventually

from engine.trading.contract_watch import ContractChanged


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
    assert node.desk.strategy.grid.tick == 0.5
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
    assert node.desk.strategy.grid.tick == 0.1
