"""`engine.settings.writer`: the written file holds every key with a comment above it, says
where each value came from, and reads back as the settings written."""

from __future__ import annotations

import re
import tomllib

import pytest
from settings_files import NO_ENV, write

from engine.settings.reader import load_settings
from engine.settings.schema import Settings
from engine.settings.writer import dump_settings


def every_section_changed() -> Settings:
    """Settings with a value away from its default in every section and sub-table, through
    every kind of value: numbers, flags, strings, paths, enums, lists, tables of strings, and a
    symbol table of its own."""
    return Settings().with_overrides(
        {
            "engine.symbols": ["ETHUSDT", "SOLUSDT"],
            "engine.hedge": "BTCUSDT",
            "engine.leader": "XRPUSDT",
            "engine.sim_seed": 11,
            "engine.status_interval_s": 0.25,
            "engine.instruments.NEXOUSDT.tick_size": 0.001,
            "engine.instruments.NEXOUSDT.size_step": 0.1,
            "engine.instruments.NEXOUSDT.min_notional_usdt": 5,
            "laya.model_path": '/models/la"ya\\x.onnx',
            "laya.prefer_gpu": False,
            "laya.gpu_mem_limit_gib": 1.5,
            "laya.thresholds": [0.5, 0.4, 0.4, 0.25],
            "trading.mode": "paper",
            "trading.journal_path": "/data/journal.sqlite",
            "trading.cancel_lane": False,
            "trading.strategy.quote_size": 0.05,
            "trading.strategy.post_only": False,
            "trading.symbols.SOLUSDT.half_spread_bps": 2.5,
            "trading.symbols.SOLUSDT.beta": 1.3,
            "trading.executor.kill_timeout_s": 4.0,
            "trading.executor.client_oid_prefix": "hx",
            "trading.paper.round_trip_ms": 1.0,
            "trading.fees.maker_fee_rate": -0.0001,
            "risk.max_order_usdt": 400.0,
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
            "research.ray_address": "10.0.0.5:6379",
        }
    )


@pytest.mark.parametrize("settings", [Settings(), every_section_changed()], ids=["default", "set"])
def test_every_section_round_trips_through_the_written_file(tmp_path, settings):
    path = write(tmp_path, dump_settings(settings))
    loaded = load_settings(path=path, environ=NO_ENV)
    assert loaded == settings
    for name in ("engine", "laya", "trading", "risk", "kev", "gpu", "console", "research"):
        assert getattr(loaded, name) == getattr(settings, name)


def test_the_changed_settings_differ_from_the_defaults_in_every_section():
    changed, default = every_section_changed(), Settings()
    for name in ("engine", "laya", "trading", "risk", "kev", "gpu", "console", "research"):
        assert getattr(changed, name) != getattr(default, name), name
    for name in ("strategy", "executor", "paper", "fees"):
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
    # The 115 keys (the 12 optional ones commented out) and the commented examples of the
    # keymap (one key) and of [trading.symbols] (three).
    assert keys == 119
    assert set(document) == {
        "engine",
        "laya",
        "trading",
        "risk",
        "kev",
        "gpu",
        "console",
        "research",
    }
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
