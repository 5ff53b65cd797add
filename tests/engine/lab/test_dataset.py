"""Laya's dataset: the simulated recording writer, replay through the live path, the split."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from engine.feed.events import BookSnapshot
from engine.feed.parse import FrameParser
from engine.feed.recording import RecordingUnreadable, iter_recording, recording_symbols
from engine.lab.dataset import (
    DatasetConfig,
    TimeSplitConfig,
    build_dataset,
    order_book_imbalance,
    recording_symbols_of,
    split_by_time,
    warming_up,
)
from engine.laya.feature_set import FEATURE_COUNT
from engine.laya.labels import LabelConfig, label_frames
from engine.sim.market import MarketGeneratorConfig, sim_book
from engine.sim.recording import simulate_recording

MINUTES = 2.0
QUICK_LABELS = LabelConfig(min_sigma_samples=50)


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    folder = tmp_path_factory.mktemp("laya-dataset")
    market = MarketGeneratorConfig(burst_rate_per_min=3.0)
    return simulate_recording(folder / "sim.gz", MINUTES, seed=3, market=market)


@pytest.fixture(scope="module")
def dataset(recording):
    return build_dataset([recording.path], DatasetConfig(labels=QUICK_LABELS))


def test_simulated_recording_is_a_standard_recording(recording):
    parser = FrameParser()
    books = {"BTCUSDT": [], "ETHUSDT": []}
    trades = 0
    receive_times = []
    for recv_ns, raw in iter_recording(recording.path):
        receive_times.append(recv_ns)
        event = parser.parse(raw, recv_ns)
        assert event is not None, raw[:200]
        if isinstance(event, BookSnapshot):
            assert event.channel == "books15"
            books[event.symbol].append(event.exchange_ts_ms)
        else:
            trades += event.count
    assert not parser.stats.rejected
    assert receive_times == sorted(receive_times)
    assert len(receive_times) == recording.frames
    for timestamps in books.values():
        assert len(timestamps) == MINUTES * 600  # one book per symbol every 100 ms
        assert set(np.diff(timestamps)) == {100}
    assert trades > 0
    assert recording.bursts, "3 bursts a minute: a two-minute recording has some"
    assert all(
        recording.start_ms <= burst.start_ms <= recording.end_ms for burst in recording.bursts
    )


def test_simulated_recording_is_deterministic_and_never_overwrites(recording, tmp_path):
    again = simulate_recording(
        tmp_path / "again.gz", MINUTES, seed=3, market=MarketGeneratorConfig(burst_rate_per_min=3.0)
    )
    # gzip headers carry a write time: compare the content.
    assert gzip.decompress(again.path.read_bytes()) == gzip.decompress(recording.path.read_bytes())
    assert again.bursts == recording.bursts
    other = simulate_recording(tmp_path / "other.txt", 0.2, seed=4)
    assert next(iter_recording(other.path)) != next(iter_recording(recording.path))
    with pytest.raises(FileExistsError):
        simulate_recording(tmp_path / "other.txt", 0.2, seed=4)


def test_simulate_recording_validates_its_arguments(tmp_path):
    with pytest.raises(ValueError, match="minutes"):
        simulate_recording(tmp_path / "a.gz", 0, seed=1)
    with pytest.raises(ValueError, match="multiple of the market step"):
        simulate_recording(tmp_path / "b.gz", 1, seed=1, book_interval_ms=105)


def test_dataset_has_one_row_per_books15_frame(dataset, recording):
    rows = len(dataset)
    assert rows == 2 * MINUTES * 600
    assert dataset.features.shape == (rows, FEATURE_COUNT)
    assert dataset.features.dtype == np.float32
    assert np.all(np.isfinite(dataset.features))
    for name in (
        "recording_index",
        "symbol_index",
        "exchange_ts_ms",
        "mid",
        "obi5",
        "labels",
        "ask_run",
        "bid_run",
    ):
        assert getattr(dataset, name).shape == (rows,)
    # Spooled to a file and mapped read-only, not held in memory row by row.
    assert isinstance(dataset.features, np.memmap) and not dataset.features.flags.writeable
    assert set(np.unique(dataset.labels)) <= {-1, 0, 1, 2, 3}
    assert dataset.labelled.sum() > rows // 2
    # The recording's own symbols, busiest first (as the backtest takes them).
    assert sorted(dataset.symbols) == ["BTCUSDT", "ETHUSDT"]
    assert dataset.recording_symbols == (dataset.symbols,)
    assert set(dataset.symbol_names) == {"BTCUSDT", "ETHUSDT"}
    assert np.all(np.abs(dataset.obi5) <= 1.0)
    assert sum(dataset.class_counts().values()) == dataset.labelled.sum()


def test_dataset_labels_are_label_frames_per_symbol_after_the_warm_up(dataset):
    for symbol in range(2):
        rows = dataset.symbol_index == symbol
        ts = dataset.exchange_ts_ms[rows]
        expected = label_frames(ts, dataset.mid[rows], QUICK_LABELS)
        ready = ts >= ts[0] + 30_000  # Laya's default warm-up: 30 s from the first book
        np.testing.assert_array_equal(dataset.labels[rows], np.where(ready, expected.labels, -1))
        np.testing.assert_array_equal(dataset.ask_run[rows], expected.ask_run & ready)
        np.testing.assert_array_equal(dataset.bid_run[rows], expected.bid_run & ready)
    assert dataset.ask_run.any() and dataset.bid_run.any()


def test_warming_up_restarts_after_a_gap_as_long():
    ts = np.array([0, 10_000, 29_999, 30_000, 45_000, 80_000, 95_000, 110_000, 140_000])
    np.testing.assert_array_equal(
        warming_up(ts, 30_000), [True, True, True, False, False, True, True, False, False]
    )
    assert not warming_up(ts, 0).any()


def _renamed(recording, tmp_path, names):
    """The recording with its symbols renamed (a venue that lists them otherwise)."""
    text = gzip.decompress(recording.path.read_bytes())
    for old, new in names.items():
        text = text.replace(f'"{old}"'.encode(), f'"{new}"'.encode())
    path = tmp_path / "renamed.gz"
    path.write_bytes(gzip.compress(text))
    return path


def test_each_recording_gives_its_own_symbols(recording, dataset, tmp_path):
    renamed = _renamed(recording, tmp_path, {"BTCUSDT": "BTCUSD", "ETHUSDT": "ETHUSD"})
    both = build_dataset([recording.path, renamed], DatasetConfig(labels=QUICK_LABELS))
    own = dataset.symbols
    renamed_symbols = tuple(symbol.removesuffix("T") for symbol in own)
    assert both.symbols == (*own, *renamed_symbols)
    assert both.recording_symbols == (own, renamed_symbols)
    second = both.subset(both.recording_index == 1)
    assert set(second.symbol_names) == {"BTCUSD", "ETHUSD"}
    np.testing.assert_array_equal(second.features, dataset.features)
    message = f"renamed.gz has no BTCUSDT: it has {', '.join(renamed_symbols)}"
    with pytest.raises(ValueError, match=message):
        build_dataset([renamed], DatasetConfig(symbols=("BTCUSDT",)))


def test_features_do_not_look_ahead(recording, dataset, tmp_path):
    """Cutting the recording after the k-th book leaves the features of books <= k unchanged."""
    lines = gzip.decompress(recording.path.read_bytes()).split(b"\n")
    cut = len(lines) // 3
    truncated = tmp_path / "truncated.txt"
    truncated.write_bytes(b"\n".join(lines[:cut]) + b"\n")
    short = build_dataset([truncated], DatasetConfig(labels=QUICK_LABELS))
    assert 0 < len(short) < len(dataset)
    np.testing.assert_array_equal(short.features, dataset.features[: len(short)])
    np.testing.assert_array_equal(short.exchange_ts_ms, dataset.exchange_ts_ms[: len(short)])


def test_recordings_are_replayed_independently(recording):
    twice = build_dataset([recording.path, recording.path], DatasetConfig(labels=QUICK_LABELS))
    first = twice.subset(twice.recording_index == 0)
    second = twice.subset(twice.recording_index == 1)
    np.testing.assert_array_equal(first.features, second.features)
    np.testing.assert_array_equal(first.labels, second.labels)


def test_order_book_imbalance_uses_five_levels():
    levels = np.zeros((4, 15))
    levels[1, :6] = [1, 1, 1, 1, 1, 100]  # the sixth bid level is ignored
    levels[3, :2] = [3, 2]  # only two ask levels
    snapshot = BookSnapshot("BTCUSDT", "books15", levels, 6, 2, 0, 0, 0)
    assert order_book_imbalance(snapshot) == pytest.approx((5 - 5) / 10)
    levels[3, :2] = [1, 1]
    assert order_book_imbalance(snapshot) == pytest.approx((5 - 2) / 7)


def test_time_split_never_mixes_periods():
    rng = np.random.default_rng(0)
    gap = 1_000
    recording_index = np.repeat([0, 1, 2], 3_000)
    timestamps = np.concatenate(
        [
            np.sort(rng.integers(0, 600_000, 3_000)),
            np.sort(rng.integers(5_000_000, 5_900_000, 3_000)),
            np.sort(rng.integers(0, 300_000, 3_000)),  # overlaps recording 0 in time
        ]
    )
    split = split_by_time(recording_index, timestamps, TimeSplitConfig(gap_ms=gap))
    masks = (split.fit, split.validation, split.holdout)
    assert not np.any(split.fit & split.validation)
    assert not np.any(split.train & split.holdout)
    for recording in range(3):
        rows = recording_index == recording
        fit, validation, holdout = (timestamps[mask & rows] for mask in masks)
        assert fit.size and validation.size and holdout.size
        assert fit.max() + gap <= validation.min()
        assert validation.max() + gap <= holdout.min()
        span = timestamps[rows].max() - timestamps[rows].min()
        assert holdout.size == pytest.approx(0.3 * rows.sum(), rel=0.1)
        assert holdout.min() >= timestamps[rows].min() + 0.7 * span
    dropped = ~(split.train | split.holdout)
    assert 0 < dropped.sum() < 0.01 * timestamps.size  # only the gaps before the cuts


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"train_fraction": 1.0}, "train_fraction"),
        ({"validation_fraction": 0.0}, "validation_fraction"),
        ({"gap_ms": -1}, "gap_ms"),
    ],
)
def test_split_config_is_validated(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TimeSplitConfig(**kwargs)


def test_dataset_config_is_validated():
    with pytest.raises(ValueError, match=r"^BTCUSDT is listed twice in BTCUSDT, BTCUSDT$"):
        DatasetConfig(symbols=("BTCUSDT", "BTCUSDT"))
    with pytest.raises(ValueError, match=r"^SOLUSDT is listed twice in SOLUSDT, ETHUSDT, SOLUSDT$"):
        DatasetConfig(symbols=("SOLUSDT", "ETHUSDT", "SOLUSDT"))
    with pytest.raises(ValueError, match="at least one symbol"):
        DatasetConfig(symbols=())
    with pytest.raises(ValueError, match="warmup_ms"):
        DatasetConfig(warmup_ms=-1)


BOOK = ("SOLUSDT", "ETHUSDT", "XRPUSDT")
"""A book's quoted symbols; the simulator's default hedge, BTCUSDT, leads them."""


@pytest.fixture(scope="module")
def book_recording(tmp_path_factory):
    """A simulated book, its contracts line listing the quoted symbols, then the hedge."""
    path = tmp_path_factory.mktemp("laya-book") / "book.gz"
    return simulate_recording(path, 1.0, seed=5, market=sim_book(BOOK, seed=5)).path


@pytest.fixture(scope="module")
def book(book_recording):
    return build_dataset([book_recording], DatasetConfig(labels=QUICK_LABELS))


def _rows_of(dataset, symbol):
    return np.asarray(dataset.features[dataset.symbol_names == symbol])


def test_a_book_recording_gives_rows_for_each_symbol_read_against_its_hedge(book_recording, book):
    assert book.symbols == (*BOOK, "BTCUSDT")
    assert book.recording_symbols == (book.symbols,)
    assert np.bincount(book.symbol_index).tolist() == [600] * 4  # a book every 100 ms each
    assert np.all(np.bincount(book.symbol_index[book.labelled], minlength=4) > 0)
    # Every quoted symbol's cross features read the hedge, as in the pair (symbol, hedge); the
    # hedge's own read the book's first symbol.
    for symbol, other in (*((quoted, "BTCUSDT") for quoted in BOOK), ("BTCUSDT", book.symbols[0])):
        pair = build_dataset([book_recording], DatasetConfig(symbols=(symbol, other)))
        np.testing.assert_array_equal(_rows_of(book, symbol), _rows_of(pair, symbol))


def test_a_book_asked_for_is_led_by_its_last_symbol(book_recording, book):
    asked = build_dataset([book_recording], DatasetConfig(symbols=(*BOOK, "BTCUSDT")))
    assert asked.symbols == book.symbols == (*BOOK, "BTCUSDT")  # as the contracts line lists
    np.testing.assert_array_equal(asked.features, book.features)
    led_by_sol = build_dataset([book_recording], DatasetConfig(symbols=("ETHUSDT", "SOLUSDT")))
    eth = _rows_of(led_by_sol, "ETHUSDT")
    assert eth.shape == (600, FEATURE_COUNT) and not np.array_equal(eth, _rows_of(book, "ETHUSDT"))


def test_a_book_recording_without_contracts_is_led_by_its_busiest(book_recording, tmp_path):
    lines = gzip.decompress(book_recording.read_bytes()).split(b"\n")
    assert b'"hft":"contracts"' in lines[0]
    bare = tmp_path / "bare.gz"
    bare.write_bytes(gzip.compress(b"\n".join(lines[1:])))
    found = recording_symbols(bare)
    assert recording_symbols_of(bare) == (*found[1:], found[0])
    assert recording_symbols_of(book_recording)[-1] == "BTCUSDT"


def test_a_symbol_the_recording_lacks_is_named_before_any_replay(book_recording):
    has = ", ".join(recording_symbols(book_recording))
    for symbols, missing in (
        (("SOLUSDT", "DOGEUSDT"), "DOGEUSDT (the leader)"),
        (("DOGEUSDT", "SOLUSDT", "BTCUSDT"), "DOGEUSDT"),
        (("ADAUSDT", "DOGEUSDT"), "ADAUSDT, DOGEUSDT (the leader)"),
    ):
        with pytest.raises(ValueError) as raised:
            build_dataset([book_recording], DatasetConfig(symbols=symbols))
        assert str(raised.value) == f"{book_recording} has no {missing}: it has {has}"


def test_a_recording_cut_short_gives_its_rows_and_says_so(recording, dataset, tmp_path):
    whole = recording.path.read_bytes()
    cut = tmp_path / "cut.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    short = build_dataset([recording.path, cut], DatasetConfig(labels=QUICK_LABELS))
    rows = short.subset(short.recording_index == 1)
    assert 0 < len(rows) < len(dataset)
    np.testing.assert_array_equal(rows.features, dataset.features[: len(rows)])
    (problem,) = short.recording_problems[1:]
    assert short.recording_problems[0] is None
    assert problem.startswith(f"{cut}: truncated at byte {len(whole) // 2:,} after ")


def test_an_unreadable_recording_is_refused_saying_why(tmp_path):
    path = tmp_path / "notgzip.gz"
    path.write_bytes(b"not gzip at all\n")
    with pytest.raises(RecordingUnreadable) as raised:
        build_dataset([path], DatasetConfig(labels=QUICK_LABELS))
    assert str(raised.value) == (
        f"{path}: unreadable recording: not gzip data, though its name ends in .gz"
    )
