"""Fixed-bucket latency histograms: O(1) record, no allocation, ~1.6 % resolution.

Values below 128 ns are exact; above, each power of two is split into 64 buckets, so a
reported percentile is within 1/64 of the true value. Everything up to ~36 minutes fits.
"""

from __future__ import annotations

_SUB_BUCKET_BITS = 6
_SUB_BUCKETS = 1 << _SUB_BUCKET_BITS  # 64
_EXACT_LIMIT = 2 * _SUB_BUCKETS  # 128
_BUCKETS = 36 * _SUB_BUCKETS


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


class LatencyHistogram:
    """Counts of durations in ns; percentiles on demand."""

    __slots__ = ("_counts", "count", "max_ns", "total_ns")

    def __init__(self) -> None:
        self._counts = [0] * _BUCKETS
        self.count = 0
        self.total_ns = 0
        self.max_ns = 0

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
        if self.count == 0:
            return float("nan")
        if percent >= 100.0:
            return float(self.max_ns)
        rank = max(1, -(-self.count * percent // 100))  # ceil, at least the first sample
        seen = 0
        for index, value in enumerate(self._counts):
            seen += value
            if seen >= rank:
                return min(_bucket_value(index), float(self.max_ns))
        return float(self.max_ns)

    def summary_us(self, overhead_ns: float = 0.0) -> dict[str, float]:
        """p50 / p99 / p999 / max in microseconds (the bench and console format), less a
        constant measuring overhead (the cost of the clock read inside each sample)."""

        def net(ns: float) -> float:
            return max(0.0, ns - overhead_ns) / 1e3

        return {
            "p50": net(self.percentile_ns(50)),
            "p99": net(self.percentile_ns(99)),
            "p999": net(self.percentile_ns(99.9)),
            "max": net(self.max_ns),
        }
