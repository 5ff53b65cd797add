"""The fault kinds the chaos scenarios add: specs, and the injector's one-shot counters."""

from __future__ import annotations

import pytest

from engine.sim.faults import FaultInjector, FaultKind, FaultSpec, FaultSpecError, parse_fault_spec


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cut-frame", FaultSpec(FaultKind.CUT_FRAME)),
        ("seq-gap:2", FaultSpec(FaultKind.SEQ_GAP, count=2)),
        ("cancel-error:503:4", FaultSpec(FaultKind.CANCEL_ERROR, code=503, count=4)),
        ("clock-skew:-45", FaultSpec(FaultKind.CLOCK_SKEW, offset_s=-45.0)),
        ("clock-skew:40@3", FaultSpec(FaultKind.CLOCK_SKEW, offset_s=40.0, delay_s=3.0)),
    ],
)
def test_new_specs_parse_and_print_back(text: str, expected: FaultSpec) -> None:
    assert parse_fault_spec(text) == expected
    assert parse_fault_spec(str(expected)) == expected


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("cut-frame:1", "cut-frame"),
        ("seq-gap:0", "at least 1"),
        ("cancel-error:42:1", "HTTP status"),
        ("clock-skew:nan", "clock-skew:SECONDS"),
    ],
)
def test_bad_new_specs_are_refused(text: str, hint: str) -> None:
    with pytest.raises(FaultSpecError, match=hint):
        parse_fault_spec(text)


def test_counters_run_out_and_clear_resets_the_skew() -> None:
    cuts: list[str] = []
    injector = FaultInjector(on_disconnect=lambda: cuts.append("drop"))
    injector.start()
    injector.add("cut-frame")
    assert cuts == ["drop"]  # without a cut callback, cutting disconnects
    injector.add("seq-gap:1")
    assert injector.take_seq_gap() and not injector.take_seq_gap()
    injector.add("cancel-error:503:1")
    assert injector.take_rest_error() is None
    assert injector.take_cancel_error() == 503 and injector.take_cancel_error() is None
    injector.add("clock-skew:-45")
    assert injector.clock_offset_ms == -45_000
    injector.add("clear")
    assert injector.clock_offset_ms == 0
