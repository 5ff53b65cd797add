"""Hedge analytics against direct closed-form computations over the same window."""

from __future__ import annotations

import math
import random

import pytest

from engine.kev.hedge import (
    HedgeAnalytics,
    HedgeAnalyticsConfig,
    engle_granger_critical_5pct,
)

INTERVAL_MS = 1_000
START_MS = 1_726_000_000_000


def reference(log_traded: list[float], log_hedge: list[float], interval_s: float) -> dict:
    """OLS of log hedge on log traded, the residual's z-score, the Dickey-Fuller t-statistic of
    its first difference on its lag (no constant) and the implied half-life, written out."""
    n = len(log_traded)
    mean_x = sum(log_traded) / n
    mean_y = sum(log_hedge) / n
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in zip(log_traded, log_hedge, strict=True))
    sxx = sum((x - mean_x) ** 2 for x in log_traded)
    beta = sxy / sxx
    alpha = mean_y - beta * mean_x
    residuals = [y - alpha - beta * x for x, y in zip(log_traded, log_hedge, strict=True)]
    z = residuals[-1] / math.sqrt(sum(e * e for e in residuals) / n)
    lagged = residuals[:-1]
    changes = [residuals[k] - residuals[k - 1] for k in range(1, n)]
    rho = sum(a * b for a, b in zip(lagged, changes, strict=True)) / sum(a * a for a in lagged)
    errors = [d - rho * a for a, d in zip(lagged, changes, strict=True)]
    variance = sum(u * u for u in errors) / (len(changes) - 1)
    t_stat = rho / math.sqrt(variance / sum(a * a for a in lagged))
    half_life = -math.log(2) / math.log(1 + rho) * interval_s if -1 < rho < 0 else None
    return {
        "beta": beta,
        "alpha": alpha,
        "spread": residuals[-1],
        "z": z,
        "eg": t_stat,
        "half_life": half_life,
    }


def cointegrated_pair(
    count: int, beta: float, phi: float, seed: int, noise_sd: float = 1e-4
) -> tuple[list, list]:
    """Traded mid a random walk; log hedge = 0.3 + beta log traded + AR(1) noise."""
    rng = random.Random(seed)
    log_traded, log_hedge = [], []
    x, noise = math.log(60_000.0), 0.0
    for _ in range(count):
        x += rng.gauss(0, 4e-4)
        noise = phi * noise + rng.gauss(0, noise_sd)
        log_traded.append(x)
        log_hedge.append(0.3 + beta * x + noise)
    return log_traded, log_hedge


def feed(analytics: HedgeAnalytics, log_traded: list[float], log_hedge: list[float]) -> None:
    for k, (x, y) in enumerate(zip(log_traded, log_hedge, strict=True)):
        analytics.on_mids(START_MS + k * INTERVAL_MS, math.exp(x), math.exp(y))


def assert_matches(stats, expected: dict) -> None:
    assert stats.hedge_ratio == pytest.approx(expected["beta"], rel=1e-9)
    assert stats.intercept == pytest.approx(expected["alpha"], rel=1e-9, abs=1e-9)
    assert stats.spread == pytest.approx(expected["spread"], rel=1e-6, abs=1e-12)
    assert stats.spread_z == pytest.approx(expected["z"], rel=1e-6)
    assert stats.engle_granger == pytest.approx(expected["eg"], rel=1e-6)
    if expected["half_life"] is None:
        assert stats.half_life_s is None
    else:
        assert stats.half_life_s == pytest.approx(expected["half_life"], rel=1e-6)


@pytest.mark.parametrize("count", [50, 300, 1_000, 2_345])
def test_statistics_equal_the_direct_computation_over_the_window(count):
    window = 300
    log_traded, log_hedge = cointegrated_pair(count, beta=0.8, phi=0.9, seed=count)
    analytics = HedgeAnalytics(HedgeAnalyticsConfig(window=window))
    feed(analytics, log_traded, log_hedge)
    stats = analytics.stats()
    tail = slice(max(0, count - window), count)
    assert stats.samples == min(count, window)
    assert_matches(stats, reference(log_traded[tail], log_hedge[tail], INTERVAL_MS / 1000))
    assert stats.critical_5pct == pytest.approx(engle_granger_critical_5pct(stats.samples))


def test_a_cointegrated_pair_is_recognised_with_its_beta_and_half_life():
    log_traded, log_hedge = cointegrated_pair(600, beta=0.8, phi=0.9, seed=11, noise_sd=3e-5)
    analytics = HedgeAnalytics(HedgeAnalyticsConfig(window=500))
    feed(analytics, log_traded, log_hedge)
    stats = analytics.stats()
    assert stats.hedge_ratio == pytest.approx(0.8, abs=0.02)
    assert stats.cointegrated and stats.engle_granger < stats.critical_5pct
    # AR(1) with phi 0.9: half-life -ln 2 / ln 0.9 = 6.6 samples of 1 s.
    assert stats.half_life_s == pytest.approx(-math.log(2) / math.log(0.9), rel=0.35)


def test_two_independent_random_walks_are_not_cointegrated():
    rng = random.Random(5)
    analytics = HedgeAnalytics(HedgeAnalyticsConfig(window=300))
    traded, hedge = 60_000.0, 3_000.0
    for k in range(300):
        traded *= math.exp(rng.gauss(0, 4e-4))
        hedge *= math.exp(rng.gauss(0, 4e-4))
        analytics.on_mids(START_MS + k * INTERVAL_MS, traded, hedge)
    stats = analytics.stats()
    assert not stats.cointegrated
    assert stats.engle_granger > stats.critical_5pct


def test_one_sample_per_interval_from_the_latest_mids():
    analytics = HedgeAnalytics(HedgeAnalyticsConfig(window=50, min_samples=4))
    for k in range(100):  # 10 s of books every 100 ms
        analytics.on_mids(START_MS + 100 * k, 100.0 + k, 50.0 + 0.5 * k + (k % 3) * 0.01)
    assert analytics.samples == 10


def test_invalid_mids_are_counted_and_ignored():
    analytics = HedgeAnalytics(HedgeAnalyticsConfig(window=50, min_samples=4))
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        analytics.on_mids(START_MS, bad, 50.0)
        analytics.on_mids(START_MS, 100.0, bad)
    assert analytics.invalid_mids == 8 and analytics.samples == 0
    analytics.on_mids(START_MS, 100.0, 50.0)
    assert analytics.samples == 1


def test_a_feed_gap_restarts_the_window():
    config = HedgeAnalyticsConfig(window=50, min_samples=4, max_gap_ms=5_000)
    analytics = HedgeAnalytics(config)
    log_traded, log_hedge = cointegrated_pair(20, beta=0.8, phi=0.5, seed=2)
    feed(analytics, log_traded, log_hedge)
    analytics.on_mids(START_MS + 60_000, 60_000.0, 2_000.0)
    assert analytics.resets == 1 and analytics.samples == 1


def test_no_statistics_before_enough_samples_or_without_movement():
    analytics = HedgeAnalytics(HedgeAnalyticsConfig(window=50, min_samples=10))
    for k in range(9):
        analytics.on_mids(START_MS + k * INTERVAL_MS, 100.0 + k, 50.0 + k)
    assert analytics.stats() is None
    flat = HedgeAnalytics(HedgeAnalyticsConfig(window=50, min_samples=10))
    for k in range(20):
        flat.on_mids(START_MS + k * INTERVAL_MS, 100.0, 50.0 + k)
    assert flat.stats() is None


def test_a_long_run_stays_exact():
    """Rounding in the running sums never accumulates: a day of samples, prices drifting 20 %."""
    window = 120
    rng = random.Random(9)
    analytics = HedgeAnalytics(HedgeAnalyticsConfig(window=window))
    log_traded, log_hedge = [], []
    x, noise = math.log(60_000.0), 0.0
    for k in range(86_400):
        x += rng.gauss(2.1e-6, 3e-4)
        noise = 0.95 * noise + rng.gauss(0, 1e-4)
        log_traded.append(x)
        log_hedge.append(-2.0 + 1.1 * x + noise)
        analytics.on_mids(START_MS + k * INTERVAL_MS, math.exp(x), math.exp(log_hedge[-1]))
        if k % 10_007 == 0 and k >= window:
            analytics.stats()  # rebase at irregular moments, as the hub's reads would
    expected = reference(log_traded[-window:], log_hedge[-window:], 1.0)
    assert_matches(analytics.stats(), expected)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"window": 0},
        {"min_samples": 3},
        {"min_samples": 400},
        {"sample_interval_ms": 0},
        {"max_gap_ms": 500},
    ],
)
def test_a_config_out_of_bounds_is_refused(kwargs):
    with pytest.raises(ValueError, match="HedgeAnalyticsConfig"):
        HedgeAnalyticsConfig(**kwargs)
