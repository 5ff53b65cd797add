"""LatencyHistogram: bucket resolution, percentiles against numpy, merge and reset."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from engine.latency import LatencyHistogram


def test_small_values_are_exact():
    histogram = LatencyHistogram()
    for ns in (0, 1, 5, 127, 127):
        histogram.record(ns)
    assert histogram.percentile_ns(50) == 5
    assert histogram.percentile_ns(80) == 127
    assert histogram.percentile_ns(100) == 127


@given(
    st.lists(st.integers(0, 10**11), min_size=1, max_size=300), st.sampled_from([50, 90, 99, 99.9])
)
def test_percentiles_are_within_one_bucket_of_the_exact_value(values, percent):
    histogram = LatencyHistogram()
    for ns in values:
        histogram.record(ns)
    exact = float(np.percentile(values, percent, method="inverted_cdf"))
    assert math.isclose(histogram.percentile_ns(percent), exact, rel_tol=1 / 64, abs_tol=1)
    assert histogram.max_ns == max(values)
    assert histogram.count == len(values)


def test_summary_is_in_microseconds():
    histogram = LatencyHistogram()
    for ns in range(1000, 101_000, 1000):
        histogram.record(ns)
    summary = histogram.summary_us()
    assert set(summary) == {"p50", "p99", "p999", "max"}
    assert math.isclose(summary["p50"], 50.0, rel_tol=1 / 64)
    assert summary["max"] == 100.0


def test_merge_and_reset():
    first, second = LatencyHistogram(), LatencyHistogram()
    first.record(1_000)
    second.record(9_000_000)
    first.merge(second)
    assert first.count == 2 and first.max_ns == 9_000_000
    first.reset()
    assert first.count == 0 and math.isnan(first.percentile_ns(50))
