"""The standalone sim: a real subprocess, its banner, status lines, faults and clean stop."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import orjson
import pytest
import websockets
from sim_clients import WAIT_S, PublicSocket, is_push

from engine.bitget.signing import canonical_query, signed_headers
from engine.sim.faults import FaultSpecError
from engine.sim.server import SimExchangeConfig
from engine.sim.standalone import run_standalone

REPO_ROOT = Path(__file__).resolve().parents[3]
SCRIPT = """
from engine.sim.server import SimExchangeConfig
from engine.sim.standalone import run_standalone
run_standalone(
    SimExchangeConfig(book_interval_ms=30, warmup_ms=1000),
    ["rest-error:45001:1"],
    status_interval_s=0.2,
)
"""


async def read_line(stream: asyncio.StreamReader) -> str:
    line = await asyncio.wait_for(stream.readline(), WAIT_S * 2)
    assert line, "standalone sim exited early"
    return line.decode().rstrip("\n")


@contextlib.asynccontextmanager
async def standalone(script: str) -> AsyncIterator[tuple[asyncio.subprocess.Process, dict]]:
    """The standalone simulator `script` starts, in a process of its own, and its banner (each
    line's name -> its value); killed at the end if it has not stopped."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, cwd=REPO_ROOT, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        banner: dict[str, str] = {}
        while (line := await read_line(process.stdout)) != "Ctrl+C to stop":
            key, _, value = line.strip().partition("  ")
            banner[key] = value.strip()
        yield process, banner
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_standalone_serves_prints_status_and_stops_on_sigterm() -> None:
    async with standalone(SCRIPT) as (process, banner):
        assert process.stdout is not None
        assert banner["faults"] == "rest-error:45001:1"
        async with websockets.connect(banner["public websocket"]) as connection:
            client = PublicSocket(connection)
            await client.subscribe(("books1", "ETHUSDT"))
            assert (await client.recv_until(is_push("books1")))["arg"]["instId"] == "ETHUSDT"
            status = await read_line(process.stdout)
            assert "clients 1" in status and "frames" in status and "BTCUSDT" in status
        async with httpx.AsyncClient(base_url=banner["REST"], timeout=WAIT_S) as client:
            path = "/api/v2/mix/position/all-position"
            query = canonical_query({"productType": "USDT-FUTURES"})
            for expected in ("45001", "00000"):
                headers = signed_headers(
                    banner["api key"], banner["api secret"], banner["passphrase"],
                    str(int(time.time() * 1000)), "GET", path, query, "", demo=False,
                )  # fmt: skip
                response = await client.get(f"{path}?{query}", headers=headers)
                assert orjson.loads(response.content)["code"] == expected
        process.send_signal(signal.SIGTERM)
        remaining, errors = await asyncio.wait_for(process.communicate(), WAIT_S * 2)
        assert process.returncode == 0, errors.decode()
        assert remaining.decode().rstrip().endswith("sim exchange stopped")
        assert b"Traceback" not in errors and b"Task was destroyed" not in errors


def test_bad_fault_spec_is_refused_before_starting() -> None:
    with pytest.raises(FaultSpecError, match="'silence:later'"):
        run_standalone(SimExchangeConfig(), ["silence:later"])


BOOK_OF_EIGHT = ("ETHUSDT", "SOLUSDT", "XRPUSDT", "DOGEUSDT", "ADAUSDT", "TRXUSDT", "LINKUSDT")
BOOK_SCRIPT = f"""
from engine.sim.market import sim_book
from engine.sim.server import SimExchangeConfig
from engine.sim.standalone import run_standalone
market = sim_book({(*BOOK_OF_EIGHT, "AVAXUSDT")!r}, seed=7)
run_standalone(
    SimExchangeConfig(book_interval_ms=30, warmup_ms=1000, market=market), [], status_interval_s=0.2
)
"""


async def test_a_book_of_eight_and_its_hedge_is_served_on_one_websocket() -> None:
    symbols = (*BOOK_OF_EIGHT, "AVAXUSDT", "BTCUSDT")
    channels = ("books15", "books", "trade")
    async with standalone(BOOK_SCRIPT) as (process, banner):
        assert process.stdout is not None
        assert banner["symbols"] == f"{', '.join(symbols[:-1])} (quoted), BTCUSDT (hedge), seed 7"
        assert banner["market"].startswith("a book: every quoted symbol follows BTCUSDT")
        async with websockets.connect(banner["public websocket"]) as connection:
            socket = PublicSocket(connection)
            wanted = [(channel, symbol) for symbol in symbols for channel in channels]
            request = [
                {"instType": "USDT-FUTURES", "channel": channel, "instId": symbol}
                for channel, symbol in wanted
            ]
            assert len(orjson.dumps(request)) <= 4096, "Bitget's limit on one subscribe's args"
            await socket.subscribe(*wanted)
            acked: set[tuple[str, str]] = set()
            pushed: set[tuple[str, str]] = set()
            async with asyncio.timeout(WAIT_S * 2):
                while acked != set(wanted) or pushed != set(wanted):
                    message = await socket.recv_json()
                    channel = (message["arg"]["channel"], message["arg"]["instId"])
                    if message.get("event") == "subscribe":
                        acked.add(channel)
                    elif "action" in message:
                        pushed.add(channel)
            status = await read_line(process.stdout)
            assert all(f"{symbol} " in status for symbol in symbols), status
        async with httpx.AsyncClient(base_url=banner["REST"], timeout=WAIT_S) as rest:
            query = {"productType": "USDT-FUTURES"}
            tickers = (await rest.get("/api/v2/mix/market/tickers", params=query)).json()
            assert {ticker["symbol"] for ticker in tickers["data"]} == set(symbols)
            contracts = (await rest.get("/api/v2/mix/market/contracts", params=query)).json()
            assert set(symbols) <= {entry["symbol"] for entry in contracts["data"]}
        process.send_signal(signal.SIGTERM)
        _, errors = await asyncio.wait_for(process.communicate(), WAIT_S * 2)
        assert process.returncode == 0, errors.decode()
        assert b"Traceback" not in errors
