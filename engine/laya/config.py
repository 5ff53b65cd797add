"""Laya's configuration, read without loading ONNX Runtime or the feature kernels: which model
each symbol runs (the shipped ones by name), where, and the checks on a model table."""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.gpu import GIB
from engine.laya.feature_set import FEATURE_COUNT, FEATURE_SET_VERSION
from engine.laya.verdict import CLASS_NAMES
from engine.validation import finite_number, require_count

DEFAULT_MODEL_PATH = Path(__file__).resolve().parent / "models" / "laya-default.onnx"
"""The model shipped with the package, produced by the training pipeline."""
SHIPPED_MODELS = DEFAULT_MODEL_PATH.parent
"""The shipped models (`laya-default`, `laya-large-tick`), each with its card."""


def validate_thresholds(thresholds: Sequence[float], name: str) -> None:
    for value in thresholds:
        if not finite_number(value) or not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be probabilities in [0, 1], got {tuple(thresholds)!r}")


def shipped_or_path(path: str | os.PathLike[str]) -> Path:
    """`path`, or the shipped model it names: a name without a suffix (`laya-large-tick`)
    where no file is, wherever a relative path was taken from (settings take it from their
    folder), when `SHIPPED_MODELS` holds that name's `.onnx`."""
    given = Path(path)
    shipped = SHIPPED_MODELS / f"{given.name}.onnx"
    if given.suffix or given.exists() or not shipped.is_file():
        return given
    return shipped


CPU_RUNNERS = ("native", "onnxruntime")


# A key of [laya.models]: a symbol (upper-case letters and digits) or an fnmatch pattern of one.
_MODEL_KEY = re.compile(r"[A-Z0-9*?\[\]!]+")


@dataclass(frozen=True, slots=True)
class LayaClassifierConfig:
    """Which model to load, where to run it, and the engine's feature set it must match.

    `cpu_runner`: on the CPU provider, "native" runs the model's MLP as one compiled kernel
    once it has agreed with ONNX Runtime on probe rows (see `engine.laya.native`; ONNX Runtime
    stays where the graph is not an MLP the kernel knows, or they disagree); "onnxruntime"
    always runs the session. `thresholds` overrides the model's own per-class thresholds.
    `log_severity` is ONNX Runtime's logger level (0 verbose .. 4 fatal); whatever it lets
    through is captured, not printed. `expected_feature_set_version`/`expected_feature_count`
    are what
    `engine.laya.features` computes; a model trained on anything else is refused.
    """

    model_path: str | Path = DEFAULT_MODEL_PATH
    prefer_gpu: bool = True
    device_id: int = 0
    gpu_mem_limit_bytes: int = 2 * GIB
    thresholds: tuple[float, ...] | None = None
    warmup_runs: int = 10
    log_severity: int = 3
    expected_feature_set_version: str = FEATURE_SET_VERSION
    expected_feature_count: int = FEATURE_COUNT
    cpu_runner: str = "native"

    def __post_init__(self) -> None:
        if self.cpu_runner not in CPU_RUNNERS:
            raise ValueError(
                f"LayaClassifierConfig.cpu_runner must be one of {CPU_RUNNERS}, got "
                f"{self.cpu_runner!r}"
            )
        if not str(self.model_path):
            raise ValueError("LayaClassifierConfig.model_path must name a file")
        if self.device_id < 0:
            raise ValueError(f"LayaClassifierConfig.device_id must be >= 0, got {self.device_id}")
        require_count("LayaClassifierConfig", "gpu_mem_limit_bytes", self.gpu_mem_limit_bytes)
        if self.thresholds is not None:
            if len(self.thresholds) != len(CLASS_NAMES):
                raise ValueError(
                    f"LayaClassifierConfig.thresholds must give {len(CLASS_NAMES)} probabilities "
                    f"(one per class in {CLASS_NAMES}), got {self.thresholds!r}"
                )
            validate_thresholds(self.thresholds, "LayaClassifierConfig.thresholds")
        if self.warmup_runs < 0:
            raise ValueError(
                f"LayaClassifierConfig.warmup_runs must be >= 0, got {self.warmup_runs}"
            )
        if not 0 <= self.log_severity <= 4:
            raise ValueError(
                f"LayaClassifierConfig.log_severity must be 0..4 (verbose..fatal), got "
                f"{self.log_severity}"
            )
        if not self.expected_feature_set_version:
            raise ValueError("LayaClassifierConfig.expected_feature_set_version must not be empty")
        require_count("LayaClassifierConfig", "expected_feature_count", self.expected_feature_count)

    def cuda_provider_options(self) -> dict[str, str]:
        """CUDA EP options for a tiny model under a memory cap."""
        return {
            "device_id": str(self.device_id),
            # Caps only the EP's arena; the CUDA context and cuBLAS workspace come on top.
            "gpu_mem_limit": str(self.gpu_mem_limit_bytes),
            # Grow the arena by what is asked, not to the next power of two, under a tight cap.
            "arena_extend_strategy": "kSameAsRequested",
            # Only matters for Conv; EXHAUSTIVE (the default) has been seen to take gigabytes.
            "cudnn_conv_algo_search": "HEURISTIC",
            # Separate copy streams can race (onnxruntime#4829).
            "do_copy_in_default_stream": "1",
        }


def require_model_keys(models: Mapping[str, object]) -> None:
    """ValueError naming a key of `models` ([laya.models]) that is neither a symbol nor a
    pattern of one, or that names no file."""
    for key, path in models.items():
        if not _MODEL_KEY.fullmatch(key):
            raise ValueError(
                f"[laya.models] key {key!r} is neither a symbol (e.g. BTCUSDT) nor a pattern of "
                f"symbols (e.g. *USDT)"
            )
        if not str(path):
            raise ValueError(f"[laya.models] {key} must name a model file")


def model_for(symbol: str, models: Mapping[str, str | os.PathLike[str]], default: Path) -> Path:
    """The model `symbol` runs on: its own key, else the first pattern (in the table's order)
    that matches it, else `default`; a shipped model's name is its file (`shipped_or_path`)."""
    path = models.get(symbol)
    if path is None:
        path = next(
            (path for key, path in models.items() if fnmatch.fnmatchcase(symbol, key)), default
        )
    return shipped_or_path(path)


def require_shadow_model(
    shadow: str | os.PathLike[str] | None, live: str | os.PathLike[str]
) -> None:
    """ValueError naming a shadow model that is the live one: it would only score itself."""
    if shadow is None:
        return
    if not str(shadow):
        raise ValueError("the shadow model must name a file")
    if _model_file(shadow) == _model_file(live):
        raise ValueError(
            f"the shadow model {shadow} is the live model: name another model to try beside it"
        )


def _model_file(path: str | os.PathLike[str]) -> Path:
    """The file a model setting names: a shipped model by its name (`laya-default`) too."""
    return shipped_or_path(Path(path).expanduser()).resolve()
