"""scripts/gpu-check on a machine without CUDA: it still runs, and says why CUDA is unavailable."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from support.gpu import needs_no_cuda

from engine.laya.model import LayaModelMetadata, export_mlp

GPU_CHECK = Path(__file__).resolve().parents[2] / "scripts" / "gpu-check"


pytestmark = needs_no_cuda("gpu-check may really use CUDA")


def run_gpu_check(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(GPU_CHECK), "--runs", "200", *arguments],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_report_says_cuda_is_unavailable_and_why():
    result = run_gpu_check()

    assert result.returncode == 0, result.stderr
    assert "| CUDA | NO: CUDAExecutionProvider unavailable: " in result.stdout
    assert "| GPU memory (NVML) | no NVIDIA GPU: " in result.stdout
    assert "infer batch 1 on CPUExecutionProvider (CUDA requested) | p50 " in result.stdout
    assert "== onnxruntime.print_debug_info()" in result.stdout


def test_json_report_for_a_given_model(tmp_path):
    rng = np.random.default_rng(0)
    metadata = LayaModelMetadata(
        feature_set_version="test-fs-1",
        feature_count=12,
        label_parameters={
            "horizon_ms": 500,
            "sigma_window_ms": 60_000,
            "emergency_sigma": 4.0,
            "lean_sigma": 1.0,
        },
        thresholds=(0.0, 0.5, 0.5, 0.5),
        training_summary={},
    )
    model_path = export_mlp(
        tmp_path / "laya.onnx", [(rng.normal(size=(12, 4)), np.zeros(4))], metadata
    )

    result = run_gpu_check("--model", str(model_path), "--json")

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["model"]["path"] == str(model_path)
    assert "model_note" not in report
    assert report["cuda_runs"] is False
    assert report["gpu_session"]["provider"] == "CPUExecutionProvider"
    assert report["gpu_session"]["fallback_reason"].startswith("CUDAExecutionProvider unavailable")
    assert report["gpu_session"]["latency"]["runs"] == 200
    assert report["cpu_session"]["requested_providers"] == ["CPUExecutionProvider"]
    assert report["gpu_session"]["nvml_while_running"]["available"] is False
    assert report["gpu_vs_cpu_max_abs_difference"] == 0.0


def test_a_file_that_is_not_a_laya_model_fails_with_the_reason(tmp_path):
    path = tmp_path / "notes.onnx"
    path.write_text("not a model")

    result = run_gpu_check("--model", str(path))

    assert result.returncode == 1
    assert "not a loadable ONNX model" in result.stderr
