"""A run's contracts from its market source: a recording's stored ones and first prices, the
simulator's table and start prices, or the venue's table and last prices.

Each returns `MarketContracts` for the market symbols of the settings' book, its leader
included (engine/market/contracts.py says which source wins); a symbol the venue lists but does
not trade is refused with its status.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from engine.bitget.contracts import ContractTable, LoadedTable, load_contracts
from engine.bitget.endpoints import PRODUCT_TYPE, TICKERS
from engine.bitget.rest import BitgetRestClient, BitgetRestConfig, BitgetRestError
from engine.feed.events import BookSnapshot
from engine.feed.parse import FrameParser
from engine.feed.recording import (
    iter_recording,
    recording_instruments,
    require_prices_on_ticks,
)
from engine.market.contracts import ContractOrigin, MarketContracts
from engine.market.instruments import Instrument
from engine.settings.schema import Settings
from engine.sim.contracts import sim_instruments
from engine.sim.market import engine_market

PRICE_SCAN_LINES = 200_000
"""Lines of a recording read at most for each symbol's first book."""


class ContractNotTrading(ValueError):
    """A symbol the venue lists with a status that takes no orders, or does not list."""


@dataclass(frozen=True, slots=True)
class RecordedMarket:
    """What a recording says of its market before it plays: its stored contracts and each
    symbol's first mid (read once, for every run of a grid on it)."""

    instruments: Mapping[str, Instrument]
    first_mids: Mapping[str, float]

    @classmethod
    def read(cls, path: str | os.PathLike[str], symbols: Iterable[str]) -> RecordedMarket:
        return cls(recording_instruments(path), first_mids(path, symbols))


def recording_contracts(
    settings: Settings, path: str | os.PathLike[str], market: RecordedMarket | None = None
) -> MarketContracts:
    """The contracts a replay of `path` runs on: [engine.instruments], the recording's stored
    ones, the built-in ones; priced at each symbol's first book (`market`: read already). A
    configured tick its prices are not on is refused (`RecordingContractsError`)."""
    symbols = settings.engine.market_symbols
    if market is None:
        market = RecordedMarket.read(path, symbols)
    contracts = settings.contracts(
        recorded=market.instruments,
        prices=market.first_mids,
        missing_hint=f"--instrument SYMBOL:tick=..,lot=..,min_notional=.. or {_CONFIG_HINT}",
    )
    configured = {
        symbol: contract.instrument
        for symbol, contract in contracts.by_symbol.items()
        if contract.origin is ContractOrigin.CONFIG
    }
    if configured:  # a tick the recording's prices do not sit on contradicts it
        require_prices_on_ticks(path, configured, "[engine.instruments.{symbol}] tick_size {tick}")
    return contracts


def simulator_contracts(settings: Settings) -> MarketContracts:
    """The contracts of the in-process simulator's market (a pair, or the book of more), at
    its start prices."""
    market = engine_market(settings.engine.market_symbols, settings.engine.sim_seed)
    followers = [quoted.market for quoted in market.quoted] or [market.traded]  # a book, a pair
    legs = (*followers, market.hedge)
    return settings.contracts(
        listed=sim_instruments(),
        listed_origin=ContractOrigin.SIMULATOR,
        prices={leg.instrument.symbol: leg.start_price for leg in legs},
    )


async def venue_contracts(
    settings: Settings,
    rest_url: str,
    *,
    notice: Callable[[str], None] = lambda line: None,
    refresh: bool = False,
) -> tuple[MarketContracts, LoadedTable]:
    """The contracts of a venue's market (Bitget's, or a simulator started apart): its table
    (cached per venue, see `load_contracts`) and last prices. A symbol the table does not trade is
    refused (`ContractNotTrading`) unless [engine.instruments] gives it."""
    symbols = settings.engine.market_symbols
    async with BitgetRestClient(BitgetRestConfig(base_url=rest_url), None) as client:
        loaded = await load_contracts(client, refresh=refresh, notice=notice)
        _refuse_not_trading(loaded.table, symbols, settings.engine.instruments)
        try:
            prices = await last_prices(client, symbols)
        except BitgetRestError as error:
            notice(f"last prices not read ({error}): sizes in USDT cannot be turned into lots")
            prices = {}
    listed = {symbol: spec.instrument for symbol, spec in loaded.table.specs.items()}
    contracts = settings.contracts(listed=listed, prices=prices)
    return contracts, loaded


def first_mids(path: str | os.PathLike[str], symbols: Iterable[str]) -> dict[str, float]:
    """Each symbol's mid in its first book of the recording (within `PRICE_SCAN_LINES`)."""
    wanted = set(symbols)
    parser = FrameParser(wanted)
    mids: dict[str, float] = {}
    for index, (recv_ns, raw) in enumerate(iter_recording(path)):
        if index >= PRICE_SCAN_LINES or len(mids) == len(wanted):
            break
        event = parser.parse(raw, recv_ns)
        if (
            isinstance(event, BookSnapshot)
            and event.symbol not in mids
            and event.n_bids
            and event.n_asks
        ):
            mids[event.symbol] = float(event.bid_prices[0] + event.ask_prices[0]) / 2
    return mids


async def last_prices(client: BitgetRestClient, symbols: Iterable[str]) -> dict[str, float]:
    """The venue's last price of each symbol (its public tickers); a symbol it has no ticker
    for is left out (its USDT sizes then need a base-coin setting, said where it is used)."""
    data = await client.public_data(TICKERS, {"productType": PRODUCT_TYPE})
    wanted = set(symbols)
    prices: dict[str, float] = {}
    for entry in data if isinstance(data, list) else ():
        if not isinstance(entry, Mapping) or entry.get("symbol") not in wanted:
            continue
        try:
            price = float(entry.get("lastPr", ""))  # type: ignore[arg-type]
        except ValueError:
            continue
        if price > 0:
            prices[str(entry["symbol"])] = price
    return prices


_CONFIG_HINT = "[engine.instruments.SYMBOL] tick_size, size_step, min_notional_usdt"


def _refuse_not_trading(
    table: ContractTable, symbols: Iterable[str], configured: Mapping[str, object]
) -> None:
    for symbol in symbols:
        spec = table.specs.get(symbol)
        if spec is None:
            if symbol not in configured:
                raise ContractNotTrading(
                    f"{symbol} is not a USDT-M contract of this venue (its table lists "
                    f"{len(table.specs)}: see `hft-console instruments`)"
                )
            continue
        if spec.refusal is not None:
            raise ContractNotTrading(spec.refusal)
