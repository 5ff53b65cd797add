"""Fuzzing Kev's output parsing and the gateway that applies it: hostile model outputs never
raise anything but the typed rejection and never widen a limit."""

from __future__ import annotations

import pytest
from fuzz_kev_target import SEED_OUTPUTS, check_command, model_outputs
from fuzz_tally import InvariantViolation, deep_json, fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

from engine.kev.command import KevCommand, KevCommandSpec
from engine.risk.commands import KevAction


def test_documented_commands_apply_in_every_state(kev_target) -> None:
    for output in SEED_OUTPUTS:
        for setup in range(8):
            kev_target.check_output(output, setup, 0.7)


def test_the_band_check_catches_an_out_of_band_command() -> None:
    command = KevCommand(KevAction.HOLD, 1.5, 0.5, 0.0, 500, "")
    with pytest.raises(InvariantViolation, match="risk"):
        check_command(KevCommandSpec(), command)


@pytest.mark.parametrize(
    "output",
    [
        b'{"act":'
        + deep_json(1000)
        + b',"risk":1,"hedge":1,"beta":100,"skew":0,"ttl":300,"why":""}',
        b'{"act":"hold","risk":'
        + deep_json(1000)
        + b',"hedge":1,"beta":100,"skew":0,"ttl":300,"why":""}',
        b'{"act":"'
        + b"x" * 100_000
        + b'","risk":1,"hedge":1,"beta":100,"skew":0,"ttl":300,"why":""}',
    ],
    ids=["deep-act", "deep-risk", "huge-act"],
)
def test_outputs_that_once_escaped_are_typed_rejections(kev_target, output: bytes) -> None:
    kev_target.check_output(output, 0, 1.0)


@fuzz_settings(ci_examples=500)
@given(model_outputs(), st.integers(0, 7), st.integers(0, 100))
def test_hostile_outputs_never_widen_a_limit(kev_target, output, setup, scale_pct) -> None:
    kev_target.check_output(output, setup, scale_pct / 100)


@fuzz_settings(ci_examples=300)
@given(st.binary(max_size=120) | st.text(max_size=120), st.integers(0, 7))
def test_raw_outputs_raise_only_the_typed_rejection(kev_target, output, setup) -> None:
    kev_target.check_output(output, setup, 1.0)
