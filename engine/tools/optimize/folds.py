"""Walk-forward folds: the market time the recordings cover (their union: two recordings of the
same minutes cover them once), split into K folds of equal market time, in order."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.feed.recording import RecordingReadStats, RecordingUnreadable, iter_recording
from engine.tools.backtest.session import MarketWindow

MIN_FOLD_S = 60.0
"""A fold holds at least this much market time: the figures of less are noise."""


@dataclass(frozen=True, slots=True)
class RecordingSpan:
    """A recording's first and last frames' receive times, and what was wrong in it."""

    path: Path
    first_ns: int
    last_ns: int
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class Fold:
    """Market time `[start_ns, end_ns)`; `covered_s` of it is in some recording."""

    number: int
    start_ns: int
    end_ns: int
    covered_s: float


def recording_span(path: str | os.PathLike[str]) -> RecordingSpan:
    """Reads the whole recording; raises RecordingUnreadable when it holds no frame."""
    stats = RecordingReadStats()
    first = last = None
    for recv_ns, _ in iter_recording(path, stats):
        if first is None:
            first = recv_ns
        last = recv_ns
    problem = stats.problem(path)
    if first is None or last is None:
        raise RecordingUnreadable(
            problem.text if problem else f"{os.fspath(path)}: no frame to replay"
        )
    return RecordingSpan(Path(path), first, last, problem.text if problem else None)


def walk_forward_folds(spans: Sequence[RecordingSpan], folds: int) -> list[Fold]:
    """`folds` folds of equal covered market time; raises ValueError when there are fewer than
    two, or when a fold would hold less than `MIN_FOLD_S`."""
    covered = _union([(span.first_ns, span.last_ns + 1) for span in spans])
    total = sum(end - start for start, end in covered)
    total_s = total / 1e9
    most = int(total_s // MIN_FOLD_S)
    if folds < 2:
        raise ValueError(
            f"--folds {folds}: walk-forward needs at least 2 folds (the past to optimise on, "
            "the next to score)"
        )
    if folds > most:
        at_most = (
            f"make at most {most} folds of a minute or more"
            if most >= 2
            else "are too short for two folds of a minute or more"
        )
        raise ValueError(
            f"--folds {folds}: the recordings' {total_s / 60:.1f} min of market time {at_most}"
        )
    bounds = [_time_at(covered, total * number // folds) for number in range(folds)]
    bounds.append(covered[-1][1])
    return [
        Fold(number, bounds[number], bounds[number + 1], total / folds / 1e9)
        for number in range(folds)
    ]


def fold_windows(
    spans: Sequence[RecordingSpan], start_ns: int, end_ns: int
) -> list[tuple[Path, MarketWindow]]:
    """Each recording's part of `[start_ns, end_ns)`, in the order given; those outside it
    left out."""
    windows = []
    for span in spans:
        start, end = max(start_ns, span.first_ns), min(end_ns, span.last_ns + 1)
        if start < end:
            windows.append((span.path, MarketWindow(start, end)))
    return windows


def _union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _time_at(covered: list[tuple[int, int]], offset: int) -> int:
    """The market time `offset` ns of covered time after the first covered instant."""
    for start, end in covered:
        if offset < end - start:
            return start + offset
        offset -= end - start
    return covered[-1][1]
