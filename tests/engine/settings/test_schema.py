"""`engine.settings.schema`: the engine configs built from the settings, each section checked by
its engine config, and flags on top."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
from settings_files import NO_ENV, problems_of, write

from engine.config import EngineConfig
from engine.gpu import GpuMonitorConfig, VramBudget
from engine.kev.command import KevCommandSpec
from engine.kev.config import KevClientConfig, KevHubConfig, LlamaServerConfig
from engine.kev.queue import KevQueueOverflow
from engine.laya.config import LayaClassifierConfig
from engine.market.instruments import Instrument
from engine.risk.limits import OverrideBounds, RiskGatewayConfig, RiskLimits
from engine.settings.keys import engine_values, fields_of
from engine.settings.reader import load_settings
from engine.settings.schema import (
    ExecutorSettings,
    KevSettings,
    MarketNeeded,
    PaperSettings,
    RiskBoundsSettings,
    RiskSettings,
    Settings,
    StrategySettings,
)
from engine.settings.sources import SettingsError
from engine.trading.config import (
    HedgeConfig,
    OrderExecutorConfig,
    PaperVenueConfig,
    QuotingStrategyConfig,
    TradingConfig,
    TradingMode,
    default_risk_config,
)


def test_defaults_build_exactly_the_engine_defaults():
    settings = Settings()
    assert settings.laya_config() == LayaClassifierConfig()
    assert settings.strategy_configs() == (QuotingStrategyConfig(),)
    assert settings.risk_config() == default_risk_config()
    # The one addition: the fee rates that apply, the paper venue's defaults, on each contract.
    charged = tuple(
        dataclasses.replace(instrument, maker_fee_rate=0.0002, taker_fee_rate=0.0006)
        for instrument in TradingConfig().instruments
    )
    assert settings.trading_config() == TradingConfig(instruments=charged)
    # The one deliberate difference: EngineConfig acts on the first book (tests, short
    # recordings); the product waits for Laya's feature windows.
    assert settings.laya.warmup_s == 30.0
    assert settings.engine_config() == EngineConfig(laya_warmup_s=30.0)
    trading = TradingConfig(instruments=charged)
    expected = EngineConfig(trading=trading, laya_warmup_s=30.0)
    assert settings.engine_config(trading=trading) == expected
    assert settings.kev_client_config() == KevClientConfig()
    assert settings.kev_hub_config() == KevHubConfig()
    assert settings.kev_command_spec() == KevCommandSpec()
    assert settings.llama_server_config("m.gguf") == LlamaServerConfig(model="m.gguf")
    assert settings.vram_budget() == VramBudget()
    assert settings.gpu_monitor_config() == GpuMonitorConfig()


@pytest.mark.parametrize(
    ("section", "configs", "built_apart"),
    [
        (StrategySettings, (QuotingStrategyConfig, HedgeConfig), ("quote_size_usdt",)),
        (ExecutorSettings, (OrderExecutorConfig,), ()),
        (PaperSettings, (PaperVenueConfig,), ()),
        (
            RiskSettings,
            (RiskLimits, RiskGatewayConfig),
            (
                "bounds",
                "symbols",
                "max_position_usdt",
                "max_notional_usdt",
                "max_order_usdt",
                "max_position_ceiling_usdt",
            ),
        ),
        (RiskBoundsSettings, (OverrideBounds,), ()),
        (
            KevSettings,
            (KevClientConfig, KevHubConfig, KevCommandSpec, LlamaServerConfig),
            ("model_path", "llama_server"),
        ),
    ],
)
def test_every_key_feeds_the_engine_field_it_names(section, configs, built_apart):
    # These sections hand their keys to the engine by field name (engine_values): a key named
    # neither like a field nor with setting(engine=...) would feed nothing.
    settings = section()
    fed = {name for config in configs for name in engine_values(settings, config)}
    named = {
        item.metadata["engine"] or name
        for name, (_, item) in fields_of(section).items()
        if name not in built_apart
    }
    assert fed == named


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


def test_an_unknown_key_in_the_overrides_is_named():
    with pytest.raises(SettingsError, match=r"laya\.model \(command line --model\): unknown key"):
        Settings().with_overrides({"laya.model": "x.onnx"}, {"laya.model": "--model"})
    with pytest.raises(KeyError, match="unknown key 'nope'"):
        Settings().source_of("risk.nope")


@pytest.mark.parametrize(
    ("environ", "engine_message"),
    [
        ({"HFT_CONSOLE_ENGINE__SYMBOLS": "btcusdt"}, "must be a symbol like BTCUSDT"),
        ({"HFT_CONSOLE_ENGINE__SYMBOLS": ""}, "a book quotes 1 to 16 symbols besides its hedge"),
        ({"HFT_CONSOLE_ENGINE__SIM_SEED": "-1"}, "sim_seed must be an integer >= 0"),
        ({"HFT_CONSOLE_LAYA__GPU_MEM_LIMIT_GIB": "0"}, "gpu_mem_limit_bytes must be an integer"),
        ({"HFT_CONSOLE_LAYA__THRESHOLDS": "0.5,0.5"}, "must give 4 probabilities"),
        ({"HFT_CONSOLE_TRADING__REST_TIMEOUT_S": "100"}, "rest_timeout_s must be"),
        ({"HFT_CONSOLE_TRADING__EXECUTOR__CLIENT_OID_PREFIX": "toolong"}, "client_oid_prefix"),
        ({"HFT_CONSOLE_TRADING__PAPER__LEVERAGE": "500"}, "leverage must be an integer within"),
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


def test_a_symbol_only_its_market_gives_is_left_to_the_start(tmp_path):
    path = write(
        tmp_path,
        '[engine]\nsymbols = ["SOLUSDT"]\nhedge = "ETHUSDT"\n\n[risk.symbols.SOLUSDT]\n'
        "max_position = 10\nmax_notional_usdt = 2000\nmax_order_size = 5\n"
        "max_position_ceiling = 20\n",
    )
    settings = load_settings(path=path, environ=NO_ENV)  # watching SOLUSDT is fine
    assert settings.engine_config().symbols == ("SOLUSDT", "ETHUSDT")
    # SOLUSDT's contract comes from its market (a recording, the venue) when a run starts.
    with pytest.raises(MarketNeeded, match=r"^SOLUSDT: its contract, .* checked then$"):
        settings.trading_config()
    priced = settings.contracts(
        listed={"SOLUSDT": Instrument("SOLUSDT", 0.001, 0.1)}, prices={"SOLUSDT": 150.0}
    )
    assert settings.trading_config(contracts=priced).instrument("SOLUSDT").size_step == 0.1


def test_a_single_symbol_trades_without_a_hedge():
    settings = Settings().with_overrides({"engine.symbols": ["BTCUSDT"], "engine.hedge": "none"})
    trading = settings.trading_config()
    assert trading.symbols == ("BTCUSDT",)
    assert trading.risk.hedge_symbol is None
    assert settings.engine_config(trading=trading).symbols == ("BTCUSDT",)  # its own leader


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
