"""LatencyHistogram: bucket resolution, percentiles against numpy, merge and reset."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from engine.latency import LatencyHistogram, timer_cost_ns


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


@given(st.lists(st.integers(0, 10**10), min_size=1, max_size=200))
def test_percentiles_in_one_pass_follow_the_definition(values):
    histogram = LatencyHistogram()
    for ns in values:
        histogram.record(ns)
    percents = (0, 50, 99, 99.9, 100)
    expected = []
    for percent in percents[:-1]:
        # The bucket of the ceil(count * p)-th sample: its midpoint, capped by the exact max.
        rank = max(1, math.ceil(len(values) * percent / 100))
        seen = 0
        for low, high, count in histogram.bins():
            seen += count
            if seen >= rank:
                expected.append(min(low + (high - low - 1) / 2, float(max(values))))
                break
    expected.append(float(max(values)))
    assert histogram.percentiles_ns(percents) == tuple(expected)
    assert histogram.percentile_ns(99) == expected[2]
    assert math.isnan(LatencyHistogram().percentiles_ns((50,))[0])


def test_bins_are_the_non_empty_buckets_in_order():
    histogram = LatencyHistogram()
    for ns in (5, 5, 127, 128, 129, 1_000_000):
        histogram.record(ns)
    bins = histogram.bins()
    assert [(b.low_ns, b.count) for b in bins[:3]] == [(5, 2), (127, 1), (128, 2)]
    assert bins[2].high_ns == 130  # from 128 ns, two nanoseconds a bucket
    assert bins[-1].low_ns <= 1_000_000 < bins[-1].high_ns
    assert sum(b.count for b in bins) == histogram.count
    assert LatencyHistogram().bins() == []


def test_the_timer_cost_is_the_median_gap_between_two_reads():
    # Each calibration pair reads the clock twice: the gap between pairs is 7 ns, the gap inside
    # a pair 40 ns, one pair in ten is preempted (5 us): the median is the 40 ns.
    steps = iter(
        [7, 5_000 if pair % 10 == 0 else 40][which] for pair in range(20_000) for which in (0, 1)
    )
    now = 0

    def clock() -> int:
        nonlocal now
        now += next(steps)
        return now

    assert timer_cost_ns(clock) == 40
