"""NativeMlp: Laya's MLP graphs as one numba kernel, equal to ONNX Runtime, and the classifier
that runs it only where it agrees."""

from __future__ import annotations

import io
import itertools
import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper

from engine.laya import native
from engine.laya.classifier import (
    CPU_PROVIDER,
    NATIVE_RUNNER,
    NATIVE_TOLERANCE,
    ORT_RUNNER,
    LayaClassifier,
)
from engine.laya.config import DEFAULT_MODEL_PATH, LayaClassifierConfig
from engine.laya.feature_set import FEATURE_COUNT, FEATURE_SET_VERSION
from engine.laya.model import EmergencyHead, LayaModelMetadata, export_mlp
from engine.laya.native import NativeGraphError, NativeMlp

LABELS = {"horizon_ms": 1000, "sigma_window_ms": 300_000, "emergency_sigma": 3, "lean_sigma": 1}


def metadata(family: str = "mlp") -> LayaModelMetadata:
    return LayaModelMetadata(
        FEATURE_SET_VERSION,
        FEATURE_COUNT,
        LABELS,
        (0.0, 0.0, 0.0, 0.0),
        {"purpose": "native kernel test"},
        model_family=family,
    )


def rows(count: int, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    scales = np.geomspace(0.01, 500.0, count, dtype=np.float32)[:, np.newaxis]
    return (rng.standard_normal((count, FEATURE_COUNT), dtype=np.float32) * scales).astype(
        np.float32
    )


def session_rows(path, features: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=[CPU_PROVIDER])
    name = session.get_inputs()[0].name
    return np.vstack([session.run(None, {name: row[np.newaxis]})[0] for row in features])


def layers(rng, sizes):
    return [
        (rng.normal(0, 0.3, (inputs, outputs)), rng.normal(0, 0.1, outputs))
        for inputs, outputs in itertools.pairwise(sizes)
    ]


@pytest.mark.parametrize(
    ("sizes", "standardised", "head"),
    [
        ((FEATURE_COUNT, 4), False, None),  # one layer: logistic regression
        ((FEATURE_COUNT, 16, 4), True, None),
        ((FEATURE_COUNT, 32, 16, 8, 4), True, None),
        ((FEATURE_COUNT, 24, 3), True, (5, 17, 90)),
        ((FEATURE_COUNT, 3), False, (0, FEATURE_COUNT - 1)),
    ],
)
def test_every_exported_family_runs_natively_as_onnx_runtime_does(
    tmp_path, sizes, standardised, head
):
    rng = np.random.default_rng(len(sizes))
    extra = {}
    if standardised:
        extra = {
            "input_mean": rng.normal(0, 50, FEATURE_COUNT),
            "input_scale": rng.uniform(0.5, 20, FEATURE_COUNT),
        }
    emergency = None
    if head is not None:
        emergency = EmergencyHead(head, layers(rng, (len(head), 6, 1)))
    path = export_mlp(
        tmp_path / "model.onnx",
        layers(rng, sizes),
        metadata("mlp" if head is None else "mlp+emergency-head"),
        emergency_head=emergency,
        **extra,
    )
    kernel = NativeMlp.from_model(path, FEATURE_COUNT, tmp_path / "cache")
    features = rows(300)
    expected = session_rows(path, features)
    got = kernel.infer(features)
    assert got.dtype == np.float32 and got.shape == expected.shape == (300, 4)
    # float64 sums against ONNX Runtime's float32: equal to ~1e-5 at the far-out rows.
    assert np.abs(got - expected).max() < NATIVE_TOLERANCE
    assert np.allclose(got.sum(axis=1), 1.0, atol=1e-5)
    one = kernel.infer(features[7:8])
    assert np.array_equal(one, got[7:8])  # a row alone is the same row in a batch
    # The next start reads the packed weights from the cache: the same kernel, bit for bit.
    cached = NativeMlp.from_model(path, FEATURE_COUNT, tmp_path / "cache")
    assert np.array_equal(cached.infer(features), got)


def test_a_model_seen_before_is_read_from_the_cache_without_onnx(laya_model, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    first = NativeMlp.from_model(laya_model, FEATURE_COUNT, cache)
    (stored,) = cache.iterdir()
    assert stored.name.endswith(f"-{FEATURE_COUNT}-{native._PACKING}.npz")

    def no_graph_reading(*args):
        raise AssertionError("the graph was read again")

    monkeypatch.setattr(native, "_read_graph", no_graph_reading)
    features = rows(20)
    assert np.array_equal(
        NativeMlp.from_model(laya_model, FEATURE_COUNT, cache).infer(features),
        first.infer(features),
    )
    # Another feature count is another key: that one is read from the graph (and refused).
    monkeypatch.undo()
    with pytest.raises(NativeGraphError, match="takes 128 inputs, not 64"):
        NativeMlp.from_model(laya_model, 64, cache)


def test_the_cache_keeps_the_most_recently_used_models(tmp_path, monkeypatch):
    monkeypatch.setattr(native, "_CACHE_KEPT", 2)
    cache = tmp_path / "cache"
    models = {}
    for seed in "abc":
        rng = np.random.default_rng(ord(seed))
        path = export_mlp(tmp_path / f"{seed}.onnx", layers(rng, (FEATURE_COUNT, 4)), metadata())
        NativeMlp.from_model(path, FEATURE_COUNT, cache)
        models[seed] = set(cache.iterdir())
        if seed == "b":
            (a_file,) = models["a"]
            (b_file,) = models["b"] - models["a"]
            os.utime(a_file, (1_000, 1_000))
            os.utime(b_file, (2_000, 2_000))
            NativeMlp.from_model(tmp_path / "a.onnx", FEATURE_COUNT, cache)  # a is used again
    assert b_file not in models["c"] and a_file in models["c"] and len(models["c"]) == 2


def test_a_damaged_or_unwritable_cache_is_passed_over(laya_model, tmp_path):
    cache = tmp_path / "cache"
    features = rows(20)
    expected = NativeMlp.from_model(laya_model, FEATURE_COUNT, cache).infer(features)
    (stored,) = cache.iterdir()
    intact = stored.read_bytes()
    with np.load(stored) as packed:
        params, original, digest = packed["params"], packed["layout"], packed["digest"]
    layout = original.copy()
    layout[-1] += 1  # an index off by one, under the old digest
    tampered = io.BytesIO()
    np.savez(tampered, params=params, layout=layout, digest=digest)
    damaged = {
        "garbage": b"not a zip file",
        "truncated": intact[: len(intact) // 2],
        "tampered": tampered.getvalue(),
    }
    for name, content in damaged.items():
        stored.write_bytes(content)
        kernel = NativeMlp.from_model(laya_model, FEATURE_COUNT, cache)
        assert np.array_equal(kernel.infer(features), expected), name
        with np.load(stored) as rewritten:  # read again from the graph, and kept again
            assert np.array_equal(rewritten["layout"], original), name
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be")
    kernel = NativeMlp.from_model(laya_model, FEATURE_COUNT, blocked)
    assert np.array_equal(kernel.infer(features), expected)


def test_the_shipped_model_agrees_with_onnx_runtime():
    kernel = NativeMlp.from_model(DEFAULT_MODEL_PATH, FEATURE_COUNT)
    features = rows(500, seed=11)
    difference = kernel.infer(features) - session_rows(DEFAULT_MODEL_PATH, features)
    assert np.abs(difference).max() < NATIVE_TOLERANCE


def rewritten(source, target, change) -> str:
    model = onnx.load(str(source))
    change(model.graph)
    onnx.save(model, str(target))
    return str(target)


def test_a_graph_it_does_not_know_is_refused_with_the_reason(laya_model, tmp_path):
    def sigmoid_for_relu(graph):
        for node in graph.node:
            if node.op_type == "Relu":
                node.op_type = "Sigmoid"

    def transposed_gemm(graph):
        gemm = next(node for node in graph.node if node.op_type == "Gemm")
        gemm.attribute.append(helper.make_attribute("transB", 1))

    def extra_node(graph):
        graph.node.append(helper.make_node("Identity", ["probabilities"], ["copy"]))

    cases = [
        (sigmoid_for_relu, "expected a Softmax node, found Sigmoid"),
        (transposed_gemm, "has attributes"),
        (extra_node, "nodes after its Softmax"),
    ]
    for change, reason in cases:
        path = rewritten(laya_model, tmp_path / f"{change.__name__}.onnx", change)
        with pytest.raises(NativeGraphError, match=reason):
            NativeMlp.from_model(path, FEATURE_COUNT)
    with pytest.raises(NativeGraphError, match="takes 128 inputs, not 64"):
        NativeMlp.from_model(laya_model, 64)


def test_the_classifier_runs_the_kernel_on_the_cpu_and_says_so(laya_model):
    classifier = LayaClassifier(LayaClassifierConfig(model_path=laya_model, prefer_gpu=False))
    classifier.start()
    try:
        assert classifier.provider == CPU_PROVIDER
        assert classifier.runner == NATIVE_RUNNER and classifier.runs_on == "CPU native kernel"
        assert classifier.runner_reason.startswith(f"agrees with {ORT_RUNNER} within")
        info = classifier.describe()
        assert (info.runner, info.runner_reason) == (classifier.runner, classifier.runner_reason)
        features = rows(50)
        difference = classifier.infer(features) - session_rows(laya_model, features)
        assert np.abs(difference).max() < NATIVE_TOLERANCE
    finally:
        classifier.stop()


def test_onnx_runtime_runs_when_asked_or_when_the_kernel_disagrees(laya_model, monkeypatch):
    asked = LayaClassifier(
        LayaClassifierConfig(model_path=laya_model, prefer_gpu=False, cpu_runner="onnxruntime")
    )
    asked.start()
    assert (asked.runner, asked.runs_on) == (ORT_RUNNER, "CPU onnxruntime")
    assert asked.runner_reason == "cpu_runner is 'onnxruntime'"
    asked.stop()

    # A kernel built from other weights than the session's: the probe rows catch it.
    shipped = NativeMlp.from_model(DEFAULT_MODEL_PATH, FEATURE_COUNT)
    monkeypatch.setattr(NativeMlp, "from_model", classmethod(lambda cls, path, count: shipped))
    checked = LayaClassifier(LayaClassifierConfig(model_path=laya_model, prefer_gpu=False))
    checked.start()
    try:
        assert checked.runner == ORT_RUNNER
        assert "the native kernel differs by" in checked.runner_reason
        features = rows(5)
        assert np.abs(checked.infer(features) - session_rows(laya_model, features)).max() == 0
    finally:
        checked.stop()


def test_a_bad_cpu_runner_is_refused():
    with pytest.raises(ValueError, match="cpu_runner must be one of"):
        LayaClassifierConfig(cpu_runner="gpu")
