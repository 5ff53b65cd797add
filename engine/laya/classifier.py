"""`LayaClassifier`: one ONNX Runtime session that turns a feature row into a verdict.

Start it before any UI exists: session creation is where ONNX Runtime prints (its C++ logger
on fd 2, the Python wrapper's fallback notices on stdout, `preload_dlls` on stdout), and
anything printed over a Textual screen corrupts it. `start()` keeps all of that off the
terminal and records it in `startup_messages`.

onnxruntime-gpu happily creates a session on a machine whose CUDA libraries or driver are
missing and silently runs it on the CPU, so the provider reported is the one the session really
runs on (`get_providers()[0]`), with the reason when it is not the one asked for.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import re
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

from engine.laya.config import (
    LayaClassifierConfig,
    model_for,
    shipped_or_path,
)
from engine.laya.model import (
    LayaModelError,
    LayaModelMetadata,
    ModelMismatchError,
    open_session,
)
from engine.laya.native import NativeGraphError, NativeMlp
from engine.laya.verdict import CLASS_NAMES, Verdict

CUDA_PROVIDER = "CUDAExecutionProvider"
CPU_PROVIDER = "CPUExecutionProvider"
NATIVE_RUNNER = "native kernel"
ORT_RUNNER = "onnxruntime"
NATIVE_TOLERANCE = 1e-4
"""Largest difference in any class probability, native kernel vs ONNX Runtime, on the probe
rows (float32 sums in another order differ by ~1e-6)."""
_PROBE_ROWS = 512

_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
_HOLD, _LEAN_BUY, _LEAN_SELL, _EMERGENCY = Verdict


@dataclass(frozen=True, slots=True)
class ClassifierInfo:
    """A frozen picture of a started classifier, for the console and the doctor."""

    model_path: str
    provider: str
    requested_providers: tuple[str, ...]
    provider_fallback_reason: str | None
    model_summary: str
    feature_set_version: str
    feature_count: int
    thresholds: tuple[float, ...]
    thresholds_from: str
    session_create_ms: float
    warmup_runs: int
    startup_messages: tuple[str, ...]
    runner: str
    runner_reason: str


def choose_verdict(probabilities: Sequence[float], thresholds: Sequence[float]) -> Verdict:
    """The verdict for one row of class probabilities (in `Verdict` order).

    A class is eligible when its probability reaches its threshold (>=). The eligible class with
    the highest probability wins; ties go to the more cautious class: EMERGENCY, then HOLD, and
    LEAN_BUY tied with LEAN_SELL is HOLD. No eligible class (NaN never is) means HOLD.
    """
    hold, lean_buy, lean_sell, emergency = probabilities
    hold_threshold, lean_buy_threshold, lean_sell_threshold, emergency_threshold = thresholds
    verdict = _HOLD
    best = -1.0
    if emergency >= emergency_threshold:
        verdict, best = _EMERGENCY, emergency
    if hold >= hold_threshold and hold > best:
        verdict, best = _HOLD, hold
    if lean_buy >= lean_buy_threshold and lean_buy > best:
        verdict, best = _LEAN_BUY, lean_buy
    if lean_sell >= lean_sell_threshold:
        if lean_sell > best:
            verdict = _LEAN_SELL
        elif lean_sell == best and verdict is _LEAN_BUY:
            verdict = _HOLD
    return verdict


@contextlib.contextmanager
def captured_output() -> Iterator[list[str]]:
    """Keep everything printed inside the block off the terminal; the list holds it afterwards.

    Catches native writes to fds 1 and 2 (ONNX Runtime's C++ logger), Python writes to
    `sys.stdout`/`sys.stderr` (which a test runner or a TUI may have replaced) and warnings.
    Lines are cleaned of colour codes; the order between those three sources is not kept.
    Redirecting fds is process-wide, hence: only before the UI starts.
    """
    lines: list[str] = []
    sys.stdout.flush()
    sys.stderr.flush()
    python_text = io.StringIO()
    saved_stdout, saved_stderr = os.dup(1), os.dup(2)
    with tempfile.TemporaryFile() as native_sink, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        os.dup2(native_sink.fileno(), 1)
        os.dup2(native_sink.fileno(), 2)
        try:
            with contextlib.redirect_stdout(python_text), contextlib.redirect_stderr(python_text):
                yield lines
        finally:
            os.dup2(saved_stdout, 1)
            os.dup2(saved_stderr, 2)
            os.close(saved_stdout)
            os.close(saved_stderr)
            native_sink.seek(0)
            text = native_sink.read().decode(errors="replace") + python_text.getvalue()
            text += "".join(
                f"{warning.category.__name__}: {warning.message}\n" for warning in caught
            )
            lines.extend(
                cleaned
                for line in text.splitlines()
                if (cleaned := _ANSI_ESCAPE.sub("", line).strip())
            )


def cuda_fallback_reason(messages: Sequence[str], provider: str) -> str:
    """Why a session that asked for CUDA runs on `provider`, from what ONNX Runtime printed."""
    for line in messages:
        if "Failed to load library" in line and "with error: " in line:
            return f"{CUDA_PROVIDER} unavailable: {line.rsplit('with error: ', 1)[1]}"
    for line in messages:
        if "CUDA" in line and not line.startswith("Failed to load lib"):
            return f"{CUDA_PROVIDER} unavailable: {line}"
    return (
        f"{CUDA_PROVIDER} unavailable: the session runs on {provider} and ONNX Runtime gave no "
        f"reason at its log level"
    )


def laya_runs_on(provider: str, runner: str) -> str:
    """Where Laya's rows are really computed, in the words every place people read it uses
    (start line, status bar, status line, bench, doctor, model card): "CUDA", or "CPU" and
    its runner ("CPU native kernel", "CPU onnxruntime")."""
    device = provider.removesuffix("ExecutionProvider")
    return f"{device} {runner}" if provider == CPU_PROVIDER else device


def classifiers_by_symbol(
    config: LayaClassifierConfig,
    models: Mapping[str, str | os.PathLike[str]],
    symbols: Sequence[str],
) -> dict[str, LayaClassifier]:
    """Each symbol's classifier, one per distinct model (`model_for`); a model other than
    `config`'s keeps its own thresholds."""
    default = shipped_or_path(config.model_path)
    by_path: dict[Path, LayaClassifier] = {}
    chosen: dict[str, LayaClassifier] = {}
    for symbol in symbols:
        path = model_for(symbol, models, default)
        classifier = by_path.get(path)
        if classifier is None:
            own = (
                config
                if path == default
                else dataclasses.replace(config, model_path=path, thresholds=None)
            )
            classifier = by_path[path] = LayaClassifier(own)
        chosen[symbol] = classifier
    return chosen


def _not_started(output_names: list[str], feed: dict[str, np.ndarray]) -> list[np.ndarray]:
    raise RuntimeError("LayaClassifier.infer called before start() (or after stop())")


class LayaClassifier:
    """Loads a Laya model into one session and runs it once per feature row.

    `infer` and `verdict` are the hot path and are meant for one calling thread (the feed
    thread): they reuse one feed dict instead of building one per call. `session.run` releases
    the GIL, so the UI thread keeps running meanwhile.
    """

    def __init__(self, config: LayaClassifierConfig | None = None) -> None:
        self.config = config or LayaClassifierConfig()
        self.model_path = shipped_or_path(self.config.model_path)
        self.provider: str | None = None
        self.requested_providers: tuple[str, ...] = ()
        self.provider_fallback_reason: str | None = None
        self.model_metadata: LayaModelMetadata | None = None
        self.session_create_ms: float | None = None
        self.startup_messages: tuple[str, ...] = ()
        self.thresholds: tuple[float, ...] = ()
        self.runner = ORT_RUNNER
        self.runner_reason = ""
        self._session: ort.InferenceSession | None = None
        self._native: NativeMlp | None = None
        self._run = _not_started
        self._input_name = ""
        self._output_names: list[str] = []
        self._feed: dict[str, np.ndarray] = {}

    def start(self) -> None:
        if self._session is not None:
            raise RuntimeError("LayaClassifier is already started")
        config = self.config
        expected_version = config.expected_feature_set_version
        expected_count = config.expected_feature_count

        ort.set_default_logger_severity(config.log_severity)
        use_cuda = config.prefer_gpu and CUDA_PROVIDER in ort.get_available_providers()
        providers: list[Any] = [CPU_PROVIDER]
        if use_cuda:
            providers.insert(0, (CUDA_PROVIDER, config.cuda_provider_options()))
        self.requested_providers = (CUDA_PROVIDER, CPU_PROVIDER) if use_cuda else (CPU_PROVIDER,)

        with captured_output() as messages:
            if use_cuda and hasattr(ort, "preload_dlls"):
                # Loads the cuBLAS/cuDNN/CUDA runtime of the nvidia-* wheels, which the CUDA
                # provider library links against but cannot find on its own.
                ort.preload_dlls()
            started = time.perf_counter()
            session = open_session(self.model_path, self._session_options(), providers)
            session_create_ms = (time.perf_counter() - started) * 1000.0
            metadata = LayaModelMetadata.from_props(
                session.get_modelmeta().custom_metadata_map, self.model_path
            )
            self._check_fits_engine(session, metadata, expected_version, expected_count)
            input_name = session.get_inputs()[0].name
            output_names = [session.get_outputs()[0].name]
            # Inside the capture too: a CUDA failure at run time makes the Python wrapper fall
            # back to CPU and print about it.
            warmup_feed = {input_name: np.zeros((1, expected_count), dtype=np.float32)}
            for _ in range(config.warmup_runs):
                session.run(output_names, warmup_feed)
        # From here on a provider failure raises from `infer` rather than ORT printing over the
        # UI and quietly moving the session to another provider.
        session.disable_fallback()

        self.startup_messages = tuple(messages)
        self.provider = session.get_providers()[0]
        self.provider_fallback_reason = self._fallback_reason(config.prefer_gpu, use_cuda)
        self.model_metadata = metadata
        self.session_create_ms = session_create_ms
        self.thresholds = config.thresholds or metadata.thresholds
        self._session = session
        self._input_name = input_name
        self._output_names = output_names
        self._feed = {}
        self._run = session.run
        self._native, self.runner_reason = self._native_kernel(session, input_name, output_names)
        self.runner = NATIVE_RUNNER if self._native is not None else ORT_RUNNER

    @property
    def runs_on(self) -> str:
        """Where the rows are really computed (`laya_runs_on`), or "not loaded"."""
        if self.provider is None:
            return "not loaded"
        return laya_runs_on(self.provider, self.runner)

    def stop(self) -> None:
        """Release the session; safe to call when not started."""
        self._run = _not_started
        self._feed = {}
        self._session = None
        self._native = None

    def infer(self, features: np.ndarray) -> np.ndarray:
        """Class probabilities [rows, 4] for the float32 [rows, N] feature buffer. A provider
        failure raises here: ONNX Runtime's own retry on CPU is switched off once `start` is
        done."""
        native = self._native
        if native is not None:
            return native.infer(features)
        feed = self._feed
        feed[self._input_name] = features
        return self._run(self._output_names, feed)[0]

    def verdict(self, probabilities: np.ndarray) -> Verdict:
        """`choose_verdict` on the first row of `infer`'s output with this classifier's
        thresholds."""
        return choose_verdict(probabilities.tolist()[0], self.thresholds)

    def describe(self) -> ClassifierInfo:
        metadata = self.model_metadata
        if self._session is None or metadata is None or self.provider is None:
            raise RuntimeError("LayaClassifier.describe needs a started classifier")
        return ClassifierInfo(
            model_path=str(self.model_path),
            provider=self.provider,
            requested_providers=self.requested_providers,
            provider_fallback_reason=self.provider_fallback_reason,
            model_summary=metadata.summary(),
            feature_set_version=metadata.feature_set_version,
            feature_count=metadata.feature_count,
            thresholds=self.thresholds,
            thresholds_from="config" if self.config.thresholds else "model",
            session_create_ms=self.session_create_ms or 0.0,
            warmup_runs=self.config.warmup_runs,
            startup_messages=self.startup_messages,
            runner=self.runner,
            runner_reason=self.runner_reason,
        )

    def _native_kernel(
        self, session: ort.InferenceSession, input_name: str, output_names: list[str]
    ) -> tuple[NativeMlp | None, str]:
        """The native kernel when it may run (CPU provider, `cpu_runner` native, a graph it
        knows, agreement on the probe rows), with why it runs or why not."""
        if self.provider != CPU_PROVIDER:
            return None, f"the session runs on {self.provider}"
        if self.config.cpu_runner != "native":
            return None, f"cpu_runner is {self.config.cpu_runner!r}"
        count = self.config.expected_feature_count
        try:
            kernel = NativeMlp.from_model(self.model_path, count)
        except NativeGraphError as error:
            return None, f"ONNX Runtime runs it: {error}"
        # Rows around the training mean and far from it, scaled as features are (bps, logs).
        rng = np.random.default_rng(20261130)
        scales = np.geomspace(0.01, 1_000.0, _PROBE_ROWS, dtype=np.float32)[:, np.newaxis]
        rows = (rng.standard_normal((_PROBE_ROWS, count), dtype=np.float32) * scales).astype(
            np.float32
        )
        rows[0] = 0.0
        expected = np.vstack(
            [session.run(output_names, {input_name: row[np.newaxis]})[0] for row in rows]
        )
        for _ in range(self.config.warmup_runs):
            kernel.infer(rows[:1])
        difference = float(np.nanmax(np.abs(kernel.infer(rows) - expected)))
        if not difference <= NATIVE_TOLERANCE:
            return None, (
                f"ONNX Runtime runs it: the native kernel differs by {difference:.2e} "
                f"(> {NATIVE_TOLERANCE:g}) on probe rows"
            )
        return kernel, f"agrees with {ORT_RUNNER} within {difference:.1e} on {_PROBE_ROWS} rows"

    def _session_options(self) -> ort.SessionOptions:
        options = ort.SessionOptions()
        # One row at a time through a chain of small Gemms: a thread pool only adds hand-offs,
        # and spinning pool threads would burn a core between frames.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        options.log_severity_level = self.config.log_severity
        return options

    def _check_fits_engine(
        self,
        session: ort.InferenceSession,
        metadata: LayaModelMetadata,
        expected_version: str,
        expected_count: int,
    ) -> None:
        path = self.model_path
        if metadata.feature_set_version != expected_version:
            raise ModelMismatchError(
                f"{path} was trained on feature set {metadata.feature_set_version!r} but the "
                f"engine computes feature set {expected_version!r}: retrain the model for "
                f"{expected_version!r} or run the engine version that matches the model"
            )
        if metadata.class_names != CLASS_NAMES:
            raise ModelMismatchError(
                f"{path} outputs classes {metadata.class_names} but the engine expects "
                f"{CLASS_NAMES}"
            )
        inputs = session.get_inputs()
        if len(inputs) != 1:
            raise ModelMismatchError(
                f"{path} takes {len(inputs)} inputs ({', '.join(item.name for item in inputs)}) "
                f"but the engine feeds one, float32 features of shape [1, {expected_count}]"
            )
        model_input = inputs[0]
        shape = model_input.shape
        # A symbolic batch dimension (a name, or None) takes the engine's batch of 1.
        batch_fits = len(shape) == 2 and (shape[0] == 1 or not isinstance(shape[0], int))
        if model_input.type != "tensor(float)" or not batch_fits or shape[1] != expected_count:
            raise ModelMismatchError(
                f"{path} takes {model_input.type} input of shape {shape} but the engine computes "
                f"float32 features of shape [1, {expected_count}]"
            )
        if metadata.feature_count != expected_count:
            raise LayaModelError(
                f"{path}: metadata says {metadata.feature_count} features but the graph takes "
                f"{expected_count}"
            )
        output = session.get_outputs()[0]
        if output.type != "tensor(float)" or output.shape[-1] != len(CLASS_NAMES):
            raise ModelMismatchError(
                f"{path} outputs {output.type} of shape {output.shape} but the engine expects "
                f"float32 probabilities of shape [batch, {len(CLASS_NAMES)}]"
            )

    def _fallback_reason(self, prefer_gpu: bool, use_cuda: bool) -> str | None:
        if not prefer_gpu or self.provider == CUDA_PROVIDER:
            return None
        if not use_cuda:
            return (
                f"{CUDA_PROVIDER} unavailable: this onnxruntime build ({ort.__version__}) has "
                f"no CUDA provider (it offers {', '.join(ort.get_available_providers())})"
            )
        return cuda_fallback_reason(self.startup_messages, self.provider or CPU_PROVIDER)
