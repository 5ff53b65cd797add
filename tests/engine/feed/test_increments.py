"""The finest increment of decimal texts (a contract's grid from its data), and the
`--instrument` option that gives a contract instead."""

from __future__ import annotations

from decimal import Decimal

import pytest

from engine.feed.increments import FinestIncrement, InstrumentOption, parse_instrument_option


def finest(*texts: str) -> Decimal | None:
    increment = FinestIncrement()
    for text in texts:
        increment.add(text)
    return increment.step


@pytest.mark.parametrize(
    ("texts", "step"),
    [
        (("1.205", "1.21", "1.2"), "0.005"),
        (("1.21", "1.205"), "0.005"),  # more decimals later: the earlier values rescale
        (("100", "250"), "50"),
        (("0.001",), "0.001"),
        (("1.2000", "1.3"), "0.1"),  # trailing zeros are not decimals
        (("0.1", "0.2", "0.3"), "0.1"),  # exact where floats are not (0.1 + 0.2)
        (("61852.2", "61852.4", "61852.6"), "0.2"),
        (("0", "0.02", "1.5"), "0.02"),  # a zero says nothing of the step
        (("3", "3", "3"), "3"),
    ],
)
def test_the_finest_increment_is_the_gcd_at_the_most_decimals_seen(texts, step):
    assert finest(*texts) == Decimal(step)


def test_no_value_gives_no_increment():
    assert finest() is None
    assert finest("0", "0.000") is None


@pytest.mark.parametrize("text", ["1e-5", "-1.5", "+2", " 1.5", "1.2.3", "", "١٢"])
def test_a_text_that_is_not_a_plain_decimal_is_refused_and_not_remembered(text):
    increment = FinestIncrement()
    increment.add("0.5")
    for _ in range(2):  # refused again the second time: a refused text is not taken as seen
        with pytest.raises(ValueError, match="not a plain decimal"):
            increment.add(text)
    assert increment.step == Decimal("0.5")


def test_an_instrument_option_gives_some_or_all_keys():
    assert parse_instrument_option("NEXOUSDT:tick=0.001,lot=0.1,min_notional=5") == (
        InstrumentOption("NEXOUSDT", Decimal("0.001"), Decimal("0.1"), Decimal("5"))
    )
    lot_only = parse_instrument_option("nexousdt: lot = 0.1")
    assert lot_only == InstrumentOption("NEXOUSDT", lot=Decimal("0.1"))
    assert lot_only.given == ("lot",)
    assert parse_instrument_option("X1:min_notional=0").min_notional == 0


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("NEXOUSDT", "expected SYMBOL:tick=..,lot=..,min_notional=.."),
        ("NEXOUSDT:", "expected SYMBOL:tick=..,lot=..,min_notional=.."),
        (":tick=0.1", "'' is not a symbol like NEXOUSDT"),
        ("NEXO-USDT:tick=0.1", "'NEXO-USDT' is not a symbol like NEXOUSDT"),
        ("NEXOUSDT:size=0.1", "'size=0.1' is not one of tick, lot, min_notional=VALUE"),
        ("NEXOUSDT:tick", "'tick' is not one of tick, lot, min_notional=VALUE"),
        ("NEXOUSDT:tick=0.1,tick=0.01", "tick is given twice"),
        ("NEXOUSDT:tick=0", "tick must be a number > 0, got '0'"),
        ("NEXOUSDT:lot=-1", "lot must be a number > 0, got '-1'"),
        ("NEXOUSDT:lot=nan", "lot must be a number > 0, got 'nan'"),
        ("NEXOUSDT:tick=abc", "tick must be a number > 0, got 'abc'"),
        ("NEXOUSDT:min_notional=-5", "min_notional must be a number >= 0, got '-5'"),
    ],
)
def test_an_instrument_option_that_does_not_read_is_one_line_naming_it(text, problem):
    with pytest.raises(ValueError) as raised:
        parse_instrument_option(text)
    assert str(raised.value) == f"--instrument {text}: {problem}"
