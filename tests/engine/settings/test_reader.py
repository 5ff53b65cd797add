"""`engine.settings.reader`: defaults < file < environment, and every bad key named with its
line or variable."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from settings_files import NO_ENV, line_of, problems_of, write

from engine.laya.config import LayaClassifierConfig
from engine.risk.commands import KevAction
from engine.settings.reader import ENV_CONFIG_FILE, load_settings, settings_path
from engine.settings.schema import Settings
from engine.settings.sources import SettingsError, SettingSource, SourceKind
from engine.trading.config import (
    default_risk_config,
)


def test_a_missing_default_file_means_the_defaults(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert settings_path(NO_ENV) == tmp_path / "xdg" / "hft-console" / "config.toml"
    settings = load_settings(environ=NO_ENV)
    assert settings == Settings()
    assert settings.path is None
    assert settings.source_of("risk.max_net_delta_usdt") == SettingSource(SourceKind.DEFAULT)


def test_the_default_file_is_read_from_the_config_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    (tmp_path / "hft-console").mkdir()
    path = write(tmp_path / "hft-console", "[engine]\nsim_seed = 11\n")
    settings = load_settings(environ=NO_ENV)
    assert settings.engine.sim_seed == 11
    assert settings.path == path


def test_a_named_file_that_does_not_exist_is_an_error(tmp_path):
    missing = tmp_path / "nope.toml"
    with pytest.raises(SettingsError, match=r"no configuration file at .*nope\.toml"):
        load_settings(path=missing, environ=NO_ENV)
    with pytest.raises(SettingsError, match=r"no configuration file at .*nope\.toml"):
        load_settings(environ={ENV_CONFIG_FILE: str(missing)})


def test_hft_console_config_names_the_file(tmp_path):
    path = write(tmp_path, "[engine]\nsim_seed = 5\n", "elsewhere.toml")
    settings = load_settings(environ={ENV_CONFIG_FILE: str(path)})
    assert settings.engine.sim_seed == 5
    assert settings.path == path


def test_file_overrides_defaults_and_environment_overrides_the_file(tmp_path):
    path = write(
        tmp_path,
        "[risk]\nmax_net_delta_usdt = 1000\ndaily_loss_soft_usdt = 100\n\n"
        "[trading.strategy]\nhalf_spread_bps = 0.8\n",
    )
    environ = {
        "HFT_CONSOLE_RISK__MAX_NET_DELTA_USDT": "2000",
        "HFT_CONSOLE_TRADING__PAPER__ROUND_TRIP_MS": "12.5",
        "UNRELATED": "x",
    }
    settings = load_settings(path=path, environ=environ)
    assert settings.risk.max_net_delta_usdt == 2000.0  # env over file
    assert settings.risk.daily_loss_soft_usdt == 100.0  # file over default
    assert settings.trading.strategy.half_spread_bps == 0.8
    assert settings.trading.paper.round_trip_ms == 12.5  # env over default
    assert settings.risk.daily_loss_hard_usdt == default_risk_config().limits.daily_loss_hard
    assert settings.source_of("risk.max_net_delta_usdt") == SettingSource(
        SourceKind.ENV, "HFT_CONSOLE_RISK__MAX_NET_DELTA_USDT"
    )
    assert settings.source_of("risk.daily_loss_soft_usdt") == SettingSource(
        SourceKind.FILE, str(path), line_of(path, "daily_loss_soft_usdt")
    )
    assert settings.source_of("trading.strategy.half_spread_bps").line == line_of(
        path, "half_spread_bps"
    )
    assert settings.source_of("risk.daily_loss_hard_usdt").kind is SourceKind.DEFAULT
    limits = settings.risk_config().limits
    assert (limits.max_net_delta, limits.daily_loss_soft) == (2000.0, 100.0)
    assert settings.trading_config().paper.round_trip_ms == 12.5


def test_environment_keys_are_case_insensitive_and_symbols_kept_as_written(tmp_path):
    environ = {
        "HFT_CONSOLE_risk__symbols__BTCUSDT__max_position": "0.03",
        "HFT_CONSOLE_RISK__SYMBOLS__ETHUSDT__MAX_POSITION_CEILING": "2",
    }
    settings = load_settings(path=write(tmp_path, ""), environ=environ)
    assert settings.risk.symbols["BTCUSDT"].max_position == 0.03
    assert settings.risk_config().bounds.max_position["ETHUSDT"] == 2.0


def test_an_empty_environment_value_unsets_an_optional_key(tmp_path):
    path = write(tmp_path, '[laya]\nmodel_path = "/models/laya.onnx"\n')
    assert load_settings(path=path, environ=NO_ENV).laya.model_path == "/models/laya.onnx"
    settings = load_settings(path=path, environ={"HFT_CONSOLE_LAYA__MODEL_PATH": ""})
    assert settings.laya.model_path is None
    assert settings.laya_config() == LayaClassifierConfig()


def test_environment_lists_and_tables_of_strings(tmp_path):
    environ = {
        "HFT_CONSOLE_ENGINE__SYMBOLS": "BTCUSDT, SOLUSDT, XRPUSDT",
        "HFT_CONSOLE_KEV__ACTIONS": "hold,reduce",
        "HFT_CONSOLE_KEV__TTL_MS": "[500, 5000]",
        "HFT_CONSOLE_CONSOLE__KEYMAP": "console.kill=K; console.flatten=F,shift+f",
        "HFT_CONSOLE_LAYA__PREFER_GPU": "off",
    }
    settings = load_settings(path=write(tmp_path, ""), environ=environ)
    assert settings.engine.symbols == ("BTCUSDT", "SOLUSDT", "XRPUSDT")
    assert settings.kev_command_spec().actions == (KevAction.HOLD, KevAction.REDUCE)
    assert settings.kev_command_spec().ttl_ms == (500, 5000)
    assert dict(settings.console.keymap) == {"console.kill": "K", "console.flatten": "F,shift+f"}
    assert settings.laya.prefer_gpu is False


def test_relative_paths_in_the_file_are_relative_to_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = write(
        tmp_path,
        '[laya]\nmodel_path = "models/laya.onnx"\n[trading]\njournal_path = "~/j.sqlite"\n',
    )
    settings = load_settings(path=path, environ=NO_ENV)
    assert settings.laya.model_path == str(tmp_path / "models" / "laya.onnx")
    assert settings.trading_config().journal_path == tmp_path / "home" / "j.sqlite"


def test_the_models_a_file_maps_are_relative_to_the_file(tmp_path, monkeypatch):
    """[laya.models] and shadow_model, like model_path: a settings file names models beside
    it, whatever folder the console starts in."""
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "desk"
    folder.mkdir()
    path = write(
        folder,
        '[laya]\nshadow_model = "shadow.onnx"\n'
        '[laya.models]\nNEXOUSDT = "models/nexo.onnx"\n"DOGE*" = "/abs/doge.onnx"\n',
    )
    settings = load_settings(path=path, environ=NO_ENV)
    assert dict(settings.laya.models) == {
        "NEXOUSDT": str(folder / "models" / "nexo.onnx"),
        "DOGE*": "/abs/doge.onnx",
    }
    assert settings.laya.shadow_model == str(folder / "shadow.onnx")
    from_environment = load_settings(
        path=path, environ={"HFT_CONSOLE_LAYA__MODELS": "XRPUSDT=xrp.onnx"}
    )
    assert dict(from_environment.laya.models)["XRPUSDT"] == str(tmp_path / "xrp.onnx")


def test_an_unknown_key_in_the_file_is_named_with_its_line(tmp_path):
    path = write(tmp_path, "[trading.strategy]\nquote_size = 0.001\nhalf_spred_bps = 1.0\n")
    with pytest.raises(SettingsError) as excinfo:
        load_settings(path=path, environ=NO_ENV)
    (problem,) = problems_of(excinfo)
    assert problem.startswith(f"{path} line 3: unknown key 'half_spred_bps' in [trading.strategy]")
    assert "did you mean 'half_spread_bps'?" in problem


def test_unknown_sections_and_top_level_values_are_named(tmp_path):
    path = write(tmp_path, "verbose = true\n\n[risks]\nmax_net_delta_usdt = 1\n")
    with pytest.raises(SettingsError) as excinfo:
        load_settings(path=path, environ=NO_ENV)
    problems = problems_of(excinfo)
    assert f"{path} line 1: unknown key 'verbose' at the top level" in problems[0]
    assert (
        f"{path} line 3: unknown key 'risks' at the top level (did you mean 'risk'?)"
        in (problems[1])
    )


def test_an_unknown_environment_variable_is_named():
    environ = {
        "HFT_CONSOLE_RISK__MAX_NET_DELTA": "5000",
        "HFT_CONSOLE_RISK_MAX_NET_DELTA_USDT": "5000",
        "HFT_CONSOLE_RISK__SYMBOLS": "BTCUSDT",
        "HFT_CONSOLE_ENGINE__SIM_SEED__X": "1",
    }
    with pytest.raises(SettingsError) as excinfo:
        load_settings(path=Path(os.devnull), environ=environ)
    problems = problems_of(excinfo)
    assert len(problems) == 4
    text = "\n".join(problems)
    assert (
        "environment HFT_CONSOLE_RISK__MAX_NET_DELTA: unknown key 'max_net_delta' in [risk] "
        "(did you mean 'max_net_delta_usdt'?)"
    ) in text
    assert "environment HFT_CONSOLE_RISK_MAX_NET_DELTA_USDT: not a setting; write " in text
    assert "HFT_CONSOLE_RISK__SYMBOLS__<NAME>__<KEY>" in text
    assert "HFT_CONSOLE_ENGINE__SIM_SEED__X: [engine] sim_seed is a value, not a table" in text


def test_bad_types_in_the_file_are_all_reported_with_their_lines(tmp_path):
    path = write(
        tmp_path,
        "[engine]\n"
        'sim_seed = "seven"\n'
        "status_interval_s = true\n"
        "[laya]\n"
        "warmup_runs = 2.5\n"
        'thresholds = [0.5, "high", 0.4, 0.3]\n'
        "[risk]\n"
        "hedge_ratio_band = [0.5]\n"
        "[trading]\n"
        'mode = "real"\n'
        "strategy = 3\n",
    )
    with pytest.raises(SettingsError) as excinfo:
        load_settings(path=path, environ=NO_ENV)
    problems = problems_of(excinfo)
    assert problems == (
        f"{path} line 2: [engine] sim_seed expects a whole number, got 'seven'",
        f"{path} line 3: [engine] status_interval_s expects a number, got True",
        f"{path} line 5: [laya] warmup_runs expects a whole number, got 2.5",
        f"{path} line 6: [laya] thresholds item 2 expects a number, got 'high'",
        f"{path} line 8: [risk] hedge_ratio_band expects a list of 2 numbers, got [0.5]",
        f"{path} line 10: [trading] mode expects one of 'sim', 'paper', 'demo', 'live', got 'real'",
        f"{path} line 11: [trading.strategy] must be a table, got 3",
    )
    assert str(excinfo.value).startswith("7 problems in the configuration:\n  - ")


def test_an_environment_table_that_names_no_entry_is_refused_not_ignored():
    for empty in ("", " ", ";"):
        with pytest.raises(SettingsError) as excinfo:
            load_settings(path=Path(os.devnull), environ={"HFT_CONSOLE_LAYA__MODELS": empty})
        assert problems_of(excinfo) == (
            "environment HFT_CONSOLE_LAYA__MODELS: expects name=value pairs separated by ';', "
            f"got {empty!r}",
        )


def test_bad_types_in_the_environment_name_the_variable():
    environ = {"HFT_CONSOLE_RISK__ORDERS_PER_SECOND": "8.5", "HFT_CONSOLE_GPU__KEV_GIB": "lots"}
    with pytest.raises(SettingsError) as excinfo:
        load_settings(path=Path(os.devnull), environ=environ)
    assert problems_of(excinfo) == (
        "environment HFT_CONSOLE_GPU__KEV_GIB: expects a number, got 'lots'",
        "environment HFT_CONSOLE_RISK__ORDERS_PER_SECOND: expects a whole number, got '8.5'",
    )


def test_invalid_toml_and_unreadable_files_are_errors_with_the_path(tmp_path):
    path = write(tmp_path, "[engine]\nsim_seed = = 3\n")
    with pytest.raises(SettingsError, match=rf"{re.escape(str(path))} is not valid TOML: .*line 2"):
        load_settings(path=path, environ=NO_ENV)
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe[engine]")
    with pytest.raises(SettingsError, match="is not UTF-8 text"):
        load_settings(path=binary, environ=NO_ENV)
    with pytest.raises(SettingsError, match="cannot read"):
        load_settings(path=tmp_path, environ=NO_ENV)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[laya]\ngpu_mem_limit_gib = inf\n", "gpu_mem_limit_gib"),
        ("[gpu]\nkev_gib = 1e300\n", "kev_gib"),
        ("[gpu]\nfree_floor_gib = -inf\n", "free_floor_gib"),
        ("a = " + "[" * 2000 + "]" * 2000 + "\n", "nested too deeply"),
    ],
    ids=["infinite-laya-gib", "overflowing-kev-gib", "infinite-floor", "deep-array"],
)
def test_values_found_by_fuzzing_are_settings_errors_naming_the_key(
    tmp_path, text: str, message: str
) -> None:
    """Found by tests/fuzz: int() of an infinite GiB count raised OverflowError, and tomllib
    recursed past the interpreter's limit, both escaping as untyped exceptions."""
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(SettingsError, match=message):
        load_settings(path=path, environ={})
