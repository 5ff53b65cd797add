"""A default config trades a 1.2 USDT coin and BTC alike: the caps and the quote size of a symbol
without base-coin settings are USDT turned into whole lots at its price at start."""

from __future__ import annotations

import pytest

from engine.market.contracts import ContractOrigin
from engine.market.instruments import Instrument
from engine.settings.schema import Settings
from engine.settings.sources import SettingsError

NEXO = Instrument("NEXOUSDT", 0.001, 0.1, 5.0)


def _contracts(settings: Settings, price: float):
    return settings.contracts(
        listed={"NEXOUSDT": NEXO}, listed_origin=ContractOrigin.VENUE, prices={"NEXOUSDT": price}
    )


def test_a_default_config_trades_a_large_tick_coin_and_btc_without_editing() -> None:
    nexo = Settings().with_overrides({"engine.symbols": ["NEXOUSDT"], "engine.hedge": "none"})
    trading = nexo.trading_config(contracts=_contracts(nexo, 1.21))
    limits = trading.risk.limits.for_symbol("NEXOUSDT")
    # 1,200 / 600 / 3,000 USDT at 1.21, rounded down to lots of 0.1; the quote 120 USDT.
    assert (limits.max_position, limits.max_order_size, limits.max_notional) == (
        991.7,
        495.8,
        2_000.0,
    )
    assert trading.risk.bounds.max_position["NEXOUSDT"] == 2479.3
    assert trading.strategies[0].quote_size == 99.2
    assert trading.instrument("NEXOUSDT") == NEXO.__class__(
        "NEXOUSDT", 0.001, 0.1, 5.0, maker_fee_rate=0.0002, taker_fee_rate=0.0006
    )
    btc = Settings()
    at_60k = btc.contracts(prices={"BTCUSDT": 60_000.0, "ETHUSDT": 3_000.0})
    trading = btc.trading_config(contracts=at_60k)
    assert trading.strategies[0].quote_size == 0.002  # BTC keeps its built-in caps in coin
    assert trading.risk.limits.for_symbol("BTCUSDT").max_position == 0.02


def test_a_base_coin_setting_wins_over_the_usdt_one() -> None:
    settings = Settings().with_overrides(
        {
            "engine.symbols": ["NEXOUSDT"],
            "engine.hedge": "none",
            "trading.strategy.quote_size": 50,
            "risk.symbols.NEXOUSDT.max_position": 400,
            "risk.symbols.NEXOUSDT.max_notional_usdt": 600,
            "risk.symbols.NEXOUSDT.max_order_size": 100,
            "risk.symbols.NEXOUSDT.max_position_ceiling": 800,
        }
    )
    trading = settings.trading_config(contracts=_contracts(settings, 1.21))
    assert trading.strategies[0].quote_size == 50
    assert trading.risk.limits.for_symbol("NEXOUSDT").max_position == 400


def test_a_cap_below_one_lot_names_the_key_and_the_table_that_would_give_it() -> None:
    settings = Settings().with_overrides(
        {"engine.symbols": ["NEXOUSDT"], "engine.hedge": "none", "risk.max_order_usdt": 0.05}
    )
    with pytest.raises(SettingsError, match=r"risk.max_order_usdt 0.05 is below one lot of "
                       r"NEXOUSDT .*\[risk.symbols.NEXOUSDT\]"):  # fmt: skip
        settings.trading_config(contracts=_contracts(settings, 1.21))


def test_without_a_price_the_usdt_sizes_name_the_base_coin_keys() -> None:
    settings = Settings().with_overrides({"engine.symbols": ["NEXOUSDT"], "engine.hedge": "none"})
    unpriced = settings.contracts(listed={"NEXOUSDT": NEXO})
    with pytest.raises(SettingsError, match=r"set trading.strategy.quote_size"):
        settings.trading_config(contracts=unpriced)
    settings = settings.with_overrides({"trading.strategy.quote_size": 50})
    with pytest.raises(SettingsError, match=r"give \[risk.symbols.NEXOUSDT\] \(base coin\)"):
        settings.trading_config(contracts=unpriced)


def test_configured_instruments_and_fees_reach_the_desk() -> None:
    settings = Settings().with_overrides(
        {
            "engine.symbols": ["NEXOUSDT"],
            "engine.hedge": "none",
            "engine.instruments.NEXOUSDT.tick_size": 0.005,
            "engine.instruments.NEXOUSDT.size_step": 1,
            "engine.instruments.NEXOUSDT.min_notional_usdt": 10,
            "trading.fees.maker_fee_rate": -0.0001,
        }
    )
    contracts = _contracts(settings, 1.21)
    contract = contracts.get("NEXOUSDT")
    assert contract is not None and contract.origin is ContractOrigin.CONFIG
    instrument = settings.trading_config(contracts=contracts).instrument("NEXOUSDT")
    assert (instrument.tick_size, instrument.size_step, instrument.min_notional) == (0.005, 1, 10)
    assert (instrument.maker_fee_rate, instrument.taker_fee_rate) == (-0.0001, 0.0006)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("trading.fees.maker_fee_rate", 0.5, "maker_fee_rate"),
        ("trading.strategy.quote_size_usdt", 0, "quote_size_usdt"),
        ("risk.max_position_usdt", -1, "max_position_usdt"),
        ("engine.instruments.NEXOUSDT.tick_size", 0, "tick_size"),
    ],
)
def test_a_bad_value_is_one_error_naming_its_key(key, value, message) -> None:
    extra = {}
    if key.startswith("engine.instruments"):
        extra = {
            "engine.instruments.NEXOUSDT.size_step": 1,
            "engine.instruments.NEXOUSDT.min_notional_usdt": 5,
        }
    with pytest.raises(SettingsError, match=message):
        Settings().with_overrides({key: value, **extra})
