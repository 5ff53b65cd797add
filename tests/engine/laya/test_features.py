"""FeatureExtractor: hand-computed values on small books, trades, cross features, no look-ahead."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.feed.events import BookSnapshot
from engine.feed.parse import FrameParser
from engine.laya.features import (
    FEATURE_COUNT,
    FEATURE_NAMES,
    FEATURE_SET_VERSION,
    FeatureExtractor,
    FeatureExtractorConfig,
)

DOCS = Path(__file__).resolve().parents[3] / "docs" / "features.md"
F = {name: index for index, name in enumerate(FEATURE_NAMES)}


def depth(symbol, ts, bids, asks):
    arg = {"instType": "USDT-FUTURES", "channel": "books15", "instId": symbol}
    data = {"asks": asks, "bids": bids, "seq": ts, "ts": str(ts)}
    return orjson.dumps({"action": "snapshot", "arg": arg, "data": [data], "ts": ts})


def trade(symbol, ts, trade_id, side, size, price="100"):
    arg = {"instType": "USDT-FUTURES", "channel": "trade", "instId": symbol}
    item = {
        "ts": str(ts),
        "price": price,
        "size": str(size),
        "side": side,
        "tradeId": str(trade_id),
    }
    return orjson.dumps({"action": "update", "arg": arg, "data": [item], "ts": ts})


class Harness:
    """Parser + extractor, as the pipeline wires them; returns copies of the features."""

    def __init__(self, symbols=("BTCUSDT", "ETHUSDT")):
        self.parser = FrameParser(symbols)
        self.extractor = FeatureExtractor(FeatureExtractorConfig(symbols), self.parser.tape)

    def feed(self, raw: bytes) -> np.ndarray | None:
        event = self.parser.parse(raw, 0)
        if isinstance(event, BookSnapshot):
            return self.extractor.on_book(event)[0].astype(np.float64).copy()
        return None


def test_names_and_version():
    assert len(FEATURE_NAMES) == FEATURE_COUNT == 128
    assert len(set(FEATURE_NAMES)) == 128
    assert FEATURE_SET_VERSION


def test_every_feature_is_documented_in_order():
    text = DOCS.read_text()
    assert FEATURE_SET_VERSION in text
    for index, name in enumerate(FEATURE_NAMES):
        assert f"| {index} | `{name}` |" in text


def test_book_shape_on_a_hand_computed_book():
    features = Harness().feed(
        depth("BTCUSDT", 1000, [["99", "1"], ["98", "3"]], [["101", "2"], ["103", "2"]])
    )
    mid = 100.0
    assert features[F["bid_dist_bps_1"]] == pytest.approx(100.0)  # 1 below a mid of 100
    assert features[F["bid_dist_bps_2"]] == pytest.approx(200.0)
    assert features[F["bid_dist_bps_3"]] == pytest.approx(200.0)  # missing: repeats level 2
    assert features[F["ask_dist_bps_2"]] == pytest.approx(300.0)
    mean_size = (1 + 3 + 2 + 2) / 4
    assert features[F["bid_log_size_1"]] == pytest.approx(math.log(1 / mean_size), abs=1e-6)
    assert features[F["ask_log_size_1"]] == pytest.approx(math.log(2 / mean_size), abs=1e-6)
    assert features[F["bid_log_size_3"]] == -7.0
    assert features[F["obi_1"]] == pytest.approx((1 - 2) / 3)
    assert features[F["obi_3"]] == pytest.approx((4 - 4) / 8)
    microprice = (99 * 2 + 101 * 1) / 3
    assert features[F["microprice_offset_bps"]] == pytest.approx((microprice - mid) / mid * 1e4)
    assert features[F["spread_bps"]] == pytest.approx(200.0)
    assert features[F["bid_levels_present"]] == pytest.approx(2 / 15)
    assert features[F["log_depth_ratio"]] == pytest.approx(0.0)
    assert features[F["log_top_size_ratio"]] == pytest.approx(math.log(0.5))
    weighted_bid = 1 / 101 + 3 / 201
    weighted_ask = 2 / 101 + 2 / 301
    assert features[F["depth_weighted_obi"]] == pytest.approx(
        (weighted_bid - weighted_ask) / (weighted_bid + weighted_ask), rel=1e-5
    )
    # First frame: no history, every delta reads 0.
    for name in ("return_last_frame_bps", "return_1s_bps", "ofi_top", "obi_5_change"):
        assert features[F[name]] == 0.0


def test_returns_and_order_flow_imbalance_across_frames():
    harness = Harness()
    harness.feed(depth("BTCUSDT", 1000, [["99", "1"]], [["101", "1"]]))
    features = harness.feed(depth("BTCUSDT", 2100, [["100", "2"]], [["102", "1"]]))
    assert features[F["return_last_frame_bps"]] == pytest.approx((101 / 100 - 1) * 1e4)
    assert features[F["return_1s_bps"]] == pytest.approx((101 / 100 - 1) * 1e4)
    assert features[F["return_5s_bps"]] == 0.0  # nothing 5 s old yet
    # Bid moved up: +2 new bid size; ask moved up: +1 (the old ask size left).
    top_average = 1.0 * math.exp(-1100 / 30000) + 1.5 * (1 - math.exp(-1100 / 30000))
    assert features[F["ofi_top"]] == pytest.approx((2 + 1) / top_average, rel=1e-5)
    assert features[F["log_book_interval_ms"]] == pytest.approx(math.log1p(1100))
    assert features[F["bid_top_size_change"]] == pytest.approx(math.log(2))


def test_trade_flow_is_read_at_the_next_book():
    harness = Harness()
    harness.feed(depth("BTCUSDT", 1000, [["99", "1"]], [["101", "1"]]))
    harness.feed(trade("BTCUSDT", 1000, 1, "buy", 1))
    harness.feed(trade("BTCUSDT", 1000, 2, "sell", 3))
    features = harness.feed(depth("BTCUSDT", 1000, [["99", "1"]], [["101", "1"]]))
    assert features[F["flow_imbalance_1s"]] == pytest.approx(-0.5)
    assert features[F["flow_imbalance_30s"]] == pytest.approx(-0.5)
    assert features[F["count_imbalance_5s"]] == pytest.approx(0.0)
    assert features[F["last_trade_sign"]] == -1.0
    assert features[F["log_trades_since_book"]] == pytest.approx(math.log1p(2))
    assert features[F["log_ms_since_trade"]] == pytest.approx(0.0)
    later = harness.feed(depth("BTCUSDT", 2000, [["99", "1"]], [["101", "1"]]))
    assert later[F["log_trades_since_book"]] == 0.0
    assert later[F["log_ms_since_trade"]] == pytest.approx(math.log1p(1000))
    assert later[F["flow_imbalance_1s"]] == pytest.approx(-0.5)  # decay cancels in a ratio


def test_vpin_fills_volume_buckets():
    harness = Harness(("BTCUSDT",))
    harness.feed(depth("BTCUSDT", 1000, [["99", "1"]], [["101", "1"]]))
    # The first bucket is sized at 20x the first trade (no volume rate known yet): 20 units.
    for trade_id in range(1, 21):
        harness.feed(trade("BTCUSDT", 1000 + trade_id, trade_id, "buy", 1))
    features = harness.feed(depth("BTCUSDT", 1100, [["99", "1"]], [["101", "1"]]))
    assert features[F["vpin"]] == pytest.approx(1.0)  # one full, fully one-sided bucket


def test_cross_features_use_the_other_symbol():
    harness = Harness()
    harness.feed(depth("ETHUSDT", 1000, [["49", "3"]], [["51", "1"]]))
    features = harness.feed(depth("BTCUSDT", 1000, [["99", "1"]], [["101", "1"]]))
    assert features[F["other_obi_5"]] == pytest.approx(0.5)
    assert features[F["other_spread_bps"]] == pytest.approx(400.0)
    alone = Harness(("BTCUSDT",)).feed(depth("BTCUSDT", 1000, [["99", "1"]], [["101", "1"]]))
    assert not np.any(alone[F["other_return_1s_bps"] :])


def reference_sigma_features(times, mids):
    """The labels'-sigma features (20-28) of one symbol, straight from their definitions in
    docs/features.md, one frame at a time."""
    tau_sigma, cap = 150_000.0, 10.0
    weight = total = squares = 0.0
    jump_1s = jump_5s = jump_count = 0.0
    last_jump = None
    rows = []
    for index, (ts, mid) in enumerate(zip(times, mids, strict=True)):
        dt = ts - times[index - 1] if index else 0.0
        older = [k for k in range(index) if times[k] <= ts - 1000]
        return_1s = (mid / mids[older[-1]] - 1) * 1e4 if older else 0.0
        decay = math.exp(-dt / tau_sigma)
        weight, total, squares = weight * decay, total * decay, squares * decay
        if older:
            weight, total, squares = weight + 1, total + return_1s, squares + return_1s**2
        variance = squares / weight - (total / weight) ** 2 if weight else 0.0
        sigma = math.sqrt(variance) if variance > 0 else 0.0
        frame_move = abs(mid / mids[index - 1] - 1) * 1e4 if index else 0.0
        jump = min(frame_move / sigma, cap) if sigma > 1e-9 else 0.0
        jump_1s = max(jump, jump_1s * math.exp(-dt / 1000))
        jump_5s = max(jump, jump_5s * math.exp(-dt / 5000))
        jump_count *= math.exp(-dt / 30_000)
        if jump >= 2.0:
            jump_count += 1
            last_jump = ts
        window = [mids[k] for k in range(index + 1) if times[k] >= ts - 1000]
        range_1s = (max(window) - min(window)) / mid * 1e4
        since = ts - last_jump if last_jump is not None else 60_000.0
        rows.append(
            {
                "log_sigma_1s_bps": math.log(sigma + 1e-3),
                "range_1s_sigmas": min(range_1s / sigma, cap) if sigma > 1e-9 else 0.0,
                "return_1s_sigmas": max(-cap, min(cap, return_1s / sigma)) if sigma else 0.0,
                "jump_sigmas_1s": jump_1s,
                "jump_sigmas_5s": jump_5s,
                "jump_rate_30s": math.log1p(jump_count),
                "log_ms_since_jump": math.log1p(min(since, 60_000.0)),
            }
        )
    return rows


def test_moves_in_the_labels_sigma_follow_their_definitions():
    # Ten seconds of small oscillations, a 50 bps jump, then a flat mid.
    times = [1000.0 + 250 * k for k in range(48)]
    mids = [100.0 + (0.01 if k % 3 == 0 else -0.01 if k % 3 == 1 else 0.0) for k in range(40)]
    mids += [100.5] * 8
    harness = Harness()
    got = [
        harness.feed(
            depth("BTCUSDT", int(ts), [[repr(mid - 0.005), "1"]], [[repr(mid + 0.005), "1"]])
        )
        for ts, mid in zip(times, mids, strict=True)
    ]
    expected = reference_sigma_features(times, mids)
    assert 2.0 <= expected[40]["jump_sigmas_1s"] < 10.0  # a jump, under the cap
    assert expected[41]["log_ms_since_jump"] == pytest.approx(math.log1p(250))
    for features, reference in zip(got, expected, strict=True):
        for name, value in reference.items():
            assert features[F[name]] == pytest.approx(value, rel=2e-5, abs=2e-5), name
    # The other symbol sees the jump, decayed from BTC's last frame to its own time.
    eth = harness.feed(depth("ETHUSDT", int(times[-1]) + 500, [["49.9", "1"]], [["50.1", "1"]]))
    assert eth[F["other_jump_sigmas_1s"]] == pytest.approx(
        expected[-1]["jump_sigmas_1s"] * math.exp(-0.5), rel=1e-5
    )
    assert got[-1][F["other_jump_sigmas_1s"]] == 0.0  # no ETH frame had been seen yet


def market(seed: int, frames: int) -> list[bytes]:
    """A random but valid two-symbol stream of books and trades."""
    rng = np.random.default_rng(seed)
    out = []
    mids = {"BTCUSDT": 100.0, "ETHUSDT": 50.0}
    trade_id = 0
    for k in range(frames):
        ts = 1000 + 100 * k
        symbol = "BTCUSDT" if k % 2 == 0 else "ETHUSDT"
        mids[symbol] *= math.exp(rng.normal(0, 2e-4))
        mid = mids[symbol]
        bids = [[f"{mid - 0.01 * (i + 1):.4f}", f"{rng.uniform(0.1, 5):.3f}"] for i in range(15)]
        asks = [[f"{mid + 0.01 * (i + 1):.4f}", f"{rng.uniform(0.1, 5):.3f}"] for i in range(15)]
        out.append(depth(symbol, ts, bids, asks))
        for _ in range(rng.poisson(1.5)):
            trade_id += 1
            side = "buy" if rng.random() < 0.5 else "sell"
            out.append(trade(symbol, ts, trade_id, side, round(rng.uniform(0.01, 2), 3)))
    return out


def run(frames: list[bytes]) -> list[np.ndarray]:
    harness = Harness()
    return [features for raw in frames if (features := harness.feed(raw)) is not None]


def test_no_look_ahead_changing_the_future_never_changes_the_past():
    frames = market(1, 400)
    full = run(frames)
    cut = 250
    changed_future = frames[:cut] + market(2, 150)
    prefix = run(frames[:cut])
    other = run(changed_future)
    assert len(prefix) > 100
    for k, features in enumerate(prefix):
        assert np.array_equal(features, full[k])
        assert np.array_equal(features, other[k])
    assert not np.array_equal(full[len(prefix) + 5], other[len(prefix) + 5])


def test_features_stay_finite_and_float32_over_a_long_random_market():
    harness = Harness()
    for raw in market(3, 2000):
        event = harness.parser.parse(raw, 0)
        if isinstance(event, BookSnapshot):
            out = harness.extractor.on_book(event)
            assert out.dtype == np.float32 and out.shape == (1, 128)
            assert np.all(np.isfinite(out))
    assert harness.extractor.non_finite == 0


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.floats(1e-6, 1e6), min_size=2, max_size=30),
    st.floats(1e-3, 1e5),
    st.floats(1e-6, 0.5),
)
def test_any_valid_book_gives_finite_features(sizes, mid, step):
    half = len(sizes) // 2
    bids = [[repr(mid * (1 - step * (i + 1))), repr(size)] for i, size in enumerate(sizes[:half])]
    asks = [[repr(mid * (1 + step * (i + 1))), repr(size)] for i, size in enumerate(sizes[half:])]
    harness = Harness()
    first = harness.feed(depth("BTCUSDT", 1000, bids[:15], asks[:15]))
    second = harness.feed(depth("BTCUSDT", 1100, bids[:15], asks[:15]))
    if first is not None:  # books the parser refuses (e.g. equal prices) never get here
        assert np.all(np.isfinite(first)) and np.all(np.isfinite(second))


def test_unconfigured_symbol_gives_no_features():
    harness = Harness(("BTCUSDT",))
    harness.parser = FrameParser()
    harness.extractor = FeatureExtractor(FeatureExtractorConfig(("BTCUSDT",)), harness.parser.tape)
    event = harness.parser.parse(depth("SOLUSDT", 1000, [["9", "1"]], [["10", "1"]]), 0)
    assert harness.extractor.on_book(event) is None


def test_config_validation():
    with pytest.raises(ValueError, match="traded symbol"):
        FeatureExtractorConfig(symbols=("A", "B", "C"))
    with pytest.raises(ValueError, match="duplicates"):
        FeatureExtractorConfig(symbols=("A", "A"))
