"""The simulated exchange's contract table, in Bitget's exact shape (every value text), so the
client's parser reads it as it reads the venue's.

Ticks and lots are Bitget's (BTC, ETH, XRP, DOGE, ADA and TRX as in the table ccxt keeps as a
test fixture, ccxt/ccxt ts/src/test/static/markets/bitget.json, copied in
tests/engine/bitget/fixtures/contracts_ccxt.json; SOL as the venue answered on 2025-06-27; LINK,
AVAX and DOT in the venue's usual shape for their prices, not checked against it), in
different regimes: one-tick books (BTC at 0.1, ETH at 0.01 and SOL at 0.001: a tick is 0.01 to
0.07 bps at their 2024-25 prices) and large-tick ones (DOGE at 0.00001 and XRP at 0.0001: 1 to
2 bps at the simulator's prices; ADA at 0.0001: 4 bps at its 2023 price of 0.25, as much as
a 2 bps maker fee on each side; TRX, LINK and DOT large-tick and AVAX one-tick at the
simulator's prices): ten contracts, a book of nine quoted ones and their hedge. The exchange
serves them with its own fee rates (SimExchangeConfig); engine/sim/market.py gives each its
market regime.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import MappingProxyType

from engine.bitget.contracts import parse_contracts
from engine.market.instruments import Instrument


def _perpetual(
    symbol: str,
    *,
    price_place: int,
    volume_place: int,
    size_multiplier: str,
    max_leverage: int,
) -> Mapping[str, object]:
    return MappingProxyType(
        {
            "symbol": symbol,
            "baseCoin": symbol.removesuffix("USDT"),
            "quoteCoin": "USDT",
            "buyLimitPriceRatio": "0.02",
            "sellLimitPriceRatio": "0.02",
            "feeRateUpRatio": "0.005",
            "makerFeeRate": "0.0002",
            "takerFeeRate": "0.0006",
            "openCostUpRatio": "0.01",
            "supportMarginCoins": ["USDT"],
            "minTradeNum": size_multiplier,
            "priceEndStep": "1",
            "volumePlace": str(volume_place),
            "pricePlace": str(price_place),
            "sizeMultiplier": size_multiplier,
            "symbolType": "perpetual",
            "minTradeUSDT": "5",
            "maxSymbolOrderNum": "200",
            "maxProductOrderNum": "400",
            "maxPositionNum": "150",
            "symbolStatus": "normal",
            "offTime": "-1",
            "limitOpenTime": "-1",
            "deliveryTime": "",
            "deliveryStartTime": "",
            "deliveryPeriod": "",
            "launchTime": "",
            "fundInterval": "8",
            "minLever": "1",
            "maxLever": str(max_leverage),
            "posLimit": "0.05",
            "maintainTime": "",
        }
    )


SIM_CONTRACTS: tuple[Mapping[str, object], ...] = (
    _perpetual("BTCUSDT", price_place=1, volume_place=3, size_multiplier="0.001", max_leverage=125),
    _perpetual("ETHUSDT", price_place=2, volume_place=2, size_multiplier="0.01", max_leverage=100),
    _perpetual("SOLUSDT", price_place=3, volume_place=1, size_multiplier="0.1", max_leverage=100),
    _perpetual("XRPUSDT", price_place=4, volume_place=0, size_multiplier="1", max_leverage=125),
    _perpetual("DOGEUSDT", price_place=5, volume_place=0, size_multiplier="1", max_leverage=75),
    _perpetual("ADAUSDT", price_place=4, volume_place=0, size_multiplier="1", max_leverage=75),
    _perpetual("TRXUSDT", price_place=5, volume_place=0, size_multiplier="1", max_leverage=30),
    _perpetual("LINKUSDT", price_place=3, volume_place=1, size_multiplier="0.1", max_leverage=75),
    _perpetual("AVAXUSDT", price_place=3, volume_place=1, size_multiplier="0.1", max_leverage=75),
    _perpetual("DOTUSDT", price_place=3, volume_place=1, size_multiplier="0.1", max_leverage=75),
)
"""What the simulator's `GET /api/v2/mix/market/contracts` lists by default."""


@functools.cache
def sim_instruments() -> Mapping[str, Instrument]:
    """The simulator's contracts by symbol, read by the client's parser, in the table's order;
    their fee rates are the table's (those of a default SimExchangeConfig)."""
    specs = parse_contracts(list(SIM_CONTRACTS)).specs
    return MappingProxyType({symbol: spec.instrument for symbol, spec in specs.items()})


def sim_instrument(symbol: str) -> Instrument:
    """The simulator's contract of `symbol`; a ValueError naming the ones it has."""
    instrument = sim_instruments().get(symbol)
    if instrument is None:
        raise ValueError(f"the simulator has no {symbol}: it runs {', '.join(sim_instruments())}")
    return instrument
