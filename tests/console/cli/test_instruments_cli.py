"""`hft-console instruments` end to end: this checkout's command line against a real simulator
(and a loopback stand-in for a broken venue), the cache in a cache folder of the test's own."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from support.cli import checkout_env, run_cli
from support.loopback import catch_all, serving
from support.sim import running_sim, sim_config

from engine.bitget.contracts import contracts_cache_path, parse_contracts, write_cache
from engine.sim.contracts import SIM_CONTRACTS
from engine.sim.server import SimExchange

NAME = "hft-console instruments"


@pytest.fixture
async def sim() -> AsyncIterator[SimExchange]:
    maintained = {**SIM_CONTRACTS[0], "symbol": "LTCUSDT", "symbolStatus": "maintain"}
    async with running_sim(sim_config(29, contracts=(*SIM_CONTRACTS, maintained))) as exchange:
        yield exchange


async def instruments(cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command in a subprocess, while this test's loop keeps serving the simulator."""
    env = checkout_env(XDG_CACHE_HOME=str(cache))
    return await asyncio.to_thread(run_cli, "instruments", *args, env=env)


async def test_the_simulators_table_is_printed_then_served_from_the_cache(
    sim: SimExchange, tmp_path: Path
) -> None:
    first = await instruments(tmp_path, "--url", sim.rest_url)
    assert first.returncode == 0, first.stderr
    assert first.stderr == f"{NAME}: 11 contracts from {sim.rest_url}, just fetched\n"
    header, *rows = first.stdout.splitlines()
    assert header.split() == [
        "symbol", "status", "tick", "lot", "min", "size", "min", "USDT", "maker", "bps",
        "taker", "bps",
    ]  # fmt: skip
    assert [row.split() for row in rows] == [
        ["ADAUSDT", "normal", "0.0001", "1", "1", "5", "2", "6"],
        ["AVAXUSDT", "normal", "0.001", "0.1", "0.1", "5", "2", "6"],
        ["BTCUSDT", "normal", "0.1", "0.001", "0.001", "5", "2", "6"],
        ["DOGEUSDT", "normal", "0.00001", "1", "1", "5", "2", "6"],
        ["DOTUSDT", "normal", "0.001", "0.1", "0.1", "5", "2", "6"],
        ["ETHUSDT", "normal", "0.01", "0.01", "0.01", "5", "2", "6"],
        ["LINKUSDT", "normal", "0.001", "0.1", "0.1", "5", "2", "6"],
        ["LTCUSDT", "maintain", "0.1", "0.001", "0.001", "5", "2", "6"],
        ["SOLUSDT", "normal", "0.001", "0.1", "0.1", "5", "2", "6"],
        ["TRXUSDT", "normal", "0.00001", "1", "1", "5", "2", "6"],
        ["XRPUSDT", "normal", "0.0001", "1", "1", "5", "2", "6"],
    ]
    served = sim.stats().rest_requests
    again = await instruments(tmp_path, "--url", sim.rest_url, "XRPUSDT")
    assert again.returncode == 0, again.stderr
    assert again.stderr.startswith(f"{NAME}: 11 contracts of {sim.rest_url}, cached ")
    assert [row.split()[0] for row in again.stdout.splitlines()[1:]] == ["XRPUSDT"]
    assert sim.stats().rest_requests == served
    refreshed = await instruments(tmp_path, "--url", sim.rest_url, "--refresh", "BTCUSDT")
    assert refreshed.returncode == 0 and "just fetched" in refreshed.stderr
    assert sim.stats().rest_requests == served + 1


async def test_json_gives_the_asked_contracts_fields(sim: SimExchange, tmp_path: Path) -> None:
    done = await instruments(tmp_path, "--url", sim.rest_url, "--json", "dogeusdt", "SOLUSDT")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert (document["url"], document["source"]) == (sim.rest_url, "venue")
    doge, sol = document["contracts"]
    assert (doge["symbol"], doge["tick"], doge["lot"], doge["min_size"]) == (
        "DOGEUSDT",
        1e-05,
        1,
        1,
    )
    assert (sol["symbol"], sol["tick"], sol["lot"]) == ("SOLUSDT", 0.001, 0.1)
    assert (sol["maker_fee_bps"], sol["taker_fee_bps"], sol["min_notional_usdt"]) == (2, 6, 5)
    assert sol["trading"] is True and sol["status"] == "normal" and sol["max_leverage"] == 100


@pytest.mark.parametrize(
    ("symbol", "line"),
    [
        ("NEXOUSDT", "NEXOUSDT: not in the contract table of {url}"),
        ("LTCUSDT", "LTCUSDT is not trading: its status is 'maintain'"),
    ],
)
async def test_a_symbol_unknown_or_not_trading_is_one_line_and_exit_2(
    sim: SimExchange, tmp_path: Path, symbol: str, line: str
) -> None:
    done = await instruments(tmp_path, "--url", sim.rest_url, "BTCUSDT", symbol)
    assert done.returncode == 2
    assert done.stderr == f"{NAME}: {line.format(url=sim.rest_url)}\n"
    assert done.stdout == ""


async def broken_table(request: web.Request) -> web.Response:
    entry = {**SIM_CONTRACTS[3], "pricePlace": "four"}
    return web.json_response({"code": "00000", "msg": "success", "requestTime": 1, "data": [entry]})


async def test_a_table_that_does_not_parse_is_one_line_naming_symbol_and_field(
    tmp_path: Path,
) -> None:
    async with serving(catch_all(broken_table)) as venue:
        done = await instruments(tmp_path, "--url", venue.url)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"{NAME}: contract table: XRPUSDT: pricePlace: expected a whole number within 0..10, "
        "got 'four'\n"
    )
    assert not (tmp_path / "hft-console").exists()


def test_a_url_that_is_not_one_is_refused(tmp_path: Path) -> None:
    done = run_cli(
        "instruments", "--url", "ftp://example", env=checkout_env(XDG_CACHE_HOME=str(tmp_path))
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"{NAME}: base_url must be http(s)://host[:port]")
    assert done.stderr.count("\n") == 1


def closed_port_url() -> str:
    """A loopback URL nothing listens on: the venue unreachable."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{taken.getsockname()[1]}"


def test_offline_the_cache_is_used_and_its_age_said(tmp_path: Path, monkeypatch) -> None:
    url = closed_port_url()
    table = parse_contracts(list(SIM_CONTRACTS))
    three_hours_ago_ms = time.time_ns() // 1_000_000 - 3 * 3_600_000
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    write_cache(contracts_cache_path(url), table, url, three_hours_ago_ms)
    done = run_cli(
        "instruments", "--url", url, "SOLUSDT", env=checkout_env(XDG_CACHE_HOME=str(tmp_path))
    )
    assert done.returncode == 0, done.stderr
    notice, source = done.stderr.splitlines()
    assert notice.startswith(f"{NAME}: venue not reached (")
    assert notice.endswith("; using the cached table from 3.0 h ago")
    assert source == f"{NAME}: 10 contracts of {url}, cached 3.0 h ago"
    assert done.stdout.splitlines()[1].split()[:3] == ["SOLUSDT", "normal", "0.001"]


def test_offline_without_a_cache_is_one_line_and_exit_1(tmp_path: Path) -> None:
    url = closed_port_url()
    done = run_cli("instruments", "--url", url, env=checkout_env(XDG_CACHE_HOME=str(tmp_path)))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (
        f"{NAME}: no contract table from {url}: /api/v2/mix/market/contracts: could not "
        "connect (ClientConnectorError)\n"
    )
