"""Laya's MLP graphs as one numba kernel, for the CPU.

On this project's CPUs an ONNX Runtime run costs ~15 us back to back but 100-250 us after a few
milliseconds of idling (its long code path has left the caches by the next frame), and that
cold run was most of the EMERGENCY -> cancel reaction. The same network as one small compiled
loop over packed weights costs a few microseconds warm and stays far below ONNX Runtime cold.

`NativeMlp.from_model` reads the graph that `engine.laya.model.export_mlp` writes (families
`mlp` and `mlp+emergency-head`: an optional Sub of the input mean, Gemm/Relu chains, the
emergency head's Gather, ReduceLogSumExp, Add, Concat, and Softmax) and refuses, with the
reason, anything else. `LayaClassifier` runs it only after it has agreed with ONNX Runtime on
probe rows; the ONNX model stays the one artifact. The kernel keeps the GIL, as the fast
path's others do (`engine.feed.frame_kernel` says why).

Reading a graph needs the `onnx` package, whose import takes ~0.8 s (its `ml_dtypes`) at every
engine start. The packed weights are therefore kept in the user cache under the model file's
SHA-256, with a digest of their own: a start with a model seen before reads them from there.
A cache that cannot be read or written is passed over (the graph is read again).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np

from engine.user_files import replacing, user_cache_dir

_GEMM_DEFAULTS = {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 0}
_PACKING = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]
"""This file's own fingerprint, part of every cache key: packed weights written by other code
(another layout) are never read, they are read again from the graph."""
_CACHE_KEPT = 32
"""Packed models kept, the most recently used (a few tens of kB each)."""


def native_cache_dir() -> Path:
    """Where packed weights are kept: the user cache (`$XDG_CACHE_HOME/hft-console/laya-native`)."""
    return user_cache_dir() / "laya-native"


class NativeGraphError(ValueError):
    """The graph is not one the native kernel runs; the message says what differs."""


@numba.njit(cache=True)
def _dense(params, weights, bias, inputs, outputs, scratch, source, target):
    """scratch[target:+outputs] = scratch[source:+inputs] @ W + b, W packed [in, out]: the inner
    loop runs along a contiguous weight row, and inputs a ReLU zeroed are skipped."""
    for j in range(outputs):
        scratch[target + j] = params[bias + j]
    for i in range(inputs):
        value = scratch[source + i]
        if value != 0.0:
            row = weights + i * outputs
            for j in range(outputs):
                scratch[target + j] += value * params[row + j]


@numba.njit(cache=True)
def _relu(scratch, at, count):
    for j in range(count):
        if scratch[at + j] < 0.0:
            scratch[at + j] = 0.0


@numba.njit(cache=True)
def _chain(params, layout, at, scratch, source, hidden, width, target):
    """The Gemm/ReLU layers described from `layout[at]`, reading `scratch` at `source`: hidden
    layers alternate between the two buffers at `hidden`, the last writes at `target`.
    Returns the layout index after the chain."""
    layers = layout[at]
    at += 1
    for layer in range(layers):
        inputs, outputs = layout[at], layout[at + 1]
        weights, bias = layout[at + 2], layout[at + 3]
        at += 4
        last = layer == layers - 1
        into = target if last else hidden + (layer % 2) * width
        _dense(params, weights, bias, inputs, outputs, scratch, source, into)
        if not last:
            _relu(scratch, into, outputs)
        source = into
    return at


@numba.njit(cache=True)
def _forward(
    rows: np.ndarray, params: np.ndarray, layout: np.ndarray, scratch: np.ndarray
) -> np.ndarray:
    """Class probabilities, float32 [rows, classes]. `scratch` holds the centred input, two
    hidden buffers of `layout[2]` values each, the logits, and the head's gathered inputs and
    log-odds."""
    features, mean, width, classes = layout[0], layout[1], layout[2], layout[3]
    hidden = features
    logits_at = features + 2 * width
    head_at = logits_at + classes
    out = np.empty((rows.shape[0], classes), dtype=np.float32)
    for r in range(rows.shape[0]):
        for i in range(features):
            value = np.float64(rows[r, i])
            scratch[i] = value - params[mean + i] if mean >= 0 else value
        at = _chain(params, layout, 4, scratch, 0, hidden, width, logits_at)
        main_classes = layout[at - 3]
        head_inputs = layout[at]
        at += 1
        if head_inputs > 0:
            for i in range(head_inputs):
                scratch[head_at + i] = scratch[layout[at + i]]
            at += head_inputs
            log_odds_at = head_at + head_inputs
            _chain(params, layout, at, scratch, head_at, hidden, width, log_odds_at)
            peak = scratch[logits_at]
            for j in range(1, main_classes):
                peak = max(peak, scratch[logits_at + j])
            total = 0.0
            for j in range(main_classes):
                total += np.exp(scratch[logits_at + j] - peak)
            scratch[logits_at + main_classes] = scratch[log_odds_at] + peak + np.log(total)
        peak = scratch[logits_at]
        for j in range(1, classes):
            peak = max(peak, scratch[logits_at + j])
        total = 0.0
        for j in range(classes):
            scratch[logits_at + j] = np.exp(scratch[logits_at + j] - peak)
            total += scratch[logits_at + j]
        for j in range(classes):
            out[r, j] = scratch[logits_at + j] / total
    return out


@dataclass(frozen=True, slots=True)
class _Layer:
    weight: np.ndarray  # [in, out], as Gemm reads it
    bias: np.ndarray


def pack(
    feature_count: int,
    mean: np.ndarray | None,
    main: Sequence[_Layer],
    head_inputs: np.ndarray | None,
    head: Sequence[_Layer],
) -> tuple[np.ndarray, np.ndarray]:
    """The weights as one float64 array and the int64 layout `_forward` walks: features, mean
    offset (-1: none), widest layer, classes, then each chain as its layer count and (inputs,
    outputs, weight offset, bias offset) per layer, the head's chain after its gathered inputs."""
    values: list[np.ndarray] = []
    offset = 0

    def put(array: np.ndarray) -> int:
        nonlocal offset
        start = offset
        values.append(np.ascontiguousarray(array, dtype=np.float64).ravel())
        offset += array.size
        return start

    mean_at = put(mean) if mean is not None else -1
    widest = max(layer.weight.shape[1] for layer in (*main, *head))
    classes = main[-1].weight.shape[1] + (1 if head else 0)
    layout = [feature_count, mean_at, widest, classes, len(main)]
    for layer in main:
        inputs, outputs = layer.weight.shape
        layout += [inputs, outputs, put(layer.weight), put(layer.bias)]
    if head_inputs is not None and head:
        layout += [head_inputs.size, *head_inputs.tolist(), len(head)]
        for layer in head:
            inputs, outputs = layer.weight.shape
            layout += [inputs, outputs, put(layer.weight), put(layer.bias)]
    else:
        layout.append(0)
    params = np.concatenate(values) if values else np.zeros(0)
    return params, np.asarray(layout, dtype=np.int64)


class NativeMlp:
    """A Laya MLP graph as packed float64 weights and one compiled forward pass."""

    def __init__(self, params: np.ndarray, layout: np.ndarray) -> None:
        """From packed weights and their layout (`pack`)."""
        feature_count, widest, classes = int(layout[0]), int(layout[2]), int(layout[3])
        head_inputs = int(layout[5 + 4 * int(layout[4])])
        gathered = head_inputs + 1 if head_inputs else 0
        self.feature_count = feature_count
        self.class_count = classes
        self._params = params
        self._layout = layout
        self._scratch = np.zeros(feature_count + 2 * widest + classes + gathered, dtype=np.float64)

    def infer(self, features: np.ndarray) -> np.ndarray:
        """Class probabilities float32 [rows, classes] for float32 [rows, features]."""
        return _forward(features, self._params, self._layout, self._scratch)

    @classmethod
    def from_model(
        cls, path: str | Path, feature_count: int, cache_dir: Path | None = None
    ) -> NativeMlp:
        """The graph at `path`, from the packed weights cached in `cache_dir` (default
        `native_cache_dir()`) when they are there; raises `NativeGraphError` naming what it
        cannot run."""
        model = Path(path).read_bytes()
        key = f"{hashlib.sha256(model).hexdigest()}-{feature_count}-{_PACKING}"
        folder = native_cache_dir() if cache_dir is None else cache_dir
        cached = _read_packed(folder / f"{key}.npz", key)
        if cached is not None:
            return cls(*cached)
        packed = _read_graph(model, feature_count)
        _write_packed(folder, key, *packed)
        return cls(*packed)


def _digest(key: str, params: np.ndarray, layout: np.ndarray) -> str:
    return hashlib.sha256(key.encode() + params.tobytes() + layout.tobytes()).hexdigest()


def _read_packed(path: Path, key: str) -> tuple[np.ndarray, np.ndarray] | None:
    """The packed weights cached at `path`, or None when absent or not intact (the kernel
    indexes by the layout unchecked: only a file whose digest matches is used)."""
    try:
        with np.load(path, allow_pickle=False) as stored:
            params, layout, digest = stored["params"], stored["layout"], str(stored["digest"])
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None
    if (
        params.dtype != np.float64
        or layout.dtype != np.int64
        or params.ndim != 1
        or layout.ndim != 1
    ):
        return None
    if digest != _digest(key, params, layout):
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # recently used: the last to be pruned
    return params, layout


def _write_packed(folder: Path, key: str, params: np.ndarray, layout: np.ndarray) -> None:
    """Keep the packed weights for the next start (atomically: a reader sees a whole file)."""
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        with replacing(folder / f"{key}.npz") as partial, partial.open("wb") as file:
            np.savez(file, params=params, layout=layout, digest=_digest(key, params, layout))
        kept = sorted(folder.glob("*.npz"), key=lambda path: path.stat().st_mtime, reverse=True)
        for stale in kept[_CACHE_KEPT:]:
            stale.unlink(missing_ok=True)


def _read_graph(model: bytes, feature_count: int) -> tuple[np.ndarray, np.ndarray]:
    """Read the graph; raises `NativeGraphError` naming what it cannot run."""
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError as error:
        raise NativeGraphError(f"the onnx package is missing: {error}") from None
    graph = onnx.load_from_string(model).graph
    constants = {item.name: numpy_helper.to_array(item) for item in graph.initializer}
    nodes = list(graph.node)
    if len(graph.input) != 1 or len(graph.output) != 1:
        raise NativeGraphError("the graph must have one input and one output")
    reader = _GraphReader(nodes, constants)
    current = graph.input[0].name
    mean = None
    if reader.peek("Sub"):
        node = reader.take("Sub")
        if node.input[0] != current:
            raise NativeGraphError("the Sub node must read the graph's input")
        mean = reader.constant(node.input[1], (feature_count,))
        current = node.output[0]
    centred = current
    main, logits = reader.chain(current)
    head_inputs = None
    head: list[_Layer] = []
    if reader.peek("Gather"):
        gather = reader.take("Gather")
        if gather.input[0] != centred or _attributes(gather).get("axis") != 1:
            raise NativeGraphError("the emergency head must gather input features on axis 1")
        head_inputs = reader.constant(gather.input[1], None).astype(np.int64).ravel()
        if head_inputs.size == 0 or head_inputs.min() < 0 or head_inputs.max() >= feature_count:
            raise NativeGraphError("the emergency head gathers features out of range")
        head, log_odds = reader.chain(gather.output[0])
        if head[-1].weight.shape[1] != 1:
            raise NativeGraphError("the emergency head must end in one log-odds value")
        reduce = reader.take("ReduceLogSumExp")
        add = reader.take("Add")
        concat = reader.take("Concat")
        if (
            list(reduce.input) != [logits]
            or set(add.input) != {log_odds, reduce.output[0]}
            or list(concat.input) != [logits, add.output[0]]
            or _attributes(concat).get("axis") != 1
            or _attributes(reduce).get("keepdims", 1) != 1
            or list(_attributes(reduce).get("axes", [1])) not in ([1], [-1])
        ):
            raise NativeGraphError("the emergency head is not combined as export_mlp does")
        logits = concat.output[0]
    softmax = reader.take("Softmax")
    if list(softmax.input) != [logits] or _attributes(softmax).get("axis", -1) not in (1, -1):
        raise NativeGraphError("the graph must end in a Softmax over the class logits")
    if reader.remaining or softmax.output[0] != graph.output[0].name:
        raise NativeGraphError("the graph has nodes after its Softmax")
    if main[0].weight.shape[0] != feature_count:
        raise NativeGraphError(
            f"the first layer takes {main[0].weight.shape[0]} inputs, not {feature_count}"
        )
    return pack(feature_count, mean, main, head_inputs, head)


class _GraphReader:
    """Walks the node list in order, expecting export_mlp's shapes."""

    def __init__(self, nodes: list, constants: dict[str, np.ndarray]) -> None:
        self._nodes = nodes
        self._constants = constants
        self._at = 0

    @property
    def remaining(self) -> int:
        return len(self._nodes) - self._at

    def peek(self, op_type: str) -> bool:
        return self._at < len(self._nodes) and self._nodes[self._at].op_type == op_type

    def take(self, op_type: str):
        if not self.peek(op_type):
            found = self._nodes[self._at].op_type if self.remaining else "the end of the graph"
            raise NativeGraphError(f"expected a {op_type} node, found {found}")
        node = self._nodes[self._at]
        self._at += 1
        return node

    def constant(self, name: str, shape: tuple[int, ...] | None) -> np.ndarray:
        value = self._constants.get(name)
        if value is None:
            raise NativeGraphError(f"{name} is not a constant of the graph")
        if shape is not None and value.shape != shape:
            raise NativeGraphError(f"{name} has shape {value.shape}, expected {shape}")
        if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            raise NativeGraphError(f"{name} holds non-finite values")
        return value

    def chain(self, source: str) -> tuple[list[_Layer], str]:
        """Gemm (ReLU Gemm)*: the layers and the name of the last Gemm's output."""
        layers: list[_Layer] = []
        while True:
            gemm = self.take("Gemm")
            attributes = {**_GEMM_DEFAULTS, **_attributes(gemm)}
            if attributes != _GEMM_DEFAULTS:
                raise NativeGraphError(f"Gemm {gemm.name} has attributes {attributes}")
            if gemm.input[0] != source or len(gemm.input) != 3:
                raise NativeGraphError(f"Gemm {gemm.name} does not continue the chain")
            weight = self.constant(gemm.input[1], None)
            bias = self.constant(gemm.input[2], None)
            if weight.ndim != 2 or bias.shape != (weight.shape[1],):
                raise NativeGraphError(
                    f"Gemm {gemm.name} has weight {weight.shape}, bias {bias.shape}"
                )
            if layers and weight.shape[0] != layers[-1].weight.shape[1]:
                raise NativeGraphError(f"Gemm {gemm.name} does not fit the layer before it")
            layers.append(_Layer(weight, bias))
            if not self.peek("Relu"):
                return layers, gemm.output[0]
            relu = self.take("Relu")
            if list(relu.input) != [gemm.output[0]]:
                raise NativeGraphError(f"Relu {relu.name} does not follow its Gemm")
            source = relu.output[0]


def _attributes(node) -> dict[str, object]:
    from onnx import helper

    return {item.name: helper.get_attribute_value(item) for item in node.attribute}
