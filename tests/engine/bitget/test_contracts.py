"""Bitget's contract table: the parser on real answers (fixtures/README.md says where they come
from) and on the simulator's, its refusals, and the cache in the user cache folder."""

from __future__ import annotations

import copy
import json
import socket
from pathlib import Path

import pytest
from aiohttp import web
from support.bitget import FAST_RETRIES
from support.loopback import catch_all, serving
from support.sim import StartSim

from engine.bitget.contracts import (
    ContractTable,
    ContractTableError,
    LoadedTable,
    contracts_cache_path,
    fetch_contracts,
    load_contracts,
    parse_contracts,
    read_cache,
    write_cache,
)
from engine.bitget.endpoints import BITGET_REST_URL, CONTRACTS
from engine.bitget.rest import BitgetRestClient, BitgetRestConfig, BitgetTransportError
from engine.sim.contracts import SIM_CONTRACTS
from engine.sim.server import SimExchange

FIXTURES = Path(__file__).parent / "fixtures"
HOUR_MS = 3_600_000


def fixture_data(name: str) -> list[dict[str, object]]:
    return json.loads((FIXTURES / name).read_text())["data"]


def docs_entry(**changes: object) -> dict[str, object]:
    """Bitget's documented BTCUSDT entry with `changes` (None removes a field)."""
    (entry,) = copy.deepcopy(fixture_data("contracts_bitget_docs.json"))
    for name, value in changes.items():
        if value is None:
            del entry[name]
        else:
            entry[name] = value
    return entry


def test_bitget_documented_answer_parses() -> None:
    table = parse_contracts(fixture_data("contracts_bitget_docs.json"))
    spec = table.specs["BTCUSDT"]
    instrument = spec.instrument
    assert (instrument.tick_size, instrument.size_step, instrument.min_notional) == (0.1, 0.01, 5)
    assert (spec.min_size, spec.instrument.maker_fee_rate, spec.instrument.taker_fee_rate) == (
        0.01,
        0.0004,
        0.0006,
    )
    assert (spec.status, spec.symbol_type, spec.base_coin, spec.quote_coin) == (
        "normal",
        "perpetual",
        "BTC",
        "USDT",
    )
    assert spec.max_leverage == 125 and spec.max_order_size is None and spec.refusal is None


def test_ccxt_fixture_of_seven_perpetuals_parses_with_each_grid() -> None:
    table = parse_contracts(fixture_data("contracts_ccxt.json"))
    grids = {
        symbol: (spec.instrument.tick_size, spec.instrument.size_step, spec.min_size)
        for symbol, spec in table.specs.items()
    }
    assert grids == {
        "BTCUSDT": (0.1, 0.001, 0.001),
        "ETHUSDT": (0.01, 0.01, 0.01),
        "LTCUSDT": (0.01, 0.1, 0.1),
        "ADAUSDT": (0.0001, 1, 1),
        "XRPUSDT": (0.0001, 1, 1),
        "DOGEUSDT": (0.00001, 1, 1),
        "TRXUSDT": (0.00001, 1, 1),
    }
    doge = table.specs["DOGEUSDT"].instrument
    assert doge.format_price(0.10234) == "0.10234" and doge.price_of(10234) == 0.10234


def test_price_end_step_is_units_of_the_last_price_decimal() -> None:
    table = parse_contracts([docs_entry(priceEndStep="5", pricePlace="2")])
    assert table.specs["BTCUSDT"].instrument.tick_size == 0.05


def test_optional_maxima_are_read_when_present() -> None:
    entry = docs_entry(maxOrderQty="1200", maxMarketOrderQty="220")
    spec = parse_contracts([entry]).specs["BTCUSDT"]
    assert (spec.max_order_size, spec.max_market_order_size) == (1200, 220)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (docs_entry(pricePlace=None), "BTCUSDT: pricePlace: missing"),
        (docs_entry(pricePlace=1), "BTCUSDT: pricePlace: expected text, got int 1"),
        (docs_entry(pricePlace="1.5"), "BTCUSDT: pricePlace: expected a whole number"),
        (docs_entry(priceEndStep="0"), "BTCUSDT: priceEndStep: expected a number > 0"),
        (docs_entry(sizeMultiplier="-0.01"), "BTCUSDT: sizeMultiplier: expected a number >= 0"),
        (docs_entry(sizeMultiplier="0.001"), "BTCUSDT: sizeMultiplier: has more decimals"),
        (docs_entry(minTradeUSDT="five"), "BTCUSDT: minTradeUSDT: expected a number >= 0"),
        (docs_entry(minTradeNum=None), "BTCUSDT: minTradeNum: missing"),
        (docs_entry(makerFeeRate="2"), "BTCUSDT: makerFeeRate: expected a fee rate"),
        (docs_entry(takerFeeRate=["0.0006"]), "BTCUSDT: takerFeeRate: expected text, got list"),
        (docs_entry(symbolStatus=None), "BTCUSDT: symbolStatus: missing"),
        (docs_entry(maxOrderQty="-3"), "BTCUSDT: maxOrderQty: expected a number >= 0"),
        (
            docs_entry(symbol="btc-usdt"),
            "btc-usdt: Instrument.symbol must be a symbol like BTCUSDT",
        ),
        (docs_entry(symbol=None), "entry 0: symbol: missing"),
    ],
)
def test_a_field_missing_or_of_the_wrong_kind_is_one_line_naming_symbol_and_field(
    entry: dict[str, object], message: str
) -> None:
    with pytest.raises(ContractTableError) as refused:
        parse_contracts([entry])
    text = str(refused.value)
    assert text.startswith(f"contract table: {message}") and "\n" not in text
    assert isinstance(refused.value, ValueError)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"symbol": "BTCUSDT"}, "contract table: expected a list, got dict"),
        ([], "contract table: lists no contract"),
        (["BTCUSDT"], "contract table: entry 0: expected an object, got str"),
        ([docs_entry(), docs_entry()], "contract table: BTCUSDT: listed twice"),
    ],
)
def test_a_table_of_the_wrong_shape_is_refused(data: object, message: str) -> None:
    with pytest.raises(ContractTableError, match=f"^{message}$"):
        parse_contracts(data)


@pytest.mark.parametrize(
    ("changes", "refusal"),
    [
        ({"symbolStatus": "maintain"}, "BTCUSDT is not trading: its status is 'maintain'"),
        ({"symbolStatus": "off"}, "BTCUSDT is not trading: its status is 'off'"),
        ({"symbolType": "delivery"}, "BTCUSDT is a delivery contract, not a perpetual"),
    ],
)
def test_a_contract_that_does_not_trade_says_why(changes: dict[str, str], refusal: str) -> None:
    assert parse_contracts([docs_entry(**changes)]).specs["BTCUSDT"].refusal == refusal


def test_the_simulators_table_parses_in_its_regimes() -> None:
    table = parse_contracts(list(SIM_CONTRACTS))
    ticks = {symbol: spec.instrument.tick_size for symbol, spec in table.specs.items()}
    assert ticks == {
        "BTCUSDT": 0.1,
        "ETHUSDT": 0.01,
        "SOLUSDT": 0.001,
        "XRPUSDT": 0.0001,
        "DOGEUSDT": 0.00001,
        "ADAUSDT": 0.0001,
        "TRXUSDT": 0.00001,
        "LINKUSDT": 0.001,
        "AVAXUSDT": 0.001,
        "DOTUSDT": 0.001,
    }
    assert all(spec.refusal is None for spec in table.specs.values())


async def test_the_client_reads_the_simulators_table_without_a_key(sim: SimExchange) -> None:
    config = BitgetRestConfig(base_url=sim.rest_url, **FAST_RETRIES)
    async with BitgetRestClient(config, None) as client:
        table = await fetch_contracts(client)
        assert set(table.specs) == {
            "BTCUSDT", "ETHUSDT", "SOLUSDT", "XRPUSDT", "DOGEUSDT", "ADAUSDT", "TRXUSDT",
            "LINKUSDT", "AVAXUSDT", "DOTUSDT",
        }  # fmt: skip
        assert table.specs["XRPUSDT"].instrument.size_step == 1
        assert client.stats().requests[CONTRACTS] == 1


async def test_the_simulators_table_carries_the_fee_rates_it_charges(start_sim: StartSim) -> None:
    sim = await start_sim(maker_fee_rate=-0.0001, taker_fee_rate=0.0005)
    async with BitgetRestClient(BitgetRestConfig(base_url=sim.rest_url), None) as client:
        table = await fetch_contracts(client)
    fees = {
        (spec.instrument.maker_fee_rate, spec.instrument.taker_fee_rate)
        for spec in table.specs.values()
    }
    assert fees == {(-0.0001, 0.0005)}


async def broken_table(request: web.Request) -> web.Response:
    """Bitget's documented answer with a volumePlace that is not a number."""
    data = [docs_entry(volumePlace="many")]
    return web.json_response({"code": "00000", "msg": "success", "requestTime": 1, "data": data})


async def test_the_client_says_a_broken_table_by_symbol_and_field() -> None:
    async with serving(catch_all(broken_table)) as server:
        config = BitgetRestConfig(base_url=server.url, **FAST_RETRIES)
        async with BitgetRestClient(config, None) as client:
            with pytest.raises(ContractTableError, match="BTCUSDT: volumePlace: expected a whole"):
                await fetch_contracts(client)
        assert client.stats().retries == 0


# The cache


async def closed_port_client() -> BitgetRestClient:
    """A started client of a loopback port nothing listens on: the venue unreachable."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
    config = BitgetRestConfig(base_url=f"http://127.0.0.1:{port}", **FAST_RETRIES)
    client = BitgetRestClient(config, None)
    await client.start()
    return client


def cached_table(path: Path, url: str, fetched_ms: int) -> ContractTable:
    table = parse_contracts(fixture_data("contracts_ccxt.json"))
    write_cache(path, table, url, fetched_ms)
    return table


async def test_a_fetched_table_is_cached_with_its_url_and_time(
    sim: SimExchange, tmp_path: Path
) -> None:
    path = tmp_path / "contracts.json"
    config = BitgetRestConfig(base_url=sim.rest_url, **FAST_RETRIES)
    async with BitgetRestClient(config, None) as client:
        loaded = await load_contracts(client, cache_path=path, now_ms=lambda: 5 * HOUR_MS)
    assert loaded.source == "venue" and loaded.fetched_ms == 5 * HOUR_MS
    cached = read_cache(path)
    assert cached is not None
    assert (cached.url, cached.fetched_ms) == (config.base_url, 5 * HOUR_MS)
    assert set(cached.table.specs) == set(loaded.table.specs)


async def offline_with_a_cache(
    path: Path, now_ms: int
) -> tuple[LoadedTable, list[str], BitgetRestClient]:
    """`load_contracts` at `now_ms` of a venue that cannot be reached, with its own table
    cached at HOUR_MS: what it loaded, the notices it gave, the (stopped) client."""
    client = await closed_port_client()
    notices: list[str] = []
    try:
        cached_table(path, client.config.base_url, fetched_ms=HOUR_MS)
        loaded = await load_contracts(
            client, cache_path=path, now_ms=lambda: now_ms, notice=notices.append
        )
    finally:
        await client.stop()
    return loaded, notices, client


async def test_a_fresh_cache_is_used_without_asking_the_venue(tmp_path: Path) -> None:
    loaded, notices, client = await offline_with_a_cache(tmp_path / "c.json", HOUR_MS + 60_000)
    assert loaded.source == "cache" and "DOGEUSDT" in loaded.table.specs
    assert notices == [] and CONTRACTS not in client.stats().requests


async def test_offline_a_stale_cache_is_used_and_its_age_said(tmp_path: Path) -> None:
    loaded, notices, _ = await offline_with_a_cache(tmp_path / "c.json", 4 * HOUR_MS)
    assert loaded.source == "cache" and loaded.fetched_ms == HOUR_MS
    (notice,) = notices
    assert notice.startswith("venue not reached (") and notice.endswith(
        "using the cached table from 3.0 h ago"
    )


async def test_a_cache_from_another_url_is_not_used_and_said(
    sim: SimExchange, tmp_path: Path
) -> None:
    path = tmp_path / "contracts.json"
    cached_table(path, "https://api.bitget.com", fetched_ms=HOUR_MS)
    config = BitgetRestConfig(base_url=sim.rest_url, **FAST_RETRIES)
    notices: list[str] = []
    async with BitgetRestClient(config, None) as client:
        loaded = await load_contracts(
            client,
            cache_path=path,
            now_ms=lambda: HOUR_MS + 1,
            notice=notices.append,
        )
    assert loaded.source == "venue" and "SOLUSDT" in loaded.table.specs
    assert notices == [
        f"contract cache not used: it is from https://api.bitget.com, not {config.base_url}"
    ]


async def test_offline_a_cache_from_another_url_is_not_fallen_back_on(tmp_path: Path) -> None:
    path = tmp_path / "contracts.json"
    cached_table(path, "https://api.bitget.com", fetched_ms=HOUR_MS)
    client = await closed_port_client()
    try:
        with pytest.raises(BitgetTransportError, match="could not connect"):
            await load_contracts(client, cache_path=path, now_ms=lambda: HOUR_MS)
    finally:
        await client.stop()


async def test_refresh_asks_the_venue_even_with_a_fresh_cache(
    sim: SimExchange, tmp_path: Path
) -> None:
    path = tmp_path / "contracts.json"
    config = BitgetRestConfig(base_url=sim.rest_url, **FAST_RETRIES)
    cached_table(path, config.base_url, fetched_ms=HOUR_MS)
    async with BitgetRestClient(config, None) as client:
        loaded = await load_contracts(client, refresh=True, cache_path=path, now_ms=lambda: HOUR_MS)
    assert loaded.source == "venue" and "SOLUSDT" in loaded.table.specs


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"{not json", "not JSON"),
        (b'{"format": 9}', "not a contract cache of format 1"),
        (b'{"format": 1, "url": "x"}', "lacks its venue url or fetch time"),
        (
            b'{"format": 1, "url": "x", "fetched_ms": 1, "data": []}',
            "contract table: lists no contract",
        ),
    ],
)
async def test_an_unreadable_cache_is_said_and_the_venue_asked(
    sim: SimExchange, tmp_path: Path, content: bytes, problem: str
) -> None:
    path = tmp_path / "contracts.json"
    path.write_bytes(content)
    config = BitgetRestConfig(base_url=sim.rest_url, **FAST_RETRIES)
    notices: list[str] = []
    async with BitgetRestClient(config, None) as client:
        loaded = await load_contracts(client, cache_path=path, notice=notices.append)
    assert loaded.source == "venue"
    assert notices == [f"contract cache not used: {path}: {problem}"]
    cached = read_cache(path)
    assert cached is not None and cached.url == config.base_url


async def test_each_venue_keeps_a_cache_of_its_own(
    sim: SimExchange, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A simulator's table never replaces Bitget's cached one (a later offline start on Bitget
    would have found only the simulator's, from another URL, and no table)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    bitget = contracts_cache_path(BITGET_REST_URL)
    assert bitget.name == "bitget-contracts.json"
    async with BitgetRestClient(BitgetRestConfig(base_url=sim.rest_url), None) as client:
        await load_contracts(client)
    own = contracts_cache_path(sim.rest_url)
    assert own != bitget and own.is_file() and not bitget.exists()
    assert read_cache(own) is not None
