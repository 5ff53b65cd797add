"""The onnxruntime wheels and the providers, judged from probes made up here and from a real
probe child on this machine."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from engine.gpu import VramBudget
from engine.laya.feature_set import FEATURE_COUNT
from engine.laya.model import LayaModelMetadata, export_mlp
from engine.tools.doctor.cuda import LibraryScan, check_cuda_libraries
from engine.tools.doctor.gpu import read_gpu_facts
from engine.tools.doctor.onnx_runtime import (
    CPU_PROVIDER,
    CUDA_PROVIDER,
    OnnxRuntimeProbe,
    ProbeFailed,
    ProviderProbe,
    check_onnxruntime_install,
    check_providers,
    run_onnxruntime_probe,
)
from engine.tools.doctor.report import CheckStatus


def test_two_onnxruntime_wheels_are_a_failure_naming_both() -> None:
    probe = OnnxRuntimeProbe(package="onnxruntime", version="1.32.0")
    result = check_onnxruntime_install(
        {"onnxruntime": "1.32.0", "onnxruntime-gpu": "1.31.1"}, probe
    )
    assert result.status is CheckStatus.FAIL
    assert "onnxruntime 1.32.0, onnxruntime-gpu 1.31.1" in result.detail
    assert "now onnxruntime's" in result.detail
    assert result.fix.startswith("pip uninstall -y onnxruntime onnxruntime-gpu && pip install")


def test_the_cpu_wheel_alone_warns_and_no_wheel_fails() -> None:
    cpu_only = check_onnxruntime_install(
        {"onnxruntime": "1.32.0"}, OnnxRuntimeProbe(package="onnxruntime", version="1.32.0")
    )
    assert cpu_only.status is CheckStatus.WARN
    assert "onnxruntime-gpu" in cpu_only.fix
    assert check_onnxruntime_install({}, None).status is CheckStatus.FAIL


def test_a_module_of_another_version_than_its_wheel_is_a_half_replaced_install() -> None:
    probe = OnnxRuntimeProbe(package="onnxruntime-gpu", version="1.30.0", cuda_version="13.0")
    result = check_onnxruntime_install({"onnxruntime-gpu": "1.31.1"}, probe)
    assert result.status is CheckStatus.FAIL
    assert "half-replaced" in result.detail
    assert result.fix == "pip install --force-reinstall onnxruntime-gpu==1.31.1"


def test_a_module_that_does_not_import_fails_the_install_and_the_providers() -> None:
    probe = OnnxRuntimeProbe(import_error="ImportError: libonnxruntime.so: cannot open")
    install = check_onnxruntime_install({"onnxruntime-gpu": "1.31.1"}, probe)
    assert install.status is CheckStatus.FAIL and "does not import" in install.detail
    assert check_providers(probe, gpu_present=True).status is CheckStatus.FAIL
    assert check_cuda_libraries(probe, LibraryScan({}, ()), None).status is CheckStatus.SKIP


# The ONNX Runtime probe (a real child process)


def write_model(path: Path, feature_set_version: str | None = None) -> Path:
    from engine.laya.feature_set import FEATURE_SET_VERSION

    rng = np.random.default_rng(3)
    layers = [(rng.normal(0, 0.1, (FEATURE_COUNT, 4)), np.zeros(4))]
    metadata = LayaModelMetadata(
        feature_set_version or FEATURE_SET_VERSION,
        FEATURE_COUNT,
        {"horizon_ms": 1000, "sigma_window_ms": 300_000, "emergency_sigma": 3, "lean_sigma": 1},
        (0.0, 0.0, 0.0, 0.0),
        {"purpose": "doctor test"},
    )
    return export_mlp(path, layers, metadata)


async def test_the_probe_runs_laya_on_the_cpu_and_reports_what_cuda_really_does(
    laya_model: Path,
) -> None:
    probe = await run_onnxruntime_probe(laya_model, timeout_s=60)
    assert probe.import_error == ""
    assert probe.version == ort.__version__
    assert probe.available_providers == tuple(ort.get_available_providers())
    assert probe.cpu is not None and probe.cpu.error == ""
    assert probe.cpu.provider == CPU_PROVIDER and probe.cpu.infer_us > 0
    assert probe.cpu.runs_on == "CPU native kernel"  # the words of the start line and status
    if CUDA_PROVIDER not in probe.available_providers:
        assert probe.cuda is None
        return
    assert probe.cuda is not None and probe.cuda.error == ""
    facts = read_gpu_facts(0, VramBudget())
    if not facts.sample.available:
        # No driver: a session that asks for CUDA silently runs on the CPU, and says why.
        assert probe.cuda.provider == CPU_PROVIDER
        assert probe.cuda.fallback_reason.startswith(f"{CUDA_PROVIDER} unavailable")
        assert check_providers(probe, gpu_present=False).status is CheckStatus.OK
        with_gpu = check_providers(probe, gpu_present=True)
        assert with_gpu.status is CheckStatus.WARN
        assert "silently runs on CPU native kernel" in with_gpu.detail


async def test_a_model_of_another_feature_set_fails_the_providers_check(tmp_path: Path) -> None:
    model = write_model(tmp_path / "old.onnx", feature_set_version="laya-fs-0")
    probe = await run_onnxruntime_probe(model, timeout_s=60)
    assert probe.cpu is not None and "laya-fs-0" in probe.cpu.error
    result = check_providers(probe, gpu_present=False)
    assert result.status is CheckStatus.FAIL
    assert "does not run on the CPU" in result.detail and "retrain" in result.fix


async def test_a_missing_model_fails_with_its_path(tmp_path: Path) -> None:
    probe = await run_onnxruntime_probe(tmp_path / "absent.onnx", timeout_s=60)
    result = check_providers(probe, gpu_present=False)
    assert result.status is CheckStatus.FAIL
    assert str(tmp_path / "absent.onnx") in result.detail


async def test_a_probe_past_its_time_is_killed_and_reported(laya_model: Path) -> None:
    with pytest.raises(ProbeFailed, match=r"did not finish within 0\.05 s"):
        await run_onnxruntime_probe(laya_model, timeout_s=0.05)


def test_providers_ok_when_cuda_really_runs() -> None:
    probe = OnnxRuntimeProbe(
        package="onnxruntime-gpu",
        version="1.31.1",
        cuda_version="13.0",
        available_providers=(CUDA_PROVIDER, CPU_PROVIDER),
        cpu=ProviderProbe(CPU_PROVIDER, "CPU native kernel", session_ms=3.0, infer_us=9.5),
        cuda=ProviderProbe(CUDA_PROVIDER, "CUDA", session_ms=900.0, infer_us=41.0),
    )
    result = check_providers(probe, gpu_present=True)
    assert result.status is CheckStatus.OK
    assert result.detail == (
        "available: CUDA, CPU; working: CUDA 41.0 us/infer (session 900 ms), "
        "CPU native kernel 9.5 us/infer (session 3 ms)"
    )


def test_a_cuda_session_that_raises_fails_because_the_default_start_would() -> None:
    probe = OnnxRuntimeProbe(
        available_providers=(CUDA_PROVIDER, CPU_PROVIDER),
        cpu=ProviderProbe(CPU_PROVIDER, "CPU native kernel", infer_us=9.5),
        cuda=ProviderProbe(error="RuntimeError: CUDA failure 999: unknown error"),
    )
    result = check_providers(probe, gpu_present=True)
    assert result.status is CheckStatus.FAIL
    assert "--cpu" in result.fix
