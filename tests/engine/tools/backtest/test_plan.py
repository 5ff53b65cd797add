"""What a backtest runs: --set values and grids, the recording's symbols, the specs."""

from __future__ import annotations

import pytest

from engine.feed.recording import recording_symbols
from engine.laya.decide import QuoteGate
from engine.settings.reader import load_settings
from engine.settings.sources import SettingsError
from engine.tools.backtest.plan import GridPoint, backtest_specs, grid, parse_set

SETTINGS = load_settings(environ={"HFT_CONSOLE_LAYA__PREFER_GPU": "false"})


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("trading.strategy.half_spread_bps=1,2,4", ("trading.strategy.half_spread_bps", (1, 2, 4))),
        (
            "risk.hedge_ratio_band=[0.6, 1.0],[0.5,0.9]",
            ("risk.hedge_ratio_band", ([0.6, 1.0], [0.5, 0.9])),
        ),
        ("laya.gate=none", ("laya.gate", ("none",))),
        ('laya.gate="imbalance"', ("laya.gate", ("imbalance",))),
        ("trading.strategy.post_only=false", ("trading.strategy.post_only", (False,))),
    ],
)
def test_set_values_are_toml_literals_and_commas_make_a_grid(text, parsed):
    assert parse_set(text) == parsed


@pytest.mark.parametrize("text", ["nothing", "=3", "a.b=", "a.b=1,,2"])
def test_a_set_that_is_not_key_value_says_so(text):
    with pytest.raises(ValueError, match="--set"):
        parse_set(text)


@pytest.mark.parametrize("text", ["a.b=1,1", "a.b=1,2,1.0", "a.b=x,y,x", "a.b=[1, 2],[1,2]"])
def test_a_grid_value_given_twice_is_refused(text):
    with pytest.raises(ValueError, match=r"^--set a\.b: .* is given twice$"):
        parse_set(text)


@pytest.mark.parametrize(
    ("key", "text"),
    [
        ("kev.actions", "hold"),
        ("engine.symbols", "[BTCUSDT, SOLUSDT, XRPUSDT]"),
        ("kev.url", "http://127.0.0.1:9"),
        ("laya.prefer_gpu", "no"),
    ],
)
def test_a_set_value_is_read_as_the_same_value_from_the_environment(key, text):
    section, name = key.split(".")
    from_environment = load_settings(environ={f"HFT_CONSOLE_{section}__{name}".upper(): text})
    (point,) = grid([parse_set(f"{key}={text}")])
    from_set = SETTINGS.with_overrides(dict(point.values))
    assert getattr(getattr(from_set, section), name) == getattr(
        getattr(from_environment, section), name
    )


def test_the_grid_is_every_combination_and_names_each_point():
    points = grid([("a.x", (1, 2)), ("b.y", (True,)), ("c.z", ("p", "q"))])
    assert len(points) == 4
    assert points[0] == GridPoint((("a.x", 1), ("b.y", True), ("c.z", "p")))
    assert points[-1].label == "a.x=2, b.y=true, c.z=q"
    assert grid([]) == [GridPoint()]
    with pytest.raises(ValueError, match="given twice"):
        grid([("a.x", (1,)), ("a.x", (2,))])


def test_the_recordings_symbols_busiest_first(simulated_session):
    assert recording_symbols(simulated_session) == ("BTCUSDT", "ETHUSDT")


def test_specs_refuse_a_symbol_the_recording_does_not_have(simulated_session):
    with pytest.raises(ValueError, match=r"has no SOLUSDT: it has BTCUSDT, ETHUSDT"):
        backtest_specs(SETTINGS, [simulated_session], ("SOLUSDT",), grid([]), [QuoteGate.LAYA])


@pytest.mark.parametrize(
    ("sets", "named"),
    [
        ([("trading.strategy.no_such_key", (1,))], "no_such_key"),
        ([("trading.strategy.half_spread_bps", (-3,))], "half_spread_bps"),
    ],
)
def test_specs_refuse_a_setting_that_does_not_exist_or_is_out_of_range(
    simulated_session, sets, named
):
    with pytest.raises(SettingsError, match=named):
        backtest_specs(
            SETTINGS,
            [simulated_session],
            None,
            grid(sets),
            [QuoteGate.LAYA],
            sources={key: f"--set {key}" for key, _ in sets},
        )


def test_one_spec_per_recording_point_and_gate(simulated_session):
    specs = backtest_specs(
        SETTINGS,
        [simulated_session],
        None,
        grid([("trading.strategy.half_spread_bps", (1, 2))]),
        [QuoteGate.LAYA, QuoteGate.NONE],
    )
    assert [spec.label for spec in specs] == [
        "laya trading.strategy.half_spread_bps=1",
        "none trading.strategy.half_spread_bps=1",
        "laya trading.strategy.half_spread_bps=2",
        "none trading.strategy.half_spread_bps=2",
    ]
    assert [spec.engine.quote_gate for spec in specs[:2]] == [QuoteGate.LAYA, QuoteGate.NONE]
    assert specs[2].engine.trading.strategies[0].half_spread_bps == 2
    assert all(
        spec.engine.kev_client is None and spec.engine.replay_speed is None for spec in specs
    )
