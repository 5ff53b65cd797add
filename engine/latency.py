"""Fixed-bucket latency histograms: O(1) record, no allocation, ~1.6 % resolution.

Values below 128 ns are exact; above, each power of two is split into 64 buckets, so a
reported percentile is within 1/64 of the true value. Everything up to ~36 minutes fits.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import NamedTuple

_SUB_BUCKET_BITS = 6
_SUB_BUCKETS = 1 << _SUB_BUCKET_BITS  # 64
_EXACT_LIMIT = 2 * _SUB_BUCKETS  # 128
_BUCKETS = 36 * _SUB_BUCKETS
TIMER_CALIBRATION_READS = 20_000


def _bucket_low(index: int) -> int:
    if index < _EXACT_LIMIT:
        return index
    shift = index // _SUB_BUCKETS - 1
    return (index - shift * _SUB_BUCKETS) << shift


def _bucket_value(index: int) -> float:
    """Midpoint of a bucket in ns."""
    if index < _EXACT_LIMIT:
        return float(index)
    shift = index // _SUB_BUCKETS - 1
    return _bucket_low(index) + ((1 << shift) - 1) / 2


class Bucket(NamedTuple):
    """One non-empty bucket: durations in [low_ns, high_ns)."""

    low_ns: int
    high_ns: int
    count: int


class LatencyHistogram:
    """Counts of durations in ns; percentiles on demand."""

    __slots__ = ("_counts", "count", "max_ns", "total_ns")

    def __init__(self) -> None:
        self.reset()

    def record(self, ns: int) -> None:
        if ns < _EXACT_LIMIT:
            index = ns if ns > 0 else 0
        else:
            shift = ns.bit_length() - _SUB_BUCKET_BITS - 1
            index = shift * _SUB_BUCKETS + (ns >> shift)
            if index >= _BUCKETS:
                index = _BUCKETS - 1
        self._counts[index] += 1
        self.count += 1
        self.total_ns += ns
        if ns > self.max_ns:
            self.max_ns = ns

    def reset(self) -> None:
        self._counts = [0] * _BUCKETS
        self.count = 0
        self.total_ns = 0
        self.max_ns = 0

    def merge(self, other: LatencyHistogram) -> None:
        for index, value in enumerate(other._counts):
            if value:
                self._counts[index] += value
        self.count += other.count
        self.total_ns += other.total_ns
        self.max_ns = max(self.max_ns, other.max_ns)

    def percentile_ns(self, percent: float) -> float:
        """The value at `percent` (0-100); NaN when empty. The max is exact."""
        return self.percentiles_ns((percent,))[0]

    def percentiles_ns(self, percents: Sequence[float]) -> tuple[float, ...]:
        """`percentile_ns` for each of `percents`, with one pass over the buckets."""
        count = self.count
        if count == 0:
            return tuple(float("nan") for _ in percents)
        max_ns = float(self.max_ns)
        cumulative = list(accumulate(self._counts))
        values = []
        for percent in percents:
            if percent >= 100.0:
                values.append(max_ns)
                continue
            rank = max(1, -(-count * percent // 100))  # ceil, at least the first sample
            index = bisect_left(cumulative, rank)
            values.append(min(_bucket_value(index), max_ns) if index < _BUCKETS else max_ns)
        return tuple(values)

    def bins(self) -> list[Bucket]:
        """The non-empty buckets, shortest durations first (for drawing the distribution)."""
        return [
            Bucket(_bucket_low(index), _bucket_low(index + 1), value)
            for index, value in enumerate(self._counts)
            if value
        ]

    def summary_us(self, overhead_ns: float = 0.0) -> dict[str, float]:
        """p50 / p99 / p999 / max in microseconds (the bench and console format), less a
        constant measuring overhead (the cost of the clock read inside each sample)."""

        p50, p99, p999, top = self.percentiles_ns((50, 99, 99.9, 100))
        return {
            "p50": max(0.0, p50 - overhead_ns) / 1e3,
            "p99": max(0.0, p99 - overhead_ns) / 1e3,
            "p999": max(0.0, p999 - overhead_ns) / 1e3,
            "max": max(0.0, top - overhead_ns) / 1e3,
        }


class FrameTimings:
    """What a feed times around its parser and sink, per frame: `parse` and `total` (parse,
    book, features, infer, decide and the trading hook) for book frames, `trade` (parse and
    dispatch) for trade frames. The pipeline times its own stages in between."""

    __slots__ = ("parse", "total", "trade")

    def __init__(self) -> None:
        self.parse = LatencyHistogram()
        self.total = LatencyHistogram()
        self.trade = LatencyHistogram()


def timer_cost_ns(clock: Callable[[], int] = time.perf_counter_ns) -> int:
    """Median interval between two back-to-back clock reads."""
    samples = []
    for _ in range(TIMER_CALIBRATION_READS):
        first = clock()
        samples.append(clock() - first)
    samples.sort()
    return samples[len(samples) // 2]
