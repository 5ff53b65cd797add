"""Walk-forward folds: equal market time in order over what the recordings cover, and no more
folds than a minute each allows."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.feed.recording import RecordingUnreadable
from engine.tools.backtest.session import MarketWindow
from engine.tools.optimize.folds import (
    RecordingSpan,
    fold_windows,
    recording_span,
    walk_forward_folds,
)
from tests.support.recordings import MS_NS, write_books, write_lines

T0 = 1_726_000_000_000 * MS_NS
MINUTE = 60_000_000_000


def span(name: str, start_min: float, end_min: float) -> RecordingSpan:
    return RecordingSpan(Path(name), T0 + int(start_min * MINUTE), T0 + int(end_min * MINUTE) - 1)


def test_one_recording_splits_into_equal_folds_in_order():
    folds = walk_forward_folds([span("a", 0, 9)], 3)
    assert [(f.start_ns - T0, f.end_ns - T0) for f in folds] == [
        (0, 3 * MINUTE),
        (3 * MINUTE, 6 * MINUTE),
        (6 * MINUTE, 9 * MINUTE),
    ]
    assert all(f.covered_s == 180.0 for f in folds)


def test_recordings_of_the_same_minutes_count_them_once_and_gaps_not_at_all():
    # Two venues over minutes 0-4, then a second session 10-14 after a gap: 8 covered minutes.
    spans = [span("a", 0, 4), span("b", 0, 4), span("c", 10, 14)]
    folds = walk_forward_folds(spans, 2)
    # A boundary in a gap is the gap's end: the fold before it runs over the gap.
    assert [(f.start_ns - T0, f.end_ns - T0) for f in folds] == [
        (0, 10 * MINUTE),
        (10 * MINUTE, 14 * MINUTE),
    ]
    assert [f.covered_s for f in folds] == [240.0, 240.0]
    windows = fold_windows(spans, folds[0].start_ns, folds[0].end_ns)
    assert [(path.name, window) for path, window in windows] == [
        ("a", MarketWindow(T0, T0 + 4 * MINUTE)),
        ("b", MarketWindow(T0, T0 + 4 * MINUTE)),
    ]
    assert [path.name for path, _ in fold_windows(spans, T0, folds[1].end_ns)] == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("minutes", "folds", "said"),
    [
        (10.5, 11, "--folds 11: the recordings' 10.5 min of market time make at most 10 folds"),
        (1.5, 2, "--folds 2: the recordings' 1.5 min of market time are too short for two"),
        (10.0, 1, "--folds 1: walk-forward needs at least 2 folds"),
    ],
)
def test_more_folds_than_the_recordings_allow_are_refused(minutes, folds, said):
    with pytest.raises(ValueError) as raised:
        walk_forward_folds([span("a", 0, minutes)], folds)
    assert str(raised.value).startswith(said)


def test_a_recordings_span_is_its_first_and_last_frames(tmp_path):
    path = write_books(tmp_path / "books.bitget.gz", 50, [["101", "1"]], [["100", "1"]])
    found = recording_span(path)
    assert (found.first_ns, found.last_ns) == (T0, T0 + 49 * 100 * MS_NS)
    assert found.problem is None


def test_a_recording_without_a_frame_is_unreadable(tmp_path):
    path = write_lines(tmp_path / "empty.bitget", [])
    with pytest.raises(RecordingUnreadable, match="the file is empty"):
        recording_span(path)
