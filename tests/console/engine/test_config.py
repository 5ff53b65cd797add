"""EngineAdapterConfig refuses what it cannot run with, naming the value."""

from __future__ import annotations

import pytest

from console.engine.config import EngineAdapterConfig


@pytest.mark.parametrize("detail_hz", [0.0, 0.4, 61.0, float("nan"), float("inf")])
def test_a_detail_rate_out_of_range_is_refused(detail_hz):
    with pytest.raises(ValueError, match=r"detail_hz must be within \[0.5, 60\]"):
        EngineAdapterConfig(detail_hz=detail_hz, gpu=None)
