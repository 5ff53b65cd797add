"""How money and sizes are written for people: USDT signed by the effect on PnL, sizes in the
base coin."""

from __future__ import annotations

import pytest

from engine.units import amount, base_coin, coin, fee_usdt, plain, usdt


def test_a_fee_paid_is_negative_and_a_rebate_positive():
    assert fee_usdt(0.0256) == "-0.0256 USDT"
    assert fee_usdt(-0.001) == "+0.0010 USDT"
    assert fee_usdt(0.0) == "+0.0000 USDT"


def test_money_is_signed_usdt_with_separators():
    assert usdt(-1234.5) == "-1,234.50 USDT"
    assert amount(14.07) == "+14.07"
    assert amount(-0.0) == "+0.00"


@pytest.mark.parametrize(
    ("symbol", "size", "signed", "text"),
    [
        ("BTCUSDT", 0.002, False, "0.002 BTC"),
        ("BTCUSDT", 0.002, True, "+0.002 BTC"),
        ("ETHUSDT", -0.2, True, "-0.2 ETH"),
        ("ETHUSDT", 0.0, True, "0 ETH"),
        ("BTCUSDT", 0.00001, False, "0.00001 BTC"),
        ("SOLUSDT", 12.0, False, "12 SOL"),
        ("BTCUSDT", 0.1 + 0.2, False, "0.3 BTC"),
    ],
)
def test_a_size_is_written_in_its_base_coin_without_an_exponent(symbol, size, signed, text):
    assert coin(symbol, size, signed=signed) == text


def test_the_base_coin_of_a_usdt_perpetual():
    assert base_coin("BTCUSDT") == "BTC"
    assert base_coin("USDT") == "USDT"
    assert plain(-0.0) == "0"
