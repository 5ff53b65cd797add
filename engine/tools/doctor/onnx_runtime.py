"""ONNX Runtime: the probe (in a child process) and what it tells about the wheel and the
providers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.tools.doctor.packages import ONNXRUNTIME_DISTRIBUTIONS, SOURCE_ROOT, installed_version
from engine.tools.doctor.report import CheckResult, CheckStatus, shorten

CUDA_PROVIDER = "CUDAExecutionProvider"
CPU_PROVIDER = "CPUExecutionProvider"
PROBE_MARKER = "HFT-DOCTOR-PROBE "
"""Prefixes the probe child's one JSON line, so stray output around it cannot be mistaken."""
_PROBE_BOOTSTRAP = (
    "import sys\n"
    "if sys.argv[1] not in sys.path:\n"
    "    sys.path.insert(0, sys.argv[1])\n"
    "from engine.tools.doctor.onnx_runtime import print_probe\n"
    "print_probe(sys.argv[2] if len(sys.argv) > 2 else None)\n"
)
_LOADED_CUDA_LIBRARY = re.compile(r"/(lib(?:cudart|cublasLt|cublas|curand|cudnn|cuda)\.so\.\d+)")


@dataclass(frozen=True, slots=True)
class ProviderProbe:
    """One Laya session: the provider it really runs on and where its rows run
    (`laya_runs_on`), or the error that stopped it."""

    provider: str = ""
    runs_on: str = ""
    error: str = ""
    fallback_reason: str = ""
    session_ms: float = 0.0
    infer_us: float = 0.0


@dataclass(frozen=True, slots=True)
class OnnxRuntimeProbe:
    """What the child found. `import_error` set means onnxruntime (or the engine's Laya code)
    would not even import; `cuda` is None when the build has no CUDA provider to try."""

    import_error: str = ""
    package: str = ""
    version: str = ""
    cuda_version: str = ""
    available_providers: tuple[str, ...] = ()
    preload_messages: tuple[str, ...] = ()
    loaded_libraries: Mapping[str, str] = field(default_factory=dict)
    model_path: str = ""
    cpu: ProviderProbe | None = None
    cuda: ProviderProbe | None = None

    @property
    def cuda_major(self) -> int | None:
        major = self.cuda_version.split(".", 1)[0]
        return int(major) if major.isdigit() else None

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> OnnxRuntimeProbe:
        def provider(value: object) -> ProviderProbe | None:
            return ProviderProbe(**value) if isinstance(value, dict) else None

        return cls(
            import_error=str(document.get("import_error", "")),
            package=str(document.get("package", "")),
            version=str(document.get("version", "")),
            cuda_version=str(document.get("cuda_version", "")),
            available_providers=tuple(document.get("available_providers", ())),
            preload_messages=tuple(document.get("preload_messages", ())),
            loaded_libraries=dict(document.get("loaded_libraries", {})),
            model_path=str(document.get("model_path", "")),
            cpu=provider(document.get("cpu")),
            cuda=provider(document.get("cuda")),
        )


class ProbeFailed(RuntimeError):
    """The probe child crashed, hung or printed no result; the message says which."""


def _loaded_cuda_libraries() -> dict[str, str]:
    """soname -> path of every CUDA library mapped into this process (Linux /proc)."""
    loaded: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/maps").read_text().splitlines():
            path = line.split(maxsplit=5)[-1]
            match = _LOADED_CUDA_LIBRARY.search(path)
            if match and path.startswith("/"):
                loaded.setdefault(match.group(1), path)
    return loaded


def _probe_session(model_path: str, prefer_gpu: bool) -> dict[str, Any]:
    import numpy as np

    from engine.laya.classifier import LayaClassifier, laya_runs_on
    from engine.laya.config import LayaClassifierConfig

    classifier = LayaClassifier(
        LayaClassifierConfig(model_path=model_path, prefer_gpu=prefer_gpu, warmup_runs=3)
    )
    try:
        classifier.start()
    except Exception as error:  # the finding itself: any reason the session cannot run
        return {"error": f"{type(error).__name__}: {error}"}
    try:
        row = np.zeros((1, classifier.config.expected_feature_count), dtype=np.float32)
        durations = []
        for _ in range(200):
            started = time.perf_counter_ns()
            probabilities = classifier.infer(row)
            durations.append(time.perf_counter_ns() - started)
        if not np.isfinite(probabilities).all():
            return {"error": f"inference returned {probabilities.tolist()}"}
        info = classifier.describe()
    except Exception as error:  # a session that starts but cannot run is the finding
        return {"error": f"inference failed: {type(error).__name__}: {error}"}
    finally:
        classifier.stop()
    return {
        "provider": info.provider,
        "runs_on": laya_runs_on(info.provider, info.runner),
        "fallback_reason": info.provider_fallback_reason or "",
        "session_ms": round(info.session_create_ms, 2),
        "infer_us": round(statistics.median(durations) / 1000.0, 2),
    }


def probe_onnxruntime(model_path: str | None) -> dict[str, Any]:
    """In the probe child: the installed onnxruntime, `preload_dlls()`, and a Laya session on
    the CPU and (when the build has it) on CUDA, the way the engine creates them."""
    try:
        import onnxruntime as ort
        from onnxruntime.capi import build_and_package_info

        from engine.laya.classifier import captured_output
        from engine.laya.config import DEFAULT_MODEL_PATH
    except Exception as error:  # a broken install is what the doctor reports
        return {"import_error": f"{type(error).__name__}: {error}"}
    model = str(model_path or DEFAULT_MODEL_PATH)
    available = list(ort.get_available_providers())
    cuda_version = str(getattr(build_and_package_info, "cuda_version", "") or "")
    result: dict[str, Any] = {
        "package": str(getattr(build_and_package_info, "package_name", "onnxruntime")),
        "version": ort.__version__,
        "cuda_version": cuda_version,
        "available_providers": available,
        "model_path": model,
    }
    if cuda_version and hasattr(ort, "preload_dlls"):
        with captured_output() as messages:
            try:
                ort.preload_dlls()
            except Exception as error:  # reported with the messages
                print(f"preload_dlls raised {type(error).__name__}: {error}")
        result["preload_messages"] = messages
    result["cpu"] = _probe_session(model, prefer_gpu=False)
    if CUDA_PROVIDER in available:
        result["cuda"] = _probe_session(model, prefer_gpu=True)
    result["loaded_libraries"] = _loaded_cuda_libraries()
    return result


async def run_onnxruntime_probe(
    model_path: str | Path | None, timeout_s: float
) -> OnnxRuntimeProbe:
    """Run `probe_onnxruntime` in a child interpreter; `ProbeFailed` when it gives no result."""
    # -P: no current directory on sys.path, so the child imports this very engine package
    # (from where this one was imported), not an `engine` folder that happens to be there.
    command = [sys.executable, "-P", "-c", _PROBE_BOOTSTRAP, str(SOURCE_ROOT)]
    if model_path is not None:
        command.append(str(model_path))
    process = await asyncio.create_subprocess_exec(
        *command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), timeout_s)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        raise ProbeFailed(
            f"the ONNX Runtime probe did not finish within {timeout_s:g} s (a CUDA or driver "
            "call hanging?)"
        ) from None
    for line in stdout.decode(errors="replace").splitlines():
        if line.startswith(PROBE_MARKER):
            return OnnxRuntimeProbe.from_json(json.loads(line[len(PROBE_MARKER) :]))
    last = [line for line in stderr.decode(errors="replace").splitlines() if line.strip()]
    code = process.returncode
    how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited {code}"
    raise ProbeFailed(
        f"the ONNX Runtime probe {how} without a result"
        + (f": {shorten(last[-1])}" if last else "")
    )


def check_onnxruntime_install(
    distributions: Mapping[str, str], probe: OnnxRuntimeProbe | None
) -> CheckResult:
    """One onnxruntime wheel, the GPU one, and the module it installed imports."""
    installed = ", ".join(f"{name} {version}" for name, version in distributions.items())
    if not distributions:
        return CheckResult(
            "onnxruntime",
            CheckStatus.FAIL,
            "no onnxruntime wheel is installed: Laya cannot run",
            "pip install 'onnxruntime-gpu[cuda,cudnn]'",
        )
    if len(distributions) > 1:
        owner = f" (the module is now {probe.package}'s)" if probe and probe.package else ""
        return CheckResult(
            "onnxruntime",
            CheckStatus.FAIL,
            f"{installed} are all installed: they share the onnxruntime module, the last "
            f"installed overwrote the others{owner} and removing one breaks the rest",
            f"pip uninstall -y {' '.join(distributions)} && pip install "
            "'onnxruntime-gpu[cuda,cudnn]'",
        )
    if probe is not None and probe.import_error:
        return CheckResult(
            "onnxruntime",
            CheckStatus.FAIL,
            f"{installed} is installed but does not import: {shorten(probe.import_error)}",
            f"pip install --force-reinstall {next(iter(distributions))}",
        )
    name, version = next(iter(distributions.items()))
    if probe is not None and probe.version and probe.version != version:
        return CheckResult(
            "onnxruntime",
            CheckStatus.FAIL,
            f"the onnxruntime module is {probe.version} ({probe.package}) but the installed "
            f"wheel is {name} {version}: a half-replaced install",
            f"pip install --force-reinstall {name}=={version}",
        )
    if name != "onnxruntime-gpu":
        return CheckResult(
            "onnxruntime",
            CheckStatus.WARN,
            f"{installed}: a build without CUDA, so Laya can only run on the CPU",
            f"pip uninstall -y {name} && pip install 'onnxruntime-gpu[cuda,cudnn]'",
        )
    built_for = f", built for CUDA {probe.cuda_version}" if probe and probe.cuda_version else ""
    return CheckResult("onnxruntime", CheckStatus.OK, f"{installed}{built_for}")


def installed_onnxruntime_distributions() -> dict[str, str]:
    found = {name: installed_version(name) for name in ONNXRUNTIME_DISTRIBUTIONS}
    return {name: version for name, version in found.items() if version is not None}


def _session_text(probe: ProviderProbe) -> str:
    return f"{probe.runs_on} {probe.infer_us:.1f} us/infer (session {probe.session_ms:.0f} ms)"


def check_providers(probe: OnnxRuntimeProbe, gpu_present: bool) -> CheckResult:
    """Available (what the build lists) against working (what a Laya session really runs on)."""
    name = "providers"
    if probe.import_error:
        return CheckResult(
            name,
            CheckStatus.FAIL,
            f"onnxruntime or the Laya code does not import: {shorten(probe.import_error)}",
            "see the onnxruntime and packages checks; pip install --force-reinstall hft-console",
        )
    available = ", ".join(
        item.removesuffix("ExecutionProvider") for item in probe.available_providers
    )
    cpu = probe.cpu or ProviderProbe(error="not probed")
    if cpu.error:
        return CheckResult(
            name,
            CheckStatus.FAIL,
            f"Laya's model {probe.model_path} does not run on the CPU: {shorten(cpu.error)}",
            "retrain (hft-console train) or pass the model that matches this engine (--model); "
            "with the shipped model, reinstall hft-console",
        )
    cuda = probe.cuda
    if cuda is None:
        return CheckResult(
            name, CheckStatus.OK, f"available: {available}; working: {_session_text(cpu)}"
        )
    if cuda.error:
        return CheckResult(
            name,
            CheckStatus.FAIL,
            f"available: {available}; Laya's default start (CUDA first) fails: "
            f"{shorten(cuda.error)}; the CPU works: {_session_text(cpu)}",
            "run with --cpu until the CUDA setup is fixed (see cuda-libraries and gpu)",
        )
    if cuda.provider == CUDA_PROVIDER:
        return CheckResult(
            name,
            CheckStatus.OK,
            f"available: {available}; working: {_session_text(cuda)}, {_session_text(cpu)}",
        )
    reason = cuda.fallback_reason or "ONNX Runtime gave no reason"
    detail = (
        f"available: {available}; working: {_session_text(cpu)} only; a session asking for "
        f"CUDA silently runs on {cuda.runs_on}: {shorten(reason)}"
    )
    if not gpu_present:
        return CheckResult(name, CheckStatus.OK, f"{detail} (expected: no GPU here)")
    if "cannot open shared object" in reason or "Failed to load" in reason:
        fix = "pip install 'onnxruntime-gpu[cuda,cudnn]' (the CUDA and cuDNN wheels it loads)"
    else:
        fix = "see the gpu and cuda-libraries checks; until then Laya runs on the CPU (or --cpu)"
    return CheckResult(name, CheckStatus.WARN, detail, fix)


def print_probe(model_path: str | None) -> None:
    """The probe child's whole output: one marked JSON line."""
    print(PROBE_MARKER + json.dumps(probe_onnxruntime(model_path)), flush=True)
