"""`--space`: ranges and choices, refused in one line when empty, inverted or not a setting."""

from __future__ import annotations

import re

import pytest

from engine.settings.reader import load_settings
from engine.settings.sources import SettingsError
from engine.tools.optimize.space import INT, LINEAR, LOG, check_space, parse_space

SETTINGS = load_settings(environ={})
HALF_SPREAD = "trading.strategy.half_spread_bps"


@pytest.mark.parametrize(
    ("text", "low", "high", "scale"),
    [
        (f"{HALF_SPREAD}=0.5:8", 0.5, 8.0, LINEAR),
        (f"{HALF_SPREAD}=0.5:8:log", 0.5, 8.0, LOG),
        ("trading.strategy.emergency_cooldown_ms=100:2000:int", 100, 2000, INT),
    ],
)
def test_a_range(text, low, high, scale):
    dimension = parse_space(text)
    assert (dimension.low, dimension.high, dimension.scale) == (low, high, scale)
    assert dimension.text == text and not dimension.choices


def test_choices_read_as_set_reads_them():
    dimension = parse_space("laya.gate=laya,none,imbalance")
    assert dimension.key == "laya.gate"
    assert dimension.choices == ("laya", "none", "imbalance")
    assert parse_space("trading.strategy.post_only=true,false").choices == (True, False)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (f"{HALF_SPREAD}=3:3", "the range is empty (3 to 3)"),
        (f"{HALF_SPREAD}=8:0.5", "the range is inverted: 8 > 0.5"),
        (f"{HALF_SPREAD}=0:8:log", "a log range is above 0"),
        (f"{HALF_SPREAD}=1.5:8:int", "an int range's ends are whole numbers"),
        (f"{HALF_SPREAD}=1:8:cube", "the scale is log or int, not 'cube'"),
        (f"{HALF_SPREAD}=a:b", "a range's ends are numbers"),
        (f"{HALF_SPREAD}=2", "one value is not a search"),
        (HALF_SPREAD, "expected KEY=LO:HI[:log|:int] or KEY=a,b,c"),
    ],
)
def test_a_bad_space_is_refused_naming_it(text, said):
    with pytest.raises(ValueError, match="--space") as raised:
        parse_space(text)
    assert said in str(raised.value) and "\n" not in str(raised.value)


def test_a_key_that_is_not_a_setting_is_refused_as_set_refuses_it():
    with pytest.raises(
        SettingsError, match=re.escape("unknown key 'half_spread' in [trading.strategy]")
    ):
        check_space(SETTINGS, [parse_space("trading.strategy.half_spread=1:2")], {})


def test_a_range_past_what_the_setting_takes_is_refused():
    with pytest.raises(SettingsError, match=re.escape("--space trading.strategy.quote_size")):
        check_space(SETTINGS, [parse_space("trading.strategy.quote_size=-1:2")], {})


def test_a_key_searched_twice_or_also_fixed_is_refused():
    twice = [parse_space(f"{HALF_SPREAD}=1:2"), parse_space(f"{HALF_SPREAD}=3:4")]
    with pytest.raises(ValueError, match="given twice"):
        check_space(SETTINGS, twice, {})
    with pytest.raises(ValueError, match=re.escape("both searched (--space) and fixed (--set)")):
        check_space(SETTINGS, twice[:1], {HALF_SPREAD: 2.0})


def test_a_valid_space_passes():
    check_space(
        SETTINGS,
        [parse_space(f"{HALF_SPREAD}=0.5:8:log"), parse_space("laya.gate=laya,none")],
        {"trading.strategy.quote_size": 0.002},
    )
