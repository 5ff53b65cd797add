"""FeatureExtractor: hand-computed values on small books, trades, cross features, no look-ahead."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.recordings import shared_spot

from engine.feed.events import BookSnapshot
from engine.feed.parse import FrameParser
from engine.feed.recording import iter_recording
from engine.laya.feature_set import FEATURE_COUNT, FEATURE_SET_VERSION
from engine.laya.features import (
    CROSS_FEATURES,
    FEATURE_NAMES,
    MIRROR_SIGN,
    MIRROR_SOURCE,
    S_PTR_1S,
    S_PTR_5S,
    S_PTR_30S,
    S_PTR_500MS,
    STATE_WIDTH,
    VENUE_SCALED_FEATURES,
    Z_SCORED_FEATURES,
    FeatureExtractor,
    FeatureExtractorConfig,
    compute_features,
)
from engine.sim.market import sim_book
from engine.sim.recording import simulate_recording

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
    # The 5-level pressure mid (99 * 4 + 102 * 4) / 8 = 100.5: half a half-spread above.
    bid_vwap, ask_vwap = (99 * 1 + 98 * 3) / 4, (101 * 2 + 103 * 2) / 4
    pressure = (bid_vwap * 4 + ask_vwap * 4) / 8
    assert features[F["pressure_mid_offset_spreads_5"]] == pytest.approx((pressure - mid) / 1.0)
    weighted_bid = 1 / 101 + 3 / 201
    weighted_ask = 2 / 101 + 2 / 301
    assert features[F["depth_weighted_obi"]] == pytest.approx(
        (weighted_bid - weighted_ask) / (weighted_bid + weighted_ask), rel=1e-5
    )
    # First frame: no history, every delta reads 0, and every z-score (nothing to compare).
    for name in ("return_1s_sigmas", "return_500ms_sigmas", *Z_SCORED_FEATURES):
        assert features[F[name]] == 0.0, name


def test_returns_and_order_flow_imbalance_across_frames():
    harness = Harness()
    harness.feed(depth("BTCUSDT", 1000, [["99", "1"]], [["101", "1"]]))
    features = harness.feed(depth("BTCUSDT", 2100, [["100", "2"]], [["102", "1"]]))
    # One 1 s return of 100 bps so far: sigma is its magnitude x sqrt(pi / 2).
    sigma = math.sqrt(math.pi / 2) * (101 / 100 - 1) * 1e4
    assert features[F["return_1s_sigmas"]] == pytest.approx(100 / sigma, rel=1e-4)
    assert features[F["return_5s_sigmas"]] == 0.0  # nothing 5 s old yet
    assert features[F["last_trade_offset_spreads"]] == 0.0  # no trade yet
    # The z-scores' statistics hold the first frame only: raw 0 deltas, no deviation yet.
    assert features[F["ofi_top_z"]] == 0.0


def reference_z_scores(times, values):
    """A trailing robust z-score read from its definition: the raw value against the
    exponentially weighted (300 s) mean and mean absolute deviation of the earlier values."""
    weight = mean = deviation = 0.0
    out = []
    for index, (ts, value) in enumerate(zip(times, values, strict=True)):
        decay = math.exp(-(ts - times[index - 1]) / 300_000) if index else 1.0
        weight *= decay
        scale = math.sqrt(math.pi / 2) * deviation
        out.append(max(-10.0, min(10.0, (value - mean) / scale)) if scale > 1e-12 else 0.0)
        weight += 1.0
        deviation += (abs(value - mean) - deviation) / weight
        mean += (value - mean) / weight
    return out


def test_z_scores_follow_their_definition():
    """The spread, the distance of the first bid and the book interval, whose raw values are
    known, against their reference z-scores over irregular frames."""
    rng = np.random.default_rng(4)
    harness = Harness(("BTCUSDT",))
    times = np.cumsum(rng.choice([50, 100, 400, 1_000], size=60)).astype(float).tolist()
    spreads = rng.choice([0.01, 0.02, 0.05], size=60).tolist()
    got, raw_spread, raw_distance, raw_interval = [], [], [], []
    for index, (ts, spread) in enumerate(zip(times, spreads, strict=True)):
        bid, ask = 100.0, 100.0 + spread
        got.append(harness.feed(depth("BTCUSDT", int(ts), [[repr(bid), "1"]], [[repr(ask), "1"]])))
        mid = 0.5 * (bid + ask)
        raw_spread.append(spread / mid * 1e4)
        raw_distance.append((mid - bid) / mid * 1e4)
        raw_interval.append(math.log1p(ts - times[index - 1]) if index else 0.0)
    for name, raw in (
        ("spread_z", raw_spread),
        ("bid_dist_z_1", raw_distance),
        ("book_interval_z", raw_interval),
    ):
        expected = reference_z_scores(times, raw)
        assert [row[F[name]] for row in got] == pytest.approx(expected, rel=1e-4, abs=1e-4), name
    assert got[-1][F["spread_bps"]] == pytest.approx(raw_spread[-1], rel=1e-5)  # kept raw


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
    # The last trade (a sell at 100) sits at the mid: no offset in half-spreads.
    assert features[F["last_trade_offset_spreads"]] == pytest.approx(0.0)
    assert features[F["last_trade_log_size"]] == pytest.approx(math.log(3 / (1 + 0.02 * 2)))
    later = harness.feed(depth("BTCUSDT", 2000, [["99", "1"]], [["101", "1"]]))
    # Two trades since the previous book, then none: the count's z-score turns negative.
    assert later[F["trades_since_book_z"]] < 0.0
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
    assert features[F["other_spread_z"]] == 0.0  # ETH's first spread: nothing to compare yet
    alone = Harness(("BTCUSDT",))
    for ts in range(1000, 60_000, 700):
        row = alone.feed(depth("BTCUSDT", ts, [["99", "1"]], [[f"{101 + ts % 3}", "1"]]))
        # Without a hedge every cross feature is 0, the neutral value, frame after frame.
        assert not any(row[F[name]] for name in CROSS_FEATURES)


def book_features(path, symbols, leader=None):
    """Every book of `symbols` in the recording at `path`: (symbol, its features' bytes)."""
    parser = FrameParser(symbols)
    extractor = FeatureExtractor(FeatureExtractorConfig(symbols, leader), parser.tape)
    books = []
    for recv_ns, raw in iter_recording(path):
        event = parser.parse(raw, recv_ns)
        if type(event) is BookSnapshot:
            books.append((event.symbol, extractor.on_book(event).tobytes()))
    return books


def book_features_paired_as_before(path, pair):
    """`book_features` as the extractor of before computed them: the two symbols of a pair,
    each one's cross features reading the other's row."""
    parser = FrameParser(pair)
    tape = parser.tape
    state = np.zeros((2, STATE_WIDTH))
    state[:, [S_PTR_500MS, S_PTR_1S, S_PTR_5S, S_PTR_30S]] = -1.0
    features = np.zeros((1, FEATURE_COUNT), np.float32)
    books = []
    for recv_ns, raw in iter_recording(path):
        event = parser.parse(raw, recv_ns)
        if type(event) is not BookSnapshot:
            continue
        row = pair.index(event.symbol)
        tape_rows = [-1 if tape.index(symbol) is None else tape.index(symbol) for symbol in pair]
        compute_features(
            event.levels,
            event.n_bids,
            event.n_asks,
            event.exchange_ts_ms,
            0,
            row,
            1 - row,
            tape_rows[row],
            tape_rows[1 - row],
            state,
            tape.state,
            tape.trades,
            features,
        )
        books.append((event.symbol, features.tobytes()))
    return books


def test_a_pair_led_by_its_hedge_gives_the_features_of_before():
    """Traded BTCUSDT, hedge ETHUSDT as the leader: byte for byte what the pairing of before
    computed on the shared recording (and the other way round, a pair reads each other)."""
    path = shared_spot()
    pair = ("BTCUSDT", "ETHUSDT")
    before = book_features_paired_as_before(path, pair)
    assert len(before) > 10_000 and {symbol for symbol, _ in before} == set(pair)
    assert book_features(path, pair, "ETHUSDT") == before
    assert book_features(path, pair, "BTCUSDT") == before
    assert book_features(path, pair) == before


@pytest.fixture(scope="module")
def sim_book_recording(tmp_path_factory):
    """Half a minute of the simulator's book: ETHUSDT and SOLUSDT following BTCUSDT."""
    path = tmp_path_factory.mktemp("book") / "book.bitget.gz"
    market = sim_book(("ETHUSDT", "SOLUSDT"), seed=5, hedge="BTCUSDT")
    return simulate_recording(path, 0.5, seed=5, market=market).path


def test_every_symbol_of_a_book_reads_the_leader(sim_book_recording):
    """In a book, each quoted symbol's features are those of its pair with the leader, and the
    leader's those of its pair with the first quoted symbol."""
    book = book_features(sim_book_recording, ("ETHUSDT", "SOLUSDT", "BTCUSDT"), "BTCUSDT")
    with_eth = book_features(sim_book_recording, ("ETHUSDT", "BTCUSDT"))
    with_sol = book_features(sim_book_recording, ("SOLUSDT", "BTCUSDT"))

    def of(books, symbol):
        return [features for name, features in books if name == symbol]

    assert len(of(book, "SOLUSDT")) > 200
    assert of(book, "ETHUSDT") == of(with_eth, "ETHUSDT")
    assert of(book, "SOLUSDT") == of(with_sol, "SOLUSDT")
    assert of(book, "BTCUSDT") == of(with_eth, "BTCUSDT")
    # The cross features say something: SOLUSDT's differ from what it reads next to ETHUSDT.
    assert of(book, "SOLUSDT") != of(
        book_features(sim_book_recording, ("SOLUSDT", "ETHUSDT")), "SOLUSDT"
    )


def reference_sigma_features(times, mids):
    """The labels'-sigma features (20-28) of one symbol, straight from their definitions in
    docs/features.md, one frame at a time; those written as z-scores as their raw values."""
    cap = 10.0
    weight = total = floor_weight = floor_total = 0.0
    jump_1s = jump_5s = jump_count = 0.0
    last_jump = None
    rows = []
    for index, (ts, mid) in enumerate(zip(times, mids, strict=True)):
        dt = ts - times[index - 1] if index else 0.0
        older = [k for k in range(index) if times[k] <= ts - 1000]
        return_1s = (mid / mids[older[-1]] - 1) * 1e4 if older else 0.0
        decay, floor_decay = math.exp(-dt / 150_000), math.exp(-dt / 1_800_000)
        weight, total = weight * decay, total * decay
        floor_weight, floor_total = floor_weight * floor_decay, floor_total * floor_decay
        if older:
            weight, total = weight + 1, total + abs(return_1s)
            floor_weight, floor_total = floor_weight + 1, floor_total + abs(return_1s)
        mean_move = max(total / weight, floor_total / floor_weight) if weight else 0.0
        sigma = math.sqrt(math.pi / 2) * mean_move
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
                "log_sigma_1s_z": math.log(sigma + 1e-3),
                "range_1s_sigmas": min(range_1s / sigma, cap) if sigma > 1e-9 else 0.0,
                "return_1s_sigmas": max(-cap, min(cap, return_1s / sigma)) if sigma else 0.0,
                "jump_sigmas_1s": jump_1s,
                "jump_sigmas_5s": jump_5s,
                "jump_rate_30s_z": math.log1p(jump_count),
                "ms_since_jump_z": math.log1p(min(since, 60_000.0)),
            }
        )
    return rows


def test_moves_in_the_labels_sigma_follow_their_definitions():
    # Ten seconds of small oscillations, a 10 bps jump, then a flat mid.
    times = [1000.0 + 250 * k for k in range(48)]
    mids = [100.0 + (0.01 if k % 3 == 0 else -0.01 if k % 3 == 1 else 0.0) for k in range(40)]
    mids += [100.1] * 8
    harness = Harness()
    got = [
        harness.feed(
            depth("BTCUSDT", int(ts), [[repr(mid - 0.005), "1"]], [[repr(mid + 0.005), "1"]])
        )
        for ts, mid in zip(times, mids, strict=True)
    ]
    expected = reference_sigma_features(times, mids)
    assert 2.0 <= expected[40]["jump_sigmas_1s"] < 10.0  # a jump, under the cap
    assert expected[41]["ms_since_jump_z"] == pytest.approx(math.log1p(250))
    for name in ("log_sigma_1s_z", "jump_rate_30s_z", "ms_since_jump_z"):
        z_scores = reference_z_scores(times, [row[name] for row in expected])
        for row, z in zip(expected, z_scores, strict=True):
            row[name] = z
    for features, reference in zip(got, expected, strict=True):
        for name, value in reference.items():
            assert features[F[name]] == pytest.approx(value, rel=2e-5, abs=2e-5), name
    # The other symbol sees the jump, decayed from BTC's last frame to its own time.
    eth = harness.feed(depth("ETHUSDT", int(times[-1]) + 500, [["49.9", "1"]], [["50.1", "1"]]))
    assert eth[F["other_jump_sigmas_1s"]] == pytest.approx(
        expected[-1]["jump_sigmas_1s"] * math.exp(-0.5), rel=1e-5
    )
    assert got[-1][F["other_jump_sigmas_1s"]] == 0.0  # no ETH frame had been seen yet


def mirrored_book(symbol, ts, bids, asks, centre):
    """The book reflected about `centre`: each bid at c - d becomes an ask at c + d."""
    reflect = [[repr(2 * centre - float(price)), size] for price, size in bids]
    return depth(symbol, ts, [[repr(2 * centre - float(p)), q] for p, q in asks], reflect)


def test_the_mirror_map_gives_the_features_of_the_mirror_market():
    """A market and its mirror image (books reflected about 100, trades on the other side)
    give features that `MIRROR_SOURCE` and `MIRROR_SIGN` map onto each other."""
    rng = np.random.default_rng(5)
    market_a, market_b = Harness(), Harness()
    trade_id = 0
    for k in range(120):
        ts = 1000 + 150 * k
        for symbol, centre in (("BTCUSDT", 100.0), ("ETHUSDT", 50.0)):
            shift = 0.01 * int(rng.integers(-3, 4))
            # Gaps of one to four ticks between levels: distances vary as in a real book.
            bids = [
                [repr(round(centre + shift - 0.01 * step, 4)), f"{rng.uniform(0.1, 5):.3f}"]
                for step in np.cumsum(rng.integers(1, 5, 5)).tolist()
            ]
            asks = [
                [repr(round(centre + shift + 0.01 * step, 4)), f"{rng.uniform(0.1, 5):.3f}"]
                for step in np.cumsum(rng.integers(1, 5, 5)).tolist()
            ]
            for _ in range(int(rng.poisson(1.0))):
                trade_id += 1
                size = round(float(rng.uniform(0.01, 2)), 3)
                price = float(asks[0][0]) if rng.random() < 0.5 else float(bids[0][0])
                side = "buy" if price > centre + shift else "sell"
                other = "sell" if side == "buy" else "buy"
                market_a.feed(trade(symbol, ts, trade_id, side, size, repr(price)))
                market_b.feed(trade(symbol, ts, trade_id, other, size, repr(2 * centre - price)))
            a = market_a.feed(depth(symbol, ts, bids, asks))
            b = market_b.feed(mirrored_book(symbol, ts, bids, asks, centre))
    # The log returns of a reflected path are not exactly the negated ones: compare loosely.
    expected = a[MIRROR_SOURCE] * MIRROR_SIGN
    bad = np.flatnonzero(~np.isclose(b, expected, rtol=0.05, atol=0.05))
    assert not bad.size, [(FEATURE_NAMES[k], b[k], expected[k]) for k in bad]
    assert not set(VENUE_SCALED_FEATURES) & set(Z_SCORED_FEATURES)


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
    with pytest.raises(ValueError, match="at least one symbol"):
        FeatureExtractorConfig(symbols=())
    with pytest.raises(ValueError, match="duplicates"):
        FeatureExtractorConfig(symbols=("A", "B", "A"))
    with pytest.raises(ValueError, match="leader 'D' is not among the symbols"):
        FeatureExtractorConfig(symbols=("A", "B", "C"), leader="D")
    # The hedge comes last: without a leader named, the last symbol leads.
    assert FeatureExtractorConfig(symbols=("A", "B", "C")).leader == "C"
    assert FeatureExtractorConfig(symbols=("A",)).leader == "A"
    assert FeatureExtractorConfig(symbols=("A", "B", "C"), leader="B").leader == "B"
