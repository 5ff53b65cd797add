"""Training labels for Laya: what a market maker's quotes met in the next second.

For a frame of one symbol at exchange time T, the horizon is the frames of that symbol in
(T, T + H]. `end` is the mid return of the last of them, `up` the highest and `down` the lowest
mid return, all in basis points of the mid at T. `sigma` is measured on the `end` returns that
were fully observed by T: those of earlier frames j with T_j + H <= T and T_j >= T - W.

The labels (scheme "excursion" and those after it) are per side, from the excursion:

- the ask is run over when `up >= lean_sigma * sigma`, the bid when `down <= -lean_sigma *
  sigma`;
- EMERGENCY when both are, or when either move reaches `emergency_sigma * sigma` (pull
  everything); else LEAN_BUY when the ask is run over (pull asks), LEAN_SELL when the bid is
  (pull bids), HOLD when neither.

Here sigma is robust: the mean absolute `end` return over the window as a standard deviation
(x sqrt(pi / 2)), never below the same over the trailing `sigma_floor_window_ms`, so a quiet
spell does not make an ordinary move "big", and one jump does not inflate it as a variance
would.

The scheme "clock" (label version 3) is "excursion" on market time, so it works at
any book cadence: sigma is measured on the mid's H-returns over a clock of step H (the mid as
of each tick, carried forward), every window holding W / H returns however many books the feed
sent, and `min_sigma_samples` counts those clock returns (30: 30 s of market time at H = 1 s).
A horizon with no frame in it is a held mid (every move 0) when the symbol's next frame comes
within `max_quiet_ms`: a quiet book sends nothing because nothing changed; a longer silence is a
feed gap, as is a clock return across one. The scheme "excursion" keeps the per-frame sigma of the
models before it (`LabelConfig.per_frame_labels()`), and "end" keeps the labels of the models
before per-side labels, for comparison: sigma the population standard deviation over W, then
EMERGENCY when `down <= -emergency_sigma * sigma` or `up >= emergency_sigma * sigma`, LEAN_BUY when
`end >= lean_sigma * sigma`, LEAN_SELL when `end <= -lean_sigma * sigma`, HOLD otherwise.

The scheme "tick" (the default, label version 4) is "clock" with sigma never below
`sigma_floor_steps` of the mid's step, its smallest move over the frames labelled together (half
a tick on a book quoted on a tick grid), in bps of each frame's mid. On a large-tick book the mid
stands still for most clock steps and then moves a whole step, so the clock sigma is a fraction
of one step and every step was "big": the NEXOUSDT day (tick 8 bps) labelled 3,775 frames
EMERGENCY against 40 and 56 LEAN. With a floor of one step (half a tick) a side is run over when
the mid moves a whole tick (docs/laya.md has the measurement). On BTC and ETH a step is under
0.01 bps, far below any sigma: no label changes.

A frame is left unlabelled (-1) when its horizon is not fully observed (the symbol's last frame is
earlier than T + H), when no frame falls inside the horizon (a feed gap: there is no return to
judge; "clock", "tick": only when the next frame is more than `max_quiet_ms` away), when fewer
than `min_sigma_samples` returns are in the sigma window, or when sigma is zero (no scale to
measure a move in; "tick": only when the mid never moves). Only the labelled frames of one
symbol are inputs here; the caller splits a recording by symbol.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from engine.laya.verdict import Verdict

UNLABELLED = -1
"""The label of a frame that has none (see the module docstring for when)."""
BPS = 1e4
_RELATIVE_VARIANCE_FLOOR = 1e-9
"""A window variance below this share of its mean square is prefix-sum cancellation, not
signal: such a window held (numerically) identical returns, so sigma is zero."""


SCHEMES = ("end", "excursion", "clock", "tick")
"""Label schemes by their metadata code (1 + index), the label version: "end" is that of the
models before per-side labels (a model's metadata without a scheme was trained on it),
"excursion" that of the models before the clock's sigma, "clock" before the floor of a step."""
_CLOCK_SCHEMES = ("clock", "tick")
_MID_STEP_RESOLUTION = 1e-9
"""A mid change below this share of the mid is float rounding of one price, not a move."""
_ROBUST_SIGMA = math.sqrt(math.pi / 2.0)
"""sigma / mean |x| of a normal variable: a mean absolute move as a standard deviation."""


@dataclass(frozen=True, slots=True)
class LabelConfig:
    """How labels are made; the defaults are Laya's shipped definition (see the module
    docstring). `sigma_floor_window_ms` is the excursion scheme's floor window (0: none)."""

    scheme: str = "tick"
    horizon_ms: int = 1_000
    sigma_window_ms: int = 300_000
    sigma_floor_window_ms: int = 3_600_000
    lean_sigma: float = 1.5
    emergency_sigma: float = 4.0
    min_sigma_samples: int = 30
    """30 s of market time on the clock (H = 1 s): fewer returns give too noisy a scale to
    label against. Per frame ("end", "excursion"), 300 returns were about 30 s of 100 ms books."""
    max_quiet_ms: int = 30_000
    """The "clock" scheme's longest silence of a live feed (Laya's warm-up after a gap)."""
    sigma_floor_steps: float = 1.0
    """The "tick" scheme's least sigma, in the mid's steps (one: half a tick); 0 in the others."""

    def __post_init__(self) -> None:
        if self.scheme not in SCHEMES:
            raise ValueError(f"LabelConfig.scheme must be one of {SCHEMES}, got {self.scheme!r}")
        if self.horizon_ms < 1:
            raise ValueError(f"LabelConfig.horizon_ms must be >= 1, got {self.horizon_ms}")
        if self.sigma_window_ms <= self.horizon_ms:
            raise ValueError(
                f"LabelConfig.sigma_window_ms ({self.sigma_window_ms}) must exceed horizon_ms "
                f"({self.horizon_ms}): no return is fully observed inside a shorter window"
            )
        if self.sigma_floor_window_ms and self.sigma_floor_window_ms < self.sigma_window_ms:
            raise ValueError(
                f"LabelConfig.sigma_floor_window_ms ({self.sigma_floor_window_ms}) must be 0 or "
                f"at least sigma_window_ms ({self.sigma_window_ms})"
            )
        if self.scheme == "end" and self.sigma_floor_window_ms:
            raise ValueError("LabelConfig.sigma_floor_window_ms belongs to the excursion scheme")
        if self.max_quiet_ms < self.horizon_ms:
            raise ValueError(
                f"LabelConfig.max_quiet_ms ({self.max_quiet_ms}) must be at least horizon_ms "
                f"({self.horizon_ms})"
            )
        if not (np.isfinite(self.lean_sigma) and self.lean_sigma > 0):
            raise ValueError(f"LabelConfig.lean_sigma must be > 0, got {self.lean_sigma}")
        if not (np.isfinite(self.emergency_sigma) and self.emergency_sigma > self.lean_sigma):
            raise ValueError(
                f"LabelConfig.emergency_sigma ({self.emergency_sigma}) must be finite and "
                f"exceed lean_sigma ({self.lean_sigma})"
            )
        if self.scheme == "tick":
            if not (np.isfinite(self.sigma_floor_steps) and self.sigma_floor_steps > 0):
                raise ValueError(
                    f"LabelConfig.sigma_floor_steps must be > 0 in the tick scheme (none: scheme "
                    f"clock), got {self.sigma_floor_steps}"
                )
        elif self.sigma_floor_steps:
            raise ValueError("LabelConfig.sigma_floor_steps belongs to the tick scheme")
        if self.min_sigma_samples < 2:
            raise ValueError(
                f"LabelConfig.min_sigma_samples must be >= 2, got {self.min_sigma_samples}"
            )

    @classmethod
    def end_labels(cls, **overrides: float) -> LabelConfig:
        """The labels of the models before per-side labels (scheme "end"), for comparison."""
        defaults = {
            "lean_sigma": 1.0,
            "emergency_sigma": 3.0,
            "sigma_floor_window_ms": 0,
            "min_sigma_samples": 300,
            "sigma_floor_steps": 0.0,
        }
        return cls(scheme="end", **{**defaults, **overrides})

    @classmethod
    def per_frame_labels(cls, **overrides: float) -> LabelConfig:
        """The per-side labels with a per-frame sigma (scheme "excursion"), those of the
        models before the clock's sigma."""
        defaults = {"min_sigma_samples": 300, "sigma_floor_steps": 0.0}
        return cls(scheme="excursion", **{**defaults, **overrides})

    @classmethod
    def clock_labels(cls, **overrides: float) -> LabelConfig:
        """The clock's labels without a floor of a step (scheme "clock"), those of the models
        before it."""
        return cls(scheme="clock", **{"sigma_floor_steps": 0.0, **overrides})

    @property
    def version(self) -> int:
        """The label version: the scheme's code (see `SCHEMES`)."""
        return 1 + SCHEMES.index(self.scheme)

    def as_metadata(self) -> dict[str, float | int]:
        """The parameters as stored in model metadata (the scheme as its code)."""
        parameters = {
            "scheme": self.version,
            "horizon_ms": self.horizon_ms,
            "sigma_window_ms": self.sigma_window_ms,
            "sigma_floor_window_ms": self.sigma_floor_window_ms,
            "lean_sigma": self.lean_sigma,
            "emergency_sigma": self.emergency_sigma,
            "min_sigma_samples": self.min_sigma_samples,
        }
        if self.scheme in _CLOCK_SCHEMES:
            parameters["max_quiet_ms"] = self.max_quiet_ms
        if self.scheme == "tick":
            parameters["sigma_floor_steps"] = self.sigma_floor_steps
        return parameters

    @classmethod
    def from_metadata(cls, parameters: dict[str, float]) -> LabelConfig:
        """The config stored by `as_metadata`; parameters it does not hold keep the defaults
        of its scheme (no scheme: "end", what models before it were trained on)."""
        integers = (
            "horizon_ms",
            "sigma_window_ms",
            "sigma_floor_window_ms",
            "min_sigma_samples",
            "max_quiet_ms",
        )
        known = cls().as_metadata()
        values = {
            name: int(value) if name in integers else float(value)
            for name, value in parameters.items()
            if name in known and name != "scheme"
        }
        scheme = scheme_of(parameters.get("scheme", 1))
        if scheme == "end":
            return cls.end_labels(**values)
        if scheme == "excursion":
            return cls.per_frame_labels(**values)
        if scheme == "clock":
            return cls.clock_labels(**values)
        return cls(**values)


def scheme_of(version: object) -> str:
    """The scheme of a label version (a model's `label_version`); ValueError naming a version
    this engine does not know: a newer engine's, or not a version at all."""
    known = ", ".join(f"{code} {name}" for code, name in enumerate(SCHEMES, start=1))
    if isinstance(version, float) and version.is_integer():
        version = int(version)  # JSON and TOML may give a whole number as a float
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(
            f"label version {version!r} is not a label version (this engine knows {known})"
        )
    if version > len(SCHEMES):
        raise ValueError(
            f"label version {version} is newer than this engine knows ({known}): run the "
            "engine version that trained the model, or retrain it"
        )
    return SCHEMES[version - 1]


@dataclass(frozen=True, slots=True, eq=False)
class LabelResult:
    """Per-frame labels (int8 Verdict values, -1 unlabelled) and what they were made from.

    `end_bps`, `up_bps` and `down_bps` are NaN where the horizon is incomplete or empty;
    `sigma_bps` is NaN where the window holds fewer than `min_sigma_samples` returns;
    `sigma_samples` counts the returns in each frame's sigma window. `ask_run` / `bid_run`:
    the labelled frames whose ask / bid was run over (`up` >= lean_sigma sigma / `down` <=
    -lean_sigma sigma), whatever the scheme.
    """

    labels: np.ndarray
    end_bps: np.ndarray
    up_bps: np.ndarray
    down_bps: np.ndarray
    sigma_bps: np.ndarray
    sigma_samples: np.ndarray
    ask_run: np.ndarray
    bid_run: np.ndarray

    @property
    def labelled(self) -> np.ndarray:
        return self.labels != UNLABELLED


def label_frames(
    exchange_ts_ms: np.ndarray, mid: np.ndarray, config: LabelConfig | None = None
) -> LabelResult:
    """Labels for one symbol's frames, given in time order; O(N log N), no look-ahead in sigma."""
    config = config or LabelConfig()
    ts = np.asarray(exchange_ts_ms, dtype=np.int64)
    mid = np.asarray(mid, dtype=np.float64)
    if ts.ndim != 1 or ts.shape != mid.shape:
        raise ValueError(
            f"exchange_ts_ms and mid must be 1-D of equal length, got {ts.shape} and {mid.shape}"
        )
    if np.any(np.diff(ts) < 0):
        raise ValueError("exchange_ts_ms must be non-decreasing (one symbol, in time order)")
    if not (np.all(np.isfinite(mid)) and np.all(mid > 0)):
        raise ValueError("mid must be finite and positive")
    count = ts.size
    horizon = config.horizon_ms

    # Horizon of frame i: indices [i_first, i_end) with T in (T_i, T_i + H].
    first = np.searchsorted(ts, ts, side="right")
    end = np.searchsorted(ts, ts + horizon, side="right")
    complete = ts + horizon <= (ts[-1] if count else 0)
    has_return = complete & (end > first)

    end_bps = np.full(count, np.nan)
    up_bps = np.full(count, np.nan)
    down_bps = np.full(count, np.nan)
    if config.scheme in _CLOCK_SCHEMES:
        # Nothing in the horizon and the next frame within max_quiet_ms: the mid held.
        following = ts[np.minimum(first, count - 1)] if count else ts
        held = complete & (end == first) & (following - ts <= config.max_quiet_ms)
        end_bps[held] = up_bps[held] = down_bps[held] = 0.0
    rows = np.flatnonzero(has_return)
    if rows.size:
        base = mid[rows]
        end_bps[rows] = (mid[end[rows] - 1] / base - 1.0) * BPS
        highest, lowest = _range_max_min(mid, first[rows], end[rows])
        up_bps[rows] = (highest / base - 1.0) * BPS
        down_bps[rows] = (lowest / base - 1.0) * BPS

    if config.scheme in _CLOCK_SCHEMES:
        sigma_bps, samples = _clock_sigma(ts, mid, config)
    else:
        sigma_bps, samples = _trailing_sigma(ts, end_bps, config)
    if config.sigma_floor_steps and count:
        floor_bps = config.sigma_floor_steps * mid_step(mid) / mid * BPS
        sigma_bps = np.where(np.isnan(sigma_bps), sigma_bps, np.fmax(sigma_bps, floor_bps))
    labels, ask_run, bid_run = _classify(end_bps, up_bps, down_bps, sigma_bps, config)
    return LabelResult(labels, end_bps, up_bps, down_bps, sigma_bps, samples, ask_run, bid_run)


def mid_step(mid: np.ndarray) -> float:
    """The mid's smallest move between frames (half a tick on a tick grid); NaN if it never
    moves."""
    moves = np.abs(np.diff(mid))
    moves = moves[moves > _MID_STEP_RESOLUTION * mid[1:]]
    return float(moves.min()) if moves.size else math.nan


def _trailing_sigma(
    ts: np.ndarray, end_bps: np.ndarray, config: LabelConfig
) -> tuple[np.ndarray, np.ndarray]:
    """The scheme's sigma of the returns of frames j with T_j + H <= T_i and T_j >= T_i - W,
    per frame i, and how many returns that window holds.

    Frames are in time order, so both bounds are index bounds found by searchsorted and the
    window sums come from prefix sums of the (valid) returns, their squares or magnitudes.
    """
    valid = ~np.isnan(end_bps)
    values = np.where(valid, end_bps, 0.0)
    prefix_count = np.concatenate(([0], np.cumsum(valid, dtype=np.int64)))
    # j observed by T_i: T_j <= T_i - H. In the window: T_j >= T_i - W.
    stop = np.searchsorted(ts, ts - config.horizon_ms, side="right")

    def window(width_ms: int, prefix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        start = np.searchsorted(ts, ts - width_ms, side="left")
        last = np.maximum(stop, start)
        count = prefix_count[last] - prefix_count[start]
        with np.errstate(invalid="ignore", divide="ignore"):
            return (prefix[last] - prefix[start]) / count, count

    if config.scheme == "end":
        mean, samples = window(config.sigma_window_ms, np.concatenate(([0.0], np.cumsum(values))))
        mean_square, _ = window(
            config.sigma_window_ms, np.concatenate(([0.0], np.cumsum(values * values)))
        )
        variance = mean_square - mean * mean
        variance = np.where(variance > _RELATIVE_VARIANCE_FLOOR * mean_square, variance, 0.0)
        sigma = np.sqrt(variance)
    else:
        magnitudes = np.concatenate(([0.0], np.cumsum(np.abs(values))))
        mean_move, samples = window(config.sigma_window_ms, magnitudes)
        if config.sigma_floor_window_ms:
            floor, _ = window(config.sigma_floor_window_ms, magnitudes)
            mean_move = np.fmax(mean_move, floor)
        sigma = _ROBUST_SIGMA * mean_move
    sigma[samples < config.min_sigma_samples] = np.nan
    return sigma, samples


def _clock_sigma(
    ts: np.ndarray, mid: np.ndarray, config: LabelConfig
) -> tuple[np.ndarray, np.ndarray]:
    """The "clock" scheme's sigma per frame i: sqrt(pi / 2) x the mean |H-return| of the mid on
    a clock of step H from the symbol's first frame, over the returns (t - H, t] with
    t - H >= T_i - W and t <= T_i, never below the same over the floor window; and how many
    returns the window holds. A return across a feed gap (no frame for more than
    `max_quiet_ms`) is not counted."""
    count = ts.size
    if not count:
        return np.full(0, np.nan), np.zeros(0, np.int64)
    step = config.horizon_ms
    clock = ts[0] + step * np.arange(int((ts[-1] - ts[0]) // step) + 1)
    latest = np.searchsorted(ts, clock, side="right") - 1
    following = ts[np.minimum(latest + 1, count - 1)]
    alive = (following - ts[latest] <= config.max_quiet_ms) | (latest == count - 1)
    moves = np.abs(mid[latest[1:]] / mid[latest[:-1]] - 1.0) * BPS
    valid = alive[1:] & alive[:-1]
    prefix_count = np.concatenate(([0], np.cumsum(valid, dtype=np.int64)))
    prefix_moves = np.concatenate(([0.0], np.cumsum(np.where(valid, moves, 0.0))))
    # Return k spans (clock[k], clock[k + 1]]: observed by T when clock[k + 1] <= T.
    stop = np.searchsorted(clock[1:], ts, side="right")

    def window(width_ms: int) -> tuple[np.ndarray, np.ndarray]:
        start = np.minimum(np.searchsorted(clock[:-1], ts - width_ms, side="left"), stop)
        samples = prefix_count[stop] - prefix_count[start]
        with np.errstate(invalid="ignore", divide="ignore"):
            return (prefix_moves[stop] - prefix_moves[start]) / samples, samples

    mean_move, samples = window(config.sigma_window_ms)
    if config.sigma_floor_window_ms:
        mean_move = np.fmax(mean_move, window(config.sigma_floor_window_ms)[0])
    sigma = _ROBUST_SIGMA * mean_move
    sigma[samples < config.min_sigma_samples] = np.nan
    return sigma, samples


def _classify(
    end_bps: np.ndarray,
    up_bps: np.ndarray,
    down_bps: np.ndarray,
    sigma_bps: np.ndarray,
    config: LabelConfig,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Labels, then the ask and bid run-overs of the labelled frames."""
    labels = np.full(end_bps.shape, UNLABELLED, dtype=np.int8)
    usable = ~np.isnan(end_bps) & ~np.isnan(sigma_bps) & (np.nan_to_num(sigma_bps) > 0)
    sigma = np.where(usable, sigma_bps, 1.0)
    big = config.emergency_sigma * sigma
    run = config.lean_sigma * sigma
    ask_run = usable & (up_bps >= run)
    bid_run = usable & (down_bps <= -run)
    emergency = (down_bps <= -big) | (up_bps >= big)
    if config.scheme == "end":
        lean_buy = end_bps >= run
        lean_sell = end_bps <= -run
    else:
        emergency |= ask_run & bid_run
        lean_buy, lean_sell = ask_run, bid_run
    labels[usable] = Verdict.HOLD
    labels[usable & lean_sell] = Verdict.LEAN_SELL
    labels[usable & lean_buy] = Verdict.LEAN_BUY
    labels[usable & emergency] = Verdict.EMERGENCY
    return labels, ask_run, bid_run


def _range_max_min(
    values: np.ndarray, starts: np.ndarray, stops: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Max and min of values[start:stop] per (non-empty) range, from a sparse table."""
    highest_levels = [values]
    lowest_levels = [values]
    longest = int(np.max(stops - starts))
    width = 1
    while width * 2 <= longest:
        high, low = highest_levels[-1], lowest_levels[-1]
        highest_levels.append(np.maximum(high[:-width], high[width:]))
        lowest_levels.append(np.minimum(low[:-width], low[width:]))
        width *= 2
    lengths = stops - starts
    level = np.floor(np.log2(lengths)).astype(np.int64)
    highest = np.empty(starts.size)
    lowest = np.empty(starts.size)
    # One gather per level: a range of length L is covered by two overlapping 2^k blocks.
    for k in np.unique(level):
        rows = np.flatnonzero(level == k)
        left = starts[rows]
        right = stops[rows] - (1 << int(k))
        high, low = highest_levels[k], lowest_levels[k]
        highest[rows] = np.maximum(high[left], high[right])
        lowest[rows] = np.minimum(low[left], low[right])
    return highest, lowest
