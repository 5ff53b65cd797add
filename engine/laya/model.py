"""The Laya model file: an ONNX MLP whose `metadata_props` say what it was trained on.

A Laya model maps the float32 feature row `features` [batch, feature_count] to
`probabilities` [batch, 4] in `Verdict` order. Its metadata (one JSON string per key,
`laya.<field>`) names the feature set it expects, the label parameters and thresholds it was
trained and tuned with, and a training summary, so the engine can refuse a model that does not
fit the features it computes.

Writing needs the `onnx` package (the `train` extra); reading needs only onnxruntime.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
from onnxruntime.capi import onnxruntime_pybind11_state as ort_errors

from engine.laya.config import LayaClassifierConfig, model_for, shipped_or_path, validate_thresholds
from engine.laya.labels import scheme_of
from engine.laya.verdict import CLASS_NAMES
from engine.user_files import replacing
from engine.validation import finite_number

TRAINING_HINT = (
    "train one with `hft-console train --replay FILE... --out MODEL.onnx` (needs the `train` "
    "extra), or give the path of an existing Laya model with --model"
)

INPUT_NAME = "features"
OUTPUT_NAME = "probabilities"
METADATA_KEY_PREFIX = "laya."
REQUIRED_LABEL_PARAMETERS = ("horizon_ms", "sigma_window_ms", "emergency_sigma", "lean_sigma")
ONNX_OPSET = 17
ONNX_IR_VERSION = 9

# Errors onnxruntime raises for a file it cannot load as a model.
_ORT_LOAD_ERRORS = (
    ort_errors.Fail,
    ort_errors.InvalidArgument,
    ort_errors.InvalidGraph,
    ort_errors.InvalidProtobuf,
    ort_errors.NoSuchFile,
    ort_errors.NotImplemented,
    ort_errors.RuntimeException,
)


class LayaModelError(ValueError):
    """A file that is not a usable Laya model: bad input, so every command that loads one
    (run, eval, bench, backtest, doctor) answers it in one line, like any other."""


class ModelNotFoundError(LayaModelError, FileNotFoundError):
    """No model file where one was expected."""


class ModelMismatchError(LayaModelError):
    """A valid Laya model that does not fit the features the engine computes."""


def _utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True, slots=True)
class LayaModelMetadata:
    """What a Laya model was trained on; stored as `laya.<field>` JSON strings in the file.

    `thresholds[i]` is the probability class i must reach to be chosen (see
    `engine.laya.classifier.choose_verdict`). `training_summary` is free-form JSON (recordings,
    frames, class counts, split, metrics). `label_version` is the label scheme's code
    (`engine.laya.labels.SCHEMES`); None takes it from `label_parameters` ("scheme", else 1:
    the rule for files written before it), and a version this engine does not know is refused.
    """

    feature_set_version: str
    feature_count: int
    label_parameters: dict[str, float]
    thresholds: tuple[float, ...]
    training_summary: dict[str, Any]
    class_names: tuple[str, ...] = CLASS_NAMES
    model_family: str = "mlp"
    created_utc: str = field(default_factory=_utc_now)
    label_version: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.feature_set_version, str) or not self.feature_set_version:
            raise ValueError(
                f"feature_set_version must be a non-empty string, got {self.feature_set_version!r}"
            )
        if not isinstance(self.feature_count, int) or isinstance(self.feature_count, bool):
            raise TypeError(f"feature_count must be an int, got {self.feature_count!r}")
        if self.feature_count < 1:
            raise ValueError(f"feature_count must be >= 1, got {self.feature_count}")
        if (
            not isinstance(self.class_names, tuple)
            or not self.class_names
            or not all(isinstance(name, str) and name for name in self.class_names)
            or len(set(self.class_names)) != len(self.class_names)
        ):
            raise ValueError(
                f"class_names must be a tuple of distinct non-empty strings, got "
                f"{self.class_names!r}"
            )
        self._validate_label_parameters()
        self._validate_thresholds()
        if not isinstance(self.training_summary, dict):
            raise TypeError(f"training_summary must be a dict, got {self.training_summary!r}")
        try:
            json.dumps(self.training_summary)
        except (TypeError, ValueError) as error:
            raise ValueError(f"training_summary must be JSON-serialisable: {error}") from error
        if not isinstance(self.model_family, str) or not self.model_family:
            raise ValueError(f"model_family must be a non-empty string, got {self.model_family!r}")
        self._validate_created_utc()

    def _validate_label_parameters(self) -> None:
        if not isinstance(self.label_parameters, dict):
            raise TypeError(f"label_parameters must be a dict, got {self.label_parameters!r}")
        missing = [key for key in REQUIRED_LABEL_PARAMETERS if key not in self.label_parameters]
        if missing:
            raise ValueError(f"label_parameters is missing {', '.join(missing)}")
        for key, value in self.label_parameters.items():
            if not isinstance(key, str) or not finite_number(value):
                raise ValueError(
                    f"label_parameters must map names to finite numbers, got {key!r}: {value!r}"
                )
        scheme = self.label_parameters.get("scheme", 1)
        if self.label_version is None:
            object.__setattr__(self, "label_version", scheme)
        scheme_of(self.label_version)
        if self.label_version != scheme:
            raise ValueError(
                f"label_version {self.label_version!r} disagrees with label_parameters' scheme "
                f"{scheme!r}"
            )
        object.__setattr__(self, "label_version", int(self.label_version))

    def _validate_thresholds(self) -> None:
        if not isinstance(self.thresholds, tuple) or len(self.thresholds) != len(self.class_names):
            raise ValueError(
                f"thresholds must be a tuple of {len(self.class_names)} probabilities (one per "
                f"class in {self.class_names}), got {self.thresholds!r}"
            )
        validate_thresholds(self.thresholds, "thresholds")

    def _validate_created_utc(self) -> None:
        try:
            created = datetime.fromisoformat(self.created_utc)
        except (TypeError, ValueError) as error:
            raise ValueError(
                f"created_utc must be an ISO 8601 timestamp, got {self.created_utc!r}"
            ) from error
        offset = created.utcoffset()
        if offset is None or offset.total_seconds() != 0:
            raise ValueError(f"created_utc must be in UTC, got {self.created_utc!r}")

    def to_props(self) -> dict[str, str]:
        """The `metadata_props` entries: one JSON string per field."""
        return {
            METADATA_KEY_PREFIX + item.name: json.dumps(getattr(self, item.name), sort_keys=True)
            for item in fields(self)
        }

    @classmethod
    def from_props(cls, props: Mapping[str, str], source: str | Path) -> LayaModelMetadata:
        """Parse `metadata_props`; `source` names the file in error messages."""
        # Files before `label_version` lack it: their label_parameters say it.
        keys = [
            METADATA_KEY_PREFIX + item.name for item in fields(cls) if item.name != "label_version"
        ]
        present = [key for key in keys if key in props]
        if not present:
            raise LayaModelError(
                f"{source} is not a Laya model: it has no {METADATA_KEY_PREFIX}* metadata "
                f"(a Laya model carries {', '.join(keys)})"
            )
        missing = [key for key in keys if key not in props]
        if missing:
            raise LayaModelError(f"{source}: Laya metadata is missing {', '.join(missing)}")
        values: dict[str, Any] = {}
        for item in fields(cls):
            key = METADATA_KEY_PREFIX + item.name
            if key not in props:
                continue
            try:
                value = json.loads(props[key])
            except ValueError as error:
                raise LayaModelError(f"{source}: {key} is not valid JSON: {error}") from error
            values[item.name] = tuple(value) if isinstance(value, list) else value
        try:
            return cls(**values)
        except (TypeError, ValueError) as error:
            raise LayaModelError(f"{source}: invalid Laya metadata: {error}") from error

    def summary(self) -> str:
        """One line for the console and the doctor."""
        return (
            f"{self.model_family}, feature set {self.feature_set_version} "
            f"({self.feature_count} features), label version {self.label_version}, created "
            f"{self.created_utc}"
        )


def open_session(
    path: str | Path, options: ort.SessionOptions, providers: Sequence[Any]
) -> ort.InferenceSession:
    """An ONNX Runtime session on the model at `path`, with load failures as `LayaModelError`."""
    model_path = Path(path)
    if not model_path.is_file():
        raise ModelNotFoundError(f"no Laya model at {model_path}: {TRAINING_HINT}")
    try:
        return ort.InferenceSession(str(model_path), options, providers=list(providers))
    except _ORT_LOAD_ERRORS as error:
        raise LayaModelError(f"{model_path} is not a loadable ONNX model: {error}") from error


def read_metadata(path: str | Path) -> LayaModelMetadata:
    """The metadata of the Laya model at `path`; raises `LayaModelError` for anything else."""
    options = ort.SessionOptions()
    # Only the metadata is wanted: skip graph optimisation to keep this cheap.
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = open_session(path, options, ["CPUExecutionProvider"])
    return LayaModelMetadata.from_props(session.get_modelmeta().custom_metadata_map, path)


def _finite_array(values: object, name: str, shape: tuple[int, ...]) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite")
    return array


@dataclass(frozen=True, slots=True, eq=False)
class EmergencyHead:
    """A separate MLP for the EMERGENCY probability that reads only some features.

    `inputs` are feature indices; `layers` are (weight [in, out], bias [out]) pairs with ReLU
    between them and one output, the log-odds of EMERGENCY. With a head, the model is
    P(EMERGENCY) = sigmoid(head) and P(class | not EMERGENCY) = softmax of the main MLP.
    """

    inputs: tuple[int, ...]
    layers: Sequence[tuple[np.ndarray, np.ndarray]]

    def __post_init__(self) -> None:
        if not self.inputs or len(set(self.inputs)) != len(self.inputs):
            raise ValueError(f"EmergencyHead.inputs must be distinct indices, got {self.inputs}")
        if not self.layers:
            raise ValueError("EmergencyHead needs at least one layer")


def _checked_layers(
    layers: Sequence[tuple[np.ndarray, np.ndarray]], width: int, outputs: int, what: str
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Weights and biases as float64 arrays, checked to chain from `width` to `outputs`."""
    weights: list[np.ndarray] = []
    biases: list[np.ndarray] = []
    for index, (weight, bias) in enumerate(layers):
        weight_array = np.asarray(weight, dtype=np.float64)
        if weight_array.ndim != 2 or weight_array.shape[0] != width:
            raise ValueError(
                f"{what} layer {index} weight must have shape ({width}, out), "
                f"got {weight_array.shape}"
            )
        width = weight_array.shape[1]
        weights.append(
            _finite_array(weight_array, f"{what} layer {index} weight", weight_array.shape)
        )
        biases.append(_finite_array(bias, f"{what} layer {index} bias", (width,)))
    if width != outputs:
        raise ValueError(f"the last {what} layer has {width} outputs, {outputs} expected")
    return weights, biases


def export_mlp(
    path: str | Path,
    layers: Sequence[tuple[np.ndarray, np.ndarray]],
    metadata: LayaModelMetadata,
    *,
    input_mean: np.ndarray | None = None,
    input_scale: np.ndarray | None = None,
    emergency_head: EmergencyHead | None = None,
) -> Path:
    """Write an MLP as a Laya model and return its path.

    `layers` are (weight [in, out], bias [out]) pairs, as in scikit-learn's
    `MLPClassifier.coefs_`/`intercepts_`; every layer but the last is followed by ReLU, the last
    by Softmax over classes. With `input_mean` and `input_scale` (StandardScaler's `mean_` and
    `scale_`) the graph standardises its input first: (features - mean) / scale.

    With an `emergency_head` (model family `mlp+emergency-head`), `layers` end in one logit per
    class but EMERGENCY (the last class) and the head gives EMERGENCY's log-odds; the graph
    appends head + logsumexp(main logits) as EMERGENCY's logit, so that the softmax yields
    exactly sigmoid(head) for EMERGENCY and (1 - that) x the main softmax for the others.
    """
    import onnx  # the `train` extra: the runtime only reads models
    from onnx import TensorProto, helper, numpy_helper

    family = "mlp" if emergency_head is None else "mlp+emergency-head"
    if metadata.model_family != family:
        raise ValueError(
            f"export_mlp writes model_family {family!r}, got {metadata.model_family!r}"
        )
    if not layers:
        raise ValueError("an MLP needs at least one layer")
    if (input_mean is None) != (input_scale is None):
        raise ValueError("give both input_mean and input_scale, or neither")

    feature_count = metadata.feature_count
    class_count = len(metadata.class_names)
    if emergency_head is not None and metadata.class_names[-1] != "EMERGENCY":
        raise ValueError(
            f"an emergency head needs EMERGENCY as the last class, got {metadata.class_names}"
        )
    main_outputs = class_count if emergency_head is None else class_count - 1
    try:
        weights, biases = _checked_layers(layers, feature_count, main_outputs, "MLP")
    except ValueError as error:
        raise ValueError(f"{error} (the metadata names classes {metadata.class_names})") from None
    head_weights: list[np.ndarray] = []
    head_biases: list[np.ndarray] = []
    head_inputs = np.zeros(0, dtype=np.int64)
    if emergency_head is not None:
        head_inputs = np.asarray(emergency_head.inputs, dtype=np.int64)
        if head_inputs.min() < 0 or head_inputs.max() >= feature_count:
            raise ValueError(
                f"emergency head inputs must be feature indices below {feature_count}, "
                f"got {emergency_head.inputs}"
            )
        head_weights, head_biases = _checked_layers(
            emergency_head.layers, head_inputs.size, 1, "emergency head"
        )

    initializers = []
    nodes = []
    current = INPUT_NAME
    if input_mean is not None and input_scale is not None:
        mean = _finite_array(input_mean, "input_mean", (feature_count,))
        scale = _finite_array(input_scale, "input_scale", (feature_count,))
        if not np.all(scale > 0):
            raise ValueError(
                "input_scale must be > 0 (StandardScaler uses 1 for constant features)"
            )
        # The division by scale folds exactly into the first layer's weights; the mean does not:
        # folding it into the bias computes x @ W' - mean @ W', which cancels catastrophically in
        # float32 when a feature's mean is large against its spread. So one Sub node stays.
        weights[0] = weights[0] / scale[:, np.newaxis]
        if head_weights:
            head_weights[0] = head_weights[0] / scale[head_inputs][:, np.newaxis]
        initializers.append(numpy_helper.from_array(mean.astype(np.float32), "input_mean"))
        nodes.append(helper.make_node("Sub", [current, "input_mean"], ["centred"], name="centre"))
        current = "centred"

    def chain(prefix: str, source: str, output: str, arrays: list[tuple[np.ndarray, ...]]) -> None:
        """Gemm (+ ReLU but after the last) per layer, from `source` to `output`."""
        for index, (weight_array, bias_array) in enumerate(arrays):
            name = f"{prefix}{index}"
            initializers.extend(
                [
                    numpy_helper.from_array(weight_array.astype(np.float32), f"{name}.weight"),
                    numpy_helper.from_array(bias_array.astype(np.float32), f"{name}.bias"),
                ]
            )
            last = index == len(arrays) - 1
            gemm_output = output if last else f"{name}.linear"
            nodes.append(
                helper.make_node(
                    "Gemm",
                    [source, f"{name}.weight", f"{name}.bias"],
                    [gemm_output],
                    name=f"{name}.gemm",
                )
            )
            if not last:
                source = f"{name}.relu"
                nodes.append(helper.make_node("Relu", [gemm_output], [source], name=source))

    main = list(zip(weights, biases, strict=True))
    if emergency_head is None:
        chain("layer", current, "logits", main)
    else:
        chain("layer", current, "main_logits", main)
        initializers.append(numpy_helper.from_array(head_inputs, "emergency.inputs"))
        nodes.append(
            helper.make_node(
                "Gather",
                [current, "emergency.inputs"],
                ["emergency.features"],
                axis=1,
                name="emergency.gather",
            )
        )
        chain(
            "emergency",
            "emergency.features",
            "emergency_log_odds",
            list(zip(head_weights, head_biases, strict=True)),
        )
        nodes += [
            helper.make_node(
                "ReduceLogSumExp",
                ["main_logits"],
                ["main_logsumexp"],
                axes=[1],
                keepdims=1,
                name="main.logsumexp",
            ),
            helper.make_node(
                "Add",
                ["emergency_log_odds", "main_logsumexp"],
                ["emergency_logit"],
                name="emergency.logit",
            ),
            helper.make_node(
                "Concat", ["main_logits", "emergency_logit"], ["logits"], axis=1, name="logits"
            ),
        ]
    nodes.append(helper.make_node("Softmax", ["logits"], [OUTPUT_NAME], axis=1, name="softmax"))

    graph = helper.make_graph(
        nodes,
        "laya",
        [helper.make_tensor_value_info(INPUT_NAME, TensorProto.FLOAT, ["batch", feature_count])],
        [helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, ["batch", class_count])],
        initializers,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", ONNX_OPSET)],
        ir_version=ONNX_IR_VERSION,
        producer_name="hft-console laya",
    )
    helper.set_model_props(model, metadata.to_props())
    onnx.checker.check_model(model, full_check=True)

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    # Replaced whole, so a console starting meanwhile never reads half a model.
    with replacing(target, mode=0o644) as partial:
        partial.write_bytes(model.SerializeToString())
    return target


def require_symbol_models(
    config: LayaClassifierConfig,
    models: Mapping[str, str | os.PathLike[str]],
    symbols: Sequence[str],
) -> None:
    """`LayaModelError` (a ValueError) naming a model [laya.models] gives one of `symbols` that
    is missing or was trained on another feature set than the engine computes. A pattern that
    matches none of `symbols` is no mistake."""
    default = shipped_or_path(config.model_path)
    for path in {model_for(symbol, models, default) for symbol in symbols} - {default}:
        if not path.is_file():
            mapped = [symbol for symbol in symbols if model_for(symbol, models, default) == path]
            raise ModelNotFoundError(
                f"[laya.models] maps {', '.join(mapped)} to {path}, and there is no model there"
            )
        metadata = read_metadata(path)
        expected = (config.expected_feature_set_version, config.expected_feature_count)
        if (metadata.feature_set_version, metadata.feature_count) != expected:
            raise ModelMismatchError(
                f"[laya.models] {path} was trained on feature set "
                f"{metadata.feature_set_version!r} ({metadata.feature_count} features) but the "
                f"engine computes {expected[0]!r} ({expected[1]} features): retrain it"
            )
