"""Which contract each of a run's symbols trades on, where that came from, and a recent price
that turns amounts in USDT into whole lots.

A symbol's contract comes from the first of: the user's `[engine.instruments.SYMBOL]` (or a
command's `--instrument`), the recording being replayed, the venue's contract table (Bitget's,
or the simulator's), the built-in BTC/ETH specs. Fee rates that apply: `[trading.fees]` when
set, else the rates the contract lists, else the paper venue's defaults.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from engine.market.instruments import Instrument, instrument_for


class ContractOrigin(StrEnum):
    """Where a symbol's tick, lot and minimum notional came from."""

    CONFIG = "config"
    RECORDING = "recording"
    VENUE = "venue"
    SIMULATOR = "simulator"
    BUILT_IN = "built-in"


class FeeOrigin(StrEnum):
    """Which fee rates a symbol is charged: `[trading.fees]`, its contract's listed rates, or
    the paper venue's defaults (`[trading.paper]`)."""

    CONFIG = "config"
    CONTRACT = "contract"
    PAPER_DEFAULT = "paper default"


class ContractMissing(ValueError):
    """A symbol has no contract from any source; the message names the setting that gives one."""


@dataclass(frozen=True, slots=True)
class MarketContract:
    """One symbol's contract as the run uses it: `instrument`'s fee rates are the ones that
    apply (None: the paper venue's defaults), `reference_price` a recent price (None where
    none was at hand)."""

    instrument: Instrument
    origin: ContractOrigin
    fee_origin: FeeOrigin
    reference_price: float | None = None

    def lots_of(self, usdt: float) -> int | None:
        """Whole lots nearest `usdt` of notional at the reference price; None without one."""
        price = self.reference_price
        if price is None:
            return None
        instrument = self.instrument
        return round(usdt / price / instrument.size_step)


@dataclass(frozen=True, slots=True)
class MarketContracts:
    """The contracts of a run's symbols, in the run's order."""

    by_symbol: Mapping[str, MarketContract]

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_symbol", MappingProxyType(dict(self.by_symbol)))

    @property
    def instruments(self) -> tuple[Instrument, ...]:
        return tuple(contract.instrument for contract in self.by_symbol.values())

    def get(self, symbol: str) -> MarketContract | None:
        return self.by_symbol.get(symbol)


@dataclass(frozen=True, slots=True)
class FeeRates:
    """Fee rates the user sets for every symbol (a VIP tier, a rebate); None: the contract's."""

    maker: float | None = None
    taker: float | None = None


def resolve_contracts(
    symbols: Iterable[str],
    *,
    configured: Mapping[str, Instrument] = MappingProxyType({}),
    recorded: Mapping[str, Instrument] = MappingProxyType({}),
    listed: Mapping[str, Instrument] = MappingProxyType({}),
    listed_origin: ContractOrigin = ContractOrigin.VENUE,
    fees: FeeRates = FeeRates(),
    default_fees: FeeRates = FeeRates(),
    prices: Mapping[str, float] = MappingProxyType({}),
    missing_hint: str = "[engine.instruments.SYMBOL] tick_size, size_step",
) -> MarketContracts:
    """Each symbol's contract from the first source that has it (see the module's text);
    `ContractMissing` names the symbols none has and `missing_hint`, the way to give one."""
    contracts: dict[str, MarketContract] = {}
    missing = []
    for symbol in symbols:
        found = _first_source(symbol, configured, recorded, listed, listed_origin)
        if found is None:
            missing.append(symbol)
            continue
        instrument, origin = found
        instrument, fee_origin = _with_fees(instrument, fees, default_fees)
        price = prices.get(symbol)
        if price is not None and not (math.isfinite(price) and price > 0):
            price = None
        contracts[symbol] = MarketContract(instrument, origin, fee_origin, price)
    if missing:
        raise ContractMissing(
            f"no contract (tick, lot) for {', '.join(missing)}: give it with {missing_hint}"
        )
    return MarketContracts(contracts)


def _first_source(
    symbol: str,
    configured: Mapping[str, Instrument],
    recorded: Mapping[str, Instrument],
    listed: Mapping[str, Instrument],
    listed_origin: ContractOrigin,
) -> tuple[Instrument, ContractOrigin] | None:
    for source, origin in (
        (configured, ContractOrigin.CONFIG),
        (recorded, ContractOrigin.RECORDING),
        (listed, listed_origin),
    ):
        instrument = source.get(symbol)
        if instrument is not None:
            return instrument, origin
    built_in = instrument_for(symbol)
    return (built_in, ContractOrigin.BUILT_IN) if built_in is not None else None


def _with_fees(
    instrument: Instrument, fees: FeeRates, defaults: FeeRates
) -> tuple[Instrument, FeeOrigin]:
    """`instrument` at the rates that apply, each the first set of `fees`, its listed one,
    `defaults`; the origin is the first source of either."""
    listed = FeeRates(instrument.maker_fee_rate, instrument.taker_fee_rate)
    if fees.maker is not None or fees.taker is not None:
        origin = FeeOrigin.CONFIG
    elif listed.maker is not None or listed.taker is not None:
        origin = FeeOrigin.CONTRACT
    else:
        origin = FeeOrigin.PAPER_DEFAULT
    maker, taker = (
        next((rate for rate in rates if rate is not None), None)
        for rates in (
            (fees.maker, listed.maker, defaults.maker),
            (fees.taker, listed.taker, defaults.taker),
        )
    )
    return dataclasses.replace(instrument, maker_fee_rate=maker, taker_fee_rate=taker), origin
