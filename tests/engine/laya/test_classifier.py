"""`LayaClassifier` on real ONNX Runtime sessions over small models exported in each test: it
refuses models that do not fit the engine, reports the provider that really runs, stays quiet
on the terminal, and turns probabilities into verdicts by the documented rule."""

from __future__ import annotations

import math
import os
import sys
import warnings
from itertools import pairwise
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.gpu import needs_no_cuda as no_cuda_driver
from support.laya_models import NEWER_LABEL_VERSION, with_metadata

from engine.lab.thresholds import choose_verdicts
from engine.laya.classifier import (
    CPU_PROVIDER,
    CUDA_PROVIDER,
    LayaClassifier,
    captured_output,
    choose_verdict,
    cuda_fallback_reason,
)
from engine.laya.config import DEFAULT_MODEL_PATH, SHIPPED_MODELS, LayaClassifierConfig, model_for
from engine.laya.feature_set import FEATURE_COUNT, FEATURE_SET_VERSION
from engine.laya.model import (
    LayaModelError,
    LayaModelMetadata,
    ModelMismatchError,
    ModelNotFoundError,
    export_mlp,
)
from engine.laya.verdict import Verdict

TEST_FEATURE_COUNT = 24
TEST_FEATURE_SET = "test-fs-1"
MODEL_THRESHOLDS = (0.0, 0.4, 0.4, 0.25)
HOLD, LEAN_BUY, LEAN_SELL, EMERGENCY = Verdict


needs_no_cuda = no_cuda_driver("the session may really use CUDA")


def random_layers(widths: tuple[int, ...], seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [
        (rng.normal(0.0, 0.5, (width_in, width_out)), rng.normal(0.0, 0.1, width_out))
        for width_in, width_out in pairwise(widths)
    ]


def write_model(
    path: Path,
    feature_set_version: str = TEST_FEATURE_SET,
    feature_count: int = TEST_FEATURE_COUNT,
    class_names: tuple[str, ...] = tuple(verdict.name for verdict in Verdict),
) -> tuple[Path, list[tuple[np.ndarray, np.ndarray]]]:
    layers = random_layers((feature_count, 16, 4))
    metadata = LayaModelMetadata(
        feature_set_version=feature_set_version,
        feature_count=feature_count,
        label_parameters={
            "horizon_ms": 500,
            "sigma_window_ms": 60_000,
            "emergency_sigma": 4.0,
            "lean_sigma": 1.0,
        },
        thresholds=MODEL_THRESHOLDS,
        training_summary={"frames": 100},
        class_names=class_names,
    )
    return export_mlp(path, layers, metadata), layers


def config_for(path: Path, **overrides: object) -> LayaClassifierConfig:
    fields: dict[str, object] = {
        "model_path": path,
        "expected_feature_set_version": TEST_FEATURE_SET,
        "expected_feature_count": TEST_FEATURE_COUNT,
    }
    fields.update(overrides)
    return LayaClassifierConfig(**fields)  # type: ignore[arg-type]


def started(config: LayaClassifierConfig) -> LayaClassifier:
    classifier = LayaClassifier(config)
    classifier.start()
    return classifier


@pytest.fixture
def model(tmp_path) -> tuple[Path, list[tuple[np.ndarray, np.ndarray]]]:
    return write_model(tmp_path / "laya.onnx")


@pytest.fixture
def model_path(model) -> Path:
    return model[0]


# -- provider and quiet start -------------------------------------------------------------------


@needs_no_cuda
def test_preferring_the_gpu_without_cuda_runs_on_cpu_and_prints_nothing(model_path, capfd):
    classifier = started(config_for(model_path, prefer_gpu=True))
    printed = capfd.readouterr()
    info = classifier.describe()

    assert (printed.out, printed.err) == ("", "")
    assert info.provider == CPU_PROVIDER
    assert info.requested_providers == (CUDA_PROVIDER, CPU_PROVIDER)
    assert info.provider_fallback_reason.startswith(f"{CUDA_PROVIDER} unavailable: ")
    assert len(info.provider_fallback_reason) > len(f"{CUDA_PROVIDER} unavailable: ")


@needs_no_cuda
def test_onnxruntime_chatter_is_kept_in_startup_messages_even_at_verbose_logging(model_path, capfd):
    classifier = started(config_for(model_path, prefer_gpu=True, log_severity=0))
    printed = capfd.readouterr()

    assert (printed.out, printed.err) == ("", "")
    assert any("CUDA" in line for line in classifier.startup_messages)
    assert not any("\x1b[" in line for line in classifier.startup_messages)


def test_a_cpu_session_asks_for_cpu_only_and_has_no_fallback(model_path, capfd):
    classifier = started(config_for(model_path, prefer_gpu=False))
    printed = capfd.readouterr()

    assert (printed.out, printed.err) == ("", "")
    assert classifier.provider == CPU_PROVIDER
    assert classifier.requested_providers == (CPU_PROVIDER,)
    assert classifier.provider_fallback_reason is None


def test_preload_dlls_runs_captured_when_a_cuda_build_is_preferred(model_path, monkeypatch, capfd):
    calls: list[str] = []

    def preload_dlls() -> None:
        calls.append("preload")
        print("Failed to load libcublasLt.so.13: not here")

    monkeypatch.setattr(ort, "get_available_providers", lambda: [CUDA_PROVIDER, CPU_PROVIDER])
    monkeypatch.setattr(ort, "preload_dlls", preload_dlls, raising=False)
    classifier = started(config_for(model_path, prefer_gpu=True))

    assert calls == ["preload"]
    assert "Failed to load libcublasLt.so.13: not here" in classifier.startup_messages
    assert capfd.readouterr() == ("", "")


@pytest.mark.parametrize(
    ("available", "prefer_gpu"),
    [([CPU_PROVIDER], True), ([CUDA_PROVIDER, CPU_PROVIDER], False)],
)
def test_cuda_is_not_asked_for_without_a_cuda_build_or_preference(
    model_path, monkeypatch, available, prefer_gpu
):
    calls: list[str] = []
    monkeypatch.setattr(ort, "get_available_providers", lambda: available)
    monkeypatch.setattr(ort, "preload_dlls", lambda: calls.append("preload"), raising=False)

    classifier = started(config_for(model_path, prefer_gpu=prefer_gpu))

    assert calls == []
    assert classifier.requested_providers == (CPU_PROVIDER,)
    assert classifier.provider == CPU_PROVIDER


def test_a_cpu_only_build_is_named_as_the_fallback_reason(model_path, monkeypatch):
    monkeypatch.setattr(ort, "get_available_providers", lambda: [CPU_PROVIDER])

    classifier = started(config_for(model_path, prefer_gpu=True))

    assert classifier.provider_fallback_reason == (
        f"{CUDA_PROVIDER} unavailable: this onnxruntime build ({ort.__version__}) has no CUDA "
        f"provider (it offers {CPU_PROVIDER})"
    )


def test_the_session_is_tuned_for_one_row_at_a_time(model_path):
    classifier = started(config_for(model_path, prefer_gpu=False))

    options = classifier._session.get_session_options()

    assert (options.intra_op_num_threads, options.inter_op_num_threads) == (1, 1)
    assert options.execution_mode == ort.ExecutionMode.ORT_SEQUENTIAL
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


def test_cuda_options_carry_the_memory_cap():
    config = LayaClassifierConfig(gpu_mem_limit_bytes=256 * 1024**2, device_id=1)

    assert config.cuda_provider_options() == {
        "device_id": "1",
        "gpu_mem_limit": str(256 * 1024**2),
        "arena_extend_strategy": "kSameAsRequested",
        "cudnn_conv_algo_search": "HEURISTIC",
        "do_copy_in_default_stream": "1",
    }


def test_the_fallback_reason_is_the_library_that_failed_to_load():
    messages = [
        "2026-01-01 00:00:00 [E:onnxruntime:Default, provider_bridge_ort.cc:2458 operator()] "
        "... Failed to load library /x/libonnxruntime_providers_cuda.so with error: "
        "libcuda.so.1: cannot open shared object file: No such file or directory",
        "Failed to load libcublasLt.so.13: libcublasLt.so.13: cannot open shared object file",
    ]

    assert cuda_fallback_reason(messages, CPU_PROVIDER) == (
        f"{CUDA_PROVIDER} unavailable: libcuda.so.1: cannot open shared object file: "
        "No such file or directory"
    )


def test_without_a_printed_reason_the_fallback_still_says_what_runs():
    reason = cuda_fallback_reason([], CPU_PROVIDER)

    assert reason.startswith(f"{CUDA_PROVIDER} unavailable: the session runs on {CPU_PROVIDER}")


def test_captured_output_catches_native_python_and_warning_output(capfd):
    with captured_output() as lines:
        os.write(1, b"native stdout\n")
        os.write(2, b"\x1b[1;31mnative stderr\x1b[m\n")
        print("python stdout")
        print("python stderr", file=sys.stderr)
        warnings.warn("a warning", UserWarning, stacklevel=1)
    printed = capfd.readouterr()

    assert (printed.out, printed.err) == ("", "")
    assert sorted(lines) == [
        "UserWarning: a warning",
        "native stderr",
        "native stdout",
        "python stderr",
        "python stdout",
    ]


# -- hot path -----------------------------------------------------------------------------------


def test_infer_returns_the_models_probabilities_and_prints_nothing(model, capfd):
    path, layers = model
    classifier = started(config_for(path, prefer_gpu=False))
    capfd.readouterr()
    features = np.random.default_rng(5).normal(size=(1, TEST_FEATURE_COUNT)).astype(np.float32)

    probabilities = classifier.infer(features)
    printed = capfd.readouterr()

    assert (printed.out, printed.err) == ("", "")
    assert probabilities.shape == (1, 4)
    assert probabilities.dtype == np.float32
    hidden = np.maximum(features.astype(np.float64) @ layers[0][0] + layers[0][1], 0.0)
    logits = hidden @ layers[1][0] + layers[1][1]
    expected = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    np.testing.assert_allclose(probabilities, expected, atol=1e-5)


def test_infer_follows_the_buffer_it_is_given(model_path):
    classifier = started(config_for(model_path, prefer_gpu=False))
    buffer = np.zeros((1, TEST_FEATURE_COUNT), np.float32)
    other = np.ones((1, TEST_FEATURE_COUNT), np.float32)

    at_zero = classifier.infer(buffer).copy()
    buffer[0, :] = 1.0
    after_refill = classifier.infer(buffer)

    np.testing.assert_array_equal(after_refill, classifier.infer(other))
    assert not np.array_equal(at_zero, after_refill)


def test_warmup_runs_are_honoured(model_path, monkeypatch):
    sessions: list[CountingSession] = []

    class CountingSession(ort.InferenceSession):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.runs = 0
            sessions.append(self)

        def run(self, *args, **kwargs):
            self.runs += 1
            return super().run(*args, **kwargs)

    monkeypatch.setattr(ort, "InferenceSession", CountingSession)
    # The ONNX Runtime runner: the native kernel's start-up check runs the session more.
    config = config_for(model_path, prefer_gpu=False, warmup_runs=7, cpu_runner="onnxruntime")
    classifier = started(config)
    (session,) = sessions
    assert session.runs == 7

    classifier.infer(np.zeros((1, TEST_FEATURE_COUNT), np.float32))
    assert session.runs == 8


def test_infer_before_start_and_after_stop_raises(model_path):
    classifier = LayaClassifier(config_for(model_path, prefer_gpu=False))
    features = np.zeros((1, TEST_FEATURE_COUNT), np.float32)
    with pytest.raises(RuntimeError, match="before start"):
        classifier.infer(features)

    classifier.start()
    classifier.infer(features)
    classifier.stop()
    classifier.stop()

    with pytest.raises(RuntimeError, match="before start"):
        classifier.infer(features)


def test_starting_twice_raises(model_path):
    classifier = started(config_for(model_path, prefer_gpu=False))

    with pytest.raises(RuntimeError, match="already started"):
        classifier.start()


def test_a_stopped_classifier_can_start_again(model_path):
    classifier = started(config_for(model_path, prefer_gpu=False))
    classifier.stop()

    classifier.start()

    assert classifier.infer(np.zeros((1, TEST_FEATURE_COUNT), np.float32)).shape == (1, 4)


# -- refusals -----------------------------------------------------------------------------------


def test_a_model_for_another_feature_set_is_refused_naming_both(tmp_path):
    path, _ = write_model(tmp_path / "old.onnx", feature_set_version="test-fs-0")

    with pytest.raises(ModelMismatchError, match=r"'test-fs-0'.*'test-fs-1'"):
        started(config_for(path, prefer_gpu=False))


def test_a_model_of_a_label_version_this_engine_does_not_know_is_refused_at_start(tmp_path):
    path, _ = write_model(tmp_path / "newer.onnx")
    with_metadata(path, label_version=str(NEWER_LABEL_VERSION))

    with pytest.raises(
        LayaModelError, match=rf"newer\.onnx: .*label version {NEWER_LABEL_VERSION} is newer"
    ):
        started(config_for(path, prefer_gpu=False))


@pytest.mark.parametrize("name", ["laya-default", "laya-large-tick"])
def test_a_shipped_models_name_is_its_file_wherever_a_relative_path_was_taken_from(tmp_path, name):
    shipped = SHIPPED_MODELS / f"{name}.onnx"
    written = tmp_path / "settings" / name  # how settings give a relative path: from their folder
    assert model_for("NEXOUSDT", {"NEXO*": str(written)}, DEFAULT_MODEL_PATH) == shipped
    assert LayaClassifier(LayaClassifierConfig(model_path=written)).model_path == shipped
    # A file of that name is the user's own; a name no shipped model has stays a path.
    written.parent.mkdir()
    written.write_bytes(b"the user's own")
    assert model_for("NEXOUSDT", {"NEXO*": str(written)}, DEFAULT_MODEL_PATH) == written
    assert model_for("NEXOUSDT", {"NEXO*": "laya-nexo"}, DEFAULT_MODEL_PATH) == Path("laya-nexo")
    assert model_for("BTCUSDT", {"NEXO*": str(written)}, DEFAULT_MODEL_PATH) == DEFAULT_MODEL_PATH


def test_a_model_of_another_width_is_refused_naming_both_shapes(tmp_path):
    path, _ = write_model(tmp_path / "narrow.onnx", feature_count=TEST_FEATURE_COUNT - 8)

    with pytest.raises(ModelMismatchError) as refusal:
        started(config_for(path, prefer_gpu=False))

    assert f"['batch', {TEST_FEATURE_COUNT - 8}]" in str(refusal.value)
    assert f"[1, {TEST_FEATURE_COUNT}]" in str(refusal.value)


def test_a_model_with_other_classes_is_refused(tmp_path):
    path, _ = write_model(
        tmp_path / "swapped.onnx", class_names=("HOLD", "LEAN_SELL", "LEAN_BUY", "EMERGENCY")
    )

    with pytest.raises(ModelMismatchError, match=r"LEAN_SELL', 'LEAN_BUY.*expects"):
        started(config_for(path, prefer_gpu=False))


def test_a_plain_onnx_file_is_refused(tmp_path):
    from onnx import TensorProto, helper, numpy_helper, save

    weight = numpy_helper.from_array(np.ones((TEST_FEATURE_COUNT, 4), np.float32), "weight")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["features", "weight"], ["probabilities"])],
        "plain",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, [1, TEST_FEATURE_COUNT])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [1, 4])],
        [weight],
    )
    path = tmp_path / "plain.onnx"
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    save(model, str(path))

    with pytest.raises(LayaModelError, match="is not a Laya model"):
        started(config_for(path, prefer_gpu=False))


def test_a_missing_model_says_how_to_train_one(tmp_path, capfd):
    with pytest.raises(ModelNotFoundError, match=r"no Laya model at .*train one"):
        started(config_for(tmp_path / "absent.onnx"))
    assert capfd.readouterr() == ("", "")


def test_by_default_the_engine_feature_set_is_expected(tmp_path):
    config = LayaClassifierConfig(model_path=tmp_path / "laya.onnx")
    assert (config.expected_feature_set_version, config.expected_feature_count) == (
        FEATURE_SET_VERSION,
        FEATURE_COUNT,
    )
    path, _ = write_model(
        tmp_path / "laya.onnx", feature_set_version=FEATURE_SET_VERSION, feature_count=FEATURE_COUNT
    )

    classifier = started(LayaClassifierConfig(model_path=path, prefer_gpu=False))

    assert classifier.model_metadata.feature_set_version == FEATURE_SET_VERSION


# -- verdicts -----------------------------------------------------------------------------------

NO_THRESHOLDS = (0.0, 0.0, 0.0, 0.0)


@pytest.mark.parametrize(
    ("probabilities", "thresholds", "verdict"),
    [
        ((0.1, 0.7, 0.1, 0.1), NO_THRESHOLDS, LEAN_BUY),
        ((0.1, 0.1, 0.7, 0.1), NO_THRESHOLDS, LEAN_SELL),
        ((0.7, 0.1, 0.1, 0.1), NO_THRESHOLDS, HOLD),
        ((0.1, 0.1, 0.1, 0.7), NO_THRESHOLDS, EMERGENCY),
        # The top class below its threshold: the best eligible class wins instead.
        ((0.35, 0.45, 0.1, 0.1), (0.0, 0.5, 0.5, 0.5), HOLD),
        ((0.1, 0.45, 0.3, 0.15), (0.5, 0.5, 0.25, 0.5), LEAN_SELL),
        ((0.4, 0.2, 0.1, 0.3), (0.5, 0.5, 0.5, 0.25), EMERGENCY),
        # Nothing eligible: HOLD.
        ((0.2, 0.3, 0.3, 0.2), (0.5, 0.5, 0.5, 0.5), HOLD),
        # Reaching the threshold exactly is enough.
        ((0.2, 0.5, 0.1, 0.2), (0.9, 0.5, 0.9, 0.9), LEAN_BUY),
        # Ties go to the more cautious class.
        ((0.1, 0.3, 0.3, 0.3), NO_THRESHOLDS, EMERGENCY),
        ((0.4, 0.4, 0.1, 0.1), NO_THRESHOLDS, HOLD),
        ((0.1, 0.45, 0.45, 0.0), NO_THRESHOLDS, HOLD),
        ((0.1, 0.45, 0.45, 0.0), (0.5, 0.0, 0.0, 0.5), HOLD),
        ((0.45, 0.1, 0.45, 0.0), NO_THRESHOLDS, HOLD),
        # A tie with a class below its threshold is no tie.
        ((0.1, 0.45, 0.45, 0.0), (0.0, 0.5, 0.0, 0.0), LEAN_SELL),
        ((0.1, 0.3, 0.3, 0.3), (0.0, 0.0, 0.0, 0.5), HOLD),
        # NaN is never eligible.
        ((math.nan, math.nan, math.nan, math.nan), NO_THRESHOLDS, HOLD),
    ],
)
def test_verdict_rule(probabilities, thresholds, verdict):
    assert choose_verdict(probabilities, thresholds) is verdict


probability = st.sampled_from([0.0, 0.1, 0.25, 0.3, 0.5, 0.7, 1.0]) | st.floats(0.0, 1.0)


@given(
    probabilities=st.lists(probability, min_size=4, max_size=4),
    thresholds=st.lists(st.sampled_from([0.0, 0.25, 0.3, 0.5]), min_size=4, max_size=4),
)
def test_training_tunes_thresholds_with_the_same_rule(probabilities, thresholds):
    batch = choose_verdicts(np.array([probabilities]), np.array(thresholds))

    assert Verdict(int(batch[0])) is choose_verdict(probabilities, thresholds)


def test_verdict_uses_the_models_thresholds_unless_overridden(model_path):
    probabilities = np.array([[0.35, 0.45, 0.1, 0.1]], np.float32)
    from_model = started(config_for(model_path, prefer_gpu=False))
    overridden = started(config_for(model_path, prefer_gpu=False, thresholds=(0, 0.5, 0.5, 0.5)))

    assert from_model.thresholds == MODEL_THRESHOLDS
    assert from_model.verdict(probabilities) is LEAN_BUY
    assert overridden.verdict(probabilities) is HOLD
    assert (from_model.describe().thresholds_from, overridden.describe().thresholds_from) == (
        "model",
        "config",
    )


def test_describe_is_a_frozen_snapshot(model_path):
    classifier = started(config_for(model_path, prefer_gpu=False, warmup_runs=3))

    info = classifier.describe()

    assert info.model_path == str(model_path)
    assert info.provider == CPU_PROVIDER
    assert info.feature_set_version == TEST_FEATURE_SET
    assert info.feature_count == TEST_FEATURE_COUNT
    assert info.thresholds == MODEL_THRESHOLDS
    assert info.warmup_runs == 3
    assert info.session_create_ms > 0
    assert info.model_summary.startswith(f"mlp, feature set {TEST_FEATURE_SET}")
    with pytest.raises(AttributeError):
        info.provider = CUDA_PROVIDER  # type: ignore[misc]


def test_describe_before_start_raises(model_path):
    with pytest.raises(RuntimeError, match="started"):
        LayaClassifier(config_for(model_path)).describe()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"model_path": ""}, "model_path"),
        ({"device_id": -1}, "device_id"),
        ({"gpu_mem_limit_bytes": 0}, "gpu_mem_limit_bytes"),
        ({"thresholds": (0.0, 0.5, 0.5)}, "4 probabilities"),
        ({"thresholds": (0.0, 0.5, 0.5, -0.1)}, r"in \[0, 1\]"),
        ({"warmup_runs": -1}, "warmup_runs"),
        ({"log_severity": 5}, "log_severity"),
        ({"expected_feature_set_version": ""}, "expected_feature_set_version"),
        ({"expected_feature_count": 0}, "expected_feature_count"),
    ],
)
def test_config_rejects_invalid_values(overrides, message):
    with pytest.raises(ValueError, match=message):
        LayaClassifierConfig(**overrides)
