"""`engine.settings.sources`: an engine config's error names the keys it is about and where each
was set."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from settings_files import NO_ENV, problems_of, write

from engine.settings.reader import load_settings
from engine.settings.sources import SettingsError


def test_a_range_error_carries_the_engine_message_and_the_key(tmp_path):
    path = write(tmp_path, "[trading.strategy]\nhalf_spread_bps = 5000\n")
    with pytest.raises(SettingsError) as excinfo:
        load_settings(path=path, environ=NO_ENV)
    (problem,) = problems_of(excinfo)
    assert problem == (
        f"[trading.strategy] half_spread_bps = 5000.0 ({path} line 2): "
        "QuotingStrategyConfig.half_spread_bps must be a finite number [0, 1000], got 5000.0"
    )


def test_an_error_about_two_keys_names_both_and_where_each_was_set(tmp_path):
    path = write(tmp_path, "[risk]\ndaily_loss_soft_usdt = 250\n")
    environ = {"HFT_CONSOLE_RISK__DAILY_LOSS_HARD_USDT": "200"}
    with pytest.raises(SettingsError) as excinfo:
        load_settings(path=path, environ=environ)
    (problem,) = problems_of(excinfo)
    assert f"[risk] daily_loss_soft_usdt = 250.0 ({path} line 2)" in problem
    assert (
        "[risk] daily_loss_hard_usdt = 200.0 (environment HFT_CONSOLE_RISK__DAILY_LOSS_HARD_USDT)"
    ) in problem
    assert problem.endswith(
        "RiskLimits.daily_loss_soft (250.0) must be below daily_loss_hard (200.0)"
    )


def test_an_error_names_the_engine_field_a_renamed_key_feeds():
    environ = {"HFT_CONSOLE_RISK__MAX_NET_DELTA_USDT": "5000"}
    with pytest.raises(SettingsError) as excinfo:
        load_settings(path=Path(os.devnull), environ=environ)
    (problem,) = problems_of(excinfo)
    assert problem == (
        "[risk] max_net_delta_usdt = 5000.0 (environment HFT_CONSOLE_RISK__MAX_NET_DELTA_USDT): "
        "RiskLimits.max_net_delta 5000.0 is above its override bound 3000.0"
    )
    raised = load_settings(
        path=Path(os.devnull),
        environ={**environ, "HFT_CONSOLE_RISK__BOUNDS__MAX_NET_DELTA_USDT": "6000"},
    )
    assert raised.risk_config().limits.max_net_delta == 5000.0


def test_settings_errors_are_value_errors():
    assert issubclass(SettingsError, ValueError)
