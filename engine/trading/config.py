"""Trading configuration: the mode, the strategy, the executor, the paper venue and the risk
limits, all frozen and validated on construction.

Sizes are base coin, prices USDT, spreads and bands basis points, times as their suffix says.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path

from engine.bitget.endpoints import BITGET_DEMO_PRIVATE_URL, BITGET_PRIVATE_URL, BITGET_REST_URL
from engine.bitget.models import CLIENT_OID_PATTERN
from engine.journal import default_journal_path
from engine.market.book_symbols import check_book_symbols
from engine.market.instruments import BTCUSDT, ETHUSDT, Instrument
from engine.risk.limits import OverrideBounds, RiskGatewayConfig, RiskLimits, SymbolLimits
from engine.validation import (
    require_count,
    require_integer,
    require_number,
    require_positive,
    require_symbol,
)


class TradingMode(enum.StrEnum):
    """Where orders go. SIM: the simulated exchange (in-process by default, or one started
    apart). PAPER: real market data matched in-process. DEMO: Bitget demo trading. LIVE: real
    money."""

    SIM = "sim"
    PAPER = "paper"
    DEMO = "demo"
    LIVE = "live"


@dataclass(frozen=True, slots=True)
class QuotingStrategyConfig:
    """Passive quotes on `symbol`.

    Quotes sit `half_spread_bps` either side of a centre: the microprice shifted by
    `inventory_skew_bps` times the position as a share of max position (long: both quotes
    lower, so the ask fills first). `quote_size` is multiplied by the risk scale. A resting
    quote is replaced only when the wanted price moves `requote_threshold_bps` away from it, or
    its size by `requote_size_fraction`. After EMERGENCY nothing is quoted for
    `emergency_cooldown_ms`; after a denial, that side waits `denial_backoff_ms`.
    """

    symbol: str = "BTCUSDT"
    quote_size: float = 0.002
    half_spread_bps: float = 0.5
    inventory_skew_bps: float = 1.0
    requote_threshold_bps: float = 0.3
    requote_size_fraction: float = 0.25
    emergency_cooldown_ms: int = 1_000
    denial_backoff_ms: int = 250
    post_only: bool = True

    def __post_init__(self) -> None:
        owner = "QuotingStrategyConfig"
        require_symbol(owner, "symbol", self.symbol)
        require_positive(owner, "quote_size", self.quote_size)
        require_number(owner, "half_spread_bps", self.half_spread_bps, low=0.0, high=1_000.0)
        require_number(owner, "inventory_skew_bps", self.inventory_skew_bps, low=0.0, high=1_000.0)
        require_number(
            owner, "requote_threshold_bps", self.requote_threshold_bps, low=0.0, high=1_000.0
        )
        require_number(
            owner, "requote_size_fraction", self.requote_size_fraction, low=0.0, high=1.0
        )
        require_number(
            owner, "emergency_cooldown_ms", self.emergency_cooldown_ms, low=0, high=3.6e6
        )
        require_number(owner, "denial_backoff_ms", self.denial_backoff_ms, low=0, high=3.6e6)


@dataclass(frozen=True, slots=True)
class HedgeConfig:
    """The book's delta hedge on `symbol`: it keeps the beta-adjusted net delta of every
    quoted symbol and the hedge (as the risk gateway counts it) within `deadband_usdt`, with
    marketable IOC limit orders `slippage_bps` through the touch, never beyond the gateway's
    slippage band."""

    symbol: str = "ETHUSDT"
    deadband_usdt: float = 50.0
    slippage_bps: float = 3.0

    def __post_init__(self) -> None:
        owner = "HedgeConfig"
        require_symbol(owner, "symbol", self.symbol)
        require_number(owner, "deadband_usdt", self.deadband_usdt, low=0.0)
        require_number(owner, "slippage_bps", self.slippage_bps, low=0.0, high=1_000.0)


@dataclass(frozen=True, slots=True)
class OrderExecutorConfig:
    """How the executor names, paces, verifies and reconciles orders.

    `kill_timeout_s` bounds the kill switch's retries (cancel all, close all, until the venue
    reports no orders and flat); `flatten_timeout_s` the same for flatten. A position the venue
    reports differently from the fills is synced only after `position_settle_ms` without a
    fill or an open order on that symbol, so a fill still in flight is not counted twice.
    Without a private stream the venue is polled every `poll_interval_ms`.
    """

    client_oid_prefix: str = "hc"
    maintenance_interval_ms: int = 250
    """The housekeeping tick (clock watch, periodic checks, and a last drain of the gateway's
    events: every path that moves the gateway drains them at once)."""
    hedge_interval_ms: int = 200
    kill_timeout_s: float = 10.0
    kill_retry_interval_ms: int = 5
    flatten_timeout_s: float = 30.0
    position_settle_ms: int = 500
    drift_check_interval_s: float = 5.0
    poll_interval_ms: int = 500
    unknown_order_grace_ms: int = 1_500
    closed_orders_kept: int = 200
    seen_trades_kept: int = 20_000
    cancel_on_start: bool = True
    cancel_on_stop: bool = True
    journal_lookback_h: float = 24.0

    def __post_init__(self) -> None:
        owner = "OrderExecutorConfig"
        prefix = self.client_oid_prefix
        if not (1 <= len(prefix) <= 4 and CLIENT_OID_PATTERN.match(prefix)):
            raise ValueError(
                f"{owner}.client_oid_prefix must be 1-4 characters of [0-9A-Za-z_#-], "
                f"got {prefix!r}"
            )
        for name in (
            "maintenance_interval_ms",
            "hedge_interval_ms",
            "kill_retry_interval_ms",
            "position_settle_ms",
            "poll_interval_ms",
            "unknown_order_grace_ms",
            "closed_orders_kept",
            "seen_trades_kept",
        ):
            require_count(owner, name, getattr(self, name))
        for name in ("kill_timeout_s", "flatten_timeout_s", "drift_check_interval_s"):
            require_positive(owner, name, getattr(self, name))
        require_number(
            owner, "journal_lookback_h", self.journal_lookback_h, low=0.0, high=24.0 * 365
        )


@dataclass(frozen=True, slots=True)
class PaperVenueConfig:
    """In-process matching on real market data, with the order-entry latency of the real
    thing. The market we match on reached us `feed_latency_ms` (else half of `round_trip_ms`)
    after the exchange had it, so a request meets the matching engine `reaction_us` (our CPU from
    the frame to the request leaving) plus half the round trip plus the feed's delay after it is
    made, and what the exchange then says reaches us at once in that frame (see
    engine/trading/paper_venue.py). So a cancel can lose its race against a fill, as live.
    `latency_jitter` > 0 draws each half of the round trip from a lognormal around its mean
    (that sigma), seeded by `latency_seed` so a run repeats exactly. On a recording all of it
    runs in market time."""

    round_trip_ms: float = 5.0
    """To Bitget and back (a colocated box sees ~1-2 ms, a home line 20-60)."""
    reaction_us: float = 140.0
    """The cancel lane's measured reaction p50 (`hft-console bench --reaction`)."""
    feed_latency_ms: float | None = None
    """How long after the exchange has it the market reaches us; None: half the round trip
    (a symmetric network). A capture's own (receive time - exchange time) belongs here."""
    latency_jitter: float = 0.0
    latency_seed: int = 0
    maker_fee_rate: float = 0.0002
    taker_fee_rate: float = 0.0006
    initial_balance: float = 10_000.0
    leverage: int = 20

    def __post_init__(self) -> None:
        owner = "PaperVenueConfig"
        require_number(owner, "round_trip_ms", self.round_trip_ms, low=0.0, high=10_000.0)
        require_number(owner, "reaction_us", self.reaction_us, low=0.0, high=1_000_000.0)
        require_number(owner, "latency_jitter", self.latency_jitter, low=0.0, high=2.0)
        if self.feed_latency_ms is not None:
            require_number(owner, "feed_latency_ms", self.feed_latency_ms, low=0.0, high=10_000.0)
        if not isinstance(self.latency_seed, int) or isinstance(self.latency_seed, bool):
            raise ValueError(f"{owner}.latency_seed must be an integer, got {self.latency_seed!r}")
        require_number(owner, "maker_fee_rate", self.maker_fee_rate, low=-0.01, high=0.01)
        require_number(owner, "taker_fee_rate", self.taker_fee_rate, low=-0.01, high=0.01)
        require_positive(owner, "initial_balance", self.initial_balance)
        require_integer(owner, "leverage", self.leverage, 1, 125)

    def fee_rates(self, instrument: Instrument) -> tuple[float, float]:
        """The maker and taker rates `instrument` is charged: the ones it carries (its
        contract's, or [trading.fees]'), else these defaults."""
        maker, taker = instrument.maker_fee_rate, instrument.taker_fee_rate
        return (
            maker if maker is not None else self.maker_fee_rate,
            taker if taker is not None else self.taker_fee_rate,
        )


def default_risk_config() -> RiskGatewayConfig:
    """Small, conservative limits for the default book, BTCUSDT quoted and hedged with
    ETHUSDT (a few hundred USDT per symbol); any other book passes its own (the settings
    size them from notionals per symbol)."""
    limits = RiskLimits(
        symbols=(
            SymbolLimits("BTCUSDT", max_position=0.02, max_notional=2_000, max_order_size=0.01),
            SymbolLimits("ETHUSDT", max_position=0.6, max_notional=2_500, max_order_size=0.3),
        ),
        max_net_delta=1_500,
        daily_loss_soft=150,
        daily_loss_hard=300,
    )
    bounds = OverrideBounds(
        max_position={"BTCUSDT": 0.05, "ETHUSDT": 1.5},
        max_net_delta=3_000,
        max_slippage_bps=20,
        max_orders_per_second=10,
        max_orders_per_minute=400,
    )
    return RiskGatewayConfig(
        limits=limits,
        bounds=bounds,
        hedge_symbol="ETHUSDT",
        hedge_ratio=1.0,
        hedge_ratio_band=(0.5, 1.0),
    )


@dataclass(frozen=True, slots=True)
class TradingConfig:
    """Everything the trading side needs; credentials are passed apart, never stored here.

    `rest_url`/`private_ws_url`: None means the mode's default (Bitget's hosts for demo and
    live, the in-process simulator for sim). `live_confirmed` is set only by the command line
    after `--live` and the typed confirmation; LIVE refuses to start without it.
    """

    mode: TradingMode = TradingMode.SIM
    strategies: tuple[QuotingStrategyConfig, ...] = (QuotingStrategyConfig(),)
    """One per quoted symbol, in the book's order."""
    hedge: HedgeConfig | None = field(default_factory=HedgeConfig)
    """The book's hedge; None: the book is not hedged."""
    risk: RiskGatewayConfig = field(default_factory=default_risk_config)
    executor: OrderExecutorConfig = field(default_factory=OrderExecutorConfig)
    paper: PaperVenueConfig = field(default_factory=PaperVenueConfig)
    instruments: tuple[Instrument, ...] = (BTCUSDT, ETHUSDT)
    journal_path: Path | None = None
    rest_url: str | None = None
    private_ws_url: str | None = None
    cancel_lane: bool = True
    rest_timeout_s: float = 3.0
    """How long a REST answer may take before its outcome counts as unknown."""
    contract_check_interval_s: float = 300.0
    """How often a venue's contract table is read again while trading (a tick or lot that
    changes is followed); demo, live and a simulator started apart."""
    journal_durable: bool = True
    """False for backtests (JournalConfig.durable)."""
    live_confirmed: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", TradingMode(self.mode))
        require_number("TradingConfig", "rest_timeout_s", self.rest_timeout_s, low=0.05, high=60.0)
        require_number(
            "TradingConfig",
            "contract_check_interval_s",
            self.contract_check_interval_s,
            low=1.0,
            high=86_400.0,
        )
        if self.journal_path is not None:
            object.__setattr__(self, "journal_path", Path(self.journal_path))
        if not self.strategies:
            raise ValueError("TradingConfig.strategies must quote at least one symbol")
        check_book_symbols(self.quoted, self.hedge_symbol)
        risk_symbols = [limits.symbol for limits in self.risk.limits.symbols]
        without = [symbol for symbol in self.symbols if symbol not in risk_symbols]
        if without:
            raise ValueError(
                f"{', '.join(without)} {'has' if len(without) == 1 else 'have'} no risk limits "
                f"(limits cover {', '.join(risk_symbols)})"
            )
        if self.hedge_symbol != self.risk.hedge_symbol:
            raise ValueError(
                f"the book hedges on {self.hedge_symbol} but the risk gateway counts "
                f"{self.risk.hedge_symbol} as the hedge: they must be the same symbol"
            )
        specs = {instrument.symbol for instrument in self.instruments}
        missing = [symbol for symbol in self.symbols if symbol not in specs]
        if missing:
            raise ValueError(f"no instrument spec (tick, lot) for {missing}")
        self._require_a_lot_to_quote()
        if self.mode is TradingMode.LIVE and not self.live_confirmed:
            raise ValueError("live trading needs --live and the typed confirmation")
        if self.mode is TradingMode.PAPER and (self.rest_url or self.private_ws_url):
            raise ValueError("paper trading matches in-process: it takes no REST or private url")

    def _require_a_lot_to_quote(self) -> None:
        """Quotes are whole lots, rounded down: a quote size or a max position (each times the
        starting risk scale) below one lot of its symbol would never send a quote."""
        scale = self.risk.risk_scale
        for strategy in self.strategies:
            symbol = strategy.symbol
            instrument = self.instrument(symbol)
            lot = instrument.size_step
            below = [
                f"{name} {size:g}"
                for name, size in (
                    ("quote_size", strategy.quote_size),
                    ("max_position", self.risk.limits.for_symbol(symbol).max_position),
                )
                if size * scale < lot and not instrument.is_on_step(size * scale)
            ]
            if below:
                scaled = "" if scale == 1 else f" at risk_scale {scale:g}"
                raise ValueError(
                    f"{' and '.join(below)}{scaled} is below one lot of {symbol} ({lot:g}): no "
                    "quote could be sent; make it one lot or more"
                )

    @property
    def quoted(self) -> tuple[str, ...]:
        """The quoted symbols, in the book's order."""
        return tuple(strategy.symbol for strategy in self.strategies)

    @property
    def hedge_symbol(self) -> str | None:
        return self.hedge.symbol if self.hedge is not None else None

    @property
    def symbols(self) -> tuple[str, ...]:
        """The quoted symbols, then the hedge."""
        hedge = self.hedge_symbol
        return self.quoted + ((hedge,) if hedge is not None else ())

    def strategy(self, symbol: str) -> QuotingStrategyConfig:
        """The quoting settings of `symbol` (KeyError: not quoted)."""
        for strategy in self.strategies:
            if strategy.symbol == symbol:
                return strategy
        raise KeyError(symbol)

    def instrument(self, symbol: str) -> Instrument:
        for instrument in self.instruments:
            if instrument.symbol == symbol:
                return instrument
        raise KeyError(symbol)

    def resolved_journal_path(self) -> Path:
        return self.journal_path if self.journal_path is not None else default_journal_path()

    def resolved_rest_url(self) -> str | None:
        """The REST host orders go to; None for the in-process simulator and paper."""
        if self.rest_url is not None:
            return self.rest_url
        if self.mode in (TradingMode.DEMO, TradingMode.LIVE):
            return BITGET_REST_URL
        return None

    def resolved_private_ws_url(self) -> str | None:
        if self.private_ws_url is not None:
            return self.private_ws_url
        if self.mode is TradingMode.DEMO:
            return BITGET_DEMO_PRIVATE_URL
        if self.mode is TradingMode.LIVE:
            return BITGET_PRIVATE_URL
        return None
