"""Hedge analytics for the traded/hedge pair: rolling OLS hedge ratio, spread z-score,
Engle-Granger statistic and half-life, all O(1) per sample.

Mids are sampled on a fixed clock (`sample_interval_ms`, sample-and-hold: each sample takes the
latest mids), because a regression over book ticks would weight busy moments and make the
half-life meaningless. Over the last `window` samples, with x = log(traded mid) and
y = log(hedge mid):

- OLS  y = a + b x + e. b is the hedge's beta to the traded book, which is what the risk
  gateway's hedge ratio means (the part of the hedge's notional that offsets the book).
- The spread is the residual e; its z-score is the latest e over the residuals' standard
  deviation in the window (their mean is zero by construction).
- Engle-Granger: the Dickey-Fuller t-statistic of rho in  de_t = rho e_{t-1} + u_t  (no
  constant, no lags) over the window's residuals, compared with MacKinnon's (2010) 5 % critical
  value for two variables with a constant at the window's sample count.
- Half-life: -ln 2 / ln(1 + rho) samples, when 0 < 1 + rho < 1 (otherwise not mean-reverting).

Every statistic comes from running sums (of x, y, their squares and cross products, and the
cross products of consecutive samples), so `stats()` costs the same at any window size. Values
are kept relative to an anchor (an earlier sample's logs) so the sums stay small, and the sums
are recomputed exactly from the ring, with a fresh anchor, once every `window` samples, so
rounding cannot accumulate. `on_mids` is a comparison and two stores except once per sample.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import NamedTuple

from engine.validation import require_count

_MACKINNON_EG2_5PCT = (-3.33613, -6.1101, -6.823)
"""MacKinnon (2010), Table 2, N = 2 with a constant, 5 %: b0 + b1/T + b2/T^2."""


def engle_granger_critical_5pct(samples: int) -> float:
    """The 5 % critical value of the Engle-Granger statistic for two series and `samples`
    observations (below it, reject "no cointegration")."""
    b0, b1, b2 = _MACKINNON_EG2_5PCT
    return b0 + b1 / samples + b2 / samples**2


@dataclass(frozen=True, slots=True)
class HedgeAnalyticsConfig:
    """`window` samples of `sample_interval_ms` each (default 300 x 1 s); statistics need
    `min_samples`. A gap longer than `max_gap_ms` between samples (a feed outage) restarts the
    window, since a regression across it would splice two markets together."""

    sample_interval_ms: int = 1_000
    window: int = 300
    min_samples: int = 30
    max_gap_ms: int = 30_000

    def __post_init__(self) -> None:
        for name in ("sample_interval_ms", "window", "min_samples", "max_gap_ms"):
            require_count("HedgeAnalyticsConfig", name, getattr(self, name))
        if not 4 <= self.min_samples <= self.window:
            raise ValueError(
                f"HedgeAnalyticsConfig.min_samples must be within [4, window={self.window}], "
                f"got {self.min_samples}"
            )
        if self.max_gap_ms < self.sample_interval_ms:
            raise ValueError(
                "HedgeAnalyticsConfig.max_gap_ms must be at least one sample_interval_ms"
            )


class HedgeStats(NamedTuple):
    """The pair's statistics over the current window. `hedge_ratio` is b; `spread` the latest
    residual (log units); `half_life_s` is None when the spread is not mean-reverting."""

    samples: int
    hedge_ratio: float
    intercept: float
    spread: float
    spread_z: float
    engle_granger: float
    critical_5pct: float
    cointegrated: bool
    half_life_s: float | None


class HedgeAnalytics:
    """Rolling statistics of the traded/hedge pair; feed it with `on_mids` from the engine
    loop, read `stats()` off the fast path."""

    def __init__(self, config: HedgeAnalyticsConfig | None = None) -> None:
        self.config = config or HedgeAnalyticsConfig()
        window = self.config.window
        self._xs = [0.0] * window
        self._ys = [0.0] * window
        self._next_sample_ms = -1
        self._last_sample_ms = -1
        self.invalid_mids = 0
        self.resets = 0
        self._restart()

    def _restart(self) -> None:
        self._count = 0
        self._head = 0  # ring index of the next sample
        self._anchor_x = 0.0
        self._anchor_y = 0.0
        self._since_rebase = 0
        self._sx = self._sy = self._sxx = self._syy = self._sxy = 0.0
        self._pxx = self._pyy = self._pxy = self._pyx = 0.0

    @property
    def samples(self) -> int:
        return self._count

    def on_mids(self, ts_ms: int, traded_mid: float, hedge_mid: float) -> None:
        """The latest mids of both symbols at exchange time `ts_ms`; one sample is taken per
        interval. Non-positive or non-finite mids are counted and ignored."""
        if ts_ms < self._next_sample_ms:
            return
        if not (0.0 < traded_mid < math.inf and 0.0 < hedge_mid < math.inf):
            self.invalid_mids += 1
            return
        interval = self.config.sample_interval_ms
        if self._last_sample_ms >= 0 and ts_ms - self._last_sample_ms > self.config.max_gap_ms:
            self.resets += 1
            self._restart()
        self._last_sample_ms = ts_ms
        self._next_sample_ms = ts_ms - ts_ms % interval + interval
        self._add(math.log(traded_mid), math.log(hedge_mid))

    def _add(self, log_x: float, log_y: float) -> None:
        window = self.config.window
        if self._count == 0:
            self._anchor_x, self._anchor_y = log_x, log_y
        x = log_x - self._anchor_x
        y = log_y - self._anchor_y
        head = self._head
        xs, ys = self._xs, self._ys
        if self._count:
            previous = (head - 1) % window
            px, py = xs[previous], ys[previous]
            self._pxx += px * x
            self._pyy += py * y
            self._pxy += px * y
            self._pyx += py * x
        if self._count == window:
            # The oldest sample leaves, with its pair to the second oldest.
            ox, oy = xs[head], ys[head]
            nx, ny = xs[(head + 1) % window], ys[(head + 1) % window]
            self._sx -= ox
            self._sy -= oy
            self._sxx -= ox * ox
            self._syy -= oy * oy
            self._sxy -= ox * oy
            self._pxx -= ox * nx
            self._pyy -= oy * ny
            self._pxy -= ox * ny
            self._pyx -= oy * nx
        else:
            self._count += 1
        xs[head] = x
        ys[head] = y
        self._sx += x
        self._sy += y
        self._sxx += x * x
        self._syy += y * y
        self._sxy += x * y
        self._head = (head + 1) % window
        self._since_rebase += 1

    def _rebase(self) -> None:
        """Recompute every sum exactly, relative to the oldest sample in the window."""
        window = self.config.window
        n = self._count
        start = (self._head - n) % window
        order = [(start + k) % window for k in range(n)]
        shift_x = self._xs[order[0]]
        shift_y = self._ys[order[0]]
        xs = [self._xs[k] - shift_x for k in order]
        ys = [self._ys[k] - shift_y for k in order]
        self._anchor_x += shift_x
        self._anchor_y += shift_y
        for k, slot in enumerate(order):
            self._xs[slot] = xs[k]
            self._ys[slot] = ys[k]
        self._sx = math.fsum(xs)
        self._sy = math.fsum(ys)
        self._sxx = math.fsum(x * x for x in xs)
        self._syy = math.fsum(y * y for y in ys)
        self._sxy = math.fsum(x * y for x, y in zip(xs, ys, strict=True))
        self._pxx = math.fsum(a * b for a, b in itertools.pairwise(xs))
        self._pyy = math.fsum(a * b for a, b in itertools.pairwise(ys))
        self._pxy = math.fsum(a * b for a, b in zip(xs, ys[1:], strict=False))
        self._pyx = math.fsum(a * b for a, b in zip(ys, xs[1:], strict=False))
        self._since_rebase = 0

    def stats(self) -> HedgeStats | None:
        """The statistics over the window; None before `min_samples` samples or while the
        traded mid has not moved (no regression is defined)."""
        n = self._count
        if n < self.config.min_samples:
            return None
        if self._since_rebase >= self.config.window:
            self._rebase()
        sx, sy = self._sx, self._sy
        sxx_c = self._sxx - sx * sx / n
        sxy_c = self._sxy - sx * sy / n
        syy_c = self._syy - sy * sy / n
        if not sxx_c > 0.0:
            return None
        beta = sxy_c / sxx_c
        alpha = (sy - beta * sx) / n
        ssr = max(syy_c - beta * sxy_c, 0.0)

        window = self.config.window
        first = (self._head - n) % window
        last = (self._head - 1) % window
        e_first = self._ys[first] - alpha - beta * self._xs[first]
        e_last = self._ys[last] - alpha - beta * self._xs[last]
        spread_sd = math.sqrt(ssr / n)
        spread_z = e_last / spread_sd if spread_sd > 0.0 else 0.0

        # Sums over the n - 1 consecutive pairs (e_{t-1}, e_t), from the running sums.
        lagged_sq = ssr - e_last * e_last  # sum of e_{t-1}^2
        current_sq = ssr - e_first * e_first  # sum of e_t^2
        without_last = (sy - self._ys[last]) - beta * (sx - self._xs[last])
        without_first = (sy - self._ys[first]) - beta * (sx - self._xs[first])
        cross = (
            self._pyy
            - beta * (self._pyx + self._pxy)
            + beta * beta * self._pxx
            - alpha * (without_last + without_first)
            + (n - 1) * alpha * alpha
        )
        eg_stat, half_life_s = math.nan, None
        if lagged_sq > 0.0:
            rho = (cross - lagged_sq) / lagged_sq
            residual_ss = max((current_sq - 2 * cross + lagged_sq) - rho * (cross - lagged_sq), 0.0)
            variance = residual_ss / (n - 2)
            if variance > 0.0:
                eg_stat = rho / math.sqrt(variance / lagged_sq)
            if -1.0 < rho < 0.0:
                half_life_s = (
                    -math.log(2.0) / math.log1p(rho) * self.config.sample_interval_ms / 1000
                )
        critical = engle_granger_critical_5pct(n)
        return HedgeStats(
            n,
            beta,
            alpha + self._anchor_y - beta * self._anchor_x,
            e_last,
            spread_z,
            eg_stat,
            critical,
            eg_stat < critical,
            half_life_s,
        )
