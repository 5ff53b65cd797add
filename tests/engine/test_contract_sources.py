"""A run's contracts from its market: the recording's stored ones and first prices, the
simulator's table and start prices, the venue's table and last prices (a real simulator on
loopback stands for the venue)."""

from __future__ import annotations

import gzip

import pytest
from support.recordings import book_frame, shared_spot
from support.sim import running_sim, sim_config

from engine.bitget.rest import BitgetRestError
from engine.contract_sources import (
    ContractNotTrading,
    first_mids,
    recording_contracts,
    simulator_contracts,
    venue_contracts,
)
from engine.feed.recording import RecordingContractsError, contracts_line, encode_line
from engine.market.contracts import ContractMissing, ContractOrigin, FeeOrigin
from engine.market.instruments import Instrument
from engine.settings.schema import Settings

NEXO = Instrument("NEXOUSDT", 0.001, 0.1, 5.0)


def nexo_recording(path, *, stored: bool):
    book = book_frame("NEXOUSDT", 1_000, [["1.211", "900"]], [["1.210", "1200"]], 1)
    lines = [encode_line(1_000_000_000, book)]
    if stored:
        lines.insert(0, contracts_line(999_000_000, [NEXO]))
    path.write_bytes(gzip.compress(b"".join(lines)))
    return path


NEXO_ALONE = {"engine.symbols": ["NEXOUSDT"], "engine.hedge": "none", "engine.leader": "none"}
"""A book of NEXOUSDT alone: no hedge, no leader (the recordings here have no other symbol)."""


def test_a_recording_gives_its_stored_contracts_priced_at_its_first_books(tmp_path):
    settings = Settings().with_overrides(NEXO_ALONE)
    contract = recording_contracts(settings, nexo_recording(tmp_path / "n.gz", stored=True)).get(
        "NEXOUSDT"
    )
    assert contract is not None
    assert contract.origin is ContractOrigin.RECORDING
    assert contract.instrument.tick_size == 0.001
    assert contract.reference_price == pytest.approx(1.2105)
    # Nothing stored, nothing built in: one line naming the flag and the key that give it.
    with pytest.raises(ContractMissing, match=r"NEXOUSDT: give it with --instrument SYMBOL"):
        recording_contracts(settings, nexo_recording(tmp_path / "old.gz", stored=False))


def test_an_old_recording_of_btc_and_eth_runs_on_the_built_in_contracts():
    spot = shared_spot()
    contracts = recording_contracts(Settings(), spot)
    assert [c.origin for c in contracts.by_symbol.values()] == [ContractOrigin.BUILT_IN] * 2
    mids = first_mids(spot, ["BTCUSDT", "ETHUSDT"])
    assert 60_000 < mids["BTCUSDT"] < 63_000 and 2_600 < mids["ETHUSDT"] < 2_800


def test_the_simulator_gives_its_tables_contracts_at_its_start_prices():
    settings = Settings().with_overrides(
        {"engine.symbols": ["ADAUSDT"], "engine.hedge": "DOGEUSDT"}
    )
    contracts = simulator_contracts(settings)
    ada = contracts.get("ADAUSDT")
    assert ada is not None and ada.origin is ContractOrigin.SIMULATOR
    assert ada.fee_origin is FeeOrigin.CONTRACT and ada.reference_price == pytest.approx(0.25)
    trading = settings.trading_config(contracts=contracts)
    assert trading.strategy("ADAUSDT").quote_size == 480  # 120 USDT at 0.25, lots of 1


def test_the_simulator_prices_every_symbol_of_a_book():
    """More than two market symbols are the simulator's book (sim_book), not a pair: each
    quoted symbol and the hedge at its start price, each quote sized on its own."""
    book = {"engine.symbols": ["ADAUSDT", "SOLUSDT", "XRPUSDT"], "engine.hedge": "BTCUSDT"}
    settings = Settings().with_overrides(book)
    contracts = simulator_contracts(settings)
    prices = {symbol: c.reference_price for symbol, c in contracts.by_symbol.items()}
    assert prices == pytest.approx(
        {"ADAUSDT": 0.25, "SOLUSDT": 150.0, "XRPUSDT": 0.5, "BTCUSDT": 64_000.0}
    )
    trading = settings.trading_config(contracts=contracts)
    assert [strategy.quote_size for strategy in trading.strategies] == [480, 0.8, 240]
    assert trading.hedge_symbol == "BTCUSDT"


async def test_the_venue_gives_its_table_and_last_prices(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    async with running_sim(sim_config(3)) as sim:
        settings = Settings()
        contracts, loaded = await venue_contracts(settings, sim.rest_url)
        btc = contracts.get("BTCUSDT")
        assert btc is not None and btc.origin is ContractOrigin.VENUE
        assert btc.reference_price == pytest.approx(sim.market.book("BTCUSDT", 1).mid, rel=1e-3)
        assert loaded.url == sim.rest_url


@pytest.mark.parametrize(
    ("book", "relisted", "message"),
    [
        ({"engine.hedge": "none", "engine.symbols": ["XYZUSDT"]}, {}, r"XYZUSDT is not a USDT-M"),
        ({}, {"symbolStatus": "maintain"}, r"BTCUSDT is not trading: its status is 'maintain'"),
        ({}, {"symbolType": "delivery"}, r"not a perpetual"),
        # the leader, watched only, must be listed too
        ({"engine.hedge": "none", "engine.leader": "XYZUSDT"}, {}, r"XYZUSDT is not a USDT-M"),
    ],
)
async def test_a_symbol_the_venue_does_not_trade_is_refused_with_its_status(
    tmp_path, monkeypatch, book, relisted, message
):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    async with running_sim(sim_config(3)) as sim:
        if relisted:
            sim.relist("BTCUSDT", **relisted)
        settings = Settings().with_overrides(book)
        with pytest.raises(ContractNotTrading, match=message):
            await venue_contracts(settings, sim.rest_url)


async def test_a_venue_that_does_not_answer_and_no_cache_is_a_rest_error(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    async with running_sim(sim_config(3)) as sim:
        url = sim.rest_url
    with pytest.raises(BitgetRestError):
        await venue_contracts(Settings(), url)


def test_a_configured_tick_the_recordings_prices_are_not_on_is_refused(tmp_path):
    recording = nexo_recording(tmp_path / "n.gz", stored=True)
    settings = Settings().with_overrides(
        {
            **NEXO_ALONE,
            "engine.instruments.NEXOUSDT.tick_size": 0.005,
            "engine.instruments.NEXOUSDT.size_step": 0.1,
            "engine.instruments.NEXOUSDT.min_notional_usdt": 5,
        }
    )
    with pytest.raises(
        RecordingContractsError,
        match=r"n.gz: line 2: NEXOUSDT price 1.211 is not on \[engine.instruments.NEXOUSDT\] "
        r"tick_size 0.005$",
    ):
        recording_contracts(settings, recording)
    finer = settings.with_overrides({"engine.instruments.NEXOUSDT.tick_size": 0.0005})
    contract = recording_contracts(finer, recording).get("NEXOUSDT")
    assert contract is not None and contract.origin is ContractOrigin.CONFIG
