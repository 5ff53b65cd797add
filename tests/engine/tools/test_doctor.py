"""The doctor's checks on this machine (no GPU, no network), against loopback servers for what
this machine lacks (llama-server, Bitget's time endpoint), real credentials files, and a fake
`pynvml` only where a GPU would be needed."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import types
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np
import onnxruntime as ort
import pytest
from aiohttp import web

from engine.gpu import GIB, GpuSample, VramBudget
from engine.kev.client import KevClientConfig
from engine.kev.server import free_port
from engine.laya.features import FEATURE_COUNT
from engine.laya.model import LayaModelMetadata, export_mlp
from engine.sim.server import SimExchange, SimExchangeConfig
from engine.tools.doctor import (
    CPU_PROVIDER,
    CUDA_PROVIDER,
    CheckResult,
    CheckStatus,
    DoctorConfig,
    DoctorReport,
    GpuFacts,
    LibraryScan,
    OnnxRuntimeProbe,
    ProbeFailed,
    ProviderProbe,
    _gathered,
    _in_daemon_thread,
    check_bitget,
    check_configuration,
    check_credentials,
    check_cuda_libraries,
    check_gpu,
    check_kev_serve,
    check_llama_server,
    check_onnxruntime_install,
    check_packages,
    check_providers,
    check_python,
    check_vram_budget,
    read_gpu_facts,
    run_checks,
    run_onnxruntime_probe,
    scan_cuda_libraries,
)

CHECK_NAMES = [
    "python",
    "packages",
    "onnxruntime",
    "providers",
    "cuda-libraries",
    "gpu",
    "vram-budget",
    "llama-server",
    "kev-serve",
    "bitget",
    "credentials",
    "configuration",
]
API_KEY = "bg_doctor0123456789abcd"
API_SECRET = "DoctorSecretNeverPrinted42"
PASSPHRASE = "DoctorPassphraseNeverPrinted"


# Loopback servers


class Loopback:
    """An aiohttp app on 127.0.0.1 and a free port, for the length of a test."""

    def __init__(self, app: web.Application) -> None:
        self.runner = web.AppRunner(app)
        self.url = ""

    async def start(self) -> None:
        await self.runner.setup()
        port = free_port()
        await web.TCPSite(self.runner, "127.0.0.1", port).start()
        self.url = f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        await self.runner.cleanup()


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def serve(routes: dict[str, Handler]) -> Loopback:
    app = web.Application()
    for path, handler in routes.items():
        app.router.add_get(path, handler)
    server = Loopback(app)
    await server.start()
    return server


def llama_routes(health: int = 200, props: dict | None = None) -> dict[str, Handler]:
    """llama-server's /health and /props as it answers them (503 while loading)."""

    async def health_handler(request: web.Request) -> web.StreamResponse:
        if health == 503:
            body = {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}
            return web.json_response(body, status=503)
        return web.json_response({"status": "ok"}, status=health)

    async def props_handler(request: web.Request) -> web.StreamResponse:
        if health != 200:
            return web.json_response({"error": {"code": health}}, status=health)
        return web.json_response(props or {})

    return {"/health": health_handler, "/props": props_handler}


LOADED_PROPS = {
    "default_generation_settings": {"n_ctx": 4096},
    "total_slots": 1,
    "model_path": "/models/qwen2.5-coder-7b-instruct-q4_k_m.gguf",
    "build_info": "b6500-abc123",
}


def time_routes(offset_ms: int = 0, body: str | None = None, status: int = 200):
    """Bitget's GET /api/v2/public/time, its clock `offset_ms` off the real one."""

    async def handler(request: web.Request) -> web.StreamResponse:
        if body is not None:
            return web.Response(text=body, status=status, content_type="text/html")
        now_ms = time.time_ns() // 1_000_000 + offset_ms
        document = {
            "code": "00000",
            "msg": "success",
            "requestTime": now_ms,
            "data": {"serverTime": str(now_ms)},
        }
        return web.json_response(document, status=status)

    return {"/api/v2/public/time": handler}


@pytest.fixture
async def llama() -> AsyncIterator[Loopback]:
    server = await serve(llama_routes(props=LOADED_PROPS))
    yield server
    await server.stop()


@pytest.fixture
async def bitget_time() -> AsyncIterator[Loopback]:
    server = await serve(time_routes())
    yield server
    await server.stop()


# Results and the report


def test_a_warning_without_a_fix_is_refused() -> None:
    with pytest.raises(ValueError, match="needs a fix"):
        CheckResult("gpu", CheckStatus.WARN, "no GPU")
    with pytest.raises(ValueError, match="one line"):
        CheckResult("gpu", CheckStatus.FAIL, "broken", "first\nsecond")
    assert CheckResult("gpu", "skip", "no GPU").status is CheckStatus.SKIP


def test_the_table_puts_each_fix_under_its_check_and_counts_statuses() -> None:
    report = DoctorReport(
        (
            CheckResult("python", CheckStatus.OK, "CPython 3.11.7"),
            CheckResult("credentials", CheckStatus.FAIL, "mode 0644", "chmod 600 FILE"),
            CheckResult("gpu", CheckStatus.WARN, "NVML not available", "install the driver"),
            CheckResult("vram-budget", CheckStatus.SKIP, "no GPU"),
        ),
        1.25,
    )
    lines = report.format_table(80).splitlines()
    assert lines[0].split() == ["ok", "python", "CPython", "3.11.7"]
    assert lines[1].split()[:2] == ["FAIL", "credentials"]
    assert lines[2].strip() == "fix: chmod 600 FILE"
    assert lines[2].index("fix") == lines[0].index("CPython")
    assert lines[-1] == "4 checks in 1.2 s: 1 ok, 1 warn, 1 failed, 1 skipped"
    assert report.failed
    document = json.loads(report.to_json())
    assert document["ok"] is False
    assert document["counts"] == {"ok": 1, "warn": 1, "fail": 1, "skip": 1}
    assert document["checks"][1] == {
        "name": "credentials",
        "status": "fail",
        "detail": "mode 0644",
        "fix": "chmod 600 FILE",
    }


def test_a_long_detail_wraps_under_its_own_column() -> None:
    detail = " ".join(f"word{n}" for n in range(40))
    report = DoctorReport((CheckResult("configuration", CheckStatus.OK, detail),), 0.1)
    lines = report.format_table(60).splitlines()[:-1]
    assert len(lines) > 3 and all(len(line) <= 60 for line in lines)
    column = lines[0].index("word0")
    assert all(line[:column].strip() == "" for line in lines[1:])


# Python, packages, onnxruntime wheels


def test_python_and_packages_are_ok_on_this_installation() -> None:
    python = check_python()
    assert python.status is CheckStatus.OK
    assert ".".join(map(str, sys.version_info[:3])) in python.detail
    packages = check_packages()
    assert packages.status is CheckStatus.OK, packages.detail
    assert f"numpy {np.__version__}" in packages.detail
    assert "onnxruntime" not in packages.detail  # the onnxruntime check's business


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
    from engine.laya.features import FEATURE_SET_VERSION

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
        assert "silently runs on CPUExecutionProvider" in with_gpu.detail


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
        cpu=ProviderProbe(CPU_PROVIDER, session_ms=3.0, infer_us=9.5),
        cuda=ProviderProbe(CUDA_PROVIDER, session_ms=900.0, infer_us=41.0),
    )
    result = check_providers(probe, gpu_present=True)
    assert result.status is CheckStatus.OK
    assert result.detail == (
        "available: CUDA, CPU; working: CUDA 41.0 us/infer (session 900 ms), "
        "CPU 9.5 us/infer (session 3 ms)"
    )


def test_a_cuda_session_that_raises_fails_because_the_default_start_would() -> None:
    probe = OnnxRuntimeProbe(
        available_providers=(CUDA_PROVIDER, CPU_PROVIDER),
        cpu=ProviderProbe(CPU_PROVIDER, infer_us=9.5),
        cuda=ProviderProbe(error="RuntimeError: CUDA failure 999: unknown error"),
    )
    result = check_providers(probe, gpu_present=True)
    assert result.status is CheckStatus.FAIL
    assert "--cpu" in result.fix


# CUDA libraries


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


# GPU and VRAM


def test_without_a_gpu_nvml_is_not_available_and_says_why() -> None:
    facts = read_gpu_facts(0, VramBudget())
    if facts.sample.available:
        pytest.skip("this machine has a GPU")
    result = check_gpu(facts)
    assert result.status is CheckStatus.WARN
    assert result.detail.startswith("NVML not available: ")
    assert len(result.detail) > len("NVML not available: ")
    assert "driver" in result.fix or "nvidia-ml-py" in result.fix
    assert check_vram_budget(facts, VramBudget()).status is CheckStatus.SKIP


class Memory(NamedTuple):
    total: int
    free: int
    used: int


class FakeNvml(types.ModuleType):
    """The pynvml calls the doctor makes, for one card: no GPU exists on this machine."""

    def __init__(self, total_gib: float, free_gib: float) -> None:
        super().__init__("pynvml")
        self.total = int(total_gib * GIB)
        self.free = int(free_gib * GIB)

    def nvmlInit(self) -> None:
        pass

    def nvmlShutdown(self) -> None:
        pass

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        return f"device-{index}"

    def nvmlDeviceGetName(self, handle: str) -> bytes:
        return b"NVIDIA GeForce RTX 3060"

    def nvmlDeviceGetMemoryInfo(self, handle: str) -> Memory:
        return Memory(self.total, self.free, self.total - self.free)

    def nvmlDeviceGetComputeRunningProcesses(self, handle: str) -> list:
        return []

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle: str) -> list:
        return []

    def nvmlSystemGetDriverVersion(self) -> bytes:
        return b"580.82.07"

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        return 13000


def test_the_reference_card_holds_the_default_budget(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(total_gib=12, free_gib=11.5))
    facts = read_gpu_facts(0, VramBudget())
    gpu = check_gpu(facts)
    assert gpu.status is CheckStatus.OK
    assert gpu.detail == (
        "NVIDIA GeForce RTX 3060: 12.0 GiB, 11.5 GiB free; driver 580.82.07 (CUDA 13.0)"
    )
    budget = check_vram_budget(facts, VramBudget())
    assert budget.status is CheckStatus.OK
    assert "12.0 GiB (Kev 4.4 + Laya cap 2.0 + headroom 5.6) fits 12.0 GiB" in budget.detail


def test_a_smaller_card_or_a_full_one_warns(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(total_gib=8, free_gib=7.5))
    small = check_vram_budget(read_gpu_facts(0, VramBudget()), VramBudget())
    assert small.status is CheckStatus.WARN and "does not fit" in small.detail
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(total_gib=24, free_gib=3))
    full = check_vram_budget(read_gpu_facts(0, VramBudget()), VramBudget())
    assert full.status is CheckStatus.WARN
    assert "only 3.0 GiB is free now" in full.detail and "nvidia-smi" in full.fix


# llama-server


async def test_a_serving_llama_server_reports_its_model_context_and_slots(llama) -> None:
    result = await check_llama_server(llama.url, timeout_s=1.0)
    assert result.status is CheckStatus.OK
    assert result.detail.startswith(
        f"{llama.url}: model qwen2.5-coder-7b-instruct-q4_k_m.gguf loaded, context 4096, 1 slot"
    )
    assert "build b6500-abc123" in result.detail


async def test_a_loading_llama_server_warns() -> None:
    server = await serve(llama_routes(health=503))
    try:
        result = await check_llama_server(server.url, timeout_s=1.0)
    finally:
        await server.stop()
    assert result.status is CheckStatus.WARN
    assert "still loading its model (503)" in result.detail


async def test_a_healthy_server_without_a_model_warns() -> None:
    server = await serve(llama_routes(props={"total_slots": 1}))
    try:
        result = await check_llama_server(server.url, timeout_s=1.0)
    finally:
        await server.stop()
    assert result.status is CheckStatus.WARN and "names no loaded model" in result.detail


async def test_no_llama_server_means_kev_is_offline() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = await check_llama_server(url, timeout_s=1.0)
    assert result.status is CheckStatus.WARN
    assert result.detail.startswith(f"nothing answers at {url}")
    assert "kev serve" in result.fix
    assert KevClientConfig().base_url in (await check_llama_server(None, 0.5)).detail


def test_kev_serve_names_its_binary_and_model_or_how_to_get_them() -> None:
    result = check_kev_serve()
    assert ("binary " in result.detail) or ("llama-server not found" in result.detail)
    assert "model" in result.detail
    if result.status is CheckStatus.WARN:
        assert "kev-local" in result.fix or "fetch-tiny-model" in result.fix


# Bitget and the clock


async def test_the_simulator_answers_bitgets_time_with_no_skew() -> None:
    sim = SimExchange(SimExchangeConfig())
    await sim.start()
    try:
        result = await check_bitget(sim.rest_url, 2.0, 1_000)
    finally:
        await sim.stop()
    assert result.status is CheckStatus.OK, result.detail
    assert result.detail.startswith("reachable (")


async def test_a_clock_beyond_the_signing_window_fails(bitget_time) -> None:
    def clock_45_s_behind() -> int:
        return time.time_ns() - 45 * 1_000_000_000

    result = await check_bitget(bitget_time.url, 2.0, 1_000, clock_45_s_behind)
    assert result.status is CheckStatus.FAIL
    assert "the local clock is 45.0 s behind Bitget's" in result.detail
    assert "refused (40008)" in result.detail
    assert "timedatectl set-ntp true" in result.fix


async def test_a_server_clock_a_few_seconds_ahead_warns() -> None:
    server = await serve(time_routes(offset_ms=5_000))
    try:
        result = await check_bitget(server.url, 2.0, 1_000)
    finally:
        await server.stop()
    assert result.status is CheckStatus.WARN
    assert "5.0 s behind Bitget's" in result.detail and "signing works" in result.detail


async def test_a_refusal_page_is_not_taken_for_the_time() -> None:
    server = await serve(time_routes(body="<html>Access denied</html>", status=403))
    try:
        result = await check_bitget(server.url, 2.0, 1_000)
    finally:
        await server.stop()
    assert result.status is CheckStatus.WARN
    assert "answered HTTP 403 but not with Bitget's time" in result.detail
    assert "Access denied" in result.detail and "country or IP" in result.fix


async def test_no_route_and_no_name_are_network_warnings() -> None:
    refused = await check_bitget(f"http://127.0.0.1:{free_port()}", 2.0, 1_000)
    assert refused.status is CheckStatus.WARN and "cannot connect" in refused.detail
    unresolved = await check_bitget("http://doctor-check.invalid", 2.0, 1_000)
    assert unresolved.status is CheckStatus.WARN
    assert unresolved.detail.startswith("no network: cannot resolve doctor-check.invalid")
    assert "sim and replays work offline" in unresolved.fix


# Credentials


def write_credentials(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


DEMO_TABLE = f'[demo]\napi_key = "{API_KEY}"\napi_secret = "{API_SECRET}"\n'
DEMO_TABLE += f'passphrase = "{PASSPHRASE}"\n'


def assert_no_secret(result: CheckResult) -> None:
    for secret in (API_SECRET, PASSPHRASE, API_KEY):
        assert secret not in result.detail and secret not in result.fix


def test_no_credentials_warns_and_says_where_they_go(tmp_path: Path) -> None:
    result = check_credentials(tmp_path / "credentials.toml", {})
    assert result.status is CheckStatus.WARN
    assert "sim and paper need none" in result.detail
    assert "chmod 600" in result.fix and str(tmp_path / "credentials.toml") in result.fix


def test_a_credentials_file_others_can_read_fails_with_the_chmod(tmp_path: Path) -> None:
    path = write_credentials(tmp_path / "credentials.toml", DEMO_TABLE, 0o644)
    result = check_credentials(path, {})
    assert result.status is CheckStatus.FAIL
    assert "mode 0644" in result.detail
    assert result.fix == f"chmod 600 {path.resolve()}"
    assert_no_secret(result)


def test_a_private_file_with_demo_keys_is_ok_and_shows_the_key_masked(tmp_path: Path) -> None:
    path = write_credentials(tmp_path / "credentials.toml", DEMO_TABLE)
    result = check_credentials(path, {})
    assert result.status is CheckStatus.OK
    assert result.detail == f"{path} (mode 0600): demo key bg_…abcd, no [live] table"
    assert_no_secret(result)


def test_a_broken_live_table_beside_good_demo_keys_fails(tmp_path: Path) -> None:
    text = DEMO_TABLE + f'[live]\napi_key = "{API_KEY}"\napi_secret = "{API_SECRET}"\n'
    path = write_credentials(tmp_path / "credentials.toml", text)
    result = check_credentials(path, {})
    assert result.status is CheckStatus.FAIL
    assert "demo key bg_…abcd" in result.detail and "missing passphrase" in result.detail
    assert_no_secret(result)


def test_a_file_with_no_usable_table_fails(tmp_path: Path) -> None:
    path = write_credentials(tmp_path / "credentials.toml", f'[paper]\nkey = "{API_SECRET}"\n')
    result = check_credentials(path, {})
    assert result.status is CheckStatus.FAIL
    assert "serves neither demo nor live" in result.detail
    assert_no_secret(result)


def test_credentials_in_the_environment_win_and_a_partial_set_fails(tmp_path: Path) -> None:
    path = write_credentials(tmp_path / "credentials.toml", DEMO_TABLE)
    environ = {
        "BITGET_API_KEY": API_KEY,
        "BITGET_API_SECRET": API_SECRET,
        "BITGET_API_PASSPHRASE": PASSPHRASE,
    }
    result = check_credentials(path, environ)
    assert result.status is CheckStatus.OK
    assert "from the environment (key bg_…abcd)" in result.detail
    assert f"{path} is ignored while they are set" in result.detail
    assert_no_secret(result)
    partial = check_credentials(path, {"BITGET_API_KEY": API_KEY})
    assert partial.status is CheckStatus.FAIL and "BITGET_API_SECRET" in partial.detail
    assert_no_secret(partial)


# Configuration


def test_without_a_file_the_defaults_validate(tmp_path) -> None:
    result = check_configuration(environ={"HFT_CONSOLE_CONFIG": str(tmp_path / "none.toml")})
    assert result.status is CheckStatus.FAIL  # a file named explicitly must exist
    result = check_configuration(environ={"XDG_CONFIG_HOME": str(tmp_path)})
    assert result.status is CheckStatus.OK, result.detail
    assert "defaults (no file at" in result.detail and "trading" in result.detail


def test_the_configuration_file_is_read_and_a_bad_key_named(tmp_path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[risk]\nmax_net_delta_usdt = 2000.0\n")
    environ = {"HFT_CONSOLE_CONFIG": str(config)}
    result = check_configuration(environ=environ)
    assert result.status is CheckStatus.OK, result.detail
    assert str(config) in result.detail
    config.write_text("[risk]\nmax_net_delta = 5000.0\n")
    result = check_configuration(environ=environ)
    assert result.status is CheckStatus.FAIL
    assert "max_net_delta" in result.detail and str(config) in result.fix


def test_an_invalid_configuration_fails_naming_it() -> None:
    result = check_configuration(
        [("Kev client", lambda: KevClientConfig(max_tokens=0)), ("fine", dict)]
    )
    assert result.status is CheckStatus.FAIL
    assert result.detail.startswith("invalid: Kev client: KevClientConfig.max_tokens")


# Running everything


async def test_a_check_that_hangs_is_reported_and_left_behind() -> None:
    release = threading.Event()
    started = time.perf_counter()
    outcome = await _gathered(_in_daemon_thread(lambda: release.wait(30)), 0.2)
    assert time.perf_counter() - started < 5
    assert outcome.error == "no answer within 0.2 s"
    release.set()


async def test_a_whole_run_reports_every_check_in_order(
    laya_model: Path, llama: Loopback, bitget_time: Loopback, tmp_path: Path
) -> None:
    credentials = write_credentials(tmp_path / "credentials.toml", DEMO_TABLE)
    report = await run_checks(
        DoctorConfig(
            laya_model_path=laya_model,
            kev_url=llama.url,
            bitget_rest_url=bitget_time.url,
            credentials_path=credentials,
            environ={},
            probe_timeout_s=60,
        )
    )
    assert [result.name for result in report.results] == CHECK_NAMES
    statuses = {result.name: result.status for result in report.results}
    for name in ("python", "providers", "llama-server", "bitget", "credentials"):
        assert statuses[name] is CheckStatus.OK, report.format_table()
    assert not report.failed, report.format_table()
