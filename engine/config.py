"""The engine's configuration, read without loading ONNX Runtime, the feature kernels or the
simulator: the console reads and checks it before the engine process starts."""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.kev.config import KevClientConfig, KevHubConfig
from engine.laya.config import LayaClassifierConfig, require_model_keys, require_shadow_model
from engine.laya.decide import QuoteGate
from engine.market.instruments import Instrument
from engine.trading.config import TradingConfig, TradingMode
from engine.validation import require_count, require_integer, require_symbol


@dataclass(frozen=True, slots=True)
class MarketPipelineConfig:
    """`warmup_ms`: exchange time from a symbol's first book (and after a gap in its books as
    long) during which Laya gives no verdict on it and the intent is STAND_ASIDE: features over
    windows that are not filled yet sit outside what the model was trained on (the shipped
    model says EMERGENCY on most frames of its first 10 s). 0 acts on the first book."""

    symbols: tuple[str, ...] = ("BTCUSDT", "ETHUSDT")
    depth: int = 15
    event_log_size: int = 4096
    verdict_stream_size: int = 512
    warmup_ms: int = 0
    gate: QuoteGate = QuoteGate.LAYA
    imbalance_gate: float = 0.5
    """With `gate` IMBALANCE: |top-5 imbalance| beyond this pulls a side (0..1)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "gate", QuoteGate(self.gate))
        if not self.symbols:
            raise ValueError("MarketPipelineConfig.symbols must name at least one symbol")
        if not 0 < self.imbalance_gate < 1:
            raise ValueError(
                f"MarketPipelineConfig.imbalance_gate must be within (0, 1), "
                f"got {self.imbalance_gate!r}"
            )
        require_integer("MarketPipelineConfig", "warmup_ms", self.warmup_ms, 0, 3_600_000)
        for name in ("depth", "event_log_size", "verdict_stream_size"):
            require_count("MarketPipelineConfig", name, getattr(self, name))


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """Where market data comes from (a recording, a live websocket, or by default the
    in-process simulator) and, with `trading`, where orders go.

    Trading needs a market its venue can trade: SIM trades the simulator whose market it
    watches (the in-process one, or with `live_url` one started apart, whose REST is then
    `trading.rest_url`); DEMO and LIVE need Bitget's public feed (`live_url`); PAPER matches
    in-process on any market, recordings included.
    """

    symbols: tuple[str, ...] = ("BTCUSDT", "ETHUSDT")
    """The market's symbols: a book's quoted ones, then its hedge, or with no hedge the leader
    that every symbol's cross features read (subscribed, not traded; the last symbol)."""
    replay_path: str | None = None
    replay_speed: float | None = 1.0
    live_url: str | None = None
    feed_channels: tuple[str, ...] = ("books15", "trade")
    """The public channels of the websocket feed; `books` instead of `books15` builds each
    book from the incremental channel (seq gaps and checksums lead to a resync)."""
    sim_seed: int = 7
    laya: LayaClassifierConfig = field(default_factory=LayaClassifierConfig)
    laya_models: tuple[tuple[str, str], ...] = ()
    """(symbol or fnmatch pattern, model path) pairs ([laya.models]): each symbol runs on the
    model of its own key, else of the first pattern that matches it, else `laya`'s."""
    laya_shadow_model: str | None = None
    """A second Laya model scored beside the live one on every book, never acting (the
    scorecard, engine/laya/scorecard.py); None: none."""
    trading: TradingConfig | None = None
    status_interval_s: float = 0.1
    kev_client: KevClientConfig | None = field(default_factory=KevClientConfig)
    """Where Kev's llama-server answers; None runs without Kev. Kev acts only through the
    trading desk's risk gateway, so it runs only when `trading` is set."""
    kev_hub: KevHubConfig = field(default_factory=KevHubConfig)
    kev_answers_out: str | None = None
    """A replay with Kev writes each of Kev's answers here (engine/kev/answers.py)..."""
    kev_answers_in: str | None = None
    """... and a rerun plays them back from here instead of asking llama-server."""
    laya_keep_warm_ms: float | None = 5.0
    """A throwaway inference this often while idle keeps Laya's first run after a quiet spell
    fast (see InferenceWarmer); None switches it off."""
    laya_warmup_s: float = 0.0
    """Market seconds per symbol, from its first book and after a gap as long, in which Laya
    stands aside (no verdict, no quotes) while its feature windows fill; 0 (tests, short
    recordings) acts on the first book. The settings' default is 30 s."""
    quote_gate: QuoteGate = QuoteGate.LAYA
    """What pulls quotes (MarketPipelineConfig.gate); `imbalance_gate` its threshold."""
    imbalance_gate: float = 0.5
    instruments: tuple[Instrument, ...] = ()
    """The contracts of the market's symbols, where known (trading's are added): the console
    prints each book at its contract's decimals."""

    def __post_init__(self) -> None:
        if not self.symbols:
            raise ValueError("EngineConfig.symbols must name at least one symbol")
        for symbol in self.symbols:
            require_symbol("EngineConfig", "symbols", symbol)
        if len(set(self.symbols)) != len(self.symbols):
            raise ValueError(f"EngineConfig.symbols names a symbol twice: {self.symbols}")
        require_integer("EngineConfig", "sim_seed", self.sim_seed, 0)
        if self.replay_path is not None and self.live_url is not None:
            raise ValueError("choose a recording or a live url, not both")
        if self.replay_speed is not None and not self.replay_speed > 0:
            raise ValueError(f"replay_speed must be > 0 or None (max), got {self.replay_speed}")
        if not 0 < self.status_interval_s <= 10:
            raise ValueError(
                f"status_interval_s must be within (0, 10], got {self.status_interval_s}"
            )
        warm_ms = self.laya_keep_warm_ms
        if warm_ms is not None and not 0.5 <= warm_ms <= 1_000:
            raise ValueError(f"laya_keep_warm_ms must be within [0.5, 1000] or None, got {warm_ms}")
        if not 0 <= self.laya_warmup_s <= 3_600:
            raise ValueError(f"laya_warmup_s must be within [0, 3600] s, got {self.laya_warmup_s}")
        require_shadow_model(self.laya_shadow_model, self.laya.model_path)
        require_model_keys(dict(self.laya_models))
        if self.laya_models:
            # Only a model's own file says what it was trained on, and ONNX Runtime reads it:
            # loaded for a table that names models, not by whoever only reads the settings.
            from engine.laya.model import require_symbol_models

            require_symbol_models(self.laya, dict(self.laya_models), self.symbols)
        if (self.kev_answers_in or self.kev_answers_out) and self.replay_path is None:
            raise ValueError("Kev's answers are recorded and replayed only with a recording")
        if self.kev_answers_in and self.kev_answers_out:
            raise ValueError("Kev's answers are either recorded or replayed, not both")
        trading = self.trading
        if trading is None:
            return
        known = {instrument.symbol for instrument in self.instruments}
        object.__setattr__(
            self,
            "instruments",
            self.instruments + tuple(i for i in trading.instruments if i.symbol not in known),
        )
        book = trading.symbols
        if self.symbols[: len(book)] != book or len(self.symbols) > len(book) + (
            trading.hedge is None
        ):
            raise ValueError(
                f"the market symbols {', '.join(self.symbols)} must be the book's "
                f"{', '.join(book)}"
                + ("" if trading.hedge is not None else ", then at most a leader it does not trade")
            )
        mode = trading.mode
        if self.replay_path is not None and mode is not TradingMode.PAPER:
            raise ValueError("a recording can only be traded on paper (--mode paper)")
        if mode is TradingMode.SIM:
            if self.live_url is not None and trading.rest_url is None:
                raise ValueError(
                    "sim trading on a simulator started apart needs its REST url too "
                    "(--rest-url http://host:port)"
                )
            if self.live_url is None and trading.rest_url is not None:
                raise ValueError(
                    "a REST url for sim trading needs that simulator's public feed (--url)"
                )
        elif mode in (TradingMode.DEMO, TradingMode.LIVE) and self.live_url is None:
            raise ValueError(
                f"{mode.value} trading needs Bitget's public feed (--url), not the simulator"
            )

    @property
    def market_source(self) -> str:
        if self.replay_path is not None:
            return "replay"
        return "live" if self.live_url is not None else "sim"
