"""Fuzzing the public and private frame parsers, the order books and the private feed's
receive loop with structured frames (valid Bitget shapes with mutated fields) and raw bytes."""

from __future__ import annotations

import numpy as np
import pytest
from fuzz_frame_target import (
    ANY_FRAME,
    SEED_FRAMES,
    check_book,
    control_frames,
    incremental_sessions,
    private_frames,
    public_frames,
)
from fuzz_tally import InvariantViolation, deep_json, fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

from engine.feed.events import BookSnapshot


def test_documented_frames_pass_and_reach_the_books(frame_target) -> None:
    for raw in SEED_FRAMES:
        frame_target.check_bytes(raw)
    assert frame_target.books["BTCUSDT"].ready
    assert frame_target.incremental["ETHUSDT"].synced


def test_the_book_check_reports_a_crossed_book() -> None:
    """The invariant check itself can fail: a crossed book is reported."""
    levels = np.array([[100.0], [1.0], [99.5], [1.0]])
    crossed = BookSnapshot("BTCUSDT", "books15", levels, 1, 1, 1, 1, 1)
    with pytest.raises(InvariantViolation, match="crossed"):
        check_book(crossed, "test")


@pytest.mark.parametrize(
    "raw",
    [
        b'{"event":"error","code":30001,"msg":' + deep_json(1000) + b"}",
        b'{"event":"subscribe","arg":{"channel":' + deep_json(1000) + b"}}",
        b'{"action":"snapshot","arg":{"channel":"orders"},"data":[' + deep_json(999) + b"]}",
        b'{"action":"snapshot","arg":{"channel":"fill"},"data":[{"feeDetail":[{"totalFee":'
        b'"-1e308"},{"totalFee":"-1e308"}],"tradeScope":"maker","symbol":"BTCUSDT","orderId":'
        b'"1","clientOid":"","tradeId":"1","side":"buy","price":"1","baseVolume":"1","cTime":'
        b'"1"}],"ts":1}',
    ],
    ids=["public-error-deep-msg", "public-ack-deep-channel", "private-deep-entry", "fee-overflow"],
)
def test_frames_that_once_escaped_are_rejected(frame_target, raw: bytes) -> None:
    frame_target.check_bytes(raw)


@fuzz_settings(ci_examples=400)
@given(public_frames())
def test_public_frames_never_raise_and_books_stay_valid(frame_target, raw: bytes) -> None:
    frame_target.check_public(raw)


@fuzz_settings(ci_examples=150)
@given(incremental_sessions())
def test_incremental_book_is_never_crossed_after_a_valid_update(frame_target, frames) -> None:
    frame_target.check_sequence(frames)


@fuzz_settings(ci_examples=200)
@given(st.one_of(control_frames(), private_frames()))
def test_control_and_private_frames_never_raise(frame_target, raw: bytes) -> None:
    frame_target.check_bytes(raw)


@fuzz_settings(ci_examples=200)
@given(ANY_FRAME, st.integers(0, 40), st.integers(0, 255))
def test_truncated_and_flipped_frames_never_raise(frame_target, raw: bytes, cut, flip) -> None:
    if raw:
        raw = raw[: max(1, len(raw) - cut)]
        position = flip % len(raw)
        raw = raw[:position] + bytes([raw[position] ^ flip]) + raw[position + 1 :]
    frame_target.check_bytes(raw)
