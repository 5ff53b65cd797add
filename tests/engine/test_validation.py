"""The shared config checks: ranges, the wording of a refusal, and bools refused as numbers."""

from __future__ import annotations

import math

import pytest

from engine.validation import (
    finite_number,
    require_count,
    require_integer,
    require_number,
    require_positive,
)


def test_require_integer_takes_its_range_and_names_it_when_refused():
    require_integer("Config", "depth", 0, 0)
    require_integer("Config", "depth", 10, 1, 10)
    with pytest.raises(ValueError, match=r"^Config\.depth must be an integer >= 0, got -1$"):
        require_integer("Config", "depth", -1, 0)
    with pytest.raises(ValueError, match=r"must be an integer within \[1, 10\], got 11$"):
        require_integer("Config", "depth", 11, 1, 10)


@pytest.mark.parametrize("value", [True, 2.0, "2", None])
def test_require_count_refuses_what_is_not_an_integer(value):
    with pytest.raises(ValueError, match=r"^Config\.window must be an integer >= 1, got "):
        require_count("Config", "window", value)


def test_require_number_bounds_and_wording():
    require_number("Config", "bps", 0, low=0.0, high=1.0)
    with pytest.raises(ValueError, match=r"^Config\.bps must be a finite number \[0, 1\], got 2$"):
        require_number("Config", "bps", 2, low=0.0, high=1.0)
    with pytest.raises(ValueError, match=r"must be a finite number >= 0, got inf$"):
        require_number("Config", "bps", math.inf, low=0.0)


@pytest.mark.parametrize("value", [0, -1.0, math.nan, math.inf, True])
def test_require_positive_refuses_zero_negative_non_finite_and_bool(value):
    with pytest.raises(ValueError, match=r"^Config\.timeout_s must be a positive finite number"):
        require_positive("Config", "timeout_s", value)


def test_finite_number_is_a_real_finite_number_not_a_bool():
    assert finite_number(1) and finite_number(-2.5)
    assert not any(finite_number(value) for value in (True, math.nan, -math.inf, "1", None))
