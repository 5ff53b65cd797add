"""Laya labels on constructed mid paths, checked against hand-computed values and a
direct (quadratic) reading of the definition."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from engine.laya.labels import UNLABELLED, LabelConfig, label_frames
from engine.laya.verdict import Verdict

SMALL = LabelConfig.end_labels(horizon_ms=1_000, sigma_window_ms=20_000, min_sigma_samples=10)


def _probe(horizon_offsets: list[float], config: LabelConfig = SMALL):
    """Warm-up mids alternating 10000 / 10002 once a second (sigma ~2 bps from 10 returns),
    then the probed frame at T = 10 s (mid 10000) and four frames inside its horizon at
    10000 + offset (one offset unit = 1 bp)."""
    warm_ts = np.arange(0, 10_001, 1_000)
    warm_mid = np.where(np.arange(warm_ts.size) % 2 == 0, 10_000.0, 10_002.0)
    ts = np.concatenate([warm_ts, [10_250, 10_500, 10_750, 11_000]])
    mid = np.concatenate([warm_mid, 10_000.0 + np.asarray(horizon_offsets)])
    return label_frames(ts, mid, config), 10


@pytest.mark.parametrize(
    ("offsets", "expected"),
    [
        ([0.5, 1.0, 0.5, 1.0], Verdict.HOLD),
        ([1.0, 2.0, 3.0, 1.9], Verdict.HOLD),
        ([1.0, 3.0, 4.0, 4.5], Verdict.LEAN_BUY),
        ([-1.0, -3.0, -5.0, -4.5], Verdict.LEAN_SELL),
        ([2.0, 7.0, 3.0, 4.0], Verdict.EMERGENCY),  # up >= 3 sigma beats end >= 1 sigma
        ([-7.0, 0.0, 3.0, 4.0], Verdict.EMERGENCY),  # a dip through -3 sigma, then a rally
        ([-1.0, -6.5, -2.0, -3.0], Verdict.EMERGENCY),
    ],
)
def test_hand_computed_labels(offsets, expected):
    result, probe = _probe(offsets)
    assert result.sigma_samples[probe] == 10
    assert result.sigma_bps[probe] == pytest.approx(2.0, abs=1e-3)
    assert result.end_bps[probe] == pytest.approx(offsets[-1], abs=1e-9)
    assert result.up_bps[probe] == pytest.approx(max(offsets), abs=1e-9)
    assert result.down_bps[probe] == pytest.approx(min(offsets), abs=1e-9)
    assert result.labels[probe] == expected
    # Warm-up frames have fewer than 10 observed returns; horizon frames have no full horizon.
    assert np.all(np.delete(result.labels, probe) == UNLABELLED)


def test_too_few_sigma_samples_leaves_the_frame_unlabelled():
    config = LabelConfig.end_labels(horizon_ms=1_000, sigma_window_ms=20_000, min_sigma_samples=11)
    result, probe = _probe([1.0, 3.0, 4.0, 4.5], config)
    assert np.isnan(result.sigma_bps[probe])
    assert result.labels[probe] == UNLABELLED


def test_sigma_window_edges():
    """Frames every 500 ms, H = 1 s, W = 3 s: frame i sees the returns of frames i-6 .. i-2.

    j = i-2 was observed exactly at T_i (T_j + H = T_i) and counts; j = i-1 is not fully
    observed; j = i-6 sits exactly at T_i - W and counts; j = i-7 has dropped out.
    """
    config = LabelConfig.end_labels(horizon_ms=1_000, sigma_window_ms=3_000, min_sigma_samples=2)
    rng = np.random.default_rng(3)
    ts = np.arange(40) * 500
    mid = 100.0 * np.exp(np.cumsum(rng.normal(0, 1e-4, ts.size)))
    result = label_frames(ts, mid, config)
    assert result.sigma_samples[:9].tolist() == [0, 0, 1, 2, 3, 4, 5, 5, 5]
    for i in range(8, 30):
        assert result.sigma_bps[i] == pytest.approx(np.std(result.end_bps[i - 6 : i - 1]))


def test_sigma_has_no_look_ahead():
    config = LabelConfig.end_labels(horizon_ms=1_000, sigma_window_ms=3_000, min_sigma_samples=2)
    rng = np.random.default_rng(5)
    ts = np.cumsum(rng.integers(50, 400, 200))
    mid = 100.0 * np.exp(np.cumsum(rng.normal(0, 1e-4, ts.size)))
    k = 120
    changed = mid.copy()
    changed[k + 1 :] *= np.exp(rng.normal(0, 1e-3, ts.size - k - 1))
    before, after = label_frames(ts, mid, config), label_frames(ts, changed, config)
    np.testing.assert_array_equal(before.sigma_bps[: k + 1], after.sigma_bps[: k + 1])
    assert not np.array_equal(before.sigma_bps[k + 1 :], after.sigma_bps[k + 1 :])


def test_tail_without_a_full_horizon_is_unlabelled():
    config = LabelConfig.end_labels(horizon_ms=1_000, sigma_window_ms=3_000, min_sigma_samples=2)
    ts = np.arange(20) * 250  # last frame at 4750 ms
    mid = 100.0 + 0.01 * np.sin(np.arange(20))
    result = label_frames(ts, mid, config)
    complete = ts + 1_000 <= 4_750
    assert complete.sum() == 16  # frame at 3750 ms: horizon ends exactly at the last frame
    assert np.all(np.isnan(result.end_bps[~complete]))
    assert np.all(result.labels[~complete] == UNLABELLED)
    assert np.all(~np.isnan(result.end_bps[complete]))
    assert result.labels[15] != UNLABELLED


def test_horizon_boundaries_and_empty_horizon():
    config = LabelConfig.end_labels(horizon_ms=1_000, sigma_window_ms=3_000, min_sigma_samples=2)
    ts = np.array([0, 0, 1_000, 1_001, 3_500, 5_000])
    mid = np.array([100.0, 100.5, 101.0, 200.0, 99.0, 98.0])
    result = label_frames(ts, mid, config)
    # Frame 0's horizon is (0, 1000]: the frame at the same time is not in it, 1001 is not.
    assert result.end_bps[0] == pytest.approx(100.0)
    assert result.up_bps[0] == pytest.approx(100.0)
    # Frame 3 (1001 ms) has nothing in (1001, 2001]: a feed gap, so no return and no label.
    assert np.isnan(result.end_bps[3])
    assert result.labels[3] == UNLABELLED


def test_zero_sigma_leaves_frames_unlabelled():
    config = LabelConfig.end_labels(horizon_ms=1_000, sigma_window_ms=3_000, min_sigma_samples=2)
    ts = np.arange(30) * 500
    mid = np.full(30, 100.0)
    mid[-6:] = 101.0
    result = label_frames(ts, mid, config)
    assert np.all(result.sigma_bps[3:24] == 0.0)
    assert result.sigma_bps[26] > 0
    assert np.all(result.labels[:20] == UNLABELLED)


def _reference(ts, mid, config):
    """The definition read literally, one frame at a time."""
    n = ts.size
    end = np.full(n, np.nan)
    up = np.full(n, np.nan)
    down = np.full(n, np.nan)
    for i in range(n):
        inside = (ts > ts[i]) & (ts <= ts[i] + config.horizon_ms)
        if ts[i] + config.horizon_ms <= ts[-1] and inside.any():
            returns = (mid[inside] / mid[i] - 1.0) * 1e4
            end[i], up[i], down[i] = returns[-1], returns.max(), returns.min()
    labels = np.full(n, UNLABELLED)
    for i in range(n):
        window = (
            (ts + config.horizon_ms <= ts[i])
            & (ts >= ts[i] - config.sigma_window_ms)
            & ~np.isnan(end)
        )
        if window.sum() < config.min_sigma_samples or np.isnan(end[i]):
            continue
        sigma = np.std(end[window])
        if sigma <= 1e-12:
            continue
        if down[i] <= -config.emergency_sigma * sigma or up[i] >= config.emergency_sigma * sigma:
            labels[i] = Verdict.EMERGENCY
        elif end[i] >= config.lean_sigma * sigma:
            labels[i] = Verdict.LEAN_BUY
        elif end[i] <= -config.lean_sigma * sigma:
            labels[i] = Verdict.LEAN_SELL
        else:
            labels[i] = Verdict.HOLD
    return labels, end, up, down


@pytest.mark.parametrize("seed", range(4))
def test_matches_the_definition_on_irregular_paths(seed):
    config = LabelConfig.end_labels(horizon_ms=1_000, sigma_window_ms=8_000, min_sigma_samples=5)
    rng = np.random.default_rng(seed)
    ts = np.cumsum(rng.choice([0, 40, 100, 300, 1_500], size=400, p=[0.1, 0.3, 0.4, 0.15, 0.05]))
    returns = rng.standard_t(3, ts.size) * 1e-4
    mid = 50.0 * np.exp(np.cumsum(returns))
    labels, end, up, down = _reference(ts, mid, config)
    result = label_frames(ts, mid, config)
    np.testing.assert_allclose(result.end_bps, end, equal_nan=True)
    np.testing.assert_allclose(result.up_bps, up, equal_nan=True)
    np.testing.assert_allclose(result.down_bps, down, equal_nan=True)
    np.testing.assert_array_equal(result.labels, labels)
    assert set(np.unique(labels)) >= {UNLABELLED, *Verdict}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"horizon_ms": 0}, "horizon_ms"),
        ({"sigma_window_ms": 1_000}, "must exceed horizon_ms"),
        ({"emergency_sigma": 1.0}, "exceed lean_sigma"),
        ({"lean_sigma": -1.0}, "lean_sigma"),
        ({"min_sigma_samples": 1}, "min_sigma_samples"),
    ],
)
def test_config_is_validated(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LabelConfig(**kwargs)


def test_inputs_are_validated():
    with pytest.raises(ValueError, match="non-decreasing"):
        label_frames(np.array([0, 2, 1]), np.ones(3))
    with pytest.raises(ValueError, match="positive"):
        label_frames(np.array([0, 1, 2]), np.array([1.0, 0.0, 1.0]))


EXCURSION = LabelConfig.per_frame_labels(
    horizon_ms=1_000,
    sigma_window_ms=20_000,
    sigma_floor_window_ms=20_000,
    lean_sigma=1.5,
    emergency_sigma=4.0,
    min_sigma_samples=10,
)
ROBUST = np.sqrt(np.pi / 2)


@pytest.mark.parametrize(
    ("offsets", "expected", "ask", "bid"),
    [
        ([0.5, 1.0, 0.5, 1.0], Verdict.HOLD, False, False),
        ([1.0, 3.0, 2.0, 0.0], Verdict.LEAN_BUY, True, False),  # the ask was run over, then back
        ([-1.0, -3.5, -2.0, -1.0], Verdict.LEAN_SELL, False, True),
        ([3.0, -3.0, 0.0, 0.0], Verdict.EMERGENCY, True, True),  # both sides run over
        ([2.0, 9.0, 3.0, 4.0], Verdict.EMERGENCY, True, False),  # up 9 >= 4 sigma
        ([-1.0, -8.5, -2.0, -3.0], Verdict.EMERGENCY, False, True),
    ],
)
def test_hand_computed_per_side_labels(offsets, expected, ask, bid):
    """The warm-up's 1 s returns are all +-2 bps: the robust sigma is 2 x sqrt(pi / 2), about
    2.5 bps, so the ask is run over from +3.76 bps and EMERGENCY starts at 10 bps."""
    result, probe = _probe([value * ROBUST for value in offsets], EXCURSION)
    assert result.sigma_bps[probe] == pytest.approx(2.0 * ROBUST, rel=1e-3)
    assert result.labels[probe] == expected
    assert result.ask_run[probe] == ask and result.bid_run[probe] == bid
    assert not np.delete(result.ask_run | result.bid_run, probe).any()


def test_a_quiet_spell_does_not_shrink_the_robust_sigma_below_its_floor():
    """A lively first minute (1 s returns of 10 bps), then a quiet one (1 bp): over the short
    window sigma would fall tenfold; the long window keeps the floor at their mean."""
    config = LabelConfig.per_frame_labels(
        horizon_ms=1_000,
        sigma_window_ms=20_000,
        sigma_floor_window_ms=120_000,
        min_sigma_samples=10,
    )
    ts = np.arange(0, 121_000, 1_000)
    steps = np.where(ts < 60_000, 10.0, 1.0) * np.where(np.arange(ts.size) % 2, 1, -1)
    mid = 10_000.0 * np.exp(np.cumsum(steps) * 1e-4)
    result = label_frames(ts, mid, config)
    end = np.abs(result.end_bps)
    for index in (100, 115):
        short = end[(ts >= ts[index] - 20_000) & (ts <= ts[index] - 1_000)].mean()
        floor = end[(ts >= ts[index] - 120_000) & (ts <= ts[index] - 1_000)].mean()
        assert floor > 2 * short
        assert result.sigma_bps[index] == pytest.approx(ROBUST * floor, rel=1e-9)
    without = label_frames(ts, mid, dataclasses.replace(config, sigma_floor_window_ms=0))
    assert without.sigma_bps[115] < result.sigma_bps[115] / 2


def _excursion_reference(ts, mid, config):
    """The per-side definition read literally, one frame at a time."""
    n = ts.size
    labels = np.full(n, UNLABELLED)
    end = np.full(n, np.nan)
    for i in range(n):
        inside = (ts > ts[i]) & (ts <= ts[i] + config.horizon_ms)
        if ts[i] + config.horizon_ms <= ts[-1] and inside.any():
            end[i] = (mid[inside][-1] / mid[i] - 1.0) * 1e4
    for i in range(n):
        observed = (ts + config.horizon_ms <= ts[i]) & ~np.isnan(end)
        window = observed & (ts >= ts[i] - config.sigma_window_ms)
        floor = observed & (ts >= ts[i] - config.sigma_floor_window_ms)
        if window.sum() < config.min_sigma_samples or np.isnan(end[i]):
            continue
        sigma = ROBUST * max(np.abs(end[window]).mean(), np.abs(end[floor]).mean())
        if sigma <= 0:
            continue
        inside = (ts > ts[i]) & (ts <= ts[i] + config.horizon_ms)
        returns = (mid[inside] / mid[i] - 1.0) * 1e4
        labels[i] = _verdict_of(returns, sigma, config)
    return labels


def _verdict_of(returns, sigma, config) -> Verdict:
    """The definition's verdict of a horizon's returns (bps) against sigma."""
    up, down = returns.max(), returns.min()
    ask = up >= config.lean_sigma * sigma
    bid = down <= -config.lean_sigma * sigma
    if max(up, -down) >= config.emergency_sigma * sigma or (ask and bid):
        return Verdict.EMERGENCY
    return Verdict.LEAN_BUY if ask else Verdict.LEAN_SELL if bid else Verdict.HOLD


@pytest.mark.parametrize("seed", range(3))
def test_per_side_labels_match_the_definition_on_irregular_paths(seed):
    config = LabelConfig.per_frame_labels(
        horizon_ms=1_000,
        sigma_window_ms=8_000,
        sigma_floor_window_ms=30_000,
        min_sigma_samples=5,
    )
    rng = np.random.default_rng(seed)
    ts = np.cumsum(rng.choice([0, 40, 100, 300, 1_500], size=400, p=[0.1, 0.3, 0.4, 0.15, 0.05]))
    mid = 50.0 * np.exp(np.cumsum(rng.standard_t(3, ts.size) * 1e-4))
    result = label_frames(ts, mid, config)
    np.testing.assert_array_equal(result.labels, _excursion_reference(ts, mid, config))
    assert set(np.unique(result.labels)) >= {UNLABELLED, *Verdict}
    up = result.up_bps >= config.lean_sigma * result.sigma_bps
    np.testing.assert_array_equal(result.ask_run, up & (result.labels != UNLABELLED))


def test_the_scheme_travels_in_the_metadata():
    config = LabelConfig(lean_sigma=1.25)
    assert LabelConfig.from_metadata(config.as_metadata()) == config
    legacy = LabelConfig.end_labels()
    assert LabelConfig.from_metadata(legacy.as_metadata()) == legacy
    # A model from before the scheme existed carries no scheme: it was trained on "end".
    older = {"horizon_ms": 1000, "sigma_window_ms": 300_000, "emergency_sigma": 3, "lean_sigma": 1}
    assert LabelConfig.from_metadata(older) == legacy
    clock = LabelConfig.clock_labels()
    assert LabelConfig.from_metadata(clock.as_metadata()) == clock
    assert "sigma_floor_steps" not in clock.as_metadata()
    with pytest.raises(ValueError, match="label version 7 is newer than this engine knows"):
        LabelConfig.from_metadata({**older, "scheme": 7})


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (lambda: LabelConfig(scheme="close"), "scheme"),
        (lambda: LabelConfig(sigma_floor_window_ms=10_000), "sigma_floor_window_ms"),
        (lambda: LabelConfig.end_labels(sigma_floor_window_ms=600_000), "excursion scheme"),
        (lambda: LabelConfig(sigma_floor_steps=0), "sigma_floor_steps must be > 0 in the tick"),
        (lambda: LabelConfig(sigma_floor_steps=float("nan")), "sigma_floor_steps must be > 0"),
        (lambda: LabelConfig.clock_labels(sigma_floor_steps=1), "belongs to the tick scheme"),
    ],
)
def test_scheme_settings_are_validated(factory, message):
    with pytest.raises(ValueError, match=message):
        factory()


def _clock_reference(ts, mid, config):
    """The "clock" definition read literally: the mid as of each clock tick, one frame at a
    time."""
    step, n = config.horizon_ms, ts.size
    clock = np.arange(ts[0], ts[-1] + 1, step)

    def mid_at(t):
        return mid[np.flatnonzero(ts <= t)[-1]]

    def quiet(t):
        later = ts[ts > t]
        return later.size == 0 or later[0] - ts[ts <= t][-1] <= config.max_quiet_ms

    moves = [
        (end, abs(mid_at(end) / mid_at(end - step) - 1.0) * 1e4)
        for end in clock[1:]
        if quiet(end) and quiet(end - step)
    ]
    labels = np.full(n, UNLABELLED)
    for i in range(n):
        inside = (ts > ts[i]) & (ts <= ts[i] + config.horizon_ms)
        later = ts[ts > ts[i]]
        if ts[i] + config.horizon_ms > ts[-1]:
            continue
        if not inside.any() and later[0] - ts[i] > config.max_quiet_ms:
            continue
        returns = (mid[inside] / mid[i] - 1.0) * 1e4 if inside.any() else np.zeros(1)

        window, floor = (
            [move for end, move in moves if end - step >= ts[i] - width and end <= ts[i]]
            for width in (config.sigma_window_ms, config.sigma_floor_window_ms)
        )
        if len(window) < config.min_sigma_samples:
            continue
        sigma = ROBUST * max(np.mean(window), np.mean(floor))
        if sigma <= 0:
            continue
        labels[i] = _verdict_of(returns, sigma, config)
    return labels


@pytest.mark.parametrize("seed", range(3))
def test_clock_labels_match_the_definition_on_irregular_paths(seed):
    """Books from 40 ms to 12 s apart (gaps past max_quiet_ms among them)."""
    config = LabelConfig.clock_labels(
        sigma_window_ms=8_000, sigma_floor_window_ms=30_000, min_sigma_samples=5, max_quiet_ms=5_000
    )
    rng = np.random.default_rng(seed)
    gaps = rng.choice(
        [0, 40, 300, 1_500, 4_000, 12_000], size=300, p=[0.1, 0.3, 0.3, 0.2, 0.08, 0.02]
    )
    ts = np.cumsum(gaps)
    mid = 50.0 * np.exp(np.cumsum(rng.standard_t(3, ts.size) * 1e-4))
    result = label_frames(ts, mid, config)
    np.testing.assert_array_equal(result.labels, _clock_reference(ts, mid, config))
    assert set(np.unique(result.labels)) >= {UNLABELLED, *Verdict}


def _large_tick_book(move_share: float, seed: int = 11) -> tuple[np.ndarray, np.ndarray]:
    """A book every 100 ms of a NEXOUSDT-like market: the mid (1.215, tick 0.001) moves one step
    of half a tick (about 4 bps) on `move_share` of them, else stands still."""
    rng = np.random.default_rng(seed)
    ts = np.arange(0, 900_000, 100)
    ticks = np.where(rng.random(ts.size) < move_share, rng.choice([-1, 1], ts.size), 0)
    ticks[0] = 0
    return ts, 1.215 + 0.0005 * np.cumsum(ticks)


@pytest.mark.parametrize(
    ("config", "verdicts"),
    [
        (LabelConfig.clock_labels(), {Verdict.HOLD, Verdict.EMERGENCY}),
        (LabelConfig(), {Verdict.HOLD, Verdict.LEAN_BUY, Verdict.LEAN_SELL}),
    ],
)
def test_a_quiet_book_is_labelled_at_any_cadence(config, verdicts):
    """One large-tick market seen through a feed that sends a book every 100 ms and through
    one that sends a book only when the mid moves (about one every 2 s, the NEXOUSDT day's
    kind): both label every frame past the clock's 30 s warm-up, and the same frames alike."""
    ts, mid = _large_tick_book(0.05)
    moved = np.concatenate(([True], np.diff(mid) != 0))
    every = label_frames(ts, mid, config)
    quiet = label_frames(ts[moved], mid[moved], config)
    middle = (ts[moved] > 40_000) & (ts[moved] < 890_000)
    assert quiet.labelled[middle].all()
    np.testing.assert_array_equal(quiet.labels[middle], every.labels[moved][middle])
    np.testing.assert_allclose(quiet.sigma_bps[middle], every.sigma_bps[moved][middle])
    assert set(np.unique(quiet.labels[middle])) >= verdicts


def test_on_a_large_tick_book_a_side_is_run_over_by_a_whole_tick_not_by_every_step():
    """The clock's sigma of a book that mostly stands still is a fraction of its step, so every
    step was an EMERGENCY; the tick scheme's floor of one step (half a tick) makes a half-tick
    move ordinary and a whole tick a run-over."""
    ts, mid = _large_tick_book(0.005)
    mid += 0.001 * (np.arange(ts.size) // 1_000)  # and a whole tick up every 100 s
    step_bps = 0.0005 / mid * 1e4
    clock = label_frames(ts, mid, LabelConfig.clock_labels())
    tick = label_frames(ts, mid, LabelConfig())
    # The clock leaves a window without a move unlabelled (sigma 0); the floor labels it.
    assert (tick.labelled & ~clock.labelled).any() and not (clock.labelled & ~tick.labelled).any()
    rows = tick.labelled & clock.labelled
    assert np.all(clock.sigma_bps[rows] < 0.5 * step_bps[rows])
    np.testing.assert_allclose(tick.sigma_bps[rows], step_bps[rows])
    stepped = rows & (np.maximum(tick.up_bps, -tick.down_bps) > 0)
    one_step = stepped & (np.maximum(tick.up_bps, -tick.down_bps) < 1.5 * step_bps)
    assert one_step.sum() > 100
    assert np.all(clock.labels[one_step] == Verdict.EMERGENCY)
    assert np.all(tick.labels[one_step] == Verdict.HOLD)
    whole_tick_up = rows & (tick.up_bps >= 1.9 * step_bps) & (tick.down_bps >= 0)
    assert whole_tick_up.any()
    assert np.all(tick.ask_run[whole_tick_up])
    assert set(np.unique(tick.labels[whole_tick_up])) <= {Verdict.LEAN_BUY, Verdict.EMERGENCY}


def test_a_fine_grid_book_is_labelled_alike_with_and_without_the_floor():
    """BTC-like: a tick of 0.1 on 60,000 (a step under 0.01 bps), the mid moving several ticks
    a second: the floor of a step never binds."""
    rng = np.random.default_rng(5)
    ts = np.arange(0, 600_000, 100)
    mid = 60_000.0 + 0.05 * np.cumsum(rng.integers(-20, 21, ts.size))
    clock = label_frames(ts, mid, LabelConfig.clock_labels())
    tick = label_frames(ts, mid, LabelConfig())
    assert tick.labelled.sum() > 5_000
    np.testing.assert_array_equal(tick.labels, clock.labels)
    np.testing.assert_array_equal(tick.sigma_bps, clock.sigma_bps)


def test_a_mid_that_never_moves_has_no_step_and_no_label():
    ts = np.arange(0, 120_000, 100)
    result = label_frames(ts, np.full(ts.size, 1.215))
    assert not result.labelled.any()


def test_the_shipped_per_frame_labels_read_back_from_their_metadata():
    shipped = {
        "emergency_sigma": 4.0,
        "horizon_ms": 1000,
        "lean_sigma": 1.5,
        "min_sigma_samples": 300,
        "scheme": 2,
        "sigma_floor_window_ms": 3600000,
        "sigma_window_ms": 300000,
    }
    assert LabelConfig.from_metadata(shipped) == LabelConfig.per_frame_labels()
    assert LabelConfig.from_metadata(LabelConfig().as_metadata()) == LabelConfig()
    assert LabelConfig().as_metadata()["scheme"] == LabelConfig().version == 4
