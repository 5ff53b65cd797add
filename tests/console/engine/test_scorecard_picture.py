"""Laya's scorecard travels from the engine process to the console: a replay of the shared
spot recording with a shadow model ends with the scorecard of both symbols in the picture."""

from __future__ import annotations

import time

from support.laya_models import write_mlp_model
from support.recordings import shared_spot

from console.engine.config import EngineAdapterConfig
from console.engine.handle import ShutdownPolicy
from console.engine.node_handle import EngineNodeHandle
from engine.config import EngineConfig
from engine.laya.config import LayaClassifierConfig


def test_the_picture_carries_the_scorecard_with_the_shadow_model(tmp_path):
    shadow = write_mlp_model(tmp_path / "candidate.onnx")
    engine = EngineConfig(
        replay_path=str(shared_spot()),
        replay_speed=None,
        laya=LayaClassifierConfig(prefer_gpu=False),
        laya_shadow_model=str(shadow),
        status_interval_s=0.05,
    )
    handle = EngineNodeHandle(engine, EngineAdapterConfig(gpu=None))
    handle.start()
    try:
        deadline = time.monotonic() + 60
        while not handle.finished:
            assert time.monotonic() < deadline, "the replay did not finish"
            time.sleep(0.05)
        time.sleep(0.3)  # the last picture
        scorecard = handle.snapshot().scorecard
    finally:
        handle.shutdown(ShutdownPolicy.KEEP)
    assert scorecard is not None and scorecard.shadow_model == str(shadow)
    assert [score.symbol for score in scorecard.symbols] == ["BTCUSDT", "ETHUSDT"]
    for score in scorecard.symbols:
        assert score.labelled > 5_000
        assert 0.5 < score.laya.ask_auc < 1 and score.shadow is not None
