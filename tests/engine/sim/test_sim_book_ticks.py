"""The sim's market clock with a book of symbols: what a tick renders, and that REST and the
websockets are served between its symbols rather than after all of them."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from sim_clients import PublicSocket, is_push
from support.sim import StartSim

from engine.market.instruments import Instrument
from engine.market.matching import SimAccount
from engine.sim import server
from engine.sim.market import sim_book

QUOTED = ("ETHUSDT", "SOLUSDT", "XRPUSDT")
HEDGE = "BTCUSDT"


async def test_a_tick_lets_the_loop_run_between_the_symbols_of_a_book(
    start_sim: StartSim, monkeypatch: pytest.MonkeyPatch
) -> None:
    await start_sim(market=sim_book(QUOTED, 7, HEDGE))
    loop = asyncio.get_running_loop()
    marked: list[str] = []
    marked_when_the_loop_ran: list[int] = []
    mark = SimAccount.mark

    def spy(account: SimAccount, symbol: str, price: float) -> None:
        marked.append(symbol)
        if len(marked) == 1:  # the first symbol of a tick: what else runs before the next?
            loop.call_soon(lambda: marked_when_the_loop_ran.append(len(marked)))
        mark(account, symbol, price)

    monkeypatch.setattr(SimAccount, "mark", spy)
    async with asyncio.timeout(5):
        while not marked_when_the_loop_ran:
            await asyncio.sleep(0.01)
    assert marked_when_the_loop_ran == [1], "the whole book was ticked before anything else ran"


async def test_a_tick_formats_only_the_depth_that_is_subscribed(
    public_ws: PublicSocket, monkeypatch: pytest.MonkeyPatch
) -> None:
    formatted: list[int] = []
    format_levels = server.format_levels

    def spy(prices: np.ndarray, sizes: np.ndarray, instrument: Instrument) -> list[tuple[str, str]]:
        formatted.append(len(prices))
        return format_levels(prices, sizes, instrument)

    monkeypatch.setattr(server, "format_levels", spy)
    await public_ws.subscribe(("books15", "BTCUSDT"))
    for _ in range(3):
        push = await public_ws.recv_until(is_push("books15", "BTCUSDT"))
        assert len(push["data"][0]["bids"]) == len(push["data"][0]["asks"]) == 15
    assert formatted and max(formatted) == 15
    # The whole depth once someone asks for it, and its updates chain on from that snapshot.
    await public_ws.subscribe(("books", "BTCUSDT"))
    snapshot = await public_ws.recv_until(is_push("books", "BTCUSDT"))
    (data,) = snapshot["data"]
    assert snapshot["action"] == "snapshot" and min(len(data["bids"]), len(data["asks"])) > 15
    update = await public_ws.recv_until(is_push("books", "BTCUSDT"))
    assert update["action"] == "update" and update["data"][0]["pseq"] == data["seq"]
