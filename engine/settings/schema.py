"""What a user may set, section by section, frozen, and the engine configs built from it.

Each section checks its values by building the engine's own frozen configs from them, so a rule
lives in one place (the engine config) and is never restated here; the keys only check types.
A value that fails is reported with its key and where it was set (file and line, environment
variable, flag). The `*_config()` methods build what the engine runs with.
"""

# ruff: noqa: RUF009  (every setting is a `dataclasses.field` made by `setting`/`section`)

from __future__ import annotations

import dataclasses
import math
import types
import typing
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from engine.bitget.connections import check_connections
from engine.config import EngineConfig, MarketPipelineConfig
from engine.gpu import GIB, GpuMonitorConfig, VramBudget
from engine.kev.command import KevCommandSpec
from engine.kev.config import KevClientConfig, KevHubConfig, LlamaServerConfig
from engine.kev.queue import KevQueueOverflow
from engine.laya.config import (
    DEFAULT_MODEL_PATH,
    LayaClassifierConfig,
    require_model_keys,
    require_shadow_model,
)
from engine.laya.decide import QuoteGate
from engine.market.book_symbols import MAX_QUOTED_SYMBOLS, check_book_symbols
from engine.market.contracts import (
    ContractMissing,
    ContractOrigin,
    FeeRates,
    MarketContract,
    MarketContracts,
    resolve_contracts,
)
from engine.market.instruments import BTCUSDT, ETHUSDT, Instrument, built_in_twin, instrument_for
from engine.risk.commands import KevAction
from engine.risk.limits import OverrideBounds, RiskGatewayConfig, RiskLimits, SymbolLimits
from engine.settings.keys import (
    BadValue,
    PathText,
    coerce,
    engine_values,
    fields_of,
    render_value,
    resolve,
    section,
    setting,
    value_at,
    whole_numbers_as_floats,
)
from engine.settings.layers import Overrides, assemble_settings
from engine.settings.sources import (
    DEFAULT_SOURCE,
    SettingsError,
    SettingSource,
    SourceKind,
    blame,
)
from engine.trading.config import (
    HedgeConfig,
    OrderExecutorConfig,
    PaperVenueConfig,
    QuotingStrategyConfig,
    TradingConfig,
    TradingMode,
    default_risk_config,
)
from engine.validation import require_number, require_positive, require_symbol

NO_SYMBOL = "none"
"""What [engine] hedge and leader say (and run --hedge, --leader) for no symbol."""
SHUTDOWN_POLICIES = ("flatten", "keep")
"""The console's `ShutdownPolicy` values (the console checks they stay the same)."""


# The engine's defaults, read once: a default lives in the engine config, never here.
_ENGINE = EngineConfig()
_LAYA = LayaClassifierConfig()
_PIPELINE = MarketPipelineConfig()
_TRADING = TradingConfig()
_STRATEGY = _TRADING.strategies[0]
_HEDGE = HedgeConfig()
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


# Sections


@dataclass(frozen=True, slots=True)
class InstrumentSettings:
    """One contract's grid, where neither the recording nor the venue's table gives it (or to
    correct them)."""

    tick_size: float = setting(doc="price tick, USDT")
    size_step: float = setting(doc="lot: the size step, base coin")
    min_notional_usdt: float = setting(doc="smallest order notional, USDT (Bitget: 5)")

    def __post_init__(self) -> None:
        whole_numbers_as_floats(self)
        self.instrument("SYMBOL")

    def instrument(self, symbol: str) -> Instrument:
        return Instrument(symbol, self.tick_size, self.size_step, self.min_notional_usdt)


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """What the engine watches and trades: a book of quoted symbols and the one that hedges
    their combined delta, or with no hedge a leader it only watches."""

    symbols: tuple[str, ...] = setting(
        _TRADING.quoted, f"the quoted symbols: the book's contracts (1 to {MAX_QUOTED_SYMBOLS})"
    )
    hedge: str = setting(
        _HEDGE.symbol,
        'the symbol that hedges the quoted ones\' combined delta (never quoted itself); "none": '
        "no hedge",
    )
    leader: str = setting(
        BTCUSDT.symbol,
        'with hedge "none": the symbol every quoted one\'s cross features read, watched, not '
        'traded (unless quoted); "none": none (the last quoted symbol leads)',
    )
    sim_seed: int = setting(_ENGINE.sim_seed, "seed of the built-in simulated market")
    status_interval_s: float = setting(
        _ENGINE.status_interval_s, "seconds between the engine's status snapshots"
    )
    instruments: Mapping[str, InstrumentSettings] = section(
        dict, "contracts by symbol (tick, lot), where no recording or venue table gives them"
    )

    def __post_init__(self) -> None:
        whole_numbers_as_floats(self)
        object.__setattr__(self, "instruments", types.MappingProxyType(dict(self.instruments)))
        for name in ("hedge", "leader"):
            value = getattr(self, name)
            if isinstance(value, str) and value.lower() == NO_SYMBOL:
                object.__setattr__(self, name, NO_SYMBOL)
            else:
                require_symbol("engine", name, value)
        for symbol in self.symbols:
            require_symbol("engine", "symbols", symbol)
        # The book as a whole (a symbol twice, the hedge quoted) is checked by `Settings`,
        # which knows where each value came from (the old form: `Settings._refuse_old_form`).
        EngineConfig(sim_seed=self.sim_seed, status_interval_s=self.status_interval_s)

    @property
    def quoted(self) -> tuple[str, ...]:
        return self.symbols

    @property
    def hedge_symbol(self) -> str | None:
        return None if self.hedge == NO_SYMBOL else self.hedge

    @property
    def leader_symbol(self) -> str | None:
        """The symbol watched, not traded, that the quoted ones' cross features read: with no
        hedge, the leader unless it is none or quoted."""
        if self.hedge_symbol is not None or self.leader == NO_SYMBOL:
            return None
        return None if self.leader in self.symbols else self.leader

    @property
    def traded_symbols(self) -> tuple[str, ...]:
        """The quoted symbols, then the hedge: each with its contract and risk limits."""
        hedge = self.hedge_symbol
        return self.symbols + ((hedge,) if hedge is not None else ())

    @property
    def market_symbols(self) -> tuple[str, ...]:
        """`EngineConfig.symbols`: the traded symbols, then the leader (watched only)."""
        leader = self.leader_symbol
        return self.traded_symbols + ((leader,) if leader is not None else ())


@dataclass(frozen=True, slots=True)
class LayaSettings:
    """Laya, the fast classifier (one ONNX Runtime session, CUDA first, then the CPU)."""

    model_path: PathText | None = setting(
        None, "Laya's ONNX model; unset: the shipped model", example="laya.onnx"
    )
    prefer_gpu: bool = setting(
        _LAYA.prefer_gpu, "run on CUDA where it really works (false: always the CPU)"
    )
    device_id: int = setting(
        _LAYA.device_id, "the CUDA device Laya runs on and the VRAM pane shows"
    )
    gpu_mem_limit_gib: float = setting(
        _gib(_LAYA.gpu_mem_limit_bytes),
        "cap on Laya's CUDA arena, GiB (also Laya's share of the VRAM budget)",
        engine="gpu_mem_limit_bytes",
    )
    thresholds: tuple[float, ...] | None = setting(
        None,
        "class thresholds [HOLD, LEAN_BUY, LEAN_SELL, EMERGENCY]; unset: the model's own",
        example=[0.5, 0.45, 0.45, 0.3],
    )
    warmup_runs: int = setting(
        _LAYA.warmup_runs, "inferences at start, so the first frame is not slow"
    )
    warmup_s: float = setting(
        30.0,
        "market seconds per symbol (from its first book, and after a gap as long) in which "
        "Laya stands aside: no verdicts, no quotes, while its feature windows fill",
    )
    cpu_runner: str = setting(
        _LAYA.cpu_runner,
        'on the CPU: "native" (the MLP as one compiled kernel, checked against ONNX Runtime '
        'at start) or "onnxruntime"',
    )
    gate: str = setting(
        _PIPELINE.gate.value,
        'what pulls quotes: "laya" (its verdicts), "none" (quote on every frame) or '
        '"imbalance" (the top-5 book imbalance beyond imbalance_gate); backtests compare them',
    )
    imbalance_gate: float = setting(
        _PIPELINE.imbalance_gate,
        "with gate imbalance: |top-5 imbalance| (0..1) beyond which the side it points "
        "against is pulled",
    )
    shadow_model: PathText | None = setting(
        None,
        "a second ONNX model scored beside the live one on every book, never acting (Laya's "
        "scorecard); unset: none",
        example="laya-candidate.onnx",
    )
    models: Mapping[str, PathText] = setting(
        {},
        "symbol or pattern -> the ONNX model it runs on (exact symbols first, then patterns in "
        "order; a relative path is from the settings file's folder); the rest run on model_path",
        example={"NEXOUSDT": "laya-nexo.onnx"},
    )

    def __post_init__(self) -> None:
        whole_numbers_as_floats(self)
        object.__setattr__(self, "models", types.MappingProxyType(dict(self.models)))
        require_model_keys(self.models)
        require_shadow_model(self.shadow_model, self.classifier_config().model_path)
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

    quote_size: float | None = setting(
        None,
        "size of each quote, base coin (times the risk scale, whole lots); unset: quote_size_usdt",
        example=_STRATEGY.quote_size,
    )
    quote_size_usdt: float = setting(
        120.0,
        "size of each quote in USDT when quote_size is unset: the nearest whole lots at the "
        "price at start (one lot at least)",
    )
    half_spread_bps: float = setting(
        _STRATEGY.half_spread_bps, "bid and ask sit this far either side of the microprice, bps"
    )
    inventory_skew_bps: float = setting(
        _STRATEGY.inventory_skew_bps, "quote shift per unit of position / max position, bps"
    )
    requote_threshold_bps: float = setting(
        _STRATEGY.requote_threshold_bps, "a resting quote is replaced when its price is this off"
    )
    requote_size_fraction: float = setting(
        _STRATEGY.requote_size_fraction, "... or when its size is this fraction off (0..1)"
    )
    emergency_cooldown_ms: int = setting(
        _STRATEGY.emergency_cooldown_ms, "no quotes for this long after an EMERGENCY verdict, ms"
    )
    denial_backoff_ms: int = setting(
        _STRATEGY.denial_backoff_ms, "a side waits this long after the risk gateway denied it, ms"
    )
    post_only: bool = setting(_STRATEGY.post_only, "quotes are post-only (never take liquidity)")
    hedge_deadband_usdt: float = setting(
        _HEDGE.deadband_usdt,
        "hedge when the beta-adjusted net delta leaves this, USDT",
        engine="deadband_usdt",
    )
    hedge_slippage_bps: float = setting(
        _HEDGE.slippage_bps,
        "hedge orders are IOC limits this far through the touch, bps",
        engine="slippage_bps",
    )

    def __post_init__(self) -> None:
        whole_numbers_as_floats(self)
        require_positive("trading.strategy", "quote_size_usdt", self.quote_size_usdt)
        self.config()
        self.hedge_config(_HEDGE.symbol)

    def config(
        self, symbol: str = _STRATEGY.symbol, contract: MarketContract | None = None
    ) -> QuotingStrategyConfig:
        """The strategy on `symbol`; without `quote_size`, `contract` turns quote_size_usdt
        into lots (none given: the engine's default size, for checking the other values)."""
        values = engine_values(self, QuotingStrategyConfig)
        if self.quote_size is None:
            values["quote_size"] = self._quote_size_of(symbol, contract)
        return QuotingStrategyConfig(symbol=symbol, **values)

    def hedge_config(self, symbol: str | None) -> HedgeConfig | None:
        """The book's hedge on `symbol` (None: no hedge)."""
        if symbol is None:
            return None
        return HedgeConfig(symbol=symbol, **engine_values(self, HedgeConfig))

    def for_symbol(self, table: SymbolStrategySettings | None) -> StrategySettings:
        """These settings with a symbol's [trading.symbols] table on top (None: as they are);
        its quote_size_usdt alone sizes it in USDT even where quote_size is set here."""
        if table is None:
            return self
        values = {
            name: getattr(table, name)
            for name in fields_of(SymbolStrategySettings)
            if name != "beta" and getattr(table, name) is not None
        }
        if table.quote_size_usdt is not None and table.quote_size is None:
            values["quote_size"] = None
        return dataclasses.replace(self, **values)

    def _quote_size_of(self, symbol: str, contract: MarketContract | None) -> float:
        if contract is None:
            return _STRATEGY.quote_size
        lots = contract.lots_of(self.quote_size_usdt)
        if lots is None:
            raise ValueError(
                f"no price for {symbol} at start to turn quote_size_usdt into lots: set "
                "trading.strategy.quote_size (base coin)"
            )
        return contract.instrument.size_of(max(lots, 1))


@dataclass(frozen=True, slots=True)
class SymbolStrategySettings:
    """One quoted symbol's strategy: any [trading.strategy] quoting key, for it alone (unset:
    [trading.strategy]'s), and its beta to the book."""

    quote_size: float | None = setting(None, "size of each quote, base coin", example=0.1)
    quote_size_usdt: float | None = setting(None, "size of each quote, USDT", example=200.0)
    half_spread_bps: float | None = setting(
        None, "bid and ask this far either side of the microprice, bps", example=2.0
    )
    inventory_skew_bps: float | None = setting(
        None, "quote shift per unit of position / max position, bps", example=1.5
    )
    requote_threshold_bps: float | None = setting(
        None, "a resting quote is replaced when its price is this off, bps", example=0.5
    )
    requote_size_fraction: float | None = setting(
        None, "... or when its size is this fraction off (0..1)", example=0.25
    )
    emergency_cooldown_ms: int | None = setting(
        None, "no quotes for this long after an EMERGENCY verdict, ms", example=1_000
    )
    denial_backoff_ms: int | None = setting(
        None, "a side waits this long after the risk gateway denied it, ms", example=250
    )
    post_only: bool | None = setting(None, "quotes are post-only", example=True)
    beta: float = setting(
        1.0,
        "its beta to the book: the weight of its notional in the net delta the hedge trades "
        "(the hedge's own weight is [risk] hedge_ratio)",
    )

    def __post_init__(self) -> None:
        whole_numbers_as_floats(self)
        StrategySettings().for_symbol(self).config()  # the beta: by the gateway (risk_config)


@dataclass(frozen=True, slots=True)
class ExecutorSettings:
    """The order executor: pacing, the kill switch's and flatten's limits, reconciliation."""

    client_oid_prefix: str = setting(
        _EXECUTOR.client_oid_prefix, "clientOid prefix of our orders (1-4 of [0-9A-Za-z_#-])"
    )
    maintenance_interval_ms: int = setting(
        _EXECUTOR.maintenance_interval_ms, "period of the executor's housekeeping, ms"
    )
    hedge_interval_ms: int = setting(_EXECUTOR.hedge_interval_ms, "period of the hedge check, ms")
    kill_timeout_s: float = setting(
        _EXECUTOR.kill_timeout_s, "the kill switch retries cancel-all + close-all this long, s"
    )
    kill_retry_interval_ms: int = setting(
        _EXECUTOR.kill_retry_interval_ms, "pause between the kill switch's attempts, ms"
    )
    flatten_timeout_s: float = setting(
        _EXECUTOR.flatten_timeout_s, "flatten retries cancel-all + close-all this long, s"
    )
    position_settle_ms: int = setting(
        _EXECUTOR.position_settle_ms, "quiet time before a drifted position is synced, ms"
    )
    drift_check_interval_s: float = setting(
        _EXECUTOR.drift_check_interval_s, "period of the position and unknown-order check, s"
    )
    poll_interval_ms: int = setting(
        _EXECUTOR.poll_interval_ms, "venue poll period while the private stream is down, ms"
    )
    unknown_order_grace_ms: int = setting(
        _EXECUTOR.unknown_order_grace_ms, "an order of unknown outcome is looked up after, ms"
    )
    cancel_on_start: bool = setting(
        _EXECUTOR.cancel_on_start, "cancel the venue's open orders at start (a previous run's)"
    )
    cancel_on_stop: bool = setting(_EXECUTOR.cancel_on_stop, "cancel resting orders when stopping")
    journal_lookback_h: float = setting(
        _EXECUTOR.journal_lookback_h, "hours of journal read at start to reconcile orders"
    )

    def __post_init__(self) -> None:
        whole_numbers_as_floats(self)
        self.config()

    def config(self) -> OrderExecutorConfig:
        return dataclasses.replace(_EXECUTOR, **engine_values(self, OrderExecutorConfig))


@dataclass(frozen=True, slots=True)
class PaperSettings:
    """Paper trading: real market data matched in-process."""

    round_trip_ms: float = setting(
        _PAPER.round_trip_ms,
        "network round trip to Bitget: a request meets the book this long after it leaves, ms",
    )
    reaction_us: float = setting(
        _PAPER.reaction_us, "our CPU from the frame to the request leaving, us"
    )
    feed_latency_ms: float | None = setting(
        None,
        "how long after the exchange has it the market reaches us, ms; unset: half the round trip",
        example=30.0,
    )
    latency_jitter: float = setting(
        _PAPER.latency_jitter, "lognormal sigma of each network leg (0: constant)"
    )
    latency_seed: int = setting(_PAPER.latency_seed, "seed of the jitter, so runs repeat")
    maker_fee_rate: float = setting(_PAPER.maker_fee_rate, "maker fee, a fraction of the notional")
    taker_fee_rate: float = setting(_PAPER.taker_fee_rate, "taker fee, a fraction of the notional")
    initial_balance_usdt: float = setting(
        _PAPER.initial_balance, "starting balance, USDT", engine="initial_balance"
    )
    leverage: int = setting(_PAPER.leverage, "leverage of the paper account (1..125)")

    def __post_init__(self) -> None:
        whole_numbers_as_floats(self)
        self.config()

    def config(self) -> PaperVenueConfig:
        return PaperVenueConfig(**engine_values(self, PaperVenueConfig))


@dataclass(frozen=True, slots=True)
class FeeSettings:
    """Fee rates for every symbol, for a VIP tier or a rebate; unset: each contract's listed
    rates (the venue's table), else [trading.paper]'s."""

    maker_fee_rate: float | None = setting(
        None, "maker fee, a fraction of the notional (negative: a rebate)", example=0.0002
    )
    taker_fee_rate: float | None = setting(
        None, "taker fee, a fraction of the notional", example=0.0006
    )

    def __post_init__(self) -> None:
        whole_numbers_as_floats(self)
        for name in ("maker_fee_rate", "taker_fee_rate"):
            rate = getattr(self, name)
            if rate is not None:
                require_number("trading.fees", name, rate, low=-0.01, high=0.01)

    def rates(self) -> FeeRates:
        return FeeRates(self.maker_fee_rate, self.taker_fee_rate)


@dataclass(frozen=True, slots=True)
class TradingSettings:
    """Where orders go and how the desk trades."""

    mode: TradingMode = setting(
        _TRADING.mode,
        "sim, paper, demo or live; live also needs run --live and the typed confirmation",
    )
    journal_path: PathText | None = setting(
        None,
        "the event journal (SQLite); unset: journal.sqlite in the per-user data directory",
        example="journal.sqlite",
    )
    rest_timeout_s: float = setting(
        _TRADING.rest_timeout_s, "a REST answer later than this leaves the outcome unknown, s"
    )
    cancel_lane: bool = setting(
        _TRADING.cancel_lane, "cancel-all through a pre-connected keep-alive connection"
    )
    contract_check_interval_s: float = setting(
        _TRADING.contract_check_interval_s,
        "the venue's contract table is read again this often while trading (tick, lot), s",
    )
    strategy: StrategySettings = section(StrategySettings)
    symbols: Mapping[str, SymbolStrategySettings] = section(
        dict,
        "one quoted symbol's strategy: [trading.strategy]'s quoting keys for it alone, and its "
        "beta to the book",
        example={"SOLUSDT": {"half_spread_bps": 2.0, "quote_size_usdt": 200.0, "beta": 1.3}},
    )
    executor: ExecutorSettings = section(ExecutorSettings)
    paper: PaperSettings = section(PaperSettings)
    fees: FeeSettings = section(FeeSettings)

    def __post_init__(self) -> None:
        whole_numbers_as_floats(self)
        object.__setattr__(self, "mode", TradingMode(self.mode))
        # The live gate is the command line's (--live and the typed confirmation); this checks
        # every other value.
        self.config(
            (self.strategy.config(),),
            self.strategy.hedge_config(_HEDGE.symbol),
            _RISK,
            live_confirmed=True,
        )

    def config(
        self,
        strategies: tuple[QuotingStrategyConfig, ...],
        hedge: HedgeConfig | None,
        risk: RiskGatewayConfig,
        *,
        instruments: tuple[Instrument, ...] = (BTCUSDT, ETHUSDT),
        rest_url: str | None = None,
        private_ws_url: str | None = None,
        live_confirmed: bool = False,
    ) -> TradingConfig:
        return TradingConfig(
            mode=self.mode,
            strategies=strategies,
            hedge=hedge,
            risk=risk,
            instruments=instruments,
            executor=self.executor.config(),
            paper=self.paper.config(),
            journal_path=Path(self.journal_path) if self.journal_path else None,
            rest_url=rest_url,
            private_ws_url=private_ws_url,
            cancel_lane=self.cancel_lane,
            rest_timeout_s=self.rest_timeout_s,
            contract_check_interval_s=self.contract_check_interval_s,
            live_confirmed=live_confirmed,
        )


@dataclass(frozen=True, slots=True)
class SymbolRiskSettings:
    """One symbol's caps. A symbol without built-in limits needs all four keys."""

    max_position: float = setting(doc="largest position either way, base coin")
    max_notional_usdt: float = setting(
        doc="largest position's notional at the mid, USDT", engine="max_notional"
    )
    max_order_size: float = setting(doc="largest single order, base coin")
    max_position_ceiling: float = setting(
        doc="the operator may raise max_position up to this at run time, base coin"
    )

    def __post_init__(self) -> None:
        whole_numbers_as_floats(self)
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

    max_net_delta_usdt: float = setting(
        _RISK.bounds.max_net_delta, "highest max_net_delta_usdt, USDT", engine="max_net_delta"
    )
    max_slippage_bps: float = setting(_RISK.bounds.max_slippage_bps, "highest max_slippage_bps")
    max_orders_per_second: int = setting(
        _RISK.bounds.max_orders_per_second, "highest orders_per_second"
    )
    max_orders_per_minute: int = setting(
        _RISK.bounds.max_orders_per_minute, "highest orders_per_minute"
    )

    def __post_init__(self) -> None:
        whole_numbers_as_floats(self)


@dataclass(frozen=True, slots=True)
class RiskSettings:
    """The risk gateway's limits: every order passes them before it reaches the exchange."""

    max_net_delta_usdt: float = setting(
        _RISK.limits.max_net_delta,
        "cap on the beta-adjusted net delta of all positions, USDT",
        engine="max_net_delta",
    )
    daily_loss_soft_usdt: float = setting(
        _RISK.limits.daily_loss_soft,
        "loss since the daily reset that switches to REDUCING, USDT",
        engine="daily_loss_soft",
    )
    daily_loss_hard_usdt: float = setting(
        _RISK.limits.daily_loss_hard,
        "loss that HALTS trading and closes everything, USDT",
        engine="daily_loss_hard",
    )
    max_slippage_bps: float = setting(
        _RISK.limits.max_slippage_bps, "how far an order may pay through mid and microprice, bps"
    )
    max_closing_slippage_bps: float = setting(
        _RISK.limits.max_closing_slippage_bps, "the wider band for orders that only shrink, bps"
    )
    orders_per_second: int = setting(
        _RISK.limits.orders_per_second, "risk-increasing orders a second (Bitget allows 10)"
    )
    orders_per_minute: int = setting(
        _RISK.limits.orders_per_minute, "risk-increasing orders a minute"
    )
    max_open_orders: int = setting(_RISK.limits.max_open_orders, "resting orders at once")
    hedge_ratio: float = setting(
        _RISK.hedge_ratio, "starting hedge ratio: the hedge's beta to the traded book"
    )
    hedge_ratio_band: tuple[float, float] = setting(
        _RISK.hedge_ratio_band, "[low, high] the hedge ratio may move in, Kev included"
    )
    beta_band: tuple[float, float] = setting(
        _RISK.beta_band,
        "[low, high] times a quoted symbol's beta that Kev may move it in ([1.0, 1.0]: never)",
    )
    risk_scale: float = setting(
        _RISK.risk_scale, "starting multiplier (0..1) on the position, notional and delta caps"
    )
    max_mark_age_ms: int = setting(
        _RISK.max_mark_age_ms, "a mark older than this blocks risk-increasing orders, ms"
    )
    daily_reset_hour_utc: int = setting(
        _RISK.daily_reset_hour_utc, "hour (UTC) at which the daily loss restarts from zero"
    )
    max_position_usdt: float = setting(
        1_200.0,
        "a symbol without a [risk.symbols] table: largest position either way, USDT (whole "
        "lots at the price at start)",
    )
    max_notional_usdt: float = setting(
        2_000.0, "... its largest position's notional at the mid, USDT"
    )
    max_order_usdt: float = setting(600.0, "... its largest single order, USDT")
    max_position_ceiling_usdt: float = setting(
        3_000.0, "... the operator may raise its max_position up to this at run time, USDT"
    )
    bounds: RiskBoundsSettings = section(RiskBoundsSettings)
    symbols: Mapping[str, SymbolRiskSettings] = section(
        _default_symbol_risk, "per-symbol caps, one table per symbol"
    )

    def __post_init__(self) -> None:
        whole_numbers_as_floats(self)
        object.__setattr__(self, "symbols", types.MappingProxyType(dict(self.symbols)))
        for name in _NOTIONAL_CAPS:
            require_positive("risk", name, getattr(self, name))
        self.gateway_config(None)

    def gateway_config(
        self,
        hedge_symbol: str | None,
        traded: tuple[str, ...] = (),
        contracts: MarketContracts | None = None,
        betas: Mapping[str, float] = types.MappingProxyType({}),
    ) -> RiskGatewayConfig:
        """The gateway's config, the quoted symbols weighed by `betas` in the net delta; a
        `traded` symbol without a table of its own takes the caps of the built-in one with its
        base coin (BTCUSD those of BTCUSDT), which hold in coin, else the USDT caps above in
        whole lots at its contract's price at start."""
        entries = dict(self.symbols)
        for symbol in traded:
            twin = built_in_twin(symbol)
            if symbol not in entries and twin in entries:
                entries[symbol] = entries[twin]
            elif symbol not in entries:
                entries[symbol] = self._caps_in_lots(symbol, contracts)
        limits = RiskLimits(
            symbols=tuple(entry.limits(symbol) for symbol, entry in entries.items()),
            **engine_values(self, RiskLimits),
        )
        override_bounds = OverrideBounds(
            max_position={symbol: entry.max_position_ceiling for symbol, entry in entries.items()},
            **engine_values(self.bounds, OverrideBounds),
        )
        return dataclasses.replace(
            _RISK,
            limits=limits,
            bounds=override_bounds,
            hedge_symbol=hedge_symbol,
            betas=betas,
            **engine_values(self, RiskGatewayConfig),
        )

    def has_caps_in_coin(self, symbol: str) -> bool:
        """Whether `symbol` has caps in base coin: its own table, or its built-in twin's."""
        return symbol in self.symbols or built_in_twin(symbol) in self.symbols

    def _caps_in_lots(self, symbol: str, contracts: MarketContracts | None) -> SymbolRiskSettings:
        """The USDT caps as whole lots of `symbol` at its price at start."""
        table = f"[risk.symbols.{symbol}] (base coin)"
        contract = contracts.get(symbol) if contracts is not None else None
        if contract is None or contract.reference_price is None:
            raise ValueError(
                f"{symbol} has no risk limits: no price at start turns the USDT caps into lots; "
                f"give {table}"
            )
        sizes = {}
        for name in ("max_position_usdt", "max_order_usdt", "max_position_ceiling_usdt"):
            usdt = getattr(self, name)
            lots = math.floor(usdt / contract.reference_price / contract.instrument.size_step)
            if lots < 1:
                one_lot = contract.instrument.size_step * contract.reference_price
                raise ValueError(
                    f"risk.{name} {usdt:g} is below one lot of {symbol} ({one_lot:g} USDT at "
                    f"{contract.reference_price:g}): raise it or give {table}"
                )
            sizes[name] = contract.instrument.size_of(lots)
        return SymbolRiskSettings(
            max_position=sizes["max_position_usdt"],
            max_notional_usdt=self.max_notional_usdt,
            max_order_size=sizes["max_order_usdt"],
            max_position_ceiling=sizes["max_position_ceiling_usdt"],
        )


def recorded_book(symbols: Sequence[str]) -> dict[str, object]:
    """The [engine] book of a replay on a recording's own symbols, its busiest first
    (`require_recording_symbols`): the first quoted, hedged by the second (none: no hedge and
    no leader), as settings to put on top."""
    hedge = symbols[1] if len(symbols) > 1 else NO_SYMBOL
    return {"engine.symbols": list(symbols[:1]), "engine.hedge": hedge, "engine.leader": NO_SYMBOL}


class MarketNeeded(ValueError):
    """The settings alone cannot build a config: a symbol's contract or price comes from its
    market at start. A check of the settings (config show, doctor) says so and goes on."""


_NOTIONAL_CAPS = (
    "max_position_usdt",
    "max_notional_usdt",
    "max_order_usdt",
    "max_position_ceiling_usdt",
)


@dataclass(frozen=True, slots=True)
class KevSettings:
    """Kev, the slow hub: the local LLM behind llama-server, and what it may answer."""

    url: str = setting(
        _KEV_CLIENT.base_url,
        "Kev's llama-server; kev serve binds this host and port",
        engine="base_url",
    )
    model_path: PathText | None = setting(
        None,
        "GGUF model kev serve loads; unset: the tiny model, if fetched",
        example="qwen2.5-coder-7b-instruct-q4_k_m.gguf",
    )
    llama_server: PathText | None = setting(
        None, "llama-server binary; unset: the kev-local extra's, else PATH", example="llama-server"
    )
    context_size: int = setting(_LLAMA_DEFAULTS["context_size"], "llama-server context, tokens")
    gpu_layers: int = setting(
        _LLAMA_DEFAULTS["gpu_layers"], "layers offloaded to the GPU (99: all; 0: CPU only)"
    )
    threads: int | None = setting(
        _LLAMA_DEFAULTS["threads"], "llama-server CPU threads; unset: its own choice", example=4
    )
    niceness: int = setting(
        _LLAMA_DEFAULTS["niceness"], "llama-server's CPU priority, 0..19 (19: the engine first)"
    )
    ready_timeout_s: float = setting(
        _LLAMA_DEFAULTS["ready_timeout_s"], "kev serve waits this long for the model to load, s"
    )
    request_timeout_s: float = setting(
        _KEV_CLIENT.request_timeout_s, "a decision request's whole time limit, s"
    )
    connect_timeout_s: float = setting(_KEV_CLIENT.connect_timeout_s, "connect time limit, s")
    probe_timeout_s: float = setting(_KEV_CLIENT.probe_timeout_s, "/health probe time limit, s")
    max_tokens: int = setting(_KEV_CLIENT.max_tokens, "output tokens a decision may take")
    temperature: float = setting(_KEV_CLIENT.temperature, "sampling temperature (0: greedy)")
    queue_capacity: int = setting(_KEV_HUB.queue_capacity, "symbols that may wait for Kev at once")
    queue_overflow: KevQueueOverflow = setting(
        _KEV_HUB.overflow,
        "beyond the capacity: drop_oldest or drop_newest (an EMERGENCY is never displaced)",
        engine="overflow",
    )
    max_in_flight: int = setting(_KEV_HUB.max_in_flight, "concurrent requests (1: one GPU slot)")
    max_mid_move_bps: float = setting(
        _KEV_HUB.max_mid_move_bps, "an answer is stale once the mid moved this far, bps"
    )
    health_interval_s: float = setting(_KEV_HUB.health_interval_s, "period of the /health probe, s")
    latency_scale: float = setting(
        _KEV_HUB.latency_scale,
        "in a replay, an answer takes effect this many times its latency after its request "
        "(0.2: a server five times faster)",
    )
    ttl_ms: tuple[int, int] = setting(_KEV_SPEC.ttl_ms, "[shortest, longest] validity Kev may give")
    actions: tuple[KevAction, ...] = setting(
        _KEV_SPEC.actions, "actions Kev may ask for: hold, reduce, flatten, pause_quoting"
    )
    max_skew_tenths_bps: int = setting(
        _KEV_SPEC.max_skew_tenths_bps, "bound on Kev's quote skew, tenths of a bps"
    )

    def __post_init__(self) -> None:
        whole_numbers_as_floats(self)
        self.client_config()
        self.hub_config()
        self.command_spec()
        self.server_config(str(self.model_path or ""))

    def client_config(self) -> KevClientConfig:
        return dataclasses.replace(_KEV_CLIENT, **engine_values(self, KevClientConfig))

    def hub_config(self) -> KevHubConfig:
        return dataclasses.replace(_KEV_HUB, **engine_values(self, KevHubConfig))

    def command_spec(self) -> KevCommandSpec:
        return dataclasses.replace(_KEV_SPEC, **engine_values(self, KevCommandSpec))

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
            **engine_values(self, LlamaServerConfig),
        )


@dataclass(frozen=True, slots=True)
class GpuSettings:
    """The VRAM budget and its monitor. Laya's share is [laya] gpu_mem_limit_gib."""

    kev_gib: float = setting(
        _gib(_GPU.budget.kev_bytes), "what Kev's llama-server may take, GiB", engine="kev_bytes"
    )
    free_floor_gib: float = setting(
        _gib(_GPU.budget.free_floor_bytes),
        "headroom kept free on the card; below it the VRAM pane warns, GiB",
        engine="free_floor_bytes",
    )
    interval_s: float = setting(_GPU.interval_s, "NVML sampling period (off the engine loop), s")

    def __post_init__(self) -> None:
        whole_numbers_as_floats(self)
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

    refresh_hz: float = setting(20.0, "snapshots drawn a second (1..60)")
    bandwidth: Literal["full", "low"] = setting(
        "full",
        'what the console draws: "full", or "low" for links under about 256 kbit/s (fewer '
        "redraws, the terminal's own 16 colours); run --low-bandwidth sets low",
    )
    shutdown_policy: Literal["flatten", "keep"] = setting(
        "flatten",
        "on SIGHUP (SSH dropped), SIGTERM or --duration: flatten (halt, cancel, close) or keep",
    )
    keymap: Mapping[str, str] = setting(
        {},
        'binding id -> keys (comma-separated), e.g. "console.kill" = "K"',
        example={"console.kill": "K"},
    )

    def __post_init__(self) -> None:
        whole_numbers_as_floats(self)
        object.__setattr__(self, "keymap", types.MappingProxyType(dict(self.keymap)))


@dataclass(frozen=True, slots=True)
class ResearchSettings:
    """The research commands: backtest, optimize and train."""

    ray_address: str | None = setting(
        None,
        "run their runs as tasks on the Ray cluster at this address (HOST:PORT as `ray start "
        "--head` prints it, ray://HOST:PORT, or auto); --ray overrides it; unset: worker "
        "processes on this machine (docs/cluster.md)",
        example="auto",
    )


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a user configures. `path` is the file read (None: none); `sources` says
    where each value that is not a default came from, by key path."""

    engine: EngineSettings = section(EngineSettings)
    laya: LayaSettings = section(LayaSettings)
    trading: TradingSettings = section(TradingSettings)
    risk: RiskSettings = section(RiskSettings)
    kev: KevSettings = section(KevSettings)
    gpu: GpuSettings = section(GpuSettings)
    console: ConsoleSettings = section(ConsoleSettings)
    research: ResearchSettings = section(ResearchSettings)
    path: Path | None = field(default=None, compare=False)
    sources: Mapping[tuple[str, ...], SettingSource] = field(
        default_factory=dict, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "sources", types.MappingProxyType(dict(self.sources)))
        self._check_book()

    def source_of(self, key: str) -> SettingSource:
        """Where the value of `key` ("risk.max_net_delta_usdt") came from; KeyError for a key
        that does not exist."""
        try:
            path = resolve(Settings, key)[0]
        except BadValue as error:
            raise KeyError(str(error)) from None
        return self.sources.get(path, DEFAULT_SOURCE)

    def with_overrides(
        self, values: Mapping[str, object], sources: Mapping[str, str] | None = None
    ) -> Settings:
        """These settings with `values` (key path -> value, e.g. {"laya.prefer_gpu": False})
        on top, checked like the file's; None values are skipped (a flag not given), a string
        is read as the environment's are (`BTCUSDT` for a list of symbols, `yes` for a bool).
        `sources` names where each came from (e.g. {"laya.prefer_gpu": "--cpu"})."""
        overrides: Overrides = {}
        problems: list[str] = []
        for key, value in values.items():
            if value is None:
                continue
            origin = SettingSource(SourceKind.FLAG, (sources or {}).get(key, ""))
            try:
                path, annotation = resolve(Settings, key)
                coerced = coerce(annotation, value, None, text=isinstance(value, str))
            except BadValue as error:
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
        return assemble_settings(self, combined, self.path)

    def invalid(self, error: Exception, *sections: str) -> SettingsError:
        """`error` (raised while building from these sections) as a `SettingsError` that
        names the keys it is about and where they were set."""
        return SettingsError(
            [blame(Settings, error, [(name,) for name in sections], self._set_keys())]
        )

    def _set_keys(self) -> dict[tuple[str, ...], tuple[object, SettingSource]]:
        return {path: (value_at(self, path), source) for path, source in self.sources.items()}

    # The book as a whole: here, where each value's source is known

    def _check_book(self) -> None:
        """[engine]'s book: its old form refused saying what it means now
        (`_refuse_old_form`), then a symbol twice, the hedge quoted, too many symbols, more
        feed connections than Bitget takes, a --leader beside a hedge, and [trading.symbols]
        (`_check_symbol_tables`); `SettingsError` naming it."""
        engine = self.engine
        if len(set(engine.symbols)) == len(engine.symbols):  # a symbol twice: said as such
            self._refuse_old_form()
        try:
            check_book_symbols(engine.quoted, engine.hedge_symbol)
            check_connections(engine.market_symbols, _ENGINE.feed_channels)  # the feed's rule
        except ValueError as error:
            raise self.invalid(error, "engine") from error
        if engine.hedge_symbol is not None and self.source_of("engine.leader").where == "--leader":
            raise SettingsError(
                [
                    f"--leader {engine.leader}: a leader is watched only without a hedge (--hedge "
                    f"none); {engine.hedge_symbol}, the hedge, leads this book"
                ]
            )
        self._check_symbol_tables()

    def _check_symbol_tables(self) -> None:
        """A [trading.symbols] table for a symbol the book does not quote (the hedge
        included) is refused, naming it and where it was set."""
        engine = self.engine
        problems = []
        for symbol in self.trading.symbols:
            if symbol in engine.quoted:
                continue
            if symbol == engine.hedge_symbol:
                why = (
                    f"{symbol} is the hedge, not quoted: it has no quoting keys or beta of its "
                    "own (its weight in the net delta is [risk] hedge_ratio)"
                )
            else:
                why = (
                    f"{symbol} is not quoted (the book quotes {', '.join(engine.quoted)}): "
                    "quote it ([engine] symbols, --symbols) or drop the table"
                )
            problems.append(
                f"[trading.symbols.{symbol}]{self._where(('trading', 'symbols', symbol))}: {why}"
            )
        if problems:
            raise SettingsError(problems)

    def _refuse_old_form(self) -> None:
        """[engine] symbols (and --symbols) once listed the traded symbol, then its hedge. One
        or two symbols given (a flag, the file, the environment) without their hedge may be
        that form, which would now quote them all and hedge with another: refused, saying what
        they mean now and how to say each. Their hedge is given when its source is not the
        default, and for --symbols when it is the command line too (a file's hedge, which
        `config init` writes, says nothing of what --symbols means)."""
        engine = self.engine
        given = self.source_of("engine.symbols")
        hedge_source = self.source_of("engine.hedge")
        on_command_line = given.kind is SourceKind.FLAG and given.where == "--symbols"
        if on_command_line:
            hedge_given = hedge_source.kind is SourceKind.FLAG
        else:
            hedge_given = hedge_source.kind is not SourceKind.DEFAULT
        if given.kind is SourceKind.DEFAULT or hedge_given or not 1 <= len(engine.symbols) <= 2:
            return
        verb, joined = ("say", " ") if on_command_line else ("write", " and ")

        def symbols_as(symbols: Sequence[str]) -> str:
            if on_command_line:
                return f"--symbols {','.join(symbols)}"
            return f"symbols = {render_value(list(symbols))}"

        def hedge_as(symbol: str) -> str:
            return f"--hedge {symbol}" if on_command_line else f"hedge = {render_value(symbol)}"

        keys = (
            ("--symbols", "--hedge") if on_command_line else ("[engine] symbols", "[engine] hedge")
        )
        named = symbols_as(engine.symbols)
        if not on_command_line:
            named = f"[engine] {named} ({given})"
        if len(engine.symbols) == 2:
            (traded, old_hedge), them = engine.symbols, "both"
            old = f"{traded} traded, {old_hedge} its hedge"
        else:
            (traded,), old_hedge, them = engine.symbols, NO_SYMBOL, "it"
            old = f"{traded} traded alone"
        now = f"{keys[0]} now lists the quoted symbols and {keys[1]} their hedge"
        hedge = engine.hedge
        defaulted = hedge_source.kind is SourceKind.DEFAULT
        if hedge in engine.symbols:
            now += f": {hedge} is the hedge ({'default' if defaulted else f'from {hedge_source}'})"
            now += " and cannot also be quoted"
            other = f"to quote {them}, {verb} another {hedge_as('SYMBOL')} or {hedge_as(NO_SYMBOL)}"
        else:
            now += (
                f" (default {hedge}, given nowhere)"
                if defaulted
                else f" ({hedge} from {hedge_source}, not on the command line)"
            )
            other = f"to quote {them} hedged by {hedge}, {verb} {hedge_as(hedge)}"
        say_old = f"{verb} {symbols_as([traded])}{joined}{hedge_as(old_hedge)}"
        raise SettingsError([f"{named}: {now}; for the old meaning ({old}) {say_old}; {other}"])

    def _where(self, table: tuple[str, ...]) -> str:
        """(where the first key of `table` was set), or nothing when none was."""
        for path, source in self.sources.items():
            if path[: len(table)] == table:
                return f" ({source})"
        return ""

    # The engine's configs

    def laya_config(self) -> LayaClassifierConfig:
        return self.laya.classifier_config()

    def contracts(
        self,
        *,
        recorded: Mapping[str, Instrument] = types.MappingProxyType({}),
        listed: Mapping[str, Instrument] = types.MappingProxyType({}),
        listed_origin: ContractOrigin = ContractOrigin.VENUE,
        prices: Mapping[str, float] = types.MappingProxyType({}),
        missing_hint: str = "[engine.instruments.SYMBOL] tick_size, size_step, min_notional_usdt",
    ) -> MarketContracts:
        """The contracts of the market's symbols (the book's, and its leader): [instruments]
        first, then `recorded`, `listed`, the built-in ones (engine/market/contracts.py), at the
        fees that apply."""
        configured = {
            symbol: entry.instrument(symbol) for symbol, entry in self.engine.instruments.items()
        }
        return resolve_contracts(
            self.engine.market_symbols,
            configured=configured,
            recorded=recorded,
            listed=listed,
            listed_origin=listed_origin,
            fees=self.trading.fees.rates(),
            default_fees=FeeRates(
                self.trading.paper.maker_fee_rate, self.trading.paper.taker_fee_rate
            ),
            prices=prices,
            missing_hint=missing_hint,
        )

    def strategy_configs(
        self, contracts: MarketContracts | None = None
    ) -> tuple[QuotingStrategyConfig, ...]:
        """Each quoted symbol's strategy ([trading.strategy] with its [trading.symbols] table
        on top), sized on `contracts`."""
        trading = self.trading
        return self._built(
            lambda: tuple(
                trading.strategy.for_symbol(trading.symbols.get(symbol)).config(
                    symbol, self._contract_for_sizes(symbol, contracts)
                )
                for symbol in self.engine.quoted
            ),
            "engine",
            "trading",
        )

    def risk_config(self, contracts: MarketContracts | None = None) -> RiskGatewayConfig:
        """The gateway's config on `contracts` (None: a check of the settings alone, which
        raises `MarketNeeded` for a symbol whose caps are USDT in lots of its market)."""
        engine = self.engine
        if contracts is None:
            self._require_sized_without_a_market(
                s for s in engine.traded_symbols if not self.risk.has_caps_in_coin(s)
            )
        betas = {symbol: table.beta for symbol, table in self.trading.symbols.items()}
        return self._built(
            lambda: self.risk.gateway_config(
                engine.hedge_symbol, engine.traded_symbols, contracts, betas
            ),
            "engine",
            "risk",
            "trading",
        )

    def _contract_for_sizes(
        self, symbol: str, contracts: MarketContracts | None
    ) -> MarketContract | None:
        """The contract whose price turns USDT sizes into lots; without one (a check of the
        settings alone) the built-in default sizes stand in."""
        if contracts is None:
            return None
        contract = contracts.get(symbol)
        if contract is None:
            raise ContractMissing(f"no contract for {symbol}")
        return contract

    def trading_config(
        self,
        *,
        contracts: MarketContracts | None = None,
        rest_url: str | None = None,
        private_ws_url: str | None = None,
        live_confirmed: bool = False,
    ) -> TradingConfig:
        """The desk's config on `contracts` (None: a check of the settings alone, on the
        built-in and configured contracts; `MarketNeeded` for a symbol only its market gives);
        `rest_url`/`private_ws_url` point at a simulator started apart, `live_confirmed` only
        after --live and the typed confirmation."""
        if contracts is None:
            self._require_sized_without_a_market(
                symbol
                for symbol in self.engine.traded_symbols
                if instrument_for(symbol) is None and symbol not in self.engine.instruments
            )
        strategies, risk = self.strategy_configs(contracts), self.risk_config(contracts)
        known = (contracts if contracts is not None else self.contracts()).instruments
        return self._built(
            lambda: self.trading.config(
                strategies,
                self.trading.strategy.hedge_config(self.engine.hedge_symbol),
                risk,
                instruments=tuple(
                    spec
                    for spec in known
                    if spec.symbol in {limits.symbol for limits in risk.limits.symbols}
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
        contracts: MarketContracts | None = None,
    ) -> EngineConfig:
        """The node's config: the market from these arguments (a recording, a live feed, or
        the simulator), trading as given (None: watch only); `status_interval_s` replaces
        [engine] status_interval_s (a console that draws faster needs fresher status)."""
        engine = self.engine
        return self._built(
            lambda: EngineConfig(
                symbols=engine.market_symbols,
                replay_path=replay_path,
                replay_speed=replay_speed,
                live_url=live_url,
                sim_seed=engine.sim_seed,
                laya=self.laya_config(),
                laya_warmup_s=self.laya.warmup_s,
                laya_models=tuple(self.laya.models.items()),
                laya_shadow_model=self.laya.shadow_model,
                quote_gate=QuoteGate(self.laya.gate),
                imbalance_gate=self.laya.imbalance_gate,
                trading=trading,
                status_interval_s=status_interval_s or engine.status_interval_s,
                kev_client=self.kev_client_config(),
                kev_hub=self.kev_hub_config(),
                instruments=contracts.instruments if contracts is not None else (),
            ),
            "engine",
            "laya",
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

    @staticmethod
    def _require_sized_without_a_market(symbols: Iterable[str]) -> None:
        needed = list(dict.fromkeys(symbols))
        if needed:
            raise MarketNeeded(
                f"{', '.join(needed)}: its contract, or its price for the caps in USDT, comes "
                "from its market at start (a recording, the simulator, the venue): checked then"
            )

    def _built(self, build: Callable[[], _T], *sections: str) -> _T:
        try:
            return build()
        except (ValueError, TypeError) as error:
            if isinstance(error, SettingsError):
                raise
            raise self.invalid(error, *sections) from error


_T = typing.TypeVar("_T")
