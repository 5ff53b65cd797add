"""The CUDA libraries check, against scans and GPUs made up here, and a real scan."""

from __future__ import annotations

import os
from pathlib import Path

from engine.gpu import GIB, GpuSample, VramBudget
from engine.tools.doctor.cuda import LibraryScan, check_cuda_libraries, scan_cuda_libraries
from engine.tools.doctor.gpu import GpuFacts
from engine.tools.doctor.onnx_runtime import (
    OnnxRuntimeProbe,
)
from engine.tools.doctor.report import CheckStatus


def cuda_probe(**loaded: str) -> OnnxRuntimeProbe:
    return OnnxRuntimeProbe(
        package="onnxruntime-gpu",
        version="1.31.1",
        cuda_version="13.0",
        preload_messages=(
            "Failed to load libcublasLt.so.13: libcublasLt.so.13: cannot open shared object file",
        ),
        loaded_libraries=loaded,
    )


def gpu_facts(cuda_driver_version: int = 13000, total_gib: float = 12, free_gib: float = 11):
    sample = GpuSample(
        True,
        "",
        device_name="NVIDIA GeForce RTX 3060",
        total_bytes=int(total_gib * GIB),
        used_bytes=int((total_gib - free_gib) * GIB),
        free_bytes=int(free_gib * GIB),
        headroom_low=free_gib * GIB < VramBudget().free_floor_bytes,
    )
    return GpuFacts(sample, "580.82.07", cuda_driver_version)


def test_cuda_12_libraries_and_driver_under_an_onnxruntime_built_for_13_say_both_ways_out() -> None:
    scan = LibraryScan(
        {
            "libcudart.so.12": ("/usr/local/cuda-12.4/lib64/libcudart.so.12", "ldconfig"),
            "libcublas.so.12": ("/usr/local/cuda-12.4/lib64/libcublas.so.12", "ldconfig"),
        },
        ("nvidia-cudnn-cu12 9.1.0",),
    )
    result = check_cuda_libraries(cuda_probe(), scan, gpu_facts(cuda_driver_version=12040))
    assert result.status is CheckStatus.WARN
    assert "needs CUDA 13 and cuDNN 9" in result.detail
    assert "preload_dlls() could not load libcublasLt.so.13" in result.detail
    assert "missing libcudart.so.13, libcublas.so.13, libcublasLt.so.13" in result.detail
    assert "CUDA 12 libraries present" in result.detail
    assert "runs CUDA up to 12.4" in result.detail
    assert ">= 580.65 for CUDA 13" in result.fix
    assert "onnxruntime-gpu>=1.19,<1.27" in result.fix


def test_every_cuda_library_found_with_a_new_enough_driver_is_ok() -> None:
    base = "/venv/lib/python3.11/site-packages/nvidia"
    found = {
        name: (f"{base}/cu13/lib/{name}", "nvidia wheel")
        for name in ("libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13", "libcurand.so.10")
    }
    found["libcudnn.so.9"] = (f"{base}/cudnn/lib/libcudnn.so.9", "nvidia wheel")
    probe = cuda_probe(**{"libcublasLt.so.13": f"{base}/cu13/lib/libcublasLt.so.13"})
    result = check_cuda_libraries(probe, LibraryScan(found, ()), gpu_facts())
    assert result.status is CheckStatus.OK, result.detail
    assert f"libcublasLt.so.13 loaded from {base}/cu13/lib" in result.detail


def test_without_a_gpu_the_library_check_is_skipped_but_still_says_what_is_missing() -> None:
    result = check_cuda_libraries(cuda_probe(), LibraryScan({}, ()), None)
    assert result.status is CheckStatus.SKIP
    assert "missing libcudart.so.13" in result.detail and "no GPU" in result.detail
    assert result.fix.startswith("pip install 'onnxruntime-gpu[cuda,cudnn]'")


def test_the_scan_finds_libraries_on_ld_library_path(tmp_path: Path) -> None:
    for name in ("libcublas.so.13", "libcublas.so.13.1.0.3", "libcudnn.so.9", "libfoo.so.1"):
        (tmp_path / name).write_bytes(b"")
    scan = scan_cuda_libraries({"LD_LIBRARY_PATH": f"/nonexistent{os.pathsep}{tmp_path}"})
    assert scan.found["libcublas.so.13"] == (str(tmp_path / "libcublas.so.13"), "LD_LIBRARY_PATH")
    assert scan.found["libcudnn.so.9"][1] == "LD_LIBRARY_PATH"
    assert "libcublas.so.13.1.0.3" not in scan.found and "libfoo.so.1" not in scan.found
