"""What a backtest's trading made, from its journal and the mids of its books.

- PnL per symbol with average-cost accounting (as the exchange keeps a position's entry price):
  realized on the part a fill closes, unrealized on what is left at the last mid, fees signed
  by their effect on PnL (paid: negative), net = realized + unrealized + fees. Money in the
  symbol's quote coin (USDT for the USDT-M perpetuals).
- Activity: orders sent, cancels, denials, fills (maker / taker) and their volume, the fill
  ratio (orders that traded / orders sent), the time each side of each quoted symbol had a
  quote resting, the inventory (largest, time-weighted mean of the position and of its size),
  the time spent in each trading state.
- Markouts, the market maker's measure of adverse selection: for a fill at price p on side s
  (+1 buy, -1 sell), s * (mid(t + h) - p) / p in bps at h = 100 ms, 1 s, 5 s, 30 s: positive
  when the market moved our way after the fill. The same for every quote a gate pulled
  (EMERGENCY's cancel-all, a pulled side): what it would have made or lost had it filled then.
- Series for the charts, on a fixed market-time grid: the net PnL marked to the mid (equity),
  the first quoted symbol's position and its mid, and the book's delta before and after the
  hedge.

A book quotes several symbols (`SessionRecord.quoted`) and may hedge them on one more: its
figures are the book's (the PnL summed, the quotes' fills of every quoted symbol) and each
quoted symbol's (`SymbolResult`, `QuotingResult`, `SessionMetrics.quote_figures(symbol)`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from engine.journal import JournalEntry
from engine.laya.scorecard import ScorecardView
from engine.market.contracts import MarketContract
from engine.market.instruments import Instrument, base_coin
from engine.pipeline import LayaStillWarmingUp
from engine.risk.events import RiskLimit
from engine.tools.backtest.session import MidSeries, SessionRecord

HORIZONS_MS = (100, 1_000, 5_000, 30_000)
SERIES_MAX_POINTS = 1_200
"""A session's series have at most this many points (and the end): 1 s apart up to 20 min."""
MARK_STEP_S = 60
"""`SessionMetrics.marks` every this many seconds: blocks are whole multiples of it."""
Z_95 = 1.96
"""A mean +- this many standard errors is its 95% interval (normal approximation)."""
_SIZE_EPSILON = 1e-12
_STATES = ("ACTIVE", "PAUSED", "REDUCING", "HALTED")


@dataclass(frozen=True, slots=True)
class FillRow:
    """One fill, with its markout at each of `HORIZONS_MS` (NaN past the recording's end)."""

    at_ns: int
    symbol: str
    side: str
    price: float
    size: float
    maker: bool
    fee: float
    """Signed by its effect on PnL: a fee paid is negative."""
    role: str
    markouts_bps: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class PulledQuote:
    """A resting quote a gate cancelled: when, which side, at what price, and its markouts."""

    at_ns: int
    symbol: str
    side: str
    price: float
    action: str
    markouts_bps: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class MarkoutStats:
    horizon_ms: int
    count: int
    mean_bps: float
    median_bps: float
    p10_bps: float
    p90_bps: float


@dataclass(frozen=True, slots=True)
class MarkoutMean:
    """Some fills' mean markout at one horizon and its standard error (their spread over the
    root of their count); NaN without fills, the error NaN with fewer than two."""

    count: int
    mean_bps: float
    standard_error_bps: float

    @classmethod
    def of(cls, markouts_bps: np.ndarray) -> MarkoutMean:
        """Of the finite ones (a markout past the recording's end is NaN)."""
        values = markouts_bps[np.isfinite(markouts_bps)]
        if not values.size:
            return cls(0, math.nan, math.nan)
        spread = float(np.std(values, ddof=1)) if values.size > 1 else math.nan
        return cls(int(values.size), float(values.mean()), spread / math.sqrt(values.size))


def saving_half_width(standard_error_bps: float, base_standard_error_bps: float) -> float:
    """Half the 95% interval of the difference of two mean markouts, their fills taken as
    independent (a gate's fills overlap the ungated run's, so this is conservative)."""
    return Z_95 * float(np.hypot(standard_error_bps, base_standard_error_bps))


@dataclass(frozen=True, slots=True)
class Saving:
    """What a gate adds to the mean markout of the quotes' fills against another run (no
    gate), bps a fill, and half its 95% interval."""

    bps: float
    half_width_bps: float

    @classmethod
    def between(cls, gate: MarkoutMean, base: MarkoutMean) -> Saving:
        return cls(
            gate.mean_bps - base.mean_bps,
            saving_half_width(gate.standard_error_bps, base.standard_error_bps),
        )

    @property
    def interval(self) -> str:
        """Where its 95% interval lies: "above zero" or "below zero" (beyond the noise),
        "holds zero" (within it), "n/a" (too few fills to tell)."""
        if math.isnan(self.bps) or math.isnan(self.half_width_bps):
            return "n/a"
        if self.bps - self.half_width_bps > 0:
            return "above zero"
        if self.bps + self.half_width_bps < 0:
            return "below zero"
        return "holds zero"


@dataclass(frozen=True, slots=True)
class QuoteFigures:
    """What a run made in some market time (all of it, or a block) and its quotes' fills."""

    start_ns: int
    end_ns: int
    net: float
    quote_fills: int
    markout_1s: MarkoutMean
    """The quotes' fills' 1 s markout."""

    @property
    def hours(self) -> float:
        return (self.end_ns - self.start_ns) / 3.6e12

    @property
    def net_per_hour(self) -> float:
        return self.net / self.hours if self.end_ns > self.start_ns else math.nan


@dataclass(frozen=True, slots=True)
class SymbolResult:
    symbol: str
    quote_coin: str
    base_coin: str
    fills: int
    maker_fills: int
    taker_fills: int
    volume: float
    """Traded notional, in the quote coin."""
    realized: float
    unrealized: float
    fees: float
    net: float
    end_position: float
    max_abs_position: float
    mean_position: float
    """Time-weighted over the session."""
    mean_abs_position: float
    instrument: Instrument | None = None
    """The contract it traded on (None: a symbol of the recording it did not trade)."""
    contract: MarketContract | None = None
    """Where that contract and its fees came from, where the run said."""


@dataclass(frozen=True, slots=True)
class DeltaFigures:
    """A delta series (`SessionSeries.book_delta`, `net_delta`): its value at the end, its
    mean size and its largest size over the series' points, in USDT."""

    end: float
    mean_abs: float
    max_abs: float

    @classmethod
    def of(cls, delta: np.ndarray) -> DeltaFigures:
        size = np.abs(delta)
        return cls(float(delta[-1]), float(size.mean()), float(size.max()))


@dataclass(frozen=True, slots=True)
class QuotingResult:
    """One quoted symbol's quotes: the time each side rested, and their fills' markouts."""

    symbol: str
    uptime: dict[str, float]
    """Fraction of the session a quote of ours rested on it, per side ("bid", "ask")."""
    quote_fill_markouts: tuple[MarkoutStats, ...]


@dataclass(frozen=True, slots=True, eq=False)
class SessionSeries:
    """The session sampled every `step_s` of market time from its first frame, and at its end
    (the last frame, or a later fill)."""

    at_ns: np.ndarray
    equity: np.ndarray
    """Net PnL so far over every symbol, in the quote coin: realized, fees, and what is open
    marked to the mid in force."""
    position: np.ndarray
    """The first quoted symbol's, in its base coin."""
    mid: np.ndarray
    """The first quoted symbol's; NaN before its first book."""
    book_delta: np.ndarray
    """The quoted symbols' positions at the mid in force, each times its weight in the net
    delta in force then (its beta, as Kev left it: `_WeightPath`), summed: what the hedge
    offsets, in USDT."""
    net_delta: np.ndarray
    """`book_delta` with the hedge's position weighted by the hedge ratio in force then: the
    net delta the risk gateway caps."""
    step_s: float


@dataclass(frozen=True, slots=True)
class SessionMetrics:
    label: str
    recording: str
    quoted: tuple[str, ...]
    """The book's quoted symbols, in its order (a pair's one)."""
    span_s: float
    symbols: tuple[SymbolResult, ...]
    orders_sent: int
    cancels: int
    denials: int
    orders_filled: int
    quoting: tuple[QuotingResult, ...]
    """Each quoted symbol's, in the book's order."""
    state_seconds: dict[str, float]
    quote_fill_markouts: tuple[MarkoutStats, ...]
    """Over the quoted symbols' maker fills (the quotes): adverse selection."""
    hedge_markouts: tuple[MarkoutStats, ...]
    pulled_markouts: tuple[MarkoutStats, ...]
    verdicts: dict[str, int]
    actions: dict[str, int]
    kev: dict[str, int]
    frames: int
    wall_s: float
    cpu_s: float
    fills: tuple[FillRow, ...] = field(repr=False)
    pulled: tuple[PulledQuote, ...] = field(repr=False)
    series: SessionSeries = field(repr=False)
    marks: SessionSeries = field(repr=False)
    """The same every `MARK_STEP_S` of market time from the first frame (and at the end): the
    equity at the edges of blocks (`block_figures`), exact where they fall on its points."""
    recording_problem: str | None = None
    rss_kb_at_100k: int | None = None
    rss_kb_end: int = 0
    laya_warming: tuple[LayaStillWarmingUp, ...] = ()
    """The symbols Laya was still warming up on at the end (SessionRecord's)."""
    kev_offered: int = 0
    """Non-HOLD verdicts offered to Kev; `kev` counts the decisions it made of them."""
    scorecard: ScorecardView | None = None
    """Laya's scorecard at the end (SessionRecord's)."""
    hedge: str | None = None
    """The book's hedge (None: not hedged)."""

    @property
    def is_book(self) -> bool:
        """Whether it quoted several symbols (a pair quotes one)."""
        return len(self.quoted) > 1

    @property
    def uptime(self) -> dict[str, float]:
        """Fraction of the session a quote of ours rested, per side ("bid", "ask"): a pair's
        on its quoted symbol, a book's the mean over its quoted symbols."""
        return {
            side: sum(quoting.uptime[side] for quoting in self.quoting) / len(self.quoting)
            for side in ("bid", "ask")
        }

    @property
    def hours(self) -> float:
        return self.span_s / 3600.0

    @property
    def net(self) -> float:
        return sum(result.net for result in self.symbols)

    @property
    def realized(self) -> float:
        return sum(result.realized for result in self.symbols)

    @property
    def unrealized(self) -> float:
        return sum(result.unrealized for result in self.symbols)

    @property
    def fees(self) -> float:
        return sum(result.fees for result in self.symbols)

    @property
    def fill_count(self) -> int:
        """Every fill, of every symbol (the hedge's too), maker and taker: a run's "fills"."""
        return sum(result.fills for result in self.symbols)

    @property
    def quote_fills(self) -> int:
        """The quoted symbols' maker fills: the quotes that traded ("quote fills")."""
        return sum(self.result(symbol).maker_fills for symbol in self.quoted)

    @property
    def frames_per_s(self) -> float:
        return self.frames / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def frames_per_cpu_s(self) -> float:
        return self.frames / self.cpu_s if self.cpu_s > 0 else 0.0

    @property
    def fill_ratio(self) -> float:
        return self.orders_filled / self.orders_sent if self.orders_sent else 0.0

    def markout(self, horizon_ms: int, which: str = "fill") -> MarkoutStats:
        table = {"fill": self.quote_fill_markouts, "hedge": self.hedge_markouts}.get(
            which, self.pulled_markouts
        )
        return next(stats for stats in table if stats.horizon_ms == horizon_ms)

    def result(self, symbol: str) -> SymbolResult:
        return next(result for result in self.symbols if result.symbol == symbol)

    def quote_figures(self, symbol: str | None = None) -> QuoteFigures:
        """The whole run's: the book's, or one quoted symbol's (its net, its quotes' fills)."""
        _, markouts = self._quote_markouts_1s(symbol)
        start_ns = int(self.marks.at_ns[0])
        span_ns = round(self.span_s * 1e9)
        if symbol is None:
            net, quote_fills = self.net, self.quote_fills
        else:
            result = self.result(symbol)
            net, quote_fills = result.net, result.maker_fills
        return QuoteFigures(
            start_ns, start_ns + span_ns, net, quote_fills, MarkoutMean.of(markouts)
        )

    def block_figures(self, block_s: int) -> tuple[QuoteFigures, ...]:
        """The run cut into blocks of `block_s` of market time from its first frame, the
        remainder joining the last (as train cuts a recording into validation blocks): a
        block's net is the change in the equity of `marks` between its edges, its quotes'
        fills those filled in it. Raises ValueError for a block that is not a whole number of
        `MARK_STEP_S`, or longer than the run."""
        if block_s <= 0 or block_s % MARK_STEP_S:
            raise ValueError(
                f"a block of {block_s:g} s is not a whole number of {MARK_STEP_S} s of market"
            )
        count = int(self.span_s // block_s)
        if count < 1:
            raise ValueError(
                f"a block of {block_s:,} s is longer than the run's {self.span_s:,.1f} s of market"
            )
        at_ns = self.marks.at_ns
        start_ns = int(at_ns[0])
        edges = [start_ns + block * block_s * 1_000_000_000 for block in range(count)]
        edges.append(int(at_ns[-1]))
        equity = self.marks.equity[np.searchsorted(at_ns, edges, side="right") - 1]
        times, markouts = self._quote_markouts_1s()
        block_of = np.searchsorted(edges[1:-1], times, side="right")
        return tuple(
            QuoteFigures(
                edges[block],
                edges[block + 1],
                float(equity[block + 1] - equity[block]),
                int(np.count_nonzero(block_of == block)),
                MarkoutMean.of(markouts[block_of == block]),
            )
            for block in range(count)
        )

    def _quote_markouts_1s(self, symbol: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The quotes' fills' times and 1 s markouts: the book's, or `symbol`'s."""
        column = HORIZONS_MS.index(1_000)
        quoted = self.quoted if symbol is None else (symbol,)
        quotes = [row for row in self.fills if row.symbol in quoted and row.maker]
        times = np.array([row.at_ns for row in quotes], np.int64)
        return times, np.array([row.markouts_bps[column] for row in quotes], float)


def session_metrics(record: SessionRecord) -> SessionMetrics:
    entries = record.entries
    orders = _orders(entries)
    fills = _fill_rows(entries, orders, record.mids)
    instruments = {instrument.symbol: instrument for instrument in record.instruments}
    paths = {
        symbol: _PositionPath.of(symbol, fills, instruments.get(symbol))
        for symbol in record.symbols
    }
    symbols = tuple(
        _symbol_result(symbol, fills, paths[symbol], record) for symbol in record.symbols
    )
    weights = _WeightPath.of_each(record)
    quoted_maker = [f for f in fills if f.symbol in record.quoted and f.maker]
    hedge = [f for f in fills if f.symbol not in record.quoted]
    quoting = tuple(
        QuotingResult(
            symbol,
            _uptime(orders, record, symbol),
            markout_stats(row.markouts_bps for row in quoted_maker if row.symbol == symbol),
        )
        for symbol in record.quoted
    )
    pulled = _pulled_quotes(entries, orders, record)
    kinds = Counter(entry.kind for entry in entries)
    return SessionMetrics(
        label=record.label,
        recording=record.recording,
        quoted=record.quoted,
        span_s=record.span_s,
        symbols=symbols,
        orders_sent=kinds["order_approved"],
        cancels=sum(
            1
            for entry in entries
            if entry.kind == "order_intent" and entry.payload.get("action") == "cancel"
        ),
        denials=kinds["order_denied"],
        orders_filled=len(_filled_oids(entries)),
        quoting=quoting,
        state_seconds=_state_seconds(entries, record),
        quote_fill_markouts=markout_stats(row.markouts_bps for row in quoted_maker),
        hedge_markouts=markout_stats(row.markouts_bps for row in hedge),
        pulled_markouts=markout_stats(quote.markouts_bps for quote in pulled),
        verdicts=dict(record.verdicts),
        actions=dict(
            Counter(
                _action_kind(str(entry.payload.get("action", "")))
                for entry in entries
                if entry.kind == "verdict_action"
            )
        ),
        kev=dict(
            Counter(
                str(entry.payload.get("outcome", "?"))
                for entry in entries
                if entry.kind == "kev_decision"
            )
        ),
        frames=record.frames,
        wall_s=record.wall_s,
        cpu_s=record.cpu_s,
        fills=tuple(fills),
        pulled=tuple(pulled),
        series=_series(record, paths, weights),
        marks=_series(record, paths, weights, MARK_STEP_S),
        recording_problem=record.recording_problem,
        rss_kb_at_100k=record.rss_kb_at_100k,
        rss_kb_end=record.rss_kb_end,
        laya_warming=record.laya_warming,
        kev_offered=record.kev_offered,
        scorecard=record.scorecard,
        hedge=record.hedge,
    )


def markout_stats(rows: Iterable[Sequence[float]]) -> tuple[MarkoutStats, ...]:
    table = np.asarray(list(rows), float).reshape(-1, len(HORIZONS_MS))
    stats = []
    for column, horizon in enumerate(HORIZONS_MS):
        values = table[:, column]
        values = values[np.isfinite(values)]
        if not len(values):
            stats.append(MarkoutStats(horizon, 0, math.nan, math.nan, math.nan, math.nan))
            continue
        p10, median, p90 = np.percentile(values, (10, 50, 90))
        stats.append(
            MarkoutStats(
                horizon, len(values), float(values.mean()), float(median), float(p10), float(p90)
            )
        )
    return tuple(stats)


def markouts_bps(mids: MidSeries | None, at_ns: np.ndarray, price: np.ndarray, sign: np.ndarray):
    """[n, len(HORIZONS_MS)] markouts of trades at `price` on side `sign` (+1 / -1)."""
    if mids is None or not len(at_ns):
        return np.full((len(at_ns), len(HORIZONS_MS)), np.nan)
    columns = [
        sign * (mids.at(at_ns + horizon * 1_000_000) - price) / price * 1e4
        for horizon in HORIZONS_MS
    ]
    return np.column_stack(columns)


@dataclass(slots=True)
class _Order:
    client_oid: str
    symbol: str
    side: str
    price: float
    size: float
    role: str
    placed_ns: int | None = None
    ended_ns: int | None = None
    filled: float = 0.0


def _orders(entries: Sequence[JournalEntry]) -> dict[str, _Order]:
    """Every order we sent, with when it rested and when it ended (cancelled or filled)."""
    orders: dict[str, _Order] = {}
    for entry in entries:
        payload = entry.payload
        kind = entry.kind
        if kind == "order_approved":
            oid = str(payload["client_oid"])
            orders[oid] = _Order(
                oid,
                str(payload["symbol"]),
                str(payload["side"]),
                float(payload.get("price") or math.nan),
                float(payload["size"]),
                str(payload.get("role", "")),
            )
            continue
        order = orders.get(str(payload.get("client_oid", "")))
        if order is None:
            continue
        if kind == "order_ack" and payload.get("event") == "placed":
            order.placed_ns = entry.at_ns
        elif (
            kind == "order_ack" and payload.get("event") in ("canceled", "missing_at_venue")
        ) or kind == "order_reject":
            order.ended_ns = order.ended_ns or entry.at_ns
        elif kind == "fill":
            order.filled += float(payload["size"])
            if order.filled >= order.size - _SIZE_EPSILON:
                order.ended_ns = order.ended_ns or entry.at_ns
    return orders


def _filled_oids(entries: Sequence[JournalEntry]) -> set[str]:
    return {str(entry.payload.get("client_oid")) for entry in entries if entry.kind == "fill"}


def _fill_rows(
    entries: Sequence[JournalEntry], orders: dict[str, _Order], mids: dict[str, MidSeries]
) -> list[FillRow]:
    raw = [entry for entry in entries if entry.kind == "fill"]
    by_symbol: dict[str, list[JournalEntry]] = {}
    for entry in raw:
        by_symbol.setdefault(str(entry.payload["symbol"]), []).append(entry)
    rows: list[FillRow] = []
    for symbol, symbol_fills in by_symbol.items():
        # The matching engine's time of the fill (ms), not when its push reached us.
        at_ns = np.asarray([int(e.payload["filled_ms"]) * 1_000_000 for e in symbol_fills])
        price = np.asarray([float(e.payload["price"]) for e in symbol_fills])
        sign = np.asarray([1.0 if e.payload["side"] == "buy" else -1.0 for e in symbol_fills])
        table = markouts_bps(mids.get(symbol), at_ns, price, sign)
        for index, entry in enumerate(symbol_fills):
            payload = entry.payload
            order = orders.get(str(payload.get("client_oid")))
            rows.append(
                FillRow(
                    int(at_ns[index]),
                    symbol,
                    str(payload["side"]),
                    float(price[index]),
                    float(payload["size"]),
                    bool(payload.get("maker")),
                    -float(payload.get("fee") or 0.0),
                    order.role if order is not None else "",
                    tuple(float(value) for value in table[index]),
                )
            )
    rows.sort(key=lambda row: row.at_ns)
    return rows


@dataclass(frozen=True, slots=True)
class _PositionPath:
    """A symbol's position with average-cost accounting (as the exchange keeps a position's
    entry price): flat before the first fill (row 0), then as it stood after each fill."""

    at_ns: np.ndarray
    position: np.ndarray
    average: np.ndarray
    """The open position's entry price (0 when flat)."""
    realized: np.ndarray
    fees: np.ndarray

    @classmethod
    def of(cls, symbol: str, fills: Sequence[FillRow], spec: Instrument | None) -> _PositionPath:
        position = average = realized = fees = 0.0
        at_ns = [np.iinfo(np.int64).min]
        rows = [(position, average, realized, fees)]
        for fill in fills:
            if fill.symbol != symbol:
                continue
            fees += fill.fee
            signed = fill.size if fill.side == "buy" else -fill.size
            if not position or (position > 0) == (signed > 0):
                average = (average * abs(position) + fill.price * abs(signed)) / (
                    abs(position) + abs(signed)
                )
                position = _on_step(spec, position + signed)
            else:
                closing = min(abs(signed), abs(position))
                realized += closing * (fill.price - average) * (1.0 if position > 0 else -1.0)
                position = _on_step(spec, position + signed)
                if abs(position) < _SIZE_EPSILON:
                    position = average = 0.0
                elif (position > 0) == (signed > 0):  # crossed through zero: the rest opens anew
                    average = fill.price
            at_ns.append(fill.at_ns)
            rows.append((position, average, realized, fees))
        table = np.asarray(rows)
        return cls(np.asarray(at_ns, np.int64), *table.T)

    def index(self, times_ns: np.ndarray) -> np.ndarray:
        """The row in force at each time: after every fill at or before it."""
        return np.searchsorted(self.at_ns, times_ns, side="right") - 1

    def unrealized(self, index: np.ndarray | int, mid: np.ndarray | float) -> np.ndarray:
        """The open position of row `index` against its entry at `mid` (0 when flat)."""
        position = self.position[index]
        return np.where(position != 0, position * (mid - self.average[index]), 0.0)


def _on_step(spec: Instrument | None, size: float) -> float:
    """A sum of sizes on the contract's step, as its sizes are (0.1 + 0.2 is 0.3, not
    0.30000000000000004); off the step (a size of no contract spec) as it is."""
    if spec is None or not spec.is_on_step(size):
        return size
    return spec.size_of(spec.to_lots(size))


def _symbol_result(
    symbol: str, fills: Sequence[FillRow], path: _PositionPath, record: SessionRecord
) -> SymbolResult:
    mine = [fill for fill in fills if fill.symbol == symbol]
    maker = sum(fill.maker for fill in mine)
    mids = record.mids.get(symbol)
    last_mid = float(mids.mid[-1]) if mids is not None and len(mids.mid) else math.nan
    realized, fees = float(path.realized[-1]), float(path.fees[-1])
    unrealized = float(path.unrealized(-1, last_mid))
    changes = zip(path.at_ns[1:].tolist(), path.position[1:].tolist(), strict=True)
    mean, mean_abs = _time_weighted([(record.start_ns, 0.0), *changes], record.end_ns)
    quote = symbol[len(base_coin(symbol)) :] or "USDT"
    return SymbolResult(
        symbol,
        quote,
        base_coin(symbol),
        len(mine),
        maker,
        len(mine) - maker,
        sum(fill.price * fill.size for fill in mine),
        realized,
        unrealized,
        fees,
        realized + unrealized + fees,
        float(path.position[-1]),
        float(np.abs(path.position).max()),
        mean,
        mean_abs,
        next((i for i in record.instruments if i.symbol == symbol), None),
        record.contracts.get(symbol) if record.contracts is not None else None,
    )


@dataclass(frozen=True, slots=True)
class _WeightPath:
    """A symbol's weight in the net delta as the risk gateway counted it: the start's
    (`SessionRecord.delta_weights`), then each new one from the time the gateway set it (the
    journal's hedge ratio and beta limit changes: Kev's, or an operator's)."""

    at_ns: np.ndarray
    weight: np.ndarray

    @classmethod
    def of_each(cls, record: SessionRecord) -> dict[str, _WeightPath]:
        """Every traded symbol's, in one pass over the journal."""
        changes: dict[str, list[tuple[int, float]]] = {
            symbol: [(np.iinfo(np.int64).min, weight)]
            for symbol, weight in record.delta_weights.items()
        }
        for entry in record.entries:
            limit = entry.payload.get("limit") if entry.kind == "state_change" else None
            if limit == RiskLimit.HEDGE_RATIO:
                symbol = record.hedge
            elif limit == RiskLimit.BETA:
                symbol = entry.payload["symbol"]
            else:
                continue
            if symbol is not None:  # a symbol the start did not weigh weighed 1
                path = changes.setdefault(symbol, [(np.iinfo(np.int64).min, 1.0)])
                path.append((entry.at_ns, float(entry.payload["new"])))
        return {
            symbol: cls(np.array([at for at, _ in path], np.int64), np.array([w for _, w in path]))
            for symbol, path in changes.items()
        }

    def at(self, times_ns: np.ndarray) -> np.ndarray:
        """The weight in force at each time: after every change at or before it."""
        return self.weight[np.searchsorted(self.at_ns, times_ns, side="right") - 1]


def _series(
    record: SessionRecord,
    paths: dict[str, _PositionPath],
    weights: dict[str, _WeightPath],
    step_s: int | None = None,
) -> SessionSeries:
    """Every `step_s` seconds; by default the charts' step (`SERIES_MAX_POINTS`)."""
    end_ns = max([record.end_ns, *(int(path.at_ns[-1]) for path in paths.values())])
    span_s = max(0, end_ns - record.start_ns) / 1e9
    step_ns = (step_s or max(1, math.ceil(span_s / SERIES_MAX_POINTS))) * 1_000_000_000
    grid = np.append(np.arange(record.start_ns, end_ns, step_ns, dtype=np.int64), end_ns)
    equity = np.zeros(len(grid))
    position = np.zeros(len(grid))
    mid = np.full(len(grid), np.nan)
    book_delta = np.zeros(len(grid))
    hedge_delta = np.zeros(len(grid))
    for symbol, path in paths.items():
        index = path.index(grid)
        symbol_mid = _in_force(record.mids.get(symbol), grid)
        equity += path.realized[index] + path.fees[index] + path.unrealized(index, symbol_mid)
        # A flat symbol adds nothing, with a mid or not (NaN before its first book).
        notional = np.where(path.position[index] != 0, path.position[index] * symbol_mid, 0.0)
        weight = weights.get(symbol)
        weighted = notional if weight is None else weight.at(grid) * notional
        if symbol in record.quoted:
            book_delta += weighted
        elif symbol == record.hedge:
            hedge_delta += weighted
        if symbol == record.quoted[0]:
            position, mid = path.position[index], symbol_mid
    return SessionSeries(
        grid, equity, position, mid, book_delta, book_delta + hedge_delta, step_ns / 1e9
    )


def _in_force(mids: MidSeries | None, times_ns: np.ndarray) -> np.ndarray:
    """The mid of the last book at or before each time, held after the last book; NaN before
    the first (unlike `MidSeries.at`, for marking a position, not for a markout)."""
    if mids is None or not len(mids.at_ns):
        return np.full(len(times_ns), np.nan)
    index = np.searchsorted(mids.at_ns, times_ns, side="right") - 1
    return np.where(index >= 0, mids.mid[np.clip(index, 0, None)], np.nan)


def _time_weighted(path: list[tuple[int, float]], end_ns: int) -> tuple[float, float]:
    total = weighted = weighted_abs = 0.0
    for (at_ns, value), (next_ns, _) in zip(path, [*path[1:], (end_ns, 0.0)], strict=True):
        span = max(0, next_ns - at_ns)
        total += span
        weighted += span * value
        weighted_abs += span * abs(value)
    if not total:
        return 0.0, 0.0
    return weighted / total, weighted_abs / total


def _uptime(orders: dict[str, _Order], record: SessionRecord, symbol: str) -> dict[str, float]:
    span = record.end_ns - record.start_ns
    uptime = {}
    for role in ("bid", "ask"):
        intervals = sorted(
            (
                max(order.placed_ns, record.start_ns),
                min(order.ended_ns or record.end_ns, record.end_ns),
            )
            for order in orders.values()
            if order.symbol == symbol and order.role == role and order.placed_ns is not None
        )
        covered = 0
        reach = record.start_ns
        for start, end in intervals:
            start = max(start, reach)
            if end > start:
                covered += end - start
                reach = end
        uptime[role] = covered / span if span > 0 else 0.0
    return uptime


def _state_seconds(entries: Sequence[JournalEntry], record: SessionRecord) -> dict[str, float]:
    seconds = dict.fromkeys(_STATES, 0.0)
    state, since = "ACTIVE", record.start_ns
    for entry in entries:
        new = entry.payload.get("new") if entry.kind == "state_change" else None
        if new is None or new == state:
            continue
        at = min(max(entry.at_ns, record.start_ns), record.end_ns)
        seconds[state] = seconds.get(state, 0.0) + (at - since) / 1e9
        state, since = str(new), at
    seconds[state] = seconds.get(state, 0.0) + max(0, record.end_ns - since) / 1e9
    return seconds


def _pulled_quotes(
    entries: Sequence[JournalEntry], orders: dict[str, _Order], record: SessionRecord
) -> list[PulledQuote]:
    """Quotes a gate cancelled: a side pulled (its cancel's reason names the intent), or every
    quote resting at an EMERGENCY's cancel-all."""
    pulled: list[tuple[int, _Order, str]] = []
    for entry in entries:
        if entry.kind != "order_intent":
            continue
        payload = entry.payload
        reason = str(payload.get("reason", ""))
        action = payload.get("action")
        if action == "cancel" and (" PULL_ASKS" in reason or " PULL_BIDS" in reason):
            order = orders.get(str(payload.get("client_oid")))
            if order is not None:
                pulled.append((entry.at_ns, order, "pull " + order.role))
        elif action == "cancel_all" and "EMERGENCY" in reason:
            resting = [
                order
                for order in orders.values()
                if order.placed_ns is not None
                and order.placed_ns <= entry.at_ns
                and (order.ended_ns is None or order.ended_ns > entry.at_ns)
                and order.role in ("bid", "ask")
            ]
            pulled.extend((entry.at_ns, order, "emergency") for order in resting)
    quotes = []
    for symbol in {order.symbol for _, order, _ in pulled}:
        mine = [item for item in pulled if item[1].symbol == symbol]
        at_ns = np.asarray([at for at, _, _ in mine], np.int64)
        price = np.asarray([order.price for _, order, _ in mine])
        sign = np.asarray([1.0 if order.side == "buy" else -1.0 for _, order, _ in mine])
        table = markouts_bps(record.mids.get(symbol), at_ns, price, sign)
        quotes.extend(
            PulledQuote(
                int(at_ns[index]),
                symbol,
                order.side,
                order.price,
                action,
                tuple(float(value) for value in table[index]),
            )
            for index, (_, order, action) in enumerate(mine)
        )
    quotes.sort(key=lambda quote: quote.at_ns)
    return quotes


def _action_kind(action: str) -> str:
    """`cancel all (paper)` -> `cancel all`: the path is not the action."""
    return action.split(" (", 1)[0]
