"""Kev's command: schema, parsing and validation, staleness rules."""

from __future__ import annotations

from dataclasses import replace

import orjson
import pytest
from support.risk import BTC, ETH, make_bounds, make_config, make_limits

from engine.kev.command import (
    COMMAND_KEYS,
    KevCommand,
    KevCommandError,
    KevCommandSpec,
    stale_reason,
)
from engine.risk.commands import KevAction
from engine.risk.limits import SymbolLimits

SPEC = KevCommandSpec()


def command_text(**changes: object) -> str:
    document = {
        "act": "reduce",
        "risk": 80,
        "hedge": 85,
        "beta": 120,
        "skew": -15,
        "ttl": 3000,
        "why": "vpin",
    }
    document.update(changes)
    return orjson.dumps(
        {key: value for key, value in document.items() if value is not ...}
    ).decode()


def test_a_valid_command_is_parsed_into_fractions_and_bps():
    command = SPEC.parse(command_text(why="  flow one-sided, vol up  "))
    assert command == KevCommand(
        KevAction.REDUCE, 0.8, 0.85, -1.5, 3000, "flow one-sided, vol up", 1.2
    )


def test_the_schema_is_closed_and_requires_every_key():
    schema = SPEC.json_schema()
    assert schema["required"] == list(COMMAND_KEYS)
    assert schema["additionalProperties"] is False
    assert schema["properties"]["act"]["enum"] == ["hold", "reduce", "flatten", "pause_quoting"]
    assert schema["properties"]["skew"] == {"type": "integer", "minimum": -50, "maximum": 50}
    assert schema["properties"]["beta"] == {"type": "integer", "minimum": 0, "maximum": 1000}
    assert list(schema["properties"]) == list(COMMAND_KEYS)
    assert schema["properties"]["why"]["maxLength"] == 120


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"act": "resume"}, "act must be one of hold/reduce/flatten/pause_quoting"),
        ({"act": "REDUCE"}, "act must be one of"),
        ({"risk": 101}, "risk 101 is outside [0, 100]"),
        ({"risk": -1}, "risk -1 is outside"),
        ({"risk": 50.5}, "risk must be an integer"),
        ({"risk": "50"}, "risk must be an integer"),
        ({"risk": True}, "risk must be an integer"),
        ({"hedge": 150}, "hedge 150 is outside [0, 100]"),
        ({"beta": 1001}, "beta 1001 is outside [0, 1000]"),
        ({"beta": 1.25}, "beta must be an integer"),
        ({"beta": ...}, "missing beta"),
        ({"skew": 51}, "skew 51 is outside [-50, 50]"),
        ({"ttl": 100}, "ttl 100 is outside [250, 10000]"),
        ({"why": "x" * 121}, "why has 121 characters, at most 120"),
        ({"why": 7}, "why must be a string"),
        ({"ttl": ...}, "missing ttl"),
        ({"extra": 1}, "unexpected key extra"),
    ],
)
def test_schema_violations_name_what_is_wrong(changes, message):
    with pytest.raises(KevCommandError, match=message.replace("[", r"\[").replace("]", r"\]")):
        SPEC.parse(command_text(**changes))


def test_an_integral_float_is_an_integer():
    assert SPEC.parse(command_text(risk=50.0)).risk_scale == 0.5


def test_not_an_object_and_not_json_are_told_apart():
    with pytest.raises(KevCommandError, match="expected a JSON object, got list"):
        SPEC.parse("[1, 2]")
    with pytest.raises(orjson.JSONDecodeError):
        SPEC.parse('{"act": "hold", "risk"')


def test_a_narrowed_spec_refuses_actions_outside_it():
    spec = KevCommandSpec(actions=(KevAction.HOLD, KevAction.REDUCE))
    assert spec.json_schema()["properties"]["act"]["enum"] == ["hold", "reduce"]
    with pytest.raises(KevCommandError, match="act must be one of hold/reduce"):
        spec.parse(command_text(act="flatten"))


def test_the_hedge_band_follows_the_gateway_rounded_inwards():
    gateway = make_config(hedge_ratio=0.8, hedge_ratio_band=(0.555, 0.9))
    spec = KevCommandSpec(max_skew_tenths_bps=20).for_gateway(gateway)
    assert spec.hedge_pct == (56, 90)
    assert spec.max_skew_tenths_bps == 20


def test_the_beta_band_spans_every_quoted_symbols_range_rounded_outwards():
    """The quoted symbols' ranges are beta_band times their betas: BTCUSDT 1.234 gives
    [0.987, 1.481], SOLUSDT's default 1 [0.8, 1.2]; the whole percents shown for them (123,
    100) can be repeated, and the gateway clamps each symbol into its own range."""
    limits = make_limits()
    sol = SymbolLimits("SOLUSDT", max_position=50, max_notional=9_000, max_order_size=10)
    gateway = make_config(
        limits=replace(limits, symbols=(*limits.symbols, sol)),
        bounds=make_bounds(max_position={BTC: 2.0, ETH: 40.0, "SOLUSDT": 100}),
        betas={BTC: 1.234},
        beta_band=(0.8, 1.2),
    )
    spec = KevCommandSpec().for_gateway(gateway)
    assert spec.beta_pct == (80, 149)
    assert spec.parse(command_text(beta=149)).beta == 1.49
    with pytest.raises(KevCommandError, match=r"beta 150 is outside \[80, 149\]"):
        spec.parse(command_text(beta=150))


def test_without_a_hedge_the_beta_band_holds_only_the_configured_betas():
    gateway = make_config(hedge_symbol=None, betas={BTC: 1.234, ETH: 0.5}, beta_band=(0.5, 2.0))
    assert KevCommandSpec().for_gateway(gateway).beta_pct == (50, 124)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"actions": ()},
        {"actions": (KevAction.HOLD, KevAction.HOLD)},
        {"actions": ("hold",)},
        {"risk_pct": (50, 10)},
        {"risk_pct": (0, 101)},
        {"risk_pct": (0.0, 1.0)},
        {"beta_pct": (0, 1001)},
        {"beta_pct": (120, 80)},
        {"ttl_ms": (0, 10)},
        {"max_skew_tenths_bps": -1},
        {"reasoning_chars": 0},
    ],
)
def test_a_spec_out_of_its_bounds_is_refused(kwargs):
    with pytest.raises(ValueError, match="KevCommandSpec"):
        KevCommandSpec(**kwargs)


def test_fresh_when_young_and_the_mid_held():
    assert stale_reason(3000, 2999.0, 100.0, 100.04, 5.0) == ""


def test_stale_past_its_ttl():
    assert stale_reason(3000, 3001.0, 100.0, 100.0, 5.0) == (
        "context is 3001 ms old, past its ttl of 3000 ms"
    )


@pytest.mark.parametrize("mid_now", [100.06, 99.94])
def test_stale_when_the_mid_moved_either_way(mid_now):
    assert stale_reason(3000, 10.0, 100.0, mid_now, 5.0) == (
        "mid moved 6.0 bps since the context (limit 5)"
    )


@pytest.mark.parametrize("mid_now", [None, 0.0, float("nan"), float("inf")])
def test_stale_without_a_usable_current_mid(mid_now):
    assert stale_reason(3000, 10.0, 100.0, mid_now, 5.0) == (
        "no current mid to check the move against"
    )


def test_stale_when_the_context_mid_is_unusable():
    assert "unusable" in stale_reason(3000, 10.0, float("nan"), 100.0, 5.0)


@pytest.mark.parametrize(
    ("field", "value", "shown"),
    [
        ("act", b"[" * 1000 + b"]" * 1000, "a JSON array"),
        ("risk", b'{"a":' * 200 + b"1" + b"}" * 200, "a JSON object"),
        ("act", b'"' + b"x" * 10_000 + b'"', "…"),
    ],
    ids=["deep-act", "nested-risk", "huge-act"],
)
def test_hostile_values_are_shown_briefly_in_the_rejection(field, value, shown) -> None:
    """Found by tests/fuzz: repr of a 1000-deep value raised RecursionError, and a long value
    was copied whole into the message."""
    fields = {
        "act": b'"hold"',
        "risk": b"1",
        "hedge": b"50",
        "beta": b"100",
        "skew": b"0",
        "ttl": b"500",
    }
    fields[field] = value
    text = b"{" + b",".join(b'"%s":%s' % (k.encode(), v) for k, v in fields.items())
    with pytest.raises(KevCommandError) as caught:
        KevCommandSpec().parse(text + b',"why":""}')
    assert shown in str(caught.value)
    assert len(str(caught.value)) < 200
