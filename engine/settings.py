"""The configuration a user edits: a TOML file, environment variables and command-line flags.

Precedence, lowest first: the built-in defaults (the engine configs' own defaults), the file
(`config.toml` in the per-user config directory, or `$HFT_CONSOLE_CONFIG`), environment variables
`HFT_CONSOLE_<SECTION>__<KEY>` (a sub-table adds a level, e.g.
`HFT_CONSOLE_RISK__SYMBOLS__BTCUSDT__MAX_POSITION`), then the command line's flags
(`Settings.with_overrides`).

`Settings` holds what a user may set, section by section, frozen. Each section checks its
values by building the engine's own frozen configs from them, so a rule lives in one place (the
engine config) and is never restated here; this module only checks types. A value that fails
is reported with its key and where it was set (file and line, environment variable, flag).
The `*_config()` methods build what the engine runs with.
"""

# ruff: noqa: RUF009  (every setting is a `dataclasses.field` made by `_key`/`_table`)

from __future__ import annotations

import collections.abc
import dataclasses
import difflib
import enum
import inspect
import math
import os
import re
import tomllib
import types
import typing
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NewType

import platformdirs

from engine.gpu import GIB, GpuMonitorConfig, VramBudget
from engine.kev.client import KevClientConfig
from engine.kev.command import KevCommandSpec
from engine.kev.hub import KevHubConfig
from engine.kev.queue import KevQueueOverflow
from engine.kev.server import LlamaServerConfig
from engine.laya.classifier import LayaClassifierConfig
from engine.laya.decide import QuoteGate
from engine.laya.model import DEFAULT_MODEL_PATH
from engine.market.instruments import BTCUSDT, ETHUSDT, Instrument, built_in_twin, instrument_for
from engine.node import EngineConfig
from engine.pipeline import MarketPipelineConfig
from engine.risk.commands import KevAction
from engine.risk.limits import OverrideBounds, RiskGatewayConfig, RiskLimits, SymbolLimits
from engine.sim.market import MarketGeneratorConfig
from engine.trading.config import (
    OrderExecutorConfig,
    PaperVenueConfig,
    QuotingStrategyConfig,
    TradingConfig,
    TradingMode,
    default_risk_config,
)

ENV_PREFIX = "HFT_CONSOLE_"
ENV_CONFIG_FILE = "HFT_CONSOLE_CONFIG"
"""Names the configuration file instead of the default one (which then must exist)."""
CONFIG_FILE_NAME = "config.toml"
SHUTDOWN_POLICIES = ("flatten", "keep")
"""The console's `ShutdownPolicy` values (the console checks they stay the same)."""

PathText = NewType("PathText", str)
"""A file path; `~` is expanded, and a relative path in the file is relative to the file."""

# The engine's defaults, read once: a default lives in the engine config, never here.
_ENGINE = EngineConfig()
_LAYA = LayaClassifierConfig()
_PIPELINE = MarketPipelineConfig()
_TRADING = TradingConfig()
_STRATEGY = _TRADING.strategy
_EXECUTOR = _TRADING.executor
_PAPER = _TRADING.paper
_RISK = default_risk_config()
_KEV_CLIENT = KevClientConfig()
_KEV_HUB = KevHubConfig()
_KEV_SPEC = KevCommandSpec()
_LLAMA_DEFAULTS = {item.name: item.default for item in dataclasses.fields(LlamaServerConfig)}
_GPU = GpuMonitorConfig()


def _gib(n_bytes: int) -> float:
    return round(n_bytes / GIB, 3)


def _bytes(gib: float, name: str) -> int:
    """GiB as bytes; a value no byte count can hold is refused naming its key (int() of an
    infinite float raises OverflowError, which is not a configuration error)."""
    n_bytes = gib * GIB
    if not math.isfinite(n_bytes):
        raise ValueError(f"{name} must be a finite number of GiB, got {gib!r}")
    return int(n_bytes)


def _key(
    default: Any = dataclasses.MISSING, doc: str = "", *, engine: str = "", example: Any = None
) -> Any:
    """A setting: its default (none: required), the one-line comment `config init` writes above
    it, the engine field it feeds when named differently (errors name that one), and for an
    optional setting an example value to show commented out."""
    metadata = {"doc": doc, "engine": engine, "example": example}
    if default is dataclasses.MISSING:
        return field(metadata=metadata)
    if isinstance(default, Mapping):
        return field(
            default_factory=lambda: types.MappingProxyType(dict(default)), metadata=metadata
        )
    return field(default=default, metadata=metadata)


def _whole_numbers_as_floats(settings: object) -> None:
    """A float key given a whole number (TOML's 1500, an engine default of 1500) holds 1500.0,
    so it is written back as a float."""
    for name, (annotation, _) in _fields(type(settings)).items():
        value = getattr(settings, name)
        if annotation is float and isinstance(value, int) and not isinstance(value, bool):
            object.__setattr__(settings, name, float(value))


def _table(factory: Callable[[], Any], doc: str = "") -> Any:
    return field(default_factory=factory, metadata={"doc": doc, "engine": "", "example": None})


# Sections


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """What the engine watches."""

    symbols: tuple[str, ...] = _key(
        _ENGINE.symbols,
        "market symbols: the traded one first, then its hedge (optional); at most 2",
    )
    sim_seed: int = _key(_ENGINE.sim_seed, "seed of the built-in simulated market")
    status_interval_s: float = _key(
        _ENGINE.status_interval_s, "seconds between the engine's status snapshots"
    )

    def __post_init__(self) -> None:
        _whole_numbers_as_floats(self)
        EngineConfig(
            symbols=self.symbols, sim_seed=self.sim_seed, status_interval_s=self.status_interval_s
        )
        MarketGeneratorConfig(seed=self.sim_seed)
        QuotingStrategyConfig(symbol=self.symbols[0], hedge_symbol=self.hedge_symbol)

    @property
    def hedge_symbol(self) -> str | None:
        return self.symbols[1] if len(self.symbols) > 1 else None


@dataclass(frozen=True, slots=True)
class LayaSettings:
    """Laya, the fast classifier (one ONNX Runtime session, CUDA first, then the CPU)."""

    model_path: PathText | None = _key(
        None, "Laya's ONNX model; unset: the shipped model", example="laya.onnx"
    )
    prefer_gpu: bool = _key(
        _LAYA.prefer_gpu, "run on CUDA where it really works (false: always the CPU)"
    )
    device_id: int = _key(_LAYA.device_id, "the CUDA device Laya runs on and the VRAM pane shows")
    gpu_mem_limit_gib: float = _key(
        _gib(_LAYA.gpu_mem_limit_bytes),
        "cap on Laya's CUDA arena, GiB (also Laya's share of the VRAM budget)",
        engine="gpu_mem_limit_bytes",
    )
    thresholds: tuple[float, ...] | None = _key(
        None,
        "class thresholds [HOLD, LEAN_BUY, LEAN_SELL, EMERGENCY]; unset: the model's own",
        example=[0.5, 0.45, 0.45, 0.3],
    )
    warmup_runs: int = _key(
        _LAYA.warmup_runs, "inferences at start, so the first frame is not slow"
    )
    warmup_s: float = _key(
        30.0,
        "market seconds per symbol (from its first book, and after a gap as long) in which "
        "Laya stands aside: no verdicts, no quotes, while its feature windows fill",
    )
    cpu_runner: str = _key(
        _LAYA.cpu_runner,
        'on the CPU: "native" (the MLP as one compiled kernel, checked against ONNX Runtime '
        'at start) or "onnxruntime"',
    )
    gate: str = _key(
        _PIPELINE.gate.value,
        'what pulls quotes: "laya" (its verdicts), "none" (quote on every frame) or '
        '"imbalance" (the top-5 book imbalance beyond imbalance_gate); backtests compare them',
    )
    imbalance_gate: float = _key(
        _PIPELINE.imbalance_gate,
        "with gate imbalance: |top-5 imbalance| (0..1) beyond which the side it points "
        "against is pulled",
    )

    def __post_init__(self) -> None:
        _whole_numbers_as_floats(self)
        self.classifier_config()
        if not 0 <= self.warmup_s <= 3_600:
            raise ValueError(f"warmup_s must be within [0, 3600] s, got {self.warmup_s}")
        MarketPipelineConfig(gate=QuoteGate(self.gate), imbalance_gate=self.imbalance_gate)

    def classifier_config(self) -> LayaClassifierConfig:
        return LayaClassifierConfig(
            model_path=Path(self.model_path) if self.model_path else DEFAULT_MODEL_PATH,
            prefer_gpu=self.prefer_gpu,
            device_id=self.device_id,
            gpu_mem_limit_bytes=_bytes(self.gpu_mem_limit_gib, "gpu_mem_limit_gib"),
            thresholds=self.thresholds,
            warmup_runs=self.warmup_runs,
            cpu_runner=self.cpu_runner,
        )


@dataclass(frozen=True, slots=True)
class StrategySettings:
    """The quoting strategy: passive quotes on the traded symbol, a delta hedge on the hedge."""

    quote_size: float = _key(
        _STRATEGY.quote_size, "size of each quote, base coin (times the risk scale, whole lots)"
    )
    half_spread_bps: float = _key(
        _STRATEGY.half_spread_bps, "bid and ask sit this far either side of the microprice, bps"
    )
    inventory_skew_bps: float = _key(
        _STRATEGY.inventory_skew_bps, "quote shift per unit of position / max position, bps"
    )
    requote_threshold_bps: float = _key(
        _STRATEGY.requote_threshold_bps, "a resting quote is replaced when its price is this off"
    )
    requote_size_fraction: float = _key(
        _STRATEGY.requote_size_fraction, "... or when its size is this fraction off (0..1)"
    )
    emergency_cooldown_ms: int = _key(
        _STRATEGY.emergency_cooldown_ms, "no quotes for this long after an EMERGENCY verdict, ms"
    )
    denial_backoff_ms: int = _key(
        _STRATEGY.denial_backoff_ms, "a side waits this long after the risk gateway denied it, ms"
    )
    post_only: bool = _key(_STRATEGY.post_only, "quotes are post-only (never take liquidity)")
    hedge_deadband_usdt: float = _key(
        _STRATEGY.hedge_deadband_usdt, "hedge when the beta-adjusted net delta leaves this, USDT"
    )
    hedge_slippage_bps: float = _key(
        _STRATEGY.hedge_slippage_bps, "hedge orders are IOC limits this far through the touch, bps"
    )

    def __post_init__(self) -> None:
        _whole_numbers_as_floats(self)
        self.config()

    def config(
        self,
        symbol: str = _STRATEGY.symbol,
        hedge_symbol: str | None = _STRATEGY.hedge_symbol,
    ) -> QuotingStrategyConfig:
        values = {item.name: getattr(self, item.name) for item in dataclasses.fields(self)}
        return QuotingStrategyConfig(symbol=symbol, hedge_symbol=hedge_symbol, **values)


@dataclass(frozen=True, slots=True)
class ExecutorSettings:
    """The order executor: pacing, the kill switch's and flatten's limits, reconciliation."""

    client_oid_prefix: str = _key(
        _EXECUTOR.client_oid_prefix, "clientOid prefix of our orders (1-4 of [0-9A-Za-z_#-])"
    )
    maintenance_interval_ms: int = _key(
        _EXECUTOR.maintenance_interval_ms, "period of the executor's housekeeping, ms"
    )
    hedge_interval_ms: int = _key(_EXECUTOR.hedge_interval_ms, "period of the hedge check, ms")
    kill_timeout_s: float = _key(
        _EXECUTOR.kill_timeout_s, "the kill switch retries cancel-all + close-all this long, s"
    )
    kill_retry_interval_ms: int = _key(
        _EXECUTOR.kill_retry_interval_ms, "pause between the kill switch's attempts, ms"
    )
    flatten_timeout_s: float = _key(
        _EXECUTOR.flatten_timeout_s, "flatten retries cancel-all + close-all this long, s"
    )
    position_settle_ms: int = _key(
        _EXECUTOR.position_settle_ms, "quiet time before a drifted position is synced, ms"
    )
    drift_check_interval_s: float = _key(
        _EXECUTOR.drift_check_interval_s, "period of the position and unknown-order check, s"
    )
    poll_interval_ms: int = _key(
        _EXECUTOR.poll_interval_ms, "venue poll period while the private stream is down, ms"
    )
    unknown_order_grace_ms: int = _key(
        _EXECUTOR.unknown_order_grace_ms, "an order of unknown outcome is looked up after, ms"
    )
    cancel_on_start: bool = _key(
        _EXECUTOR.cancel_on_start, "cancel the venue's open orders at start (a previous run's)"
    )
    cancel_on_stop: bool = _key(_EXECUTOR.cancel_on_stop, "cancel resting orders when stopping")
    journal_lookback_h: float = _key(
        _EXECUTOR.journal_lookback_h, "hours of journal read at start to reconcile orders"
    )

    def __post_init__(self) -> None:
        _whole_numbers_as_floats(self)
        self.config()

    def config(self) -> OrderExecutorConfig:
        values = {item.name: getattr(self, item.name) for item in dataclasses.fields(self)}
        return dataclasses.replace(_EXECUTOR, **values)


@dataclass(frozen=True, slots=True)
class PaperSettings:
    """Paper trading: real market data matched in-process."""

    round_trip_ms: float = _key(
        _PAPER.round_trip_ms,
        "network round trip to Bitget: a request meets the book this long after it leaves, ms",
    )
    reaction_us: float = _key(
        _PAPER.reaction_us, "our CPU from the frame to the request leaving, us"
    )
    feed_latency_ms: float | None = _key(
        None,
        "how long after the exchange has it the market reaches us, ms; unset: half the round trip",
        example=30.0,
    )
    latency_jitter: float = _key(
        _PAPER.latency_jitter, "lognormal sigma of each network leg (0: constant)"
    )
    latency_seed: int = _key(_PAPER.latency_seed, "seed of the jitter, so runs repeat")
    maker_fee_rate: float = _key(_PAPER.maker_fee_rate, "maker fee, a fraction of the notional")
    taker_fee_rate: float = _key(_PAPER.taker_fee_rate, "taker fee, a fraction of the notional")
    initial_balance_usdt: float = _key(
        _PAPER.initial_balance, "starting balance, USDT", engine="initial_balance"
    )
    leverage: int = _key(_PAPER.leverage, "leverage of the paper account (1..125)")

    def __post_init__(self) -> None:
        _whole_numbers_as_floats(self)
        self.config()

    def config(self) -> PaperVenueConfig:
        return PaperVenueConfig(
            round_trip_ms=self.round_trip_ms,
            reaction_us=self.reaction_us,
            feed_latency_ms=self.feed_latency_ms,
            latency_jitter=self.latency_jitter,
            latency_seed=self.latency_seed,
            maker_fee_rate=self.maker_fee_rate,
            taker_fee_rate=self.taker_fee_rate,
            initial_balance=self.initial_balance_usdt,
            leverage=self.leverage,
        )


@dataclass(frozen=True, slots=True)
class TradingSettings:
    """Where orders go and how the desk trades."""

    mode: TradingMode = _key(
        _TRADING.mode,
        "sim, paper, demo or live; live also needs run --live and the typed confirmation",
    )
    journal_path: PathText | None = _key(
        None,
        "the event journal (SQLite); unset: journal.sqlite in the per-user data directory",
        example="journal.sqlite",
    )
    rest_timeout_s: float = _key(
        _TRADING.rest_timeout_s, "a REST answer later than this leaves the outcome unknown, s"
    )
    cancel_lane: bool = _key(
        _TRADING.cancel_lane, "cancel-all through a pre-connected keep-alive connection"
    )
    strategy: StrategySettings = _table(StrategySettings)
    executor: ExecutorSettings = _table(ExecutorSettings)
    paper: PaperSettings = _table(PaperSettings)

    def __post_init__(self) -> None:
        _whole_numbers_as_floats(self)
        object.__setattr__(self, "mode", TradingMode(self.mode))
        # The live gate is the command line's (--live and the typed confirmation); this checks
        # every other value.
        self.config(self.strategy.config(), _RISK, live_confirmed=True)

    def config(
        self,
        strategy: QuotingStrategyConfig,
        risk: RiskGatewayConfig,
        *,
        instruments: tuple[Instrument, ...] = (BTCUSDT, ETHUSDT),
        rest_url: str | None = None,
        private_ws_url: str | None = None,
        live_confirmed: bool = False,
    ) -> TradingConfig:
        return TradingConfig(
            mode=self.mode,
            strategy=strategy,
            risk=risk,
            instruments=instruments,
            executor=self.executor.config(),
            paper=self.paper.config(),
            journal_path=Path(self.journal_path) if self.journal_path else None,
            rest_url=rest_url,
            private_ws_url=private_ws_url,
            cancel_lane=self.cancel_lane,
            rest_timeout_s=self.rest_timeout_s,
            live_confirmed=live_confirmed,
        )


@dataclass(frozen=True, slots=True)
class SymbolRiskSettings:
    """One symbol's caps. A symbol without built-in limits needs all four keys."""

    max_position: float = _key(doc="largest position either way, base coin")
    max_notional_usdt: float = _key(
        doc="largest position's notional at the mid, USDT", engine="max_notional"
    )
    max_order_size: float = _key(doc="largest single order, base coin")
    max_position_ceiling: float = _key(
        doc="the operator may raise max_position up to this at run time, base coin"
    )

    def __post_init__(self) -> None:
        _whole_numbers_as_floats(self)
        self.limits("SYMBOL")

    def limits(self, symbol: str) -> SymbolLimits:
        return SymbolLimits(symbol, self.max_position, self.max_notional_usdt, self.max_order_size)


def _default_symbol_risk() -> dict[str, SymbolRiskSettings]:
    ceilings = _RISK.bounds.max_position
    return {
        limits.symbol: SymbolRiskSettings(
            limits.max_position, limits.max_notional, limits.max_order_size, ceilings[limits.symbol]
        )
        for limits in _RISK.limits.symbols
    }


@dataclass(frozen=True, slots=True)
class RiskBoundsSettings:
    """Ceilings on what the operator may override at run time (the limits start below them)."""

    max_net_delta_usdt: float = _key(
        _RISK.bounds.max_net_delta, "highest max_net_delta_usdt, USDT", engine="max_net_delta"
    )
    max_slippage_bps: float = _key(_RISK.bounds.max_slippage_bps, "highest max_slippage_bps")
    max_orders_per_second: int = _key(
        _RISK.bounds.max_orders_per_second, "highest orders_per_second"
    )
    max_orders_per_minute: int = _key(
        _RISK.bounds.max_orders_per_minute, "highest orders_per_minute"
    )

    def __post_init__(self) -> None:
        _whole_numbers_as_floats(self)


@dataclass(frozen=True, slots=True)
class RiskSettings:
    """The risk gateway's limits: every order passes them before it reaches the exchange."""

    max_net_delta_usdt: float = _key(
        _RISK.limits.max_net_delta,
        "cap on the beta-adjusted net delta of all positions, USDT",
        engine="max_net_delta",
    )
    daily_loss_soft_usdt: float = _key(
        _RISK.limits.daily_loss_soft,
        "loss since the daily reset that switches to REDUCING, USDT",
        engine="daily_loss_soft",
    )
    daily_loss_hard_usdt: float = _key(
        _RISK.limits.daily_loss_hard,
        "loss that HALTS trading and closes everything, USDT",
        engine="daily_loss_hard",
    )
    max_slippage_bps: float = _key(
        _RISK.limits.max_slippage_bps, "how far an order may pay through mid and microprice, bps"
    )
    max_closing_slippage_bps: float = _key(
        _RISK.limits.max_closing_slippage_bps, "the wider band for orders that only shrink, bps"
    )
    orders_per_second: int = _key(
        _RISK.limits.orders_per_second, "risk-increasing orders a second (Bitget allows 10)"
    )
    orders_per_minute: int = _key(_RISK.limits.orders_per_minute, "risk-increasing orders a minute")
    max_open_orders: int = _key(_RISK.limits.max_open_orders, "resting orders at once")
    hedge_ratio: float = _key(
        _RISK.hedge_ratio, "starting hedge ratio: the hedge's beta to the traded book"
    )
    hedge_ratio_band: tuple[float, float] = _key(
        _RISK.hedge_ratio_band, "[low, high] the hedge ratio may move in, Kev included"
    )
    risk_scale: float = _key(
        _RISK.risk_scale, "starting multiplier (0..1) on the position, notional and delta caps"
    )
    max_mark_age_ms: int = _key(
        _RISK.max_mark_age_ms, "a mark older than this blocks risk-increasing orders, ms"
    )
    daily_reset_hour_utc: int = _key(
        _RISK.daily_reset_hour_utc, "hour (UTC) at which the daily loss restarts from zero"
    )
    bounds: RiskBoundsSettings = _table(RiskBoundsSettings)
    symbols: Mapping[str, SymbolRiskSettings] = _table(
        _default_symbol_risk, "per-symbol caps, one table per symbol"
    )

    def __post_init__(self) -> None:
        _whole_numbers_as_floats(self)
        object.__setattr__(self, "symbols", types.MappingProxyType(dict(self.symbols)))
        self.gateway_config(None)

    def gateway_config(
        self, hedge_symbol: str | None, traded: tuple[str, ...] = ()
    ) -> RiskGatewayConfig:
        """The gateway's config; a `traded` symbol without a table of its own takes the caps of
        the built-in one with its base coin (BTCUSD those of BTCUSDT), which hold in coin."""
        entries = dict(self.symbols)
        for symbol in traded:
            twin = built_in_twin(symbol)
            if symbol not in entries and twin in entries:
                entries[symbol] = entries[twin]
        bounds = self.bounds
        limits = RiskLimits(
            symbols=tuple(entry.limits(symbol) for symbol, entry in entries.items()),
            max_net_delta=self.max_net_delta_usdt,
            daily_loss_soft=self.daily_loss_soft_usdt,
            daily_loss_hard=self.daily_loss_hard_usdt,
            max_slippage_bps=self.max_slippage_bps,
            max_closing_slippage_bps=self.max_closing_slippage_bps,
            orders_per_second=self.orders_per_second,
            orders_per_minute=self.orders_per_minute,
            max_open_orders=self.max_open_orders,
        )
        override_bounds = OverrideBounds(
            max_position={symbol: entry.max_position_ceiling for symbol, entry in entries.items()},
            max_net_delta=bounds.max_net_delta_usdt,
            max_slippage_bps=bounds.max_slippage_bps,
            max_orders_per_second=bounds.max_orders_per_second,
            max_orders_per_minute=bounds.max_orders_per_minute,
        )
        return dataclasses.replace(
            _RISK,
            limits=limits,
            bounds=override_bounds,
            hedge_symbol=hedge_symbol,
            hedge_ratio=self.hedge_ratio,
            hedge_ratio_band=self.hedge_ratio_band,
            risk_scale=self.risk_scale,
            max_mark_age_ms=self.max_mark_age_ms,
            daily_reset_hour_utc=self.daily_reset_hour_utc,
        )


@dataclass(frozen=True, slots=True)
class KevSettings:
    """Kev, the slow hub: the local LLM behind llama-server, and what it may answer."""

    url: str = _key(
        _KEV_CLIENT.base_url,
        "Kev's llama-server; kev serve binds this host and port",
        engine="base_url",
    )
    model_path: PathText | None = _key(
        None,
        "GGUF model kev serve loads; unset: the tiny model, if fetched",
        example="qwen2.5-coder-7b-instruct-q4_k_m.gguf",
    )
    llama_server: PathText | None = _key(
        None, "llama-server binary; unset: the kev-local extra's, else PATH", example="llama-server"
    )
    context_size: int = _key(_LLAMA_DEFAULTS["context_size"], "llama-server context, tokens")
    gpu_layers: int = _key(
        _LLAMA_DEFAULTS["gpu_layers"], "layers offloaded to the GPU (99: all; 0: CPU only)"
    )
    threads: int | None = _key(
        _LLAMA_DEFAULTS["threads"], "llama-server CPU threads; unset: its own choice", example=4
    )
    niceness: int = _key(
        _LLAMA_DEFAULTS["niceness"], "llama-server's CPU priority, 0..19 (19: the engine first)"
    )
    ready_timeout_s: float = _key(
        _LLAMA_DEFAULTS["ready_timeout_s"], "kev serve waits this long for the model to load, s"
    )
    request_timeout_s: float = _key(
        _KEV_CLIENT.request_timeout_s, "a decision request's whole time limit, s"
    )
    connect_timeout_s: float = _key(_KEV_CLIENT.connect_timeout_s, "connect time limit, s")
    probe_timeout_s: float = _key(_KEV_CLIENT.probe_timeout_s, "/health probe time limit, s")
    max_tokens: int = _key(_KEV_CLIENT.max_tokens, "output tokens a decision may take")
    temperature: float = _key(_KEV_CLIENT.temperature, "sampling temperature (0: greedy)")
    queue_capacity: int = _key(_KEV_HUB.queue_capacity, "symbols that may wait for Kev at once")
    queue_overflow: KevQueueOverflow = _key(
        _KEV_HUB.overflow,
        "beyond the capacity: drop_oldest or drop_newest (an EMERGENCY is never displaced)",
        engine="overflow",
    )
    max_in_flight: int = _key(_KEV_HUB.max_in_flight, "concurrent requests (1: one GPU slot)")
    max_mid_move_bps: float = _key(
        _KEV_HUB.max_mid_move_bps, "an answer is stale once the mid moved this far, bps"
    )
    health_interval_s: float = _key(_KEV_HUB.health_interval_s, "period of the /health probe, s")
    latency_scale: float = _key(
        _KEV_HUB.latency_scale,
        "in a replay, an answer takes effect this many times its latency after its request "
        "(0.2: a server five times faster)",
    )
    ttl_ms: tuple[int, int] = _key(_KEV_SPEC.ttl_ms, "[shortest, longest] validity Kev may give")
    actions: tuple[KevAction, ...] = _key(
        _KEV_SPEC.actions, "actions Kev may ask for: hold, reduce, flatten, pause_quoting"
    )
    max_skew_tenths_bps: int = _key(
        _KEV_SPEC.max_skew_tenths_bps, "bound on Kev's quote skew, tenths of a bps"
    )

    def __post_init__(self) -> None:
        _whole_numbers_as_floats(self)
        self.client_config()
        self.hub_config()
        self.command_spec()
        self.server_config(str(self.model_path or ""))

    def client_config(self) -> KevClientConfig:
        return dataclasses.replace(
            _KEV_CLIENT,
            base_url=self.url,
            request_timeout_s=self.request_timeout_s,
            connect_timeout_s=self.connect_timeout_s,
            probe_timeout_s=self.probe_timeout_s,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
        )

    def hub_config(self) -> KevHubConfig:
        return dataclasses.replace(
            _KEV_HUB,
            queue_capacity=self.queue_capacity,
            overflow=self.queue_overflow,
            max_in_flight=self.max_in_flight,
            max_mid_move_bps=self.max_mid_move_bps,
            health_interval_s=self.health_interval_s,
            latency_scale=self.latency_scale,
        )

    def command_spec(self) -> KevCommandSpec:
        return dataclasses.replace(
            _KEV_SPEC,
            ttl_ms=self.ttl_ms,
            actions=self.actions,
            max_skew_tenths_bps=self.max_skew_tenths_bps,
        )

    def server_config(self, model: str) -> LlamaServerConfig:
        address = urllib.parse.urlsplit(self.url)
        try:
            port = address.port
        except ValueError as error:
            raise ValueError(f"url {self.url!r} has no valid port: {error}") from None
        return LlamaServerConfig(
            model=model,
            binary=self.llama_server,
            host=address.hostname or _LLAMA_DEFAULTS["host"],
            port=port or (443 if address.scheme == "https" else 80),
            context_size=self.context_size,
            gpu_layers=self.gpu_layers,
            threads=self.threads,
            niceness=self.niceness,
            ready_timeout_s=self.ready_timeout_s,
        )


@dataclass(frozen=True, slots=True)
class GpuSettings:
    """The VRAM budget and its monitor. Laya's share is [laya] gpu_mem_limit_gib."""

    kev_gib: float = _key(
        _gib(_GPU.budget.kev_bytes), "what Kev's llama-server may take, GiB", engine="kev_bytes"
    )
    free_floor_gib: float = _key(
        _gib(_GPU.budget.free_floor_bytes),
        "headroom kept free on the card; below it the VRAM pane warns, GiB",
        engine="free_floor_bytes",
    )
    interval_s: float = _key(_GPU.interval_s, "NVML sampling period (off the engine loop), s")

    def __post_init__(self) -> None:
        _whole_numbers_as_floats(self)
        self.monitor_config(0, 0)

    def budget(self, laya_bytes: int) -> VramBudget:
        return VramBudget(
            kev_bytes=_bytes(self.kev_gib, "kev_gib"),
            laya_bytes=laya_bytes,
            free_floor_bytes=_bytes(self.free_floor_gib, "free_floor_gib"),
        )

    def monitor_config(
        self, device_index: int, laya_bytes: int, kev_pid_file: str | None = None
    ) -> GpuMonitorConfig:
        return GpuMonitorConfig(
            device_index=device_index,
            interval_s=self.interval_s,
            kev_pid_file=kev_pid_file,
            budget=self.budget(laya_bytes),
        )


@dataclass(frozen=True, slots=True)
class ConsoleSettings:
    """The terminal console. The console checks these values (the engine does not know it)."""

    refresh_hz: float = _key(20.0, "snapshots drawn a second (1..60)")
    bandwidth: Literal["full", "low"] = _key(
        "full",
        'what the console draws: "full", or "low" for links under about 256 kbit/s (fewer '
        "redraws, the terminal's own 16 colours); run --low-bandwidth sets low",
    )
    shutdown_policy: Literal["flatten", "keep"] = _key(
        "flatten",
        "on SIGHUP (SSH dropped), SIGTERM or --duration: flatten (halt, cancel, close) or keep",
    )
    keymap: Mapping[str, str] = _key(
        {},
        'binding id -> keys (comma-separated), e.g. "console.kill" = "K"',
        example={"console.kill": "K"},
    )

    def __post_init__(self) -> None:
        _whole_numbers_as_floats(self)
        object.__setattr__(self, "keymap", types.MappingProxyType(dict(self.keymap)))


class SourceKind(enum.StrEnum):
    DEFAULT = "default"
    FILE = "file"
    ENV = "environment"
    FLAG = "command line"


@dataclass(frozen=True, slots=True)
class SettingSource:
    """Where a value came from: `where` is the file, the variable or the flag."""

    kind: SourceKind
    where: str = ""
    line: int | None = None

    def __str__(self) -> str:
        if self.kind is SourceKind.DEFAULT:
            return "default"
        if self.kind is SourceKind.FILE:
            return f"{self.where} line {self.line}" if self.line else self.where
        return f"{self.kind.value} {self.where}".rstrip()


DEFAULT_SOURCE = SettingSource(SourceKind.DEFAULT)


class SettingsError(ValueError):
    """Configuration that cannot be used; each problem names the key and where it was set."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        if len(self.problems) == 1:
            text = self.problems[0]
        else:
            text = f"{len(self.problems)} problems in the configuration:\n" + "\n".join(
                f"  - {problem}" for problem in self.problems
            )
        super().__init__(text)


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a user configures. `path` is the file read (None: none); `sources` says
    where each value that is not a default came from, by key path."""

    engine: EngineSettings = _table(EngineSettings)
    laya: LayaSettings = _table(LayaSettings)
    trading: TradingSettings = _table(TradingSettings)
    risk: RiskSettings = _table(RiskSettings)
    kev: KevSettings = _table(KevSettings)
    gpu: GpuSettings = _table(GpuSettings)
    console: ConsoleSettings = _table(ConsoleSettings)
    path: Path | None = field(default=None, compare=False)
    sources: Mapping[tuple[str, ...], SettingSource] = field(
        default_factory=dict, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "sources", types.MappingProxyType(dict(self.sources)))

    def source_of(self, key: str) -> SettingSource:
        """Where the value of `key` ("risk.max_net_delta_usdt") came from; KeyError for a key
        that does not exist."""
        try:
            path = _resolve(key)[0]
        except _BadValue as error:
            raise KeyError(str(error)) from None
        return self.sources.get(path, DEFAULT_SOURCE)

    def with_overrides(
        self, values: Mapping[str, object], sources: Mapping[str, str] | None = None
    ) -> Settings:
        """These settings with `values` (key path -> value, e.g. {"laya.prefer_gpu": False})
        on top, checked like the file's; None values are skipped (a flag not given).
        `sources` names where each came from (e.g. {"laya.prefer_gpu": "--cpu"})."""
        overrides: _Overrides = {}
        problems: list[str] = []
        for key, value in values.items():
            if value is None:
                continue
            origin = SettingSource(SourceKind.FLAG, (sources or {}).get(key, ""))
            try:
                path, annotation = _resolve(key)
                coerced = _coerce(annotation, value, None)
            except _BadValue as error:
                problems.append(f"{key} ({origin}): {error}")
                continue
            if isinstance(coerced, dict):  # a table of strings: each entry is a setting
                overrides.update(
                    {(*path, entry): (item, origin) for entry, item in coerced.items()}
                )
            else:
                overrides[path] = (coerced, origin)
        if problems:
            raise SettingsError(problems)
        # What was set before joins in, so that an error can name it too.
        combined = self._set_keys()
        combined.update(overrides)
        return _assemble_settings(self, combined, self.path)

    def invalid(self, error: Exception, *sections: str) -> SettingsError:
        """`error` (raised while building from these sections) as a `SettingsError` that
        names the keys it is about and where they were set."""
        return SettingsError(
            [_blame(error, [(section,) for section in sections], self._set_keys())]
        )

    def _set_keys(self) -> dict[tuple[str, ...], tuple[object, SettingSource]]:
        return {path: (_value_at(self, path), source) for path, source in self.sources.items()}

    # The engine's configs

    def laya_config(self) -> LayaClassifierConfig:
        return self.laya.classifier_config()

    def strategy_config(self) -> QuotingStrategyConfig:
        engine = self.engine
        return self._built(
            lambda: self.trading.strategy.config(engine.symbols[0], engine.hedge_symbol),
            "engine",
            "trading",
        )

    def risk_config(self) -> RiskGatewayConfig:
        engine = self.engine
        return self._built(
            lambda: self.risk.gateway_config(engine.hedge_symbol, engine.symbols), "engine", "risk"
        )

    def trading_config(
        self,
        *,
        rest_url: str | None = None,
        private_ws_url: str | None = None,
        live_confirmed: bool = False,
    ) -> TradingConfig:
        """The desk's config; `rest_url`/`private_ws_url` point at a simulator started apart,
        `live_confirmed` only after --live and the typed confirmation."""
        strategy, risk = self.strategy_config(), self.risk_config()
        return self._built(
            lambda: self.trading.config(
                strategy,
                risk,
                instruments=tuple(
                    spec
                    for limits in risk.limits.symbols
                    if (spec := instrument_for(limits.symbol)) is not None
                ),
                rest_url=rest_url,
                private_ws_url=private_ws_url,
                live_confirmed=live_confirmed,
            ),
            "engine",
            "risk",
            "trading",
        )

    def engine_config(
        self,
        *,
        replay_path: str | None = None,
        replay_speed: float | None = 1.0,
        live_url: str | None = None,
        trading: TradingConfig | None = None,
        status_interval_s: float | None = None,
    ) -> EngineConfig:
        """The node's config: the market from these arguments (a recording, a live feed, or
        the simulator), trading as given (None: watch only); `status_interval_s` replaces
        [engine] status_interval_s (a console that draws faster needs fresher status)."""
        engine = self.engine
        return self._built(
            lambda: EngineConfig(
                symbols=engine.symbols,
                replay_path=replay_path,
                replay_speed=replay_speed,
                live_url=live_url,
                sim_seed=engine.sim_seed,
                laya=self.laya_config(),
                laya_warmup_s=self.laya.warmup_s,
                quote_gate=QuoteGate(self.laya.gate),
                imbalance_gate=self.laya.imbalance_gate,
                trading=trading,
                status_interval_s=status_interval_s or engine.status_interval_s,
                kev_client=self.kev_client_config(),
                kev_hub=self.kev_hub_config(),
            ),
            "engine",
            "trading",
            "kev",
        )

    def kev_client_config(self) -> KevClientConfig:
        return self.kev.client_config()

    def kev_hub_config(self) -> KevHubConfig:
        return self.kev.hub_config()

    def kev_command_spec(self) -> KevCommandSpec:
        return self.kev.command_spec()

    def llama_server_config(self, default_model: str | Path | None = None) -> LlamaServerConfig:
        """`kev serve`'s config: [kev] model_path, else `default_model`."""
        model = self.kev.model_path or default_model
        if not model:
            raise SettingsError(
                [
                    "no Kev model: set [kev] model_path (the reference is "
                    "Qwen2.5-Coder-7B-Instruct Q4_K_M), or fetch the tiny one with "
                    "hft-console kev fetch-tiny-model"
                ]
            )
        return self._built(lambda: self.kev.server_config(str(model)), "kev")

    def vram_budget(self) -> VramBudget:
        return self.gpu.budget(_bytes(self.laya.gpu_mem_limit_gib, "gpu_mem_limit_gib"))

    def gpu_monitor_config(self, kev_pid_file: str | None = None) -> GpuMonitorConfig:
        """The VRAM monitor on Laya's device; `kev_pid_file` where llama-server runs here."""
        laya = self.laya
        laya_bytes = _bytes(laya.gpu_mem_limit_gib, "gpu_mem_limit_gib")
        return self.gpu.monitor_config(laya.device_id, laya_bytes, kev_pid_file)

    def configurations(self) -> list[tuple[str, Callable[[], object]]]:
        """Each engine config these settings build, by name (for `doctor`): building one
        raises `SettingsError` when the settings cannot make it."""
        return [
            ("engine", lambda: self.engine_config()),
            ("laya", self.laya_config),
            ("risk", self.risk_config),
            ("trading", lambda: self.trading_config(live_confirmed=True)),
            ("kev client", self.kev_client_config),
            ("kev hub", self.kev_hub_config),
            ("kev commands", self.kev_command_spec),
            ("gpu", self.gpu_monitor_config),
        ]

    def _built(self, build: Callable[[], _T], *sections: str) -> _T:
        try:
            return build()
        except (ValueError, TypeError) as error:
            if isinstance(error, SettingsError):
                raise
            raise self.invalid(error, *sections) from error


_T = typing.TypeVar("_T")

# The schema: annotations read once


class _BadValue(Exception):
    """A value of the wrong type or shape; the message says what was expected."""


_NONE_TYPE = type(None)


def _fields(cls: type) -> dict[str, tuple[Any, dataclasses.Field]]:
    """A settings class's keys: name -> (annotation, field)."""
    cached = _SCHEMA.get(cls)
    if cached is None:
        hints = typing.get_type_hints(cls)
        cached = {
            item.name: (hints[item.name], item)
            for item in dataclasses.fields(cls)
            if cls is not Settings or dataclasses.is_dataclass(hints[item.name])
        }
        _SCHEMA[cls] = cached
    return cached


_SCHEMA: dict[type, dict[str, tuple[Any, dataclasses.Field]]] = {}


def _optional(annotation: Any) -> Any | None:
    """T for `T | None`, else None."""
    if typing.get_origin(annotation) in (types.UnionType, typing.Union):
        arguments = [item for item in typing.get_args(annotation) if item is not _NONE_TYPE]
        if len(arguments) == 1 and len(typing.get_args(annotation)) == 2:
            return arguments[0]
    return None


def _mapping_of(annotation: Any) -> Any | None:
    """V for `Mapping[str, V]`, else None."""
    if typing.get_origin(annotation) is collections.abc.Mapping:
        return typing.get_args(annotation)[1]
    return None


def _describe(annotation: Any) -> str:
    inner = _optional(annotation)
    if inner is not None:
        return _describe(inner)
    if annotation is bool:
        return "true or false"
    if annotation is int:
        return "a whole number"
    if annotation is float:
        return "a number"
    if annotation in (str, PathText):
        return "a string"
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return "one of " + ", ".join(repr(member.value) for member in annotation)
    if typing.get_origin(annotation) is Literal:
        return "one of " + ", ".join(repr(value) for value in typing.get_args(annotation))
    if typing.get_origin(annotation) is tuple:
        arguments = typing.get_args(annotation)
        if len(arguments) == 2 and arguments[1] is Ellipsis:
            return f"a list of {_plural(arguments[0])}"
        return f"a list of {len(arguments)} {_plural(arguments[0])}"
    return "a table"


def _plural(annotation: Any) -> str:
    text = _describe(annotation)
    for single, plural in (
        ("a whole number", "whole numbers"),
        ("a number", "numbers"),
        ("a string", "strings"),
    ):
        if text == single:
            return plural
    return f"values ({text})"


_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


def _coerce(annotation: Any, value: object, base: Path | None, *, text: bool = False) -> Any:
    """`value` as the annotation's type. `text`: from an environment variable (a string to
    parse); else from TOML or Python. A relative path is taken relative to `base` when given,
    else to the working directory."""
    inner = _optional(annotation)
    if inner is not None:
        if text and value == "":
            return None
        return _coerce(inner, value, base, text=text)
    want = _describe(annotation)
    if annotation is bool:
        if text:
            lowered = str(value).strip().lower()
            if lowered in _TRUE or lowered in _FALSE:
                return lowered in _TRUE
        elif isinstance(value, bool):
            return value
        raise _BadValue(f"expects {want}, got {value!r}")
    if annotation is int:
        if text:
            try:
                return int(str(value).strip())
            except ValueError:
                raise _BadValue(f"expects {want}, got {value!r}") from None
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise _BadValue(f"expects {want}, got {value!r}")
    if annotation is float:
        if text:
            try:
                return float(str(value).strip())
            except ValueError:
                raise _BadValue(f"expects {want}, got {value!r}") from None
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise _BadValue(f"expects {want}, got {value!r}")
    if annotation is str:
        if isinstance(value, str):
            return value
        raise _BadValue(f"expects {want}, got {value!r}")
    if annotation is PathText:
        if isinstance(value, str | os.PathLike) and str(value):
            path = Path(value).expanduser()
            if not path.is_absolute():
                path = (base if base is not None else Path.cwd()) / path
            return PathText(str(path))
        raise _BadValue(f"expects a file path, got {value!r}")
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        if isinstance(value, annotation):
            return value
        for member in annotation:
            if isinstance(value, str) and value.strip().lower() == str(member.value):
                return member
        raise _BadValue(f"expects {want}, got {value!r}")
    if typing.get_origin(annotation) is Literal:
        if isinstance(value, str) and value.strip().lower() in typing.get_args(annotation):
            return value.strip().lower()
        raise _BadValue(f"expects {want}, got {value!r}")
    if typing.get_origin(annotation) is tuple:
        return _coerce_tuple(annotation, value, base, text=text)
    if _mapping_of(annotation) is str:
        return _coerce_str_map(value, text=text)
    raise _BadValue(f"is a table: set its keys one by one, got {value!r}")


def _coerce_tuple(annotation: Any, value: object, base: Path | None, *, text: bool) -> tuple:
    arguments = typing.get_args(annotation)
    items: Sequence[object]
    if text:
        body = str(value).strip().removeprefix("[").removesuffix("]")
        items = [item.strip().strip("\"'") for item in body.split(",")] if body.strip() else []
    elif isinstance(value, list | tuple):
        items = value
    else:
        raise _BadValue(f"expects {_describe(annotation)}, got {value!r}")
    if arguments[-1] is Ellipsis:
        element_types = [arguments[0]] * len(items)
    else:
        if len(items) != len(arguments):
            raise _BadValue(f"expects {_describe(annotation)}, got {value!r}")
        element_types = list(arguments)
    coerced = []
    for index, (element_type, item) in enumerate(zip(element_types, items, strict=True)):
        try:
            coerced.append(_coerce(element_type, item, base, text=text))
        except _BadValue as error:
            raise _BadValue(f"item {index + 1} {error}") from None
    return tuple(coerced)


def _coerce_str_map(value: object, *, text: bool) -> dict[str, str]:
    """A table of strings; from the environment `name=value;name=value`."""
    if text:
        entries: dict[str, str] = {}
        for part in str(value).split(";"):
            if not part.strip():
                continue
            name, equals, keys = part.partition("=")
            if not equals or not name.strip():
                raise _BadValue(f"expects name=value pairs separated by ';', got {value!r}")
            entries[name.strip()] = keys.strip()
        return entries
    if isinstance(value, Mapping) and all(isinstance(item, str) for item in value.values()):
        return dict(value)
    raise _BadValue(f"expects a table of strings, got {value!r}")


def _resolve(key: str) -> tuple[tuple[str, ...], Any]:
    """A dotted key ("risk.symbols.BTCUSDT.max_position") as a path and its annotation."""
    parts = key.split(".")
    cls: Any = Settings
    path: list[str] = []
    index = 0
    while index < len(parts):
        part = parts[index]
        known = _fields(cls)
        if part not in known:
            raise _BadValue(_unknown(part, known, tuple(path)))
        annotation = known[part][0]
        path.append(part)
        index += 1
        if dataclasses.is_dataclass(annotation):
            cls = annotation
            continue
        value_type = _mapping_of(annotation)
        if value_type is not None and index < len(parts):
            if value_type is str:  # a key of its own may hold dots: the rest is the key
                return (*path, ".".join(parts[index:])), str
            path.append(parts[index])
            index += 1
            cls = value_type
            continue
        if index < len(parts):
            raise _BadValue(f"{'.'.join(path)} is a value, not a table")
        return tuple(path), annotation
    raise _BadValue(f"{key} is a table: name one of its keys")


def _unknown(name: str, known: Mapping[str, object], table: tuple[str, ...]) -> str:
    where = f"in [{'.'.join(table)}]" if table else "at the top level"
    text = f"unknown key {name!r} {where}"
    close = difflib.get_close_matches(name, list(known), n=1)
    if close:
        text += f" (did you mean {close[0]!r}?)"
    return f"{text}; known: {', '.join(known)}"


# Reading the file and the environment

_Overrides = dict[tuple[str, ...], tuple[object, SettingSource]]

_BARE_KEY = r"[A-Za-z0-9_-]+"
_KEY_PART = rf"(?:\"(?:[^\"\\]|\\.)*\"|'[^']*'|{_BARE_KEY})"
_DOTTED = rf"{_KEY_PART}(?:\s*\.\s*{_KEY_PART})*"
_TABLE_LINE = re.compile(rf"^\s*\[\[?\s*({_DOTTED})\s*\]")
_KEY_LINE = re.compile(rf"^\s*({_DOTTED})\s*=")


def _split_dotted(text: str) -> tuple[str, ...]:
    parts = re.findall(_KEY_PART, text)
    return tuple(
        part[1:-1].replace('\\"', '"') if part[:1] in ("'", '"') else part for part in parts
    )


def _key_lines(text: str) -> dict[tuple[str, ...], int]:
    """The line each table and key is written on (for messages; a key this scan misses, in an
    inline table or after a multi-line value, is named without its line)."""
    lines: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] = ()
    for number, line in enumerate(text.splitlines(), start=1):
        header = _TABLE_LINE.match(line)
        if header:
            table = _split_dotted(header.group(1))
            lines.setdefault(table, number)
            continue
        key = _KEY_LINE.match(line)
        if key:
            lines.setdefault(table + _split_dotted(key.group(1)), number)
    return lines


class _FileReader:
    def __init__(self, path: Path, text: str, overrides: _Overrides, problems: list[str]):
        self.path = path
        self.base = path.absolute().parent
        self.lines = _key_lines(text)
        self.overrides = overrides
        self.problems = problems

    def source(self, key_path: tuple[str, ...]) -> SettingSource:
        for end in range(len(key_path), 0, -1):
            line = self.lines.get(key_path[:end])
            if line is not None:
                return SettingSource(SourceKind.FILE, str(self.path), line)
        return SettingSource(SourceKind.FILE, str(self.path))

    def problem(self, key_path: tuple[str, ...], text: str) -> None:
        self.problems.append(f"{self.source(key_path)}: {text}")

    def read(self, cls: Any, table: Mapping[str, object], path: tuple[str, ...]) -> None:
        known = _fields(cls)
        for name, value in table.items():
            here = (*path, name)
            if name not in known:
                self.problem(here, _unknown(name, known, path))
                continue
            annotation = known[name][0]
            value_type = _mapping_of(annotation)
            if dataclasses.is_dataclass(annotation) or (
                value_type is not None and dataclasses.is_dataclass(value_type)
            ):
                if not isinstance(value, dict):
                    self.problem(here, f"[{'.'.join(here)}] must be a table, got {value!r}")
                elif value_type is None:
                    self.read(annotation, value, here)
                else:
                    for entry, entry_table in value.items():
                        if isinstance(entry_table, dict):
                            self.read(value_type, entry_table, (*here, entry))
                        else:
                            self.problem(
                                (*here, entry),
                                f"[{'.'.join((*here, entry))}] must be a table, "
                                f"got {entry_table!r}",
                            )
                continue
            if value_type is str and isinstance(value, dict):
                for entry, item in value.items():
                    self.leaf((*here, entry), str, item)
                continue
            self.leaf(here, annotation, value)

    def leaf(self, key_path: tuple[str, ...], annotation: Any, value: object) -> None:
        try:
            coerced = _coerce(annotation, value, self.base)
        except _BadValue as error:
            self.problem(key_path, f"{_label(key_path)} {error}")
            return
        self.overrides[key_path] = (coerced, self.source(key_path))


def _read_environ(environ: Mapping[str, str], overrides: _Overrides, problems: list[str]) -> None:
    for name in sorted(environ):
        if not name.startswith(ENV_PREFIX) or name == ENV_CONFIG_FILE:
            continue
        origin = SettingSource(SourceKind.ENV, name)
        parts = name[len(ENV_PREFIX) :].split("__")
        if len(parts) < 2 or not all(parts):
            problems.append(
                f"{origin}: not a setting; write {ENV_PREFIX}<SECTION>__<KEY>, e.g. "
                f"{ENV_PREFIX}RISK__MAX_NET_DELTA_USDT (or {ENV_CONFIG_FILE} for the file)"
            )
            continue
        try:
            key_path, annotation = _env_path(parts)
            coerced = _coerce(annotation, environ[name], None, text=True)
        except _BadValue as error:
            problems.append(f"{origin}: {error}")
            continue
        if isinstance(coerced, dict):  # a table of strings: each entry is a setting
            for entry, value in coerced.items():
                overrides[(*key_path, entry)] = (value, origin)
        else:
            overrides[key_path] = (coerced, origin)


def _env_path(parts: Sequence[str]) -> tuple[tuple[str, ...], Any]:
    """The key path an environment variable's parts name: keys are matched lower-case, the
    entries of a table of tables (symbols) as written."""
    cls: Any = Settings
    path: list[str] = []
    index = 0
    while index < len(parts):
        name = parts[index].lower()
        known = _fields(cls)
        if name not in known:
            raise _BadValue(_unknown(name, known, tuple(path)))
        annotation = known[name][0]
        path.append(name)
        index += 1
        if dataclasses.is_dataclass(annotation):
            cls = annotation
        else:
            value_type = _mapping_of(annotation)
            if value_type is not None and dataclasses.is_dataclass(value_type):
                if index == len(parts):
                    path.append("<NAME>")
                    break
                path.append(parts[index])
                index += 1
                cls = value_type
            elif index < len(parts):
                raise _BadValue(f"[{'.'.join(path[:-1])}] {path[-1]} is a value, not a table")
            else:
                return tuple(path), annotation
    table = ".".join(part for part in path if part != "<NAME>")
    example = "__".join(part.upper() for part in path)
    raise _BadValue(f"[{table}] is a table: set its keys, e.g. {ENV_PREFIX}{example}__<KEY>")


# Building the settings from the layers


def _label(key_path: tuple[str, ...]) -> str:
    if len(key_path) == 1:
        return f"[{key_path[0]}]"
    return f"[{'.'.join(key_path[:-1])}] {key_path[-1]}"


def _assemble_settings(base: Settings, overrides: _Overrides, path: Path | None) -> Settings:
    problems: list[str] = []
    sources = dict(base.sources)
    sources.update({key_path: source for key_path, (_, source) in overrides.items()})
    values = {key_path: value for key_path, (value, _) in overrides.items()}
    sections: dict[str, object] = {}
    failed = False
    for name, (annotation, _) in _fields(Settings).items():
        built = _assemble(annotation, getattr(base, name), (name,), values, overrides, problems)
        if built is None:
            failed = True
        sections[name] = built
    if failed:
        raise SettingsError(problems)
    return Settings(**sections, path=path, sources=sources)


def _assemble(
    cls: Any,
    base: Any,
    prefix: tuple[str, ...],
    values: Mapping[tuple[str, ...], object],
    overrides: _Overrides,
    problems: list[str],
) -> Any:
    """`base` (None: a new table) with the values under `prefix`, validated by its class;
    None after recording why not."""
    if base is not None and not any(key[: len(prefix)] == prefix for key in values):
        return base
    arguments: dict[str, object] = {}
    missing: list[str] = []
    failed = False
    for name, (annotation, _) in _fields(cls).items():
        here = (*prefix, name)
        current = getattr(base, name) if base is not None else None
        value_type = _mapping_of(annotation)
        if dataclasses.is_dataclass(annotation):
            built = _assemble(annotation, current, here, values, overrides, problems)
            failed |= built is None
            arguments[name] = built
        elif value_type is not None and dataclasses.is_dataclass(value_type):
            entries = dict(current or {})
            names = dict.fromkeys(
                key[len(here)]
                for key in values
                if len(key) > len(here) and key[: len(here)] == here
            )
            for entry in names:
                built = _assemble(
                    value_type, entries.get(entry), (*here, entry), values, overrides, problems
                )
                failed |= built is None
                entries[entry] = built
            arguments[name] = entries
        elif value_type is not None:
            entries = dict(current or {})
            for key, value in values.items():
                if len(key) == len(here) + 1 and key[: len(here)] == here:
                    entries[key[-1]] = value
            arguments[name] = entries
        elif here in values:
            arguments[name] = values[here]
        elif base is not None:
            arguments[name] = current
        else:
            missing.append(name)
    if missing:
        where = next(
            source for key, (_, source) in overrides.items() if key[: len(prefix)] == prefix
        )
        problems.append(
            f"{where}: [{'.'.join(prefix)}] lacks {', '.join(missing)}: a table with no built-in "
            f"values needs all of {', '.join(_fields(cls))}"
        )
        return None
    if failed:
        return None
    try:
        return cls(**arguments)
    except (ValueError, TypeError) as error:
        keys = {key: (values[key], source) for key, (_, source) in overrides.items()}
        problems.append(_blame(error, [prefix], keys))
        return None


def _blame(
    error: Exception,
    prefixes: Sequence[tuple[str, ...]],
    keys: Mapping[tuple[str, ...], tuple[object, SettingSource]],
) -> str:
    """The engine's message with the keys it is about: those set under `prefixes` that it
    names (the key, the engine field it feeds, or an item of a list), else, in a single table
    where only a few keys are set, those."""
    message = str(error)
    under = {
        key: entry
        for key, entry in keys.items()
        if any(key[: len(prefix)] == prefix for prefix in prefixes)
    }
    blamed = {key: entry for key, entry in under.items() if _mentions(message, key, entry[0])}
    if not blamed and len(prefixes) == 1 and len(under) <= _FEW_KEYS:
        blamed = under
    if not blamed:
        if len(prefixes) == 1:
            return f"[{'.'.join(prefixes[0])}]: {message}"
        return message  # nothing the user set: the message is about the command line
    parts = [
        f"{_label(key)} = {_render_value(value)} ({source})"
        for key, (value, source) in blamed.items()
    ]
    return f"{'; '.join(parts)}: {message}"


_FEW_KEYS = 3


def _mentions(message: str, key_path: tuple[str, ...], value: object) -> bool:
    """Whether `message` names the key, the engine field it feeds, or an item of its list
    (a symbol, an action)."""
    names = {key_path[-1]}
    item = _field_at(key_path)
    if item is not None and item.metadata["engine"]:
        names.add(item.metadata["engine"])
    if isinstance(value, tuple):
        names.update(str(item) for item in value if isinstance(item, str) and item)
    return any(
        re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", message) for name in names
    )


def _field_at(key_path: tuple[str, ...]) -> dataclasses.Field | None:
    """The field that holds `key_path` (for an entry of a table of strings, the table's)."""
    cls: Any = Settings
    index = 0
    while index < len(key_path):
        entry = _fields(cls).get(key_path[index])
        if entry is None:
            return None
        annotation, item = entry
        index += 1
        value_type = _mapping_of(annotation)
        if index == len(key_path) or (value_type is not None and value_type is str):
            return item
        if dataclasses.is_dataclass(annotation):
            cls = annotation
        elif value_type is not None:
            cls = value_type
            index += 1  # the entry's own name
        else:
            return None
    return None


def _value_at(settings: Settings, key_path: tuple[str, ...]) -> object:
    value: Any = settings
    for part in key_path:
        value = value.get(part) if isinstance(value, Mapping) else getattr(value, part, None)
        if value is None:
            return None
    return value


def settings_path(environ: Mapping[str, str] = os.environ) -> Path:
    """The configuration file: `$HFT_CONSOLE_CONFIG`, else `config.toml` in the per-user
    config directory (`$XDG_CONFIG_HOME/hft-console` on Linux)."""
    named = environ.get(ENV_CONFIG_FILE)
    if named:
        return Path(named).expanduser()
    return platformdirs.user_config_path("hft-console") / CONFIG_FILE_NAME


def load_settings(*, path: Path | None = None, environ: Mapping[str, str] = os.environ) -> Settings:
    """Defaults <- the file (`path`, else `settings_path()`; the default file may be missing)
    <- `HFT_CONSOLE_<SECTION>__<KEY>` variables. Raises `SettingsError` naming every bad key."""
    explicit = path is not None or bool(environ.get(ENV_CONFIG_FILE))
    file = Path(path) if path is not None else settings_path(environ)
    overrides: _Overrides = {}
    problems: list[str] = []
    loaded: Path | None = None
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        if explicit:
            raise SettingsError([f"no configuration file at {file}"]) from None
        text = None
    except UnicodeDecodeError as error:
        raise SettingsError([f"{file} is not UTF-8 text ({error.reason})"]) from None
    except OSError as error:
        raise SettingsError([f"cannot read {file}: {error.strerror or error}"]) from None
    if text is not None:
        try:
            document = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise SettingsError([f"{file} is not valid TOML: {error}"]) from None
        except RecursionError:  # tomllib recurses once per level of nested arrays/tables
            raise SettingsError([f"{file} is not usable TOML: nested too deeply"]) from None
        loaded = file
        _FileReader(file, text, overrides, problems).read(Settings, document, ())
    _read_environ(environ, overrides, problems)
    if problems:
        raise SettingsError(problems)
    return _assemble_settings(Settings(), overrides, loaded)


# Writing it out


def _render_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return _render_value(value.value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _render_string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_render_value(item) for item in value) + "]"
    if isinstance(value, Mapping):
        return (
            "{"
            + ", ".join(f"{_render_key(k)} = {_render_value(v)}" for k, v in value.items())
            + "}"
        )
    raise TypeError(f"cannot write {value!r} as TOML")


_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


def _render_string(value: str) -> str:
    out = []
    for character in value:
        if character in _ESCAPES:
            out.append(_ESCAPES[character])
        elif ord(character) < 0x20 or ord(character) == 0x7F:
            out.append(f"\\u{ord(character):04x}")
        else:
            out.append(character)
    return '"' + "".join(out) + '"'


def _render_key(key: str) -> str:
    return key if re.fullmatch(_BARE_KEY, key) else _render_string(key)


def _doc_lines(cls: type) -> list[str]:
    return [f"# {line}".rstrip() for line in inspect.cleandoc(cls.__doc__ or "").splitlines()]


class _Writer:
    def __init__(self, settings: Settings, with_sources: bool) -> None:
        self.settings = settings
        self.with_sources = with_sources
        self.lines: list[str] = []

    def origin(self, key_path: tuple[str, ...], value: object) -> str:
        if not self.with_sources:
            return ""
        source = self.settings.sources.get(key_path, DEFAULT_SOURCE)
        if source.kind is not SourceKind.DEFAULT and value == _value_at(_DEFAULTS, key_path):
            return f"  # {source} (the default)"
        return f"  # {source}"

    def table(self, cls: Any, value: Any, path: tuple[str, ...], doc: str = "") -> None:
        self.lines += ["", f"[{'.'.join(_render_key(part) for part in path)}]"]
        self.lines += _doc_lines(cls) if not doc else [f"# {doc}"]
        later: list[Callable[[], None]] = []
        for name, (annotation, item) in _fields(cls).items():
            here = (*path, name)
            current = getattr(value, name)
            value_type = _mapping_of(annotation)
            if dataclasses.is_dataclass(annotation):
                later.append(lambda a=annotation, c=current, h=here: self.table(a, c, h))
            elif value_type is not None and dataclasses.is_dataclass(value_type):
                later.append(
                    lambda v=value_type, c=current, h=here, d=item.metadata["doc"]: self.entries(
                        v, c, h, d
                    )
                )
            elif value_type is not None:
                later.append(lambda c=current, h=here, i=item: self.string_map(c, h, i))
            else:
                self.leaf(here, current, item)
        for write in later:
            write()

    def leaf(self, key_path: tuple[str, ...], value: object, item: dataclasses.Field) -> None:
        self.lines.append(f"# {item.metadata['doc']}")
        name = _render_key(key_path[-1])
        if value is None:
            example = _render_value(item.metadata["example"])
            unset = f"  # unset ({self.settings.sources.get(key_path, DEFAULT_SOURCE)})"
            self.lines.append(f"# {name} = {example}{unset if self.with_sources else ''}")
        else:
            self.lines.append(f"{name} = {_render_value(value)}{self.origin(key_path, value)}")

    def entries(self, cls: Any, entries: Mapping[str, Any], path: tuple[str, ...], doc: str):
        self.lines += ["", f"# [{'.'.join(path)}.<NAME>]: {doc}"]
        for entry, value in entries.items():
            self.table(cls, value, (*path, entry))

    def string_map(self, entries: Mapping[str, str], path, item: dataclasses.Field) -> None:
        self.lines += ["", f"[{'.'.join(path)}]", f"# {item.metadata['doc']}"]
        if not entries:
            for key, example in item.metadata["example"].items():
                self.lines.append(f"# {_render_key(key)} = {_render_value(example)}")
        for key, value in entries.items():
            self.lines.append(
                f"{_render_key(key)} = {_render_value(value)}{self.origin((*path, key), value)}"
            )


_HEADER = f"""\
# hft-console configuration.
#
# Precedence, lowest first: the built-in defaults, this file, environment variables
# {ENV_PREFIX}<SECTION>__<KEY> (e.g. {ENV_PREFIX}RISK__MAX_NET_DELTA_USDT=1000; a sub-table adds
# a level: {ENV_PREFIX}RISK__SYMBOLS__BTCUSDT__MAX_POSITION=0.01), then command-line flags.
# Unknown keys are errors. Optional keys are shown commented out. A relative path is relative
# to this file. Sizes are base coin, prices and notionals USDT, bands basis points (bps)."""


_DEFAULTS = Settings()


def dump_settings(settings: Settings, *, with_sources: bool = False) -> str:
    """`settings` as a complete TOML file: every key, with a one-line comment above it.
    `with_sources` adds where each value came from (for `config show`)."""
    writer = _Writer(settings, with_sources)
    writer.lines.append(_HEADER)
    for name, (annotation, _) in _fields(Settings).items():
        writer.table(annotation, getattr(settings, name), (name,))
    return "\n".join(writer.lines) + "\n"
