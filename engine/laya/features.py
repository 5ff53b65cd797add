"""Laya's 128 microstructure features, one numba kernel call per books15 frame.

Every feature carries across venues: bps, ratios, logs of normalised sizes, moves in the 1 s
sigma, and, for values tied to a venue's cadence, tick, depth or volatility, a trailing robust
z-score against the symbol's own recent past (`Z_SCORED_FEATURES`); four raw values stay for
Kev and the console (`VENUE_SCALED_FEATURES`). State per symbol lives in one float64 row
(running sums, exponentially weighted averages, a ring of recent (time, mid) pairs, the
z-scores' statistics), so each frame costs O(1) apart from short bounded scans of the mid
ring, however many symbols the book has: a book's cross features read one other row, the
leader's (`FeatureExtractorConfig`). Trades are read from the parser's `MarketTape` at the next
book frame of their symbol or of one whose cross features read it; nothing is ever read from
the future. `docs/features.md` documents each feature, and their shift between venues;
`FEATURE_NAMES` is the authoritative order. The kernels keep the GIL, as the fast path's others
do (`engine.feed.frame_kernel` says why).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from engine.feed.events import BookSnapshot
from engine.feed.tape import TRADE_TOTAL, MarketTape
from engine.laya.feature_set import FEATURE_COUNT

LEVELS = 15
DISTANCE_LEVELS = 10
"""Levels whose distance from the mid is a feature; deeper ones only enter slope and weights."""
JUMP_SIGMAS = 2.0
"""A frame whose mid moved this many 1 s sigmas counts as a jump (`ms_since_jump_z`, ...)."""

_KEEP = 1.0
_NEGATE = -1.0
"""A feature's factor in the mirror-image market (bids and asks swapped, every price move
reversed): signed returns, flows and imbalances turn; sizes, spreads and volatilities stay."""
_FEATURE_SIGNS: tuple[tuple[str, float], ...] = (
    *((f"bid_dist_z_{k}", _KEEP) for k in range(1, DISTANCE_LEVELS + 1)),
    *((f"ask_dist_z_{k}", _KEEP) for k in range(1, DISTANCE_LEVELS + 1)),
    ("log_sigma_1s_z", _KEEP),
    ("range_1s_sigmas", _KEEP),
    ("range_5s_sigmas", _KEEP),
    ("return_1s_sigmas", _NEGATE),
    ("log_vol_5s_over_sigma", _KEEP),
    ("jump_sigmas_1s", _KEEP),
    ("jump_sigmas_5s", _KEEP),
    ("jump_rate_30s_z", _KEEP),
    ("ms_since_jump_z", _KEEP),
    ("other_jump_sigmas_1s", _KEEP),
    *((f"bid_log_size_{k}", _KEEP) for k in range(1, LEVELS + 1)),
    *((f"ask_log_size_{k}", _KEEP) for k in range(1, LEVELS + 1)),
    ("obi_1", _NEGATE),
    ("obi_3", _NEGATE),
    ("obi_5", _NEGATE),
    ("obi_10", _NEGATE),
    ("obi_15", _NEGATE),
    ("depth_weighted_obi", _NEGATE),
    ("microprice_offset_bps", _NEGATE),
    ("spread_bps", _KEEP),
    ("bid_slope_z", _KEEP),
    ("ask_slope_z", _KEEP),
    ("pressure_mid_offset_spreads_5", _NEGATE),
    ("bid_levels_present", _KEEP),
    ("ask_levels_present", _KEEP),
    ("log_depth_ratio", _NEGATE),
    ("log_top_size_ratio", _NEGATE),
    ("ofi_top_z", _NEGATE),
    ("ofi_ewma_1s_z", _NEGATE),
    ("ofi_ewma_5s_z", _NEGATE),
    ("obi_1_ewma_1s", _NEGATE),
    ("obi_5_ewma_5s", _NEGATE),
    ("obi_5_change_z", _NEGATE),
    ("bid_top_size_change_z", _KEEP),
    ("ask_top_size_change_z", _KEEP),
    ("bid_depth_change_z", _KEEP),
    ("ask_depth_change_z", _KEEP),
    ("book_interval_z", _KEEP),
    ("mid_change_rate_z", _KEEP),
    ("return_last_frame_z", _NEGATE),
    ("return_500ms_sigmas", _NEGATE),
    ("obi_5_z", _NEGATE),
    ("return_5s_sigmas", _NEGATE),
    ("return_30s_sigmas", _NEGATE),
    ("realized_vol_5s_bps", _KEEP),
    ("realized_vol_60s_bps", _KEEP),
    ("log_vol_ratio", _KEEP),
    ("return_1s_z", _NEGATE),
    ("return_5s_z", _NEGATE),
    ("spread_z", _KEEP),
    ("vol_60s_over_sigma_z", _KEEP),
    ("drawdown_5s_sigmas", _NEGATE),
    ("runup_5s_sigmas", _NEGATE),
    ("flow_imbalance_1s", _NEGATE),
    ("flow_imbalance_5s", _NEGATE),
    ("flow_imbalance_30s", _NEGATE),
    ("signed_volume_1s_z", _NEGATE),
    ("signed_volume_5s_z", _NEGATE),
    ("signed_volume_30s_z", _NEGATE),
    ("trade_intensity_1s", _KEEP),
    ("trade_intensity_5s", _KEEP),
    ("trade_rate_30s_z", _KEEP),
    ("vpin", _KEEP),
    ("ms_since_trade_z", _KEEP),
    ("last_trade_sign", _NEGATE),
    ("last_trade_offset_spreads", _NEGATE),
    ("last_trade_log_size", _KEEP),
    ("count_imbalance_5s", _NEGATE),
    ("kyle_lambda_z", _KEEP),
    ("trades_since_book_z", _KEEP),
    ("other_return_1s_sigmas", _NEGATE),
    ("other_return_5s_sigmas", _NEGATE),
    ("other_obi_5", _NEGATE),
    ("other_flow_imbalance_5s", _NEGATE),
    ("relative_return_1s_sigmas", _NEGATE),
    ("relative_return_5s_sigmas", _NEGATE),
    ("beta_z", _KEEP),
    ("spread_residual_z", _NEGATE),
    ("other_log_vol_5s_over_sigma", _KEEP),
    ("other_spread_z", _KEEP),
)
"""Every feature in the model's input order, with its factor in the mirror image."""
FEATURE_NAMES: tuple[str, ...] = tuple(name for name, _ in _FEATURE_SIGNS)
VENUE_SCALED_FEATURES: tuple[str, ...] = (
    "microprice_offset_bps",
    "spread_bps",
    "realized_vol_5s_bps",
    "realized_vol_60s_bps",
)
"""Kept in the venue's own units (bps) for Kev and the console, which read them as such; they
shift with the venue's tick and volatility, so a trained model does not read them (their
normalised forms, `spread_z`, `log_vol_5s_over_sigma`, ..., are features too)."""
_Z_BY_OTHER_MEANS = ("return_1s_z", "return_5s_z", "spread_residual_z", "other_spread_z")
"""Named `_z` but not a trailing z-score of this row's own: against vol_60s, the pair's own
z-score, the other symbol's spread_z."""
Z_SCORED_FEATURES: tuple[str, ...] = tuple(
    name
    for name in FEATURE_NAMES
    if (name.endswith("_z") or "_z_" in name) and name not in _Z_BY_OTHER_MEANS
)
"""Features written as a trailing robust z-score of a raw value that is tied to the venue's
cadence, tick, depth or volatility (see docs/features.md for each raw value)."""
_MIRROR_PAIRS = (
    *((f"bid_dist_z_{k}", f"ask_dist_z_{k}") for k in range(1, DISTANCE_LEVELS + 1)),
    *((f"bid_log_size_{k}", f"ask_log_size_{k}") for k in range(1, LEVELS + 1)),
    ("bid_slope_z", "ask_slope_z"),
    ("bid_levels_present", "ask_levels_present"),
    ("bid_top_size_change_z", "ask_top_size_change_z"),
    ("bid_depth_change_z", "ask_depth_change_z"),
    ("drawdown_5s_sigmas", "runup_5s_sigmas"),
)
"""Features that trade places in the mirror image."""


def _mirror() -> tuple[np.ndarray, np.ndarray]:
    source = np.arange(len(FEATURE_NAMES))
    index = {name: k for k, name in enumerate(FEATURE_NAMES)}
    for a, b in _MIRROR_PAIRS:
        source[index[a]], source[index[b]] = index[b], index[a]
    return source, np.array([factor for _, factor in _FEATURE_SIGNS], np.float32)


MIRROR_SOURCE, MIRROR_SIGN = _mirror()
"""The features of the mirror-image market (bids and asks swapped, every price move
reversed): `features[:, MIRROR_SOURCE] * MIRROR_SIGN`. Its labels swap LEAN_BUY and
LEAN_SELL; training adds it, so a model reads the two sides alike."""
_Z_SLOTS = np.array([FEATURE_NAMES.index(name) for name in Z_SCORED_FEATURES], np.int64)
_CROSS_FIRST = FEATURE_NAMES.index("other_return_1s_sigmas")
"""Features from here on need another symbol; without one they read 0 (neutral)."""
CROSS_FEATURES: tuple[str, ...] = ("other_jump_sigmas_1s", *FEATURE_NAMES[_CROSS_FIRST:])
"""The features read from another symbol, the leader (the leader's: the first other symbol):
0 (neutral) for a symbol alone."""

# --- per-symbol state row layout -------------------------------------------------------------
(
    S_FRAMES,  # book frames seen
    S_LAST_TS,  # exchange ts of the previous frame (ms)
    S_MID,  # previous mid
    S_BID1,
    S_BID1_SIZE,
    S_ASK1,
    S_ASK1_SIZE,
    S_BID_DEPTH,  # previous 15-level bid size
    S_ASK_DEPTH,
    S_OBI5,
    S_TOP_SIZE_EWMA,  # mean top-of-book size, 30 s
    S_OFI_1S,
    S_OFI_5S,
    S_OBI1_1S,
    S_OBI5_5S,
    S_MID_CHANGES_1S,  # rate of mid changes per second
    S_VAR_5S,  # realized variance rate (bps^2 per second)
    S_VAR_60S,
    S_TRADES_READ,  # tape sequence number consumed so far
    S_TRADE_TS,  # exchange time the trade sums refer to
    S_BUY_1S,
    S_SELL_1S,
    S_BUY_5S,
    S_SELL_5S,
    S_BUY_30S,
    S_SELL_30S,
    S_COUNT_1S,
    S_COUNT_5S,
    S_COUNT_30S,
    S_BUY_COUNT_5S,
    S_SELL_COUNT_5S,
    S_TRADE_SIZE_EWMA,
    S_LAST_TRADE_TS,
    S_LAST_TRADE_PRICE,
    S_LAST_TRADE_SIZE,
    S_LAST_TRADE_SIDE,
    S_TRADES_SINCE_BOOK,
    S_SIGNED_SINCE_BOOK,  # signed volume since the previous book frame
    S_VPIN_BUCKET_SIZE,
    S_VPIN_BUY,  # current bucket
    S_VPIN_SELL,
    S_VPIN_SUM,  # sum of |buy - sell| over the ring of full buckets
    S_VPIN_FILLED,
    S_VPIN_NEXT,
    S_VOLUME_RATE_60S,  # traded volume per second
    S_KYLE_COV,
    S_KYLE_VAR,
    S_OTHER_MID_AT_LAST,  # the other symbol's mid at this symbol's previous frame
    S_BETA_COV,
    S_BETA_VAR,
    S_RESIDUAL_LEVEL,  # running sum of frame returns less beta times the other's (bps)
    S_RESIDUAL_MEAN,
    S_RESIDUAL_VAR,
    S_RET_1S,  # this frame's 1 s and 5 s returns, for the other symbol's cross features
    S_RET_5S,
    S_RING_NEXT,
    S_RING_COUNT,
    S_PTR_500MS,  # ring sequence numbers of the newest frame at least 0.5/1/5/30 s old
    S_PTR_1S,
    S_PTR_5S,
    S_PTR_30S,
    S_ABS_WEIGHT,  # exponentially weighted count and sum of |1 s return|, 150 s
    S_ABS_SUM,
    S_ABS_FLOOR_WEIGHT,  # the same over 1800 s: the floor a quiet spell cannot go under
    S_ABS_FLOOR_SUM,
    S_JUMP_1S,  # decayed maximum of |frame return| in 1 s sigmas
    S_JUMP_5S,
    S_JUMP_COUNT_30S,  # decayed count of jumps
    S_LAST_JUMP_TS,  # exchange time of the latest jump (0: none yet)
    S_RET_1S_SIGMAS,  # this frame's returns in its sigma, for the other symbol
    S_RET_5S_SIGMAS,
    S_LOG_VOL_OVER_SIGMA,
    S_SPREAD_Z,
    _STATE_SCALARS,
) = range(74)
VPIN_BUCKETS = 50
RING = 1024
_VPIN_BASE = _STATE_SCALARS
_RING_TS = _VPIN_BASE + VPIN_BUCKETS
_RING_MID = _RING_TS + RING
_Z_WEIGHT = _RING_MID + RING
"""Per z-scored feature: the weight (frames, decayed) of its statistics, the weighted mean of
its raw value, and its weighted mean absolute deviation from that mean."""
_Z_MEAN = _Z_WEIGHT + _Z_SLOTS.size
_Z_DEVIATION = _Z_MEAN + _Z_SLOTS.size
BOOK_RECORDS = 4096
"""Books of a symbol whose mid and top-5 imbalance its state keeps, by the book's number (see
`FeatureExtractor.recorded_book`); a number's slot is reused `BOOK_RECORDS` books later."""
_BOOK_NUMBER = _Z_DEVIATION + _Z_SLOTS.size
_BOOK_MID = _BOOK_NUMBER + BOOK_RECORDS
_BOOK_OBI5 = _BOOK_MID + BOOK_RECORDS
STATE_WIDTH = _BOOK_OBI5 + BOOK_RECORDS

_TAU_1S, _TAU_5S, _TAU_30S, _TAU_60S, _TAU_300S = 1000.0, 5000.0, 30000.0, 60000.0, 300000.0
_TAU_SIGMA = 150000.0
"""An exponential window with the mean age (150 s) of the labels' flat 300 s sigma window."""
_TAU_SIGMA_FLOOR = 1800000.0
"""The same for the labels' 3600 s floor window."""
_TAU_Z = 300000.0
"""The trailing window of the z-scores: long against any signal, short against a session."""
_ROBUST_SIGMA = math.sqrt(math.pi / 2.0)
"""sigma / mean |x| of a normal variable: a mean absolute move as a standard deviation."""
_MAX_SIGMAS = 10.0
"""Moves in sigmas are capped here: a near-zero sigma early on must not explode them."""
_EPS = 1e-12
_NO_EVENT_MS = 60000.0
"""Milliseconds reported since a trade or a jump before there has been one, and their cap."""
_VPIN_BUCKET_SECONDS = 5.0
_MISSING_LOG_SIZE = -7.0


@dataclass(frozen=True, slots=True)
class FeatureExtractorConfig:
    """`symbols`: the book's, quoted first, then the hedge. Every symbol's cross features read
    `leader`'s state (the hedge, the market's leader; None: the last symbol), the leader's own
    read the first other symbol's, so a pair reads each other; one symbol alone has none."""

    symbols: tuple[str, ...] = ("BTCUSDT", "ETHUSDT")
    leader: str | None = None

    def __post_init__(self) -> None:
        if not self.symbols:
            raise ValueError("FeatureExtractorConfig.symbols must name at least one symbol")
        if len(set(self.symbols)) != len(self.symbols):
            raise ValueError(f"FeatureExtractorConfig.symbols has duplicates: {self.symbols!r}")
        if self.leader is None:
            object.__setattr__(self, "leader", self.symbols[-1])
        elif self.leader not in self.symbols:
            raise ValueError(
                f"FeatureExtractorConfig.leader {self.leader!r} is not among the symbols "
                f"{self.symbols!r}"
            )


@njit(cache=True, _nrt=False, inline="always")
def _decay(dt_ms, tau_ms):
    return math.exp(-dt_ms / tau_ms) if dt_ms > 0.0 else 1.0


@njit(cache=True, _nrt=False)
def _consume_trades(state, row, tape_row, tape_state, tape_trades):
    """Fold the symbol's trades admitted since the last call into its trade statistics."""
    if tape_row < 0:
        return
    total = tape_state[tape_row, TRADE_TOTAL]
    capacity = tape_trades.shape[2]
    first = int(state[row, S_TRADES_READ])
    if first < total - capacity:
        first = total - capacity
    for sequence in range(first, total):
        slot = sequence % capacity
        price = tape_trades[tape_row, 0, slot]
        size = tape_trades[tape_row, 1, slot]
        side = tape_trades[tape_row, 2, slot]
        ts = tape_trades[tape_row, 3, slot]
        dt = ts - state[row, S_TRADE_TS] if state[row, S_TRADE_TS] > 0.0 else 0.0
        if dt > 0.0:
            d1 = _decay(dt, _TAU_1S)
            d5 = _decay(dt, _TAU_5S)
            d30 = _decay(dt, _TAU_30S)
            d60 = _decay(dt, _TAU_60S)
            state[row, S_BUY_1S] *= d1
            state[row, S_SELL_1S] *= d1
            state[row, S_COUNT_1S] *= d1
            state[row, S_BUY_5S] *= d5
            state[row, S_SELL_5S] *= d5
            state[row, S_COUNT_5S] *= d5
            state[row, S_BUY_COUNT_5S] *= d5
            state[row, S_SELL_COUNT_5S] *= d5
            state[row, S_BUY_30S] *= d30
            state[row, S_SELL_30S] *= d30
            state[row, S_COUNT_30S] *= d30
            state[row, S_VOLUME_RATE_60S] *= d60
        if ts > state[row, S_TRADE_TS]:
            state[row, S_TRADE_TS] = ts
        if side > 0.0:
            state[row, S_BUY_1S] += size
            state[row, S_BUY_5S] += size
            state[row, S_BUY_30S] += size
            state[row, S_BUY_COUNT_5S] += 1.0
        else:
            state[row, S_SELL_1S] += size
            state[row, S_SELL_5S] += size
            state[row, S_SELL_30S] += size
            state[row, S_SELL_COUNT_5S] += 1.0
        state[row, S_COUNT_1S] += 1.0
        state[row, S_COUNT_5S] += 1.0
        state[row, S_COUNT_30S] += 1.0
        # A 60 s exponential sum / 60 s approximates the volume per second.
        state[row, S_VOLUME_RATE_60S] += size
        if state[row, S_TRADE_SIZE_EWMA] <= 0.0:
            state[row, S_TRADE_SIZE_EWMA] = size
        else:
            state[row, S_TRADE_SIZE_EWMA] += 0.02 * (size - state[row, S_TRADE_SIZE_EWMA])
        state[row, S_LAST_TRADE_TS] = ts
        state[row, S_LAST_TRADE_PRICE] = price
        state[row, S_LAST_TRADE_SIZE] = size
        state[row, S_LAST_TRADE_SIDE] = side
        state[row, S_TRADES_SINCE_BOOK] += 1.0
        state[row, S_SIGNED_SINCE_BOOK] += side * size
        _vpin_add(state, row, side, size)
    state[row, S_TRADES_READ] = total


@njit(cache=True, _nrt=False)
def _vpin_add(state, row, side, size):
    """Volume-synchronised buckets: each holds `bucket size` of volume split by aggressor."""
    bucket = state[row, S_VPIN_BUCKET_SIZE]
    if bucket <= 0.0:
        # First sizing: about 5 s of volume once a rate is known, else a multiple of this trade.
        rate = state[row, S_VOLUME_RATE_60S] / 60.0
        bucket = rate * _VPIN_BUCKET_SECONDS if rate > 0.0 else 20.0 * size
        state[row, S_VPIN_BUCKET_SIZE] = bucket
    remaining = size
    while remaining > 0.0:
        room = bucket - state[row, S_VPIN_BUY] - state[row, S_VPIN_SELL]
        part = remaining if remaining < room else room
        if side > 0.0:
            state[row, S_VPIN_BUY] += part
        else:
            state[row, S_VPIN_SELL] += part
        remaining -= part
        if state[row, S_VPIN_BUY] + state[row, S_VPIN_SELL] >= bucket * (1.0 - 1e-9):
            slot = _VPIN_BASE + int(state[row, S_VPIN_NEXT])
            imbalance = abs(state[row, S_VPIN_BUY] - state[row, S_VPIN_SELL])
            if state[row, S_VPIN_FILLED] >= VPIN_BUCKETS:
                state[row, S_VPIN_SUM] -= state[row, slot]
            else:
                state[row, S_VPIN_FILLED] += 1.0
            state[row, slot] = imbalance
            state[row, S_VPIN_SUM] += imbalance
            state[row, S_VPIN_NEXT] = (state[row, S_VPIN_NEXT] + 1.0) % VPIN_BUCKETS
            state[row, S_VPIN_BUY] = 0.0
            state[row, S_VPIN_SELL] = 0.0


@njit(cache=True, _nrt=False, inline="always")
def _ring_mid(state, row, sequence):
    return state[row, _RING_MID + sequence % RING]


@njit(cache=True, _nrt=False, inline="always")
def _ring_ts(state, row, sequence):
    return state[row, _RING_TS + sequence % RING]


@njit(cache=True, _nrt=False)
def _advance(state, row, pointer_field, ts, horizon_ms):
    """Newest ring entry at least `horizon_ms` old (amortised O(1)); -1 if none yet."""
    newest = int(state[row, S_RING_NEXT]) - 1
    oldest = newest - int(state[row, S_RING_COUNT]) + 1
    pointer = int(state[row, pointer_field])
    if pointer < oldest - 1:
        pointer = oldest - 1
    while pointer + 1 <= newest and _ring_ts(state, row, pointer + 1) <= ts - horizon_ms:
        pointer += 1
    state[row, pointer_field] = pointer
    return pointer if pointer >= oldest else -1


@njit(cache=True, _nrt=False, inline="always")
def _bps_return(now, then):
    return (now / then - 1.0) * 1e4 if then > 0.0 else 0.0


@njit(cache=True, _nrt=False, inline="always")
def _clip_z(z):
    """z-scores are clipped to +-10: a near-zero variance early on must not explode them."""
    return 10.0 if z > 10.0 else (-10.0 if z < -10.0 else z)


@njit(cache=True, _nrt=False, inline="always")
def _ratio(a, b):
    total = a + b
    return (a - b) / total if total > _EPS else 0.0


@njit(cache=True, _nrt=False)
def _window_extremes(state, row, ts, window_ms):
    """(max mid, min mid) over ring entries no older than window_ms."""
    newest = int(state[row, S_RING_NEXT]) - 1
    oldest = newest - int(state[row, S_RING_COUNT]) + 1
    high = low = _ring_mid(state, row, newest)
    sequence = newest - 1
    while sequence >= oldest and _ring_ts(state, row, sequence) >= ts - window_ms:
        mid = _ring_mid(state, row, sequence)
        if mid > high:
            high = mid
        if mid < low:
            low = mid
        sequence -= 1
    return high, low


@njit(cache=True, _nrt=False)
def compute_features(
    levels,
    n_bids,
    n_asks,
    ts_ms,
    number,
    row,
    other,
    tape_row,
    other_tape_row,
    state,
    tape_state,
    tape_trades,
    out,
):
    """Update the symbol's state with this book and write its 128 features into out[0]; a
    `number` above 0 records the book's mid and top-5 imbalance under it."""
    ts = float(ts_ms)
    _consume_trades(state, row, tape_row, tape_state, tape_trades)
    if other >= 0:
        _consume_trades(state, other, other_tape_row, tape_state, tape_trades)
    f = out[0]
    bid1 = levels[0, 0]
    ask1 = levels[2, 0]
    bid1_size = levels[1, 0]
    ask1_size = levels[3, 0]
    mid = 0.5 * (bid1 + ask1)
    first_frame = state[row, S_FRAMES] == 0.0
    dt = 0.0 if first_frame else ts - state[row, S_LAST_TS]
    if dt < 0.0:
        dt = 0.0

    # Book shape: distances in bps and log sizes relative to the mean level size.
    total_size = 0.0
    for k in range(n_bids):
        total_size += levels[1, k]
    for k in range(n_asks):
        total_size += levels[3, k]
    mean_size = total_size / (n_bids + n_asks)
    bid_distance = 0.0
    ask_distance = 0.0
    for k in range(LEVELS):
        if k < n_bids:
            bid_distance = (mid - levels[0, k]) / mid * 1e4
            f[30 + k] = math.log(levels[1, k] / mean_size)
        else:
            f[30 + k] = _MISSING_LOG_SIZE
        if k < n_asks:
            ask_distance = (levels[2, k] - mid) / mid * 1e4
            f[45 + k] = math.log(levels[3, k] / mean_size)
        else:
            f[45 + k] = _MISSING_LOG_SIZE
        if k < DISTANCE_LEVELS:
            # A missing level (thin book) repeats the deepest present one.
            f[k] = bid_distance
            f[DISTANCE_LEVELS + k] = ask_distance

    # Cumulative imbalance at 1/3/5/10/15 levels and the depth-weighted one.
    bid_cum = 0.0
    ask_cum = 0.0
    bid_weighted = 0.0
    ask_weighted = 0.0
    bid_value5 = 0.0
    ask_value5 = 0.0
    bid5 = 0.0
    ask5 = 0.0
    slot = 60
    for k in range(LEVELS):
        if k < n_bids:
            bid_cum += levels[1, k]
            bid_weighted += levels[1, k] / (1.0 + (mid - levels[0, k]) / mid * 1e4)
        if k < n_asks:
            ask_cum += levels[3, k]
            ask_weighted += levels[3, k] / (1.0 + (levels[2, k] - mid) / mid * 1e4)
        if k == 4:
            bid5 = bid_cum
            ask5 = ask_cum
        if k < 5:
            if k < n_bids:
                bid_value5 += levels[0, k] * levels[1, k]
            if k < n_asks:
                ask_value5 += levels[2, k] * levels[3, k]
        if k == 0 or k == 2 or k == 4 or k == 9 or k == 14:
            f[slot] = _ratio(bid_cum, ask_cum)
            slot += 1
    obi1 = f[60]
    obi5 = f[62]
    f[65] = _ratio(bid_weighted, ask_weighted)
    microprice = (bid1 * ask1_size + ask1 * bid1_size) / (bid1_size + ask1_size)
    f[66] = (microprice - mid) / mid * 1e4
    spread_bps = (ask1 - bid1) / mid * 1e4
    f[67] = spread_bps
    # Slope: depth (in mean level sizes) gained per bps away from mid, log-scaled.
    # bid_distance / ask_distance are now those of the deepest present levels.
    f[68] = math.log1p(bid_cum / mean_size / (bid_distance + _EPS + spread_bps * 0.5))
    f[69] = math.log1p(ask_cum / mean_size / (ask_distance + _EPS + spread_bps * 0.5))
    bid_vwap5 = bid_value5 / bid5 if bid5 > 0.0 else bid1
    ask_vwap5 = ask_value5 / ask5 if ask5 > 0.0 else ask1
    pressure_mid = (bid_vwap5 * ask5 + ask_vwap5 * bid5) / (bid5 + ask5)
    half_spread = 0.5 * (ask1 - bid1)
    f[70] = _clip_z((pressure_mid - mid) / half_spread) if half_spread > 0.0 else 0.0
    f[71] = n_bids / LEVELS
    f[72] = n_asks / LEVELS
    f[73] = math.log(bid_cum / ask_cum)
    f[74] = math.log(bid1_size / ask1_size)

    # Book dynamics against the previous frame of this symbol.
    top_size = 0.5 * (bid1_size + ask1_size)
    if first_frame:
        state[row, S_TOP_SIZE_EWMA] = top_size
        ofi = 0.0
        f[80] = f[81] = f[82] = f[83] = f[84] = 0.0
        f[85] = 0.0
    else:
        state[row, S_TOP_SIZE_EWMA] += (1.0 - _decay(dt, _TAU_30S)) * (
            top_size - state[row, S_TOP_SIZE_EWMA]
        )
        previous_bid = state[row, S_BID1]
        previous_ask = state[row, S_ASK1]
        ofi = 0.0
        if bid1 >= previous_bid:
            ofi += bid1_size
        if bid1 <= previous_bid:
            ofi -= state[row, S_BID1_SIZE]
        if ask1 <= previous_ask:
            ofi -= ask1_size
        if ask1 >= previous_ask:
            ofi += state[row, S_ASK1_SIZE]
        f[80] = obi5 - state[row, S_OBI5]
        f[81] = math.log(bid1_size / state[row, S_BID1_SIZE])
        f[82] = math.log(ask1_size / state[row, S_ASK1_SIZE])
        f[83] = math.log(bid_cum / state[row, S_BID_DEPTH])
        f[84] = math.log(ask_cum / state[row, S_ASK_DEPTH])
        f[85] = math.log1p(dt)
    ofi_norm = ofi / (state[row, S_TOP_SIZE_EWMA] + _EPS)
    f[75] = ofi_norm
    d1 = _decay(dt, _TAU_1S)
    d5 = _decay(dt, _TAU_5S)
    state[row, S_OFI_1S] = state[row, S_OFI_1S] * d1 + ofi_norm
    state[row, S_OFI_5S] = state[row, S_OFI_5S] * d5 + ofi_norm
    f[76] = state[row, S_OFI_1S]
    f[77] = state[row, S_OFI_5S]
    if first_frame:
        state[row, S_OBI1_1S] = obi1
        state[row, S_OBI5_5S] = obi5
    else:
        state[row, S_OBI1_1S] += (1.0 - d1) * (obi1 - state[row, S_OBI1_1S])
        state[row, S_OBI5_5S] += (1.0 - d5) * (obi5 - state[row, S_OBI5_5S])
    f[78] = state[row, S_OBI1_1S]
    f[79] = state[row, S_OBI5_5S]
    previous_mid = state[row, S_MID]
    mid_changed = 0.0 if first_frame or mid == previous_mid else 1.0
    state[row, S_MID_CHANGES_1S] = state[row, S_MID_CHANGES_1S] * d1 + mid_changed
    f[86] = state[row, S_MID_CHANGES_1S]

    # The mid ring, then returns over fixed horizons.
    sequence = int(state[row, S_RING_NEXT])
    state[row, _RING_TS + sequence % RING] = ts
    state[row, _RING_MID + sequence % RING] = mid
    state[row, S_RING_NEXT] = sequence + 1
    if state[row, S_RING_COUNT] < RING:
        state[row, S_RING_COUNT] += 1.0
    frame_return = 0.0 if first_frame else _bps_return(mid, previous_mid)
    f[87] = frame_return
    feature = 88
    for pointer_field, horizon in (
        (S_PTR_500MS, 500.0),
        (S_PTR_1S, 1000.0),
        (S_PTR_5S, 5000.0),
        (S_PTR_30S, 30000.0),
    ):
        pointer = _advance(state, row, pointer_field, ts, horizon)
        f[feature] = _bps_return(mid, _ring_mid(state, row, pointer)) if pointer >= 0 else 0.0
        feature += 1
    return_1s = f[89]
    return_5s = f[90]
    state[row, S_RET_1S] = return_1s
    state[row, S_RET_5S] = return_5s
    if dt > 0.0:
        rate = frame_return * frame_return / (dt / 1000.0)
        state[row, S_VAR_5S] += (1.0 - _decay(dt, _TAU_5S)) * (rate - state[row, S_VAR_5S])
        state[row, S_VAR_60S] += (1.0 - _decay(dt, _TAU_60S)) * (rate - state[row, S_VAR_60S])
    vol_5s = math.sqrt(state[row, S_VAR_5S])
    vol_60s = math.sqrt(state[row, S_VAR_60S])
    f[92] = vol_5s
    f[93] = vol_60s
    f[94] = math.log((vol_5s + 1e-3) / (vol_60s + 1e-3))
    f[95] = _clip_z(return_1s / (vol_60s + 1e-3))
    f[96] = _clip_z(return_5s / (vol_60s * math.sqrt(5.0) + 1e-3))
    high, low = _window_extremes(state, row, ts, 1000.0)
    range_1s = (high - low) / mid * 1e4
    high, low = _window_extremes(state, row, ts, 5000.0)
    range_5s = (high - low) / mid * 1e4
    drawdown_5s = (mid - high) / mid * 1e4
    runup_5s = (mid - low) / mid * 1e4

    # Moves in units of the 1 s sigma the labels measure run-overs and EMERGENCY against: the
    # mean absolute 1 s return over the trailing minutes as a standard deviation, never below
    # the same over the trailing half hour (a quiet spell must not make every move "big"),
    # from every frame's return over the last second (exponentially weighted: O(1) a frame).
    decay_sigma = _decay(dt, _TAU_SIGMA)
    decay_floor = _decay(dt, _TAU_SIGMA_FLOOR)
    state[row, S_ABS_WEIGHT] *= decay_sigma
    state[row, S_ABS_SUM] *= decay_sigma
    state[row, S_ABS_FLOOR_WEIGHT] *= decay_floor
    state[row, S_ABS_FLOOR_SUM] *= decay_floor
    if state[row, S_PTR_1S] >= 0.0 and not first_frame:
        state[row, S_ABS_WEIGHT] += 1.0
        state[row, S_ABS_SUM] += abs(return_1s)
        state[row, S_ABS_FLOOR_WEIGHT] += 1.0
        state[row, S_ABS_FLOOR_SUM] += abs(return_1s)
    mean_move = 0.0
    if state[row, S_ABS_WEIGHT] > 0.0:
        mean_move = state[row, S_ABS_SUM] / state[row, S_ABS_WEIGHT]
    if state[row, S_ABS_FLOOR_WEIGHT] > 0.0:
        mean_move = max(mean_move, state[row, S_ABS_FLOOR_SUM] / state[row, S_ABS_FLOOR_WEIGHT])
    sigma = _ROBUST_SIGMA * mean_move
    per_sigma = 1.0 / sigma if sigma > 1e-9 else 0.0
    jump = min(abs(frame_return) * per_sigma, _MAX_SIGMAS)
    state[row, S_JUMP_1S] = max(jump, state[row, S_JUMP_1S] * d1)
    state[row, S_JUMP_5S] = max(jump, state[row, S_JUMP_5S] * d5)
    state[row, S_JUMP_COUNT_30S] *= _decay(dt, _TAU_30S)
    if jump >= JUMP_SIGMAS:
        state[row, S_JUMP_COUNT_30S] += 1.0
        state[row, S_LAST_JUMP_TS] = ts
    f[20] = math.log(sigma + 1e-3)
    f[21] = min(range_1s * per_sigma, _MAX_SIGMAS)
    f[22] = min(range_5s * per_sigma, _MAX_SIGMAS)
    f[23] = _clip_z(return_1s * per_sigma)
    f[24] = math.log((vol_5s + 1e-3) / (sigma + 1e-3))
    f[88] = _clip_z(f[88] * per_sigma)
    f[89] = obi5
    f[90] = _clip_z(return_5s * per_sigma)
    f[91] = _clip_z(f[91] * per_sigma)
    f[97] = spread_bps
    f[98] = math.log((vol_60s + 1e-3) / (sigma + 1e-3))
    f[99] = _clip_z(drawdown_5s * per_sigma)
    f[100] = _clip_z(runup_5s * per_sigma)
    state[row, S_RET_1S_SIGMAS] = f[23]
    state[row, S_RET_5S_SIGMAS] = f[90]
    state[row, S_LOG_VOL_OVER_SIGMA] = f[24]
    f[25] = state[row, S_JUMP_1S]
    f[26] = state[row, S_JUMP_5S]
    f[27] = math.log1p(state[row, S_JUMP_COUNT_30S])
    last_jump = state[row, S_LAST_JUMP_TS]
    since_jump = ts - last_jump if last_jump > 0.0 else _NO_EVENT_MS
    f[28] = math.log1p(min(max(since_jump, 0.0), _NO_EVENT_MS))
    f[29] = 0.0
    if other >= 0 and state[other, S_FRAMES] > 0.0:
        f[29] = state[other, S_JUMP_1S] * _decay(ts - state[other, S_LAST_TS], _TAU_1S)

    # Trade flow, decayed to this book's time.
    lag = ts - state[row, S_TRADE_TS] if state[row, S_TRADE_TS] > 0.0 else 0.0
    t1 = _decay(lag, _TAU_1S)
    t5 = _decay(lag, _TAU_5S)
    t30 = _decay(lag, _TAU_30S)
    buy1 = state[row, S_BUY_1S] * t1
    sell1 = state[row, S_SELL_1S] * t1
    buy5 = state[row, S_BUY_5S] * t5
    sell5 = state[row, S_SELL_5S] * t5
    buy30 = state[row, S_BUY_30S] * t30
    sell30 = state[row, S_SELL_30S] * t30
    f[101] = _ratio(buy1, sell1)
    f[102] = _ratio(buy5, sell5)
    f[103] = _ratio(buy30, sell30)
    norm = state[row, S_TOP_SIZE_EWMA] + _EPS
    f[104] = (buy1 - sell1) / norm
    f[105] = (buy5 - sell5) / (5.0 * norm)
    f[106] = (buy30 - sell30) / (30.0 * norm)
    rate1 = state[row, S_COUNT_1S] * t1  # trades per second over ~1 s
    rate5 = state[row, S_COUNT_5S] * t5 / 5.0
    rate30 = state[row, S_COUNT_30S] * t30 / 30.0
    f[107] = math.log((rate1 + 0.1) / (rate30 + 0.1))
    f[108] = math.log((rate5 + 0.1) / (rate30 + 0.1))
    f[109] = math.log1p(rate30)
    bucket = state[row, S_VPIN_BUCKET_SIZE]
    filled = state[row, S_VPIN_FILLED]
    f[110] = state[row, S_VPIN_SUM] / (filled * bucket) if filled > 0.0 and bucket > 0.0 else 0.0
    last_trade_ts = state[row, S_LAST_TRADE_TS]
    if last_trade_ts > 0.0:
        since = ts - last_trade_ts
        f[111] = math.log1p(since if since > 0.0 else 0.0)
        f[112] = state[row, S_LAST_TRADE_SIDE]
        offset = state[row, S_LAST_TRADE_PRICE] - mid
        f[113] = _clip_z(offset / half_spread) if half_spread > 0.0 else 0.0
        f[114] = math.log(state[row, S_LAST_TRADE_SIZE] / state[row, S_TRADE_SIZE_EWMA])
    else:
        f[111] = math.log1p(_NO_EVENT_MS)
        f[112] = f[113] = f[114] = 0.0
    f[115] = _ratio(state[row, S_BUY_COUNT_5S] * t5, state[row, S_SELL_COUNT_5S] * t5)
    # Kyle's lambda: how far the mid moves (bps) per unit of signed volume (in top sizes).
    signed = state[row, S_SIGNED_SINCE_BOOK] / norm
    if not first_frame:
        k30 = 1.0 - _decay(dt, _TAU_30S)
        state[row, S_KYLE_COV] += k30 * (frame_return * signed - state[row, S_KYLE_COV])
        state[row, S_KYLE_VAR] += k30 * (signed * signed - state[row, S_KYLE_VAR])
    kyle_var = state[row, S_KYLE_VAR]
    f[116] = state[row, S_KYLE_COV] / kyle_var if kyle_var > 1e-9 else 0.0
    f[117] = math.log1p(state[row, S_TRADES_SINCE_BOOK])
    state[row, S_TRADES_SINCE_BOOK] = 0.0
    state[row, S_SIGNED_SINCE_BOOK] = 0.0
    # Re-size VPIN buckets slowly toward ~5 s of volume so the measure adapts to the market.
    volume_rate = state[row, S_VOLUME_RATE_60S] / 60.0
    if volume_rate > 0.0 and bucket > 0.0:
        state[row, S_VPIN_BUCKET_SIZE] = bucket + 0.001 * (
            volume_rate * _VPIN_BUCKET_SECONDS - bucket
        )

    # Cross features against the other symbol (the leader, or the leader's first other).
    has_other = other >= 0 and state[other, S_FRAMES] > 0.0
    if has_other:
        other_mid = state[other, S_MID]
        other_lag = ts - state[other, S_TRADE_TS] if state[other, S_TRADE_TS] > 0.0 else 0.0
        o5 = _decay(other_lag, _TAU_5S)
        f[118] = state[other, S_RET_1S_SIGMAS]
        f[119] = state[other, S_RET_5S_SIGMAS]
        f[120] = state[other, S_OBI5]
        f[121] = _ratio(state[other, S_BUY_5S] * o5, state[other, S_SELL_5S] * o5)
        beta_var = state[row, S_BETA_VAR]
        other_return = 0.0
        if not first_frame and state[row, S_OTHER_MID_AT_LAST] > 0.0:
            other_return = _bps_return(other_mid, state[row, S_OTHER_MID_AT_LAST])
            k60 = 1.0 - _decay(dt, _TAU_60S)
            state[row, S_BETA_COV] += k60 * (frame_return * other_return - state[row, S_BETA_COV])
            state[row, S_BETA_VAR] += k60 * (other_return * other_return - beta_var)
            beta_var = state[row, S_BETA_VAR]
        beta = state[row, S_BETA_COV] / beta_var if beta_var > 1e-9 else 0.0
        f[122] = _clip_z((return_1s - beta * state[other, S_RET_1S]) * per_sigma)
        f[123] = _clip_z((return_5s - beta * state[other, S_RET_5S]) * per_sigma)
        f[124] = beta
        # The pair's spread as the running sum of this symbol's frame returns less beta times
        # the other's over the same intervals: a drifting beta never moves it (beta times the
        # other's log price would, by far more than the prices do).
        state[row, S_RESIDUAL_LEVEL] += frame_return - beta * other_return
        residual = state[row, S_RESIDUAL_LEVEL]
        k300 = 1.0 - _decay(dt, _TAU_300S)
        deviation = residual - state[row, S_RESIDUAL_MEAN]
        state[row, S_RESIDUAL_MEAN] += k300 * deviation
        state[row, S_RESIDUAL_VAR] += k300 * (deviation * deviation - state[row, S_RESIDUAL_VAR])
        residual_sd = math.sqrt(state[row, S_RESIDUAL_VAR])
        f[125] = _clip_z(deviation / residual_sd) if residual_sd > 1e-9 else 0.0
        f[126] = state[other, S_LOG_VOL_OVER_SIGMA]
        f[127] = state[other, S_SPREAD_Z]
        state[row, S_OTHER_MID_AT_LAST] = other_mid
    else:
        for k in range(_CROSS_FIRST, FEATURE_COUNT):
            f[k] = 0.0

    # Raw values tied to the venue's cadence, tick, depth or volatility, as trailing robust
    # z-scores: (x - weighted mean) / (weighted mean absolute deviation as a sigma), each
    # against its own earlier values (exponentially weighted in time), then folded in.
    decay_z = _decay(dt, _TAU_Z)
    for index in range(_Z_SLOTS.size):
        slot = _Z_SLOTS[index]
        value = f[slot]
        if (slot >= _CROSS_FIRST and not has_other) or not math.isfinite(value):
            continue  # neutral 0 without the other symbol; a non-finite value is counted below
        weight = state[row, _Z_WEIGHT + index] * decay_z
        mean = state[row, _Z_MEAN + index]
        deviation = state[row, _Z_DEVIATION + index]
        scale = _ROBUST_SIGMA * deviation
        f[slot] = _clip_z((value - mean) / scale) if scale > 1e-12 else 0.0
        weight += 1.0
        state[row, _Z_WEIGHT + index] = weight
        state[row, _Z_MEAN + index] = mean + (value - mean) / weight
        state[row, _Z_DEVIATION + index] = deviation + (abs(value - mean) - deviation) / weight
    state[row, S_SPREAD_Z] = f[97]

    # Remember this frame.
    state[row, S_FRAMES] += 1.0
    state[row, S_LAST_TS] = ts
    state[row, S_MID] = mid
    state[row, S_BID1] = bid1
    state[row, S_BID1_SIZE] = bid1_size
    state[row, S_ASK1] = ask1
    state[row, S_ASK1_SIZE] = ask1_size
    state[row, S_BID_DEPTH] = bid_cum
    state[row, S_ASK_DEPTH] = ask_cum
    state[row, S_OBI5] = obi5
    bad = 0
    for k in range(128):
        if not math.isfinite(f[k]):
            f[k] = 0.0
            bad += 1
    if number > 0:
        record = number % BOOK_RECORDS
        state[row, _BOOK_NUMBER + record] = number
        state[row, _BOOK_MID + record] = mid
        state[row, _BOOK_OBI5 + record] = f[62]
    return bad


class FeatureExtractor:
    """Computes the feature vector of each book of the configured symbols.

    `on_book` returns a preallocated float32 (1, 128) array, overwritten by the next call:
    the classifier reads it at once; anything that keeps it copies it.
    """

    def __init__(self, config: FeatureExtractorConfig, tape: MarketTape) -> None:
        self.config = config
        self.tape = tape
        self.features = np.zeros((1, FEATURE_COUNT), np.float32)
        self.non_finite = 0
        self._state = np.zeros((len(config.symbols), STATE_WIDTH))
        # Horizon pointers start before the first ring entry: nothing is old enough yet.
        self._state[:, [S_PTR_500MS, S_PTR_1S, S_PTR_5S, S_PTR_30S]] = -1.0
        self._rows = {symbol: row for row, symbol in enumerate(config.symbols)}
        leader = self._rows[config.leader]
        first_other = 1 if leader == 0 else 0
        # The row each symbol's cross features read: a row each, so the kernel's work per book
        # does not grow with the book (-1: none, for a symbol alone).
        self._others = {
            symbol: -1 if len(config.symbols) == 1 else first_other if row == leader else leader
            for row, symbol in enumerate(config.symbols)
        }
        self._tape_rows: dict[str, int] = {}

    def _tape_row(self, symbol: str) -> int:
        row = self._tape_rows.get(symbol)
        if row is None:
            row = self.tape.index(symbol)
            if row is None:
                return -1
            self._tape_rows[symbol] = row
        return row

    def on_book(self, snapshot: BookSnapshot, number: int = 0) -> np.ndarray | None:
        """Features of this book; None for a symbol this extractor was not configured for.
        `number` (the book's for its symbol, from 1; 0: none) keeps its mid and top-5
        imbalance for `recorded_book`."""
        symbol = snapshot.symbol
        row = self._rows.get(symbol)
        if row is None:
            return None
        other = self._others[symbol]
        other_tape_row = self._tape_row(self.config.symbols[other]) if other >= 0 else -1
        tape = self.tape
        self.non_finite += compute_features(
            snapshot.levels,
            snapshot.n_bids,
            snapshot.n_asks,
            snapshot.exchange_ts_ms,
            number,
            row,
            other,
            self._tape_row(symbol),
            other_tape_row,
            self._state,
            tape.state,
            tape.trades,
            self.features,
        )
        return self.features

    def recorded_book(self, symbol: str, number: int) -> tuple[float, float] | None:
        """The mid and the top-5 imbalance feature (`obi_5`) of `symbol`'s book `number`, as
        `on_book` computed them; None once `BOOK_RECORDS` later books took its slot."""
        row = self._rows.get(symbol)
        if row is None or number < 1:
            return None
        state = self._state[row]
        record = number % BOOK_RECORDS
        if state[_BOOK_NUMBER + record] != number:
            return None
        return float(state[_BOOK_MID + record]), float(state[_BOOK_OBI5 + record])
