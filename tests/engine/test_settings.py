"""`engine.settings`: defaults < file < environment < flags, errors that name the key and
where it was set, and the engine configs built from the settings."""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

import pytest

from engine.gpu import GpuMonitorConfig, VramBudget
from engine.kev.client import KevClientConfig
from engine.kev.command import KevCommandSpec
from engine.kev.hub import KevHubConfig
from engine.kev.queue import KevQueueOverflow
from engine.kev.server import LlamaServerConfig
from engine.laya.classifier import LayaClassifierConfig
from engine.node import EngineConfig
from engine.risk.commands import KevAction
from engine.settings import (
    ENV_CONFIG_FILE,
    Settings,
    SettingsError,
    SettingSource,
    SourceKind,
    dump_settings,
    load_settings,
    settings_path,
)
from engine.trading.config import (
    QuotingStrategyConfig,
    TradingConfig,
    TradingMode,
    default_risk_config,
)

NO_ENV: dict[str, str] = {}


def write(tmp_path: Path, text: str, name: str = "config.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def line_of(path: Path, needle: str) -> int:
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


def problems_of(excinfo: pytest.ExceptionInfo[SettingsError]) -> tuple[str, ...]:
    return excinfo.value.problems


# Defaults


def test_defaults_build_exactly_the_engine_defaults():
    settings = Settings()
    assert settings.laya_config() == LayaClassifierConfig()
    assert settings.strategy_config() == QuotingStrategyConfig()
    assert settings.risk_config() == default_risk_config()
    assert settings.trading_config() == TradingConfig()
    # The one deliberate difference: EngineConfig acts on the first book (tests, short
    # recordings); the product waits for Laya's feature windows.
    assert settings.laya.warmup_s == 30.0
    assert settings.engine_config() == EngineConfig(laya_warmup_s=30.0)
    trading = TradingConfig()
    expected = EngineConfig(trading=trading, laya_warmup_s=30.0)
    assert settings.engine_config(trading=trading) == expected
    assert settings.kev_client_config() == KevClientConfig()
    assert settings.kev_hub_config() == KevHubConfig()
    assert settings.kev_command_spec() == KevCommandSpec()
    assert settings.llama_server_config("m.gguf") == LlamaServerConfig(model="m.gguf")
    assert settings.vram_budget() == VramBudget()
    assert settings.gpu_monitor_config() == GpuMonitorConfig()


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


# Precedence


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


def test_flags_override_the_environment(tmp_path):
    path = write(tmp_path, "[engine]\nsim_seed = 3\n")
    settings = load_settings(path=path, environ={"HFT_CONSOLE_ENGINE__SIM_SEED": "4"})
    flagged = settings.with_overrides(
        {"engine.sim_seed": 5, "laya.prefer_gpu": False, "trading.journal_path": None},
        {"engine.sim_seed": "--seed", "laya.prefer_gpu": "--cpu"},
    )
    assert flagged.engine.sim_seed == 5
    assert flagged.laya_config().prefer_gpu is False
    assert flagged.trading.journal_path is None  # None: the flag was not given
    assert str(flagged.source_of("engine.sim_seed")) == "command line --seed"
    assert flagged.path == path
    assert settings.engine.sim_seed == 4  # the original is unchanged


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
        "HFT_CONSOLE_ENGINE__SYMBOLS": "BTCUSDT, ETHUSDT",
        "HFT_CONSOLE_KEV__ACTIONS": "hold,reduce",
        "HFT_CONSOLE_KEV__TTL_MS": "[500, 5000]",
        "HFT_CONSOLE_CONSOLE__KEYMAP": "console.kill=K; console.flatten=F,shift+f",
        "HFT_CONSOLE_LAYA__PREFER_GPU": "off",
    }
    settings = load_settings(path=write(tmp_path, ""), environ=environ)
    assert settings.engine.symbols == ("BTCUSDT", "ETHUSDT")
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


# Unknown keys


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


def test_an_unknown_key_in_the_overrides_is_named():
    with pytest.raises(SettingsError, match=r"laya\.model \(command line --model\): unknown key"):
        Settings().with_overrides({"laya.model": "x.onnx"}, {"laya.model": "--model"})
    with pytest.raises(KeyError, match="unknown key 'nope'"):
        Settings().source_of("risk.nope")


# Types and ranges


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


def test_bad_types_in_the_environment_name_the_variable():
    environ = {"HFT_CONSOLE_RISK__ORDERS_PER_SECOND": "8.5", "HFT_CONSOLE_GPU__KEV_GIB": "lots"}
    with pytest.raises(SettingsError) as excinfo:
        load_settings(path=Path(os.devnull), environ=environ)
    assert problems_of(excinfo) == (
        "environment HFT_CONSOLE_GPU__KEV_GIB: expects a number, got 'lots'",
        "environment HFT_CONSOLE_RISK__ORDERS_PER_SECOND: expects a whole number, got '8.5'",
    )


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


@pytest.mark.parametrize(
    ("environ", "engine_message"),
    [
        ({"HFT_CONSOLE_ENGINE__SYMBOLS": "btcusdt"}, "must be a symbol like BTCUSDT"),
        ({"HFT_CONSOLE_ENGINE__SYMBOLS": ""}, "must name at least one symbol"),
        ({"HFT_CONSOLE_ENGINE__SIM_SEED": "-1"}, "seed must be >= 0"),
        ({"HFT_CONSOLE_LAYA__GPU_MEM_LIMIT_GIB": "0"}, "gpu_mem_limit_bytes must be >= 1"),
        ({"HFT_CONSOLE_LAYA__THRESHOLDS": "0.5,0.5"}, "must give 4 probabilities"),
        ({"HFT_CONSOLE_TRADING__REST_TIMEOUT_S": "100"}, "rest_timeout_s must be"),
        ({"HFT_CONSOLE_TRADING__EXECUTOR__CLIENT_OID_PREFIX": "toolong"}, "client_oid_prefix"),
        ({"HFT_CONSOLE_TRADING__PAPER__LEVERAGE": "500"}, "leverage must be within 1..125"),
        ({"HFT_CONSOLE_RISK__ORDERS_PER_SECOND": "11"}, "orders_per_second"),
        ({"HFT_CONSOLE_RISK__HEDGE_RATIO": "1.5"}, "outside hedge_ratio_band"),
        ({"HFT_CONSOLE_KEV__URL": "localhost:8001"}, "base_url must be http(s)"),
        ({"HFT_CONSOLE_KEV__TTL_MS": "900,100"}, "ttl_ms"),
        ({"HFT_CONSOLE_KEV__QUEUE_CAPACITY": "0"}, "queue_capacity must be an integer >= 1"),
        ({"HFT_CONSOLE_KEV__NICENESS": "20"}, "niceness must be within [0, 19]"),
        ({"HFT_CONSOLE_KEV__URL": "http://127.0.0.1:99999"}, "port"),
        ({"HFT_CONSOLE_GPU__INTERVAL_S": "0.1"}, "interval_s must be >= 0.5"),
        ({"HFT_CONSOLE_GPU__KEV_GIB": "-1"}, "kev_bytes must be an integer >= 0"),
    ],
)
def test_each_section_is_checked_by_its_engine_config(environ, engine_message):
    (name,) = environ
    with pytest.raises(SettingsError) as excinfo:
        load_settings(path=Path(os.devnull), environ=environ)
    (problem,) = problems_of(excinfo)
    assert f"(environment {name})" in problem
    assert engine_message in problem


def test_a_new_symbol_needs_every_key(tmp_path):
    path = write(tmp_path, "[risk.symbols.SOLUSDT]\nmax_position = 10\n")
    with pytest.raises(SettingsError) as excinfo:
        load_settings(path=path, environ=NO_ENV)
    (problem,) = problems_of(excinfo)
    assert problem.startswith(
        f"{path} line 2: [risk.symbols.SOLUSDT] lacks max_notional_usdt, max_order_size, "
        "max_position_ceiling"
    )


def test_settings_that_cannot_trade_say_so_when_trading_is_built(tmp_path):
    path = write(
        tmp_path,
        '[engine]\nsymbols = ["SOLUSDT", "ETHUSDT"]\n\n[risk.symbols.SOLUSDT]\n'
        "max_position = 10\nmax_notional_usdt = 2000\nmax_order_size = 5\n"
        "max_position_ceiling = 20\n",
    )
    settings = load_settings(path=path, environ=NO_ENV)  # watching SOLUSDT is fine
    assert settings.engine_config().symbols == ("SOLUSDT", "ETHUSDT")
    with pytest.raises(SettingsError) as excinfo:
        settings.trading_config()
    (problem,) = problems_of(excinfo)
    assert f'[engine] symbols = ["SOLUSDT", "ETHUSDT"] ({path} line 2)' in problem
    assert "no instrument spec (tick, lot) for ['SOLUSDT']" in problem


def test_a_single_symbol_trades_without_a_hedge():
    settings = Settings().with_overrides({"engine.symbols": ["BTCUSDT"]})
    trading = settings.trading_config()
    assert trading.symbols == ("BTCUSDT",)
    assert trading.risk.hedge_symbol is None


def test_live_mode_loads_but_trades_only_once_confirmed():
    settings = load_settings(path=Path(os.devnull), environ={"HFT_CONSOLE_TRADING__MODE": "live"})
    assert settings.trading.mode is TradingMode.LIVE
    with pytest.raises(SettingsError, match="live trading needs --live"):
        settings.trading_config()
    assert settings.trading_config(live_confirmed=True).mode is TradingMode.LIVE


def test_kev_serve_binds_the_url_and_needs_a_model():
    settings = Settings().with_overrides(
        {"kev.url": "http://0.0.0.0:9931", "kev.threads": 6, "kev.queue_overflow": "drop_newest"}
    )
    server = settings.llama_server_config("fallback.gguf")
    assert (server.host, server.port, server.threads, server.model) == (
        "0.0.0.0",
        9931,
        6,
        "fallback.gguf",
    )
    assert settings.kev_hub_config().overflow is KevQueueOverflow.DROP_NEWEST
    with pytest.raises(SettingsError, match="no Kev model: set \\[kev\\] model_path"):
        settings.llama_server_config()
    with_model = settings.with_overrides({"kev.model_path": "/m/qwen.gguf"})
    assert with_model.llama_server_config("fallback.gguf").model == "/m/qwen.gguf"


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


# Writing


def every_section_changed() -> Settings:
    """Settings with a value away from its default in every section and sub-table, through
    every kind of value: numbers, flags, strings, paths, enums, lists, tables of strings, and a
    symbol table of its own."""
    return Settings().with_overrides(
        {
            "engine.symbols": ["ETHUSDT", "BTCUSDT"],
            "engine.sim_seed": 11,
            "engine.status_interval_s": 0.25,
            "laya.model_path": '/models/la"ya\\x.onnx',
            "laya.prefer_gpu": False,
            "laya.gpu_mem_limit_gib": 1.5,
            "laya.thresholds": [0.5, 0.4, 0.4, 0.25],
            "trading.mode": "paper",
            "trading.journal_path": "/data/journal.sqlite",
            "trading.cancel_lane": False,
            "trading.strategy.quote_size": 0.05,
            "trading.strategy.post_only": False,
            "trading.executor.kill_timeout_s": 4.0,
            "trading.executor.client_oid_prefix": "hx",
            "trading.paper.round_trip_ms": 1.0,
            "risk.max_net_delta_usdt": 1200.0,
            "risk.hedge_ratio_band": [0.6, 1.0],
            "risk.bounds.max_slippage_bps": 15.0,
            "risk.symbols.BTCUSDT.max_position": 0.01,
            "risk.symbols.SOLUSDT.max_position": 10,
            "risk.symbols.SOLUSDT.max_notional_usdt": 1500,
            "risk.symbols.SOLUSDT.max_order_size": 2,
            "risk.symbols.SOLUSDT.max_position_ceiling": 20,
            "kev.url": "http://10.0.0.2:8001",
            "kev.threads": 4,
            "kev.niceness": 10,
            "kev.queue_overflow": "drop_newest",
            "kev.ttl_ms": [500, 4000],
            "kev.actions": ["hold", "reduce"],
            "gpu.kev_gib": 5.25,
            "gpu.interval_s": 2.0,
            "console.refresh_hz": 30.0,
            "console.shutdown_policy": "keep",
            "console.keymap": {"console.kill": "K", "console.quit": "q,ctrl+c"},
        }
    )


@pytest.mark.parametrize("settings", [Settings(), every_section_changed()], ids=["default", "set"])
def test_every_section_round_trips_through_the_written_file(tmp_path, settings):
    path = write(tmp_path, dump_settings(settings))
    loaded = load_settings(path=path, environ=NO_ENV)
    assert loaded == settings
    for name in ("engine", "laya", "trading", "risk", "kev", "gpu", "console"):
        assert getattr(loaded, name) == getattr(settings, name)


def test_the_changed_settings_differ_from_the_defaults_in_every_section():
    changed, default = every_section_changed(), Settings()
    for name in ("engine", "laya", "trading", "risk", "kev", "gpu", "console"):
        assert getattr(changed, name) != getattr(default, name), name
    for name in ("strategy", "executor", "paper"):
        assert getattr(changed.trading, name) != getattr(default.trading, name), name
    assert changed.risk.bounds != default.risk.bounds


def test_the_written_file_has_every_key_with_a_comment_above_it():
    text = dump_settings(Settings())
    document = tomllib.loads(text)
    lines = text.splitlines()
    keys = 0
    for index, line in enumerate(lines):
        if re.match(r'^(# )?("[^"]+"|[a-z_]+) = ', line) and not line.startswith("# e.g"):
            keys += 1
            assert lines[index - 1].startswith("# "), f"no comment above {line!r}"
    # The 102 keys (the 7 optional ones commented out) and the keymap's commented example.
    assert keys == 103
    assert set(document) == {"engine", "laya", "trading", "risk", "kev", "gpu", "console"}
    assert set(document["trading"]) >= {"strategy", "executor", "paper"}
    assert set(document["risk"]["symbols"]) == {"BTCUSDT", "ETHUSDT"}
    assert "# model_path = " in text and "# thresholds = [" in text


def test_show_writes_where_each_value_came_from(tmp_path):
    path = write(tmp_path, "[engine]\nsim_seed = 3\n")
    settings = load_settings(path=path, environ={"HFT_CONSOLE_GPU__KEV_GIB": "5.0"})
    text = dump_settings(settings, with_sources=True)
    assert f"sim_seed = 3  # {path} line 2" in text
    assert "kev_gib = 5.0  # environment HFT_CONSOLE_GPU__KEV_GIB" in text
    assert "status_interval_s = 0.1  # default" in text
    assert '# model_path = "laya.onnx"  # unset (default)' in text
    assert tomllib.loads(text)["engine"]["sim_seed"] == 3


def test_settings_errors_are_value_errors():
    assert issubclass(SettingsError, ValueError)


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
