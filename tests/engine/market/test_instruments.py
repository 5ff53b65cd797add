"""Contract specs: whole ticks and lots are their decimals, and prices and sizes are written
on the grid at the contract's decimals."""

from __future__ import annotations

from engine.market.instruments import BTCUSDT, ETHUSDT, Instrument, price_text, size_text


def test_whole_ticks_and_lots_are_the_decimal_itself_without_float_noise():
    assert repr(BTCUSDT.price_of(618522)) == "61852.2"  # 618522 * 0.1 = 61852.200000000004
    assert repr(BTCUSDT.price_of(616026)) == "61602.6"
    assert repr(ETHUSDT.price_of(300050)) == "3000.5"
    assert repr(BTCUSDT.size_of(3)) == "0.003"
    assert repr(Instrument("XUSDT", tick_size=0.25, size_step=0.5).price_of(5)) == "1.25"


def test_prices_and_sizes_are_written_on_the_grid_at_the_contracts_decimals():
    assert price_text(BTCUSDT, 61852.200000000004) == "61852.2"
    assert price_text(BTCUSDT, 61602.600000000006, grouped=True) == "61,602.6"
    assert price_text(ETHUSDT, 3000.5) == "3000.50"
    assert size_text(BTCUSDT, 0.1 + 0.2) == "0.300"
    assert size_text(ETHUSDT, -1.5, signed=True) == "-1.50"
    assert size_text(BTCUSDT, -1e-13, signed=True) == "+0.000"


def test_any_contract_is_written_at_its_own_decimals_not_a_built_in_ones():
    nexo = Instrument("NEXOUSDT", tick_size=0.001, size_step=0.1)
    assert price_text(nexo, 1.21) == "1.210"
    assert price_text(nexo, 1_210.5 + 0.001, grouped=True) == "1,210.501"
    assert size_text(nexo, 12.0) == "12.0"
    assert size_text(nexo, 0.1 + 0.2, signed=True) == "+0.3"


def test_off_the_grid_or_without_a_contract_a_price_keeps_its_digits_without_the_noise():
    assert price_text(BTCUSDT, 61737.63) == "61737.63"  # a spot recording's finer tick
    assert price_text(None, 0.1 + 0.2) == "0.3"
    assert size_text(None, 12.0) == "12"
