"""The Laya model file: what `export_mlp` writes is what a numpy forward pass computes, its
metadata reads back unchanged, and anything that is not a Laya model is refused clearly."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from support.laya_models import NEWER_LABEL_VERSION, with_metadata

from engine.laya.config import DEFAULT_MODEL_PATH, SHIPPED_MODELS
from engine.laya.feature_set import FEATURE_COUNT as ENGINE_FEATURE_COUNT
from engine.laya.feature_set import FEATURE_SET_VERSION
from engine.laya.labels import SCHEMES, LabelConfig
from engine.laya.model import (
    EmergencyHead,
    LayaModelError,
    LayaModelMetadata,
    ModelNotFoundError,
    export_mlp,
    read_metadata,
)

FEATURE_COUNT = 24
WIDTHS = (FEATURE_COUNT, 16, 8, 4)
LABEL_PARAMETERS = {
    "horizon_ms": 500,
    "sigma_window_ms": 60_000,
    "emergency_sigma": 4.0,
    "lean_sigma": 1.0,
}


def make_metadata(**overrides: object) -> LayaModelMetadata:
    fields = {
        "feature_set_version": "test-fs-1",
        "feature_count": FEATURE_COUNT,
        "label_parameters": dict(LABEL_PARAMETERS),
        "thresholds": (0.0, 0.4, 0.4, 0.25),
        "training_summary": {"frames": 1200, "class_counts": [900, 140, 140, 20]},
        "created_utc": "2026-01-02T03:04:05+00:00",
    }
    fields.update(overrides)
    return LayaModelMetadata(**fields)  # type: ignore[arg-type]


def random_layers(seed: int = 0, widths: tuple[int, ...] = WIDTHS):
    rng = np.random.default_rng(seed)
    return [
        (rng.normal(0.0, 0.5, (width_in, width_out)), rng.normal(0.0, 0.1, width_out))
        for width_in, width_out in pairwise(widths)
    ]


def numpy_forward(features, layers, mean=None, scale=None) -> np.ndarray:
    """The same MLP in float64 numpy: ReLU between layers, softmax at the end."""
    activations = np.asarray(features, dtype=np.float64)
    if mean is not None:
        activations = (activations - mean) / scale
    for index, (weight, bias) in enumerate(layers):
        activations = activations @ weight + bias
        if index < len(layers) - 1:
            activations = np.maximum(activations, 0.0)
    exponentials = np.exp(activations - activations.max(axis=1, keepdims=True))
    return exponentials / exponentials.sum(axis=1, keepdims=True)


def run_model(path: Path, features: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(["probabilities"], {"features": features.astype(np.float32)})[0]


def test_metadata_reads_back_equal(tmp_path):
    metadata = make_metadata()
    path = export_mlp(tmp_path / "laya.onnx", random_layers(), metadata)

    assert read_metadata(path) == metadata


def test_metadata_is_stored_as_json_under_laya_keys(tmp_path):
    path = export_mlp(tmp_path / "laya.onnx", random_layers(), make_metadata())

    props = {entry.key: entry.value for entry in onnx.load(str(path)).metadata_props}

    assert props["laya.feature_set_version"] == '"test-fs-1"'
    assert props["laya.feature_count"] == str(FEATURE_COUNT)
    assert props["laya.class_names"] == '["HOLD", "LEAN_BUY", "LEAN_SELL", "EMERGENCY"]'
    assert props["laya.model_family"] == '"mlp"'
    assert props["laya.label_version"] == "1"  # label_parameters name no scheme: "end"
    assert set(props) == {
        "laya.feature_set_version",
        "laya.feature_count",
        "laya.class_names",
        "laya.label_parameters",
        "laya.label_version",
        "laya.thresholds",
        "laya.training_summary",
        "laya.model_family",
        "laya.created_utc",
    }


@pytest.mark.parametrize("batch", [1, 32])
def test_probabilities_equal_a_numpy_forward_pass(tmp_path, batch):
    layers = random_layers()
    path = export_mlp(tmp_path / "laya.onnx", layers, make_metadata())
    features = np.random.default_rng(1).normal(size=(batch, FEATURE_COUNT)).astype(np.float32)

    probabilities = run_model(path, features)

    assert probabilities.shape == (batch, 4)
    assert probabilities.dtype == np.float32
    np.testing.assert_allclose(probabilities, numpy_forward(features, layers), atol=1e-5)


def test_standardisation_is_applied_inside_the_graph(tmp_path):
    layers = random_layers(seed=2)
    rng = np.random.default_rng(3)
    # Means far larger than the spread, as raw prices would have: a mean folded into the first
    # layer's bias would lose the signal to float32 cancellation.
    mean = rng.uniform(-5e4, 5e4, FEATURE_COUNT)
    scale = rng.uniform(0.5, 3.0, FEATURE_COUNT)
    features = (mean + scale * rng.normal(size=(32, FEATURE_COUNT))).astype(np.float32)
    path = export_mlp(
        tmp_path / "laya.onnx", layers, make_metadata(), input_mean=mean, input_scale=scale
    )

    probabilities = run_model(path, features)

    expected = numpy_forward(features, layers, mean.astype(np.float32), scale)
    np.testing.assert_allclose(probabilities, expected, atol=1e-5)
    assert [node.op_type for node in onnx.load(str(path)).graph.node][:2] == ["Sub", "Gemm"]


def test_graph_is_opset_17_with_a_symbolic_batch(tmp_path):
    path = export_mlp(tmp_path / "laya.onnx", random_layers(), make_metadata())

    model = onnx.load(str(path))

    assert model.ir_version == 9
    assert [(opset.domain, opset.version) for opset in model.opset_import] == [("", 17)]
    (model_input,) = model.graph.input
    (model_output,) = model.graph.output
    assert model_input.name == "features"
    assert [dim.dim_param or dim.dim_value for dim in model_input.type.tensor_type.shape.dim] == [
        "batch",
        FEATURE_COUNT,
    ]
    assert model_output.name == "probabilities"
    assert [node.op_type for node in model.graph.node] == [
        "Gemm",
        "Relu",
        "Gemm",
        "Relu",
        "Gemm",
        "Softmax",
    ]


def test_export_replaces_an_existing_model_and_leaves_no_partial_file(tmp_path):
    path = tmp_path / "models" / "laya.onnx"
    export_mlp(path, random_layers(seed=0), make_metadata(feature_set_version="old"))
    export_mlp(path, random_layers(seed=1), make_metadata(feature_set_version="new"))

    assert read_metadata(path).feature_set_version == "new"
    assert [entry.name for entry in path.parent.iterdir()] == ["laya.onnx"]


def test_a_plain_onnx_file_is_not_a_laya_model(tmp_path):
    weight = numpy_helper.from_array(np.ones((FEATURE_COUNT, 4), np.float32), "weight")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["features", "weight"], ["probabilities"])],
        "plain",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, [1, FEATURE_COUNT])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [1, 4])],
        [weight],
    )
    path = tmp_path / "plain.onnx"
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    onnx.save(model, str(path))

    with pytest.raises(LayaModelError, match=r"plain\.onnx is not a Laya model.*laya\.\*"):
        read_metadata(path)


def test_a_file_that_is_not_onnx_is_refused(tmp_path):
    path = tmp_path / "notes.onnx"
    path.write_text("not a model")

    with pytest.raises(LayaModelError, match="not a loadable ONNX model"):
        read_metadata(path)


def test_incomplete_metadata_names_the_missing_keys(tmp_path):
    path = export_mlp(tmp_path / "laya.onnx", random_layers(), make_metadata())
    model = onnx.load(str(path))
    kept = [entry for entry in model.metadata_props if entry.key != "laya.thresholds"]
    del model.metadata_props[:]
    model.metadata_props.extend(kept)
    onnx.save(model, str(path))

    with pytest.raises(LayaModelError, match=r"missing laya\.thresholds"):
        read_metadata(path)


def test_invalid_stored_metadata_is_refused_with_the_file_name(tmp_path):
    path = export_mlp(tmp_path / "laya.onnx", random_layers(), make_metadata())
    model = onnx.load(str(path))
    helper.set_model_props(
        model,
        {entry.key: entry.value for entry in model.metadata_props}
        | {"laya.thresholds": "[0.0, 0.5]"},
    )
    onnx.save(model, str(path))

    with pytest.raises(LayaModelError, match=r"laya\.onnx: invalid Laya metadata: thresholds"):
        read_metadata(path)


def test_the_label_version_is_the_label_schemes_code():
    metadata = make_metadata(label_parameters=LabelConfig().as_metadata())

    assert metadata.label_version == LabelConfig().version == 1 + SCHEMES.index("tick")
    assert f"label version {metadata.label_version}," in metadata.summary()


@pytest.mark.parametrize(("scheme", "version"), [(None, 1), (2, 2), (3, 3)])
def test_a_file_from_before_the_label_version_reads_it_from_its_label_parameters(
    tmp_path, scheme, version
):
    parameters = LABEL_PARAMETERS | ({} if scheme is None else {"scheme": scheme})
    path = export_mlp(
        tmp_path / "old.onnx", random_layers(), make_metadata(label_parameters=parameters)
    )
    with_metadata(path, label_version=None)

    assert read_metadata(path).label_version == version


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        (
            {"label_version": str(NEWER_LABEL_VERSION)},
            f"label version {NEWER_LABEL_VERSION} is newer than this engine knows",
        ),
        ({"label_version": '"clock"'}, "label version 'clock' is not a label version"),
        ({"label_version": "0"}, "label version 0 is not a label version"),
        ({"label_version": "2.5"}, "label version 2.5 is not a label version"),
        # A newer engine's file from before the field, its scheme code the only trace.
        (
            {
                "label_version": None,
                "label_parameters": '{"horizon_ms": 1000, "lean_sigma": '
                '1.5, "emergency_sigma": 4, "sigma_window_ms": 300000, "scheme": 9}',
            },
            "label version 9 is newer than this engine knows",
        ),
        (
            {"label_version": "2"},
            f"label_version 2 disagrees with label_parameters' scheme {LabelConfig().version}",
        ),
    ],
)
def test_a_label_version_this_engine_does_not_know_is_refused_naming_file_and_version(
    tmp_path, entries, message
):
    metadata = make_metadata(label_parameters=LabelConfig().as_metadata())
    path = with_metadata(export_mlp(tmp_path / "new.onnx", random_layers(), metadata), **entries)

    with pytest.raises(LayaModelError) as refusal:
        read_metadata(path)

    assert str(refusal.value).startswith(f"{path}: invalid Laya metadata: {message}")
    assert "\n" not in str(refusal.value)


def test_a_missing_model_says_how_to_train_one(tmp_path):
    with pytest.raises(ModelNotFoundError, match=r"no Laya model at .*absent\.onnx.*train"):
        read_metadata(tmp_path / "absent.onnx")


@pytest.mark.parametrize("name", ["laya-default", "laya-large-tick"])
def test_the_shipped_models_fit_this_engine_and_have_their_cards(name):
    metadata = read_metadata(SHIPPED_MODELS / f"{name}.onnx")
    assert (metadata.feature_set_version, metadata.feature_count) == (
        FEATURE_SET_VERSION,
        ENGINE_FEATURE_COUNT,
    )
    assert metadata.label_version == LabelConfig().version
    assert f"label version {metadata.label_version} " in (SHIPPED_MODELS / f"{name}.md").read_text()


def test_the_default_model_lives_in_the_package():
    assert DEFAULT_MODEL_PATH.parts[-4:] == ("engine", "laya", "models", "laya-default.onnx")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"feature_set_version": ""}, "feature_set_version"),
        ({"feature_count": 0}, "feature_count must be >= 1"),
        ({"thresholds": (0.0, 0.5, 0.5)}, "thresholds must be a tuple of 4"),
        ({"thresholds": (0.0, 0.5, 1.5, 0.5)}, r"thresholds must be probabilities in \[0, 1\]"),
        ({"label_parameters": {"horizon_ms": 500}}, "label_parameters is missing sigma_window"),
        (
            {"label_parameters": LABEL_PARAMETERS | {"lean_sigma": float("nan")}},
            "finite numbers",
        ),
        ({"class_names": ("HOLD", "HOLD", "LEAN_SELL", "EMERGENCY")}, "distinct"),
        ({"training_summary": {"when": object()}}, "JSON-serialisable"),
        ({"created_utc": "yesterday"}, "ISO 8601"),
        ({"created_utc": "2026-01-02T03:04:05+02:00"}, "must be in UTC"),
        ({"model_family": ""}, "model_family"),
    ],
)
def test_metadata_rejects_invalid_fields(overrides, message):
    with pytest.raises(ValueError, match=message):
        make_metadata(**overrides)


def test_metadata_defaults_to_the_verdict_classes_and_the_current_utc_time():
    before = datetime.now(UTC).replace(microsecond=0)
    metadata = LayaModelMetadata(
        feature_set_version="test-fs-1",
        feature_count=FEATURE_COUNT,
        label_parameters=dict(LABEL_PARAMETERS),
        thresholds=(0.0, 0.0, 0.0, 0.0),
        training_summary={},
    )

    assert metadata.class_names == ("HOLD", "LEAN_BUY", "LEAN_SELL", "EMERGENCY")
    assert metadata.model_family == "mlp"
    assert before <= datetime.fromisoformat(metadata.created_utc) <= datetime.now(UTC)


@pytest.mark.parametrize(
    ("layers", "message"),
    [
        ([], "at least one layer"),
        (random_layers(widths=(FEATURE_COUNT + 1, 4)), rf"shape \({FEATURE_COUNT}, out\)"),
        (random_layers(widths=(FEATURE_COUNT, 8, 3)), "3 outputs, 4 expected"),
        ([(np.ones((FEATURE_COUNT, 4)), np.ones(3))], r"bias must have shape \(4,\)"),
        ([(np.full((FEATURE_COUNT, 4), np.nan), np.ones(4))], "weight must be finite"),
    ],
)
def test_export_rejects_layers_that_do_not_fit(tmp_path, layers, message):
    with pytest.raises(ValueError, match=message):
        export_mlp(tmp_path / "laya.onnx", layers, make_metadata())


def test_export_rejects_a_zero_scale(tmp_path):
    scale = np.ones(FEATURE_COUNT)
    scale[3] = 0.0

    with pytest.raises(ValueError, match="input_scale must be > 0"):
        export_mlp(
            tmp_path / "laya.onnx",
            random_layers(),
            make_metadata(),
            input_mean=np.zeros(FEATURE_COUNT),
            input_scale=scale,
        )


HEAD_INPUTS = (3, 0, 17, 9)


def random_head(seed: int = 4) -> EmergencyHead:
    return EmergencyHead(HEAD_INPUTS, random_layers(seed, widths=(len(HEAD_INPUTS), 6, 1)))


def test_an_emergency_head_gives_emergency_its_sigmoid_and_scales_the_others(tmp_path):
    layers = random_layers(seed=5, widths=(FEATURE_COUNT, 8, 3))
    head = random_head()
    rng = np.random.default_rng(6)
    mean = rng.uniform(-3.0, 3.0, FEATURE_COUNT)
    scale = rng.uniform(0.5, 2.0, FEATURE_COUNT)
    path = export_mlp(
        tmp_path / "laya.onnx",
        layers,
        make_metadata(model_family="mlp+emergency-head"),
        input_mean=mean,
        input_scale=scale,
        emergency_head=head,
    )
    features = rng.normal(size=(64, FEATURE_COUNT)).astype(np.float32)
    # Large head outputs too: the logsumexp form must not overflow where a naive one would.
    features[:8] *= 40.0

    probabilities = run_model(path, features)

    standardised = (features.astype(np.float64) - mean) / scale
    log_odds = standardised[:, HEAD_INPUTS]
    for index, (weight, bias) in enumerate(head.layers):
        log_odds = log_odds @ weight + bias
        if index < len(head.layers) - 1:
            log_odds = np.maximum(log_odds, 0.0)
    emergency = 1.0 / (1.0 + np.exp(-log_odds))
    others = numpy_forward(standardised, layers) * (1.0 - emergency)
    expected = np.concatenate([others, emergency], axis=1)
    assert probabilities.shape == (64, 4)
    np.testing.assert_allclose(probabilities, expected, atol=1e-5)
    assert read_metadata(path).model_family == "mlp+emergency-head"


@pytest.mark.parametrize(
    ("layers", "head", "family", "message"),
    [
        (random_layers(), random_head(), "mlp+emergency-head", "3 expected"),
        (random_layers(widths=(FEATURE_COUNT, 3)), random_head(), "mlp", "writes model_family"),
        (
            random_layers(widths=(FEATURE_COUNT, 3)),
            EmergencyHead((0, FEATURE_COUNT), random_layers(widths=(2, 1))),
            "mlp+emergency-head",
            "inputs must be feature indices",
        ),
        (
            random_layers(widths=(FEATURE_COUNT, 3)),
            EmergencyHead(HEAD_INPUTS, random_layers(widths=(len(HEAD_INPUTS), 2))),
            "mlp+emergency-head",
            "emergency head layer has 2 outputs, 1 expected",
        ),
    ],
)
def test_export_rejects_a_head_that_does_not_fit(tmp_path, layers, head, family, message):
    with pytest.raises(ValueError, match=message):
        export_mlp(
            tmp_path / "laya.onnx", layers, make_metadata(model_family=family), emergency_head=head
        )


def test_an_emergency_head_needs_distinct_inputs_and_a_layer():
    with pytest.raises(ValueError, match="distinct"):
        EmergencyHead((1, 1), random_layers(widths=(2, 1)))
    with pytest.raises(ValueError, match="at least one layer"):
        EmergencyHead((1,), [])
