"""The CUDA libraries the installed onnxruntime-gpu needs, against those on this machine and
its driver."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from engine.tools.doctor.gpu import MINIMUM_DRIVER, GpuFacts
from engine.tools.doctor.onnx_runtime import OnnxRuntimeProbe
from engine.tools.doctor.report import CheckResult, CheckStatus

CUDNN_MAJOR = 9
CURAND_MAJOR = 10
ORT_FOR_CUDA_12 = "onnxruntime-gpu>=1.19,<1.27"
"""PyPI's onnxruntime-gpu is built for CUDA 12 up to 1.26 and for CUDA 13 from 1.27."""
_CUDA_LIBRARY = re.compile(r"^lib(cudart|cublasLt|cublas|curand|cudnn|cuda)\.so\.(\d+)$")
_PRELOAD_FAILURE = re.compile(r"Failed to load (?:\S*/)?([^/\s:]+)")


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
