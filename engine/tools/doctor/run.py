"""Every check, all at once, bounded, reported in a fixed order."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from engine.gpu import VramBudget
from engine.tools.doctor.bitget import check_bitget
from engine.tools.doctor.bounded import Outcome, derived, gathered, in_daemon_thread
from engine.tools.doctor.configuration import check_configuration
from engine.tools.doctor.credentials import check_credentials
from engine.tools.doctor.cuda import check_cuda_libraries, scan_cuda_libraries
from engine.tools.doctor.gpu import check_gpu, check_vram_budget, read_gpu_facts
from engine.tools.doctor.kev import check_kev_serve, check_llama_server
from engine.tools.doctor.onnx_runtime import (
    check_onnxruntime_install,
    check_providers,
    installed_onnxruntime_distributions,
    run_onnxruntime_probe,
)
from engine.tools.doctor.packages import check_packages, check_python
from engine.tools.doctor.report import CheckResult, DoctorReport


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


def _identity(result: CheckResult) -> CheckResult:
    return result


_CHECK_MODULES = (
    "aiohttp",
    "engine.bitget.rest",
    "engine.bitget.credentials",
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

    def threaded(function: Callable[[], object]) -> Awaitable[Outcome]:
        return gathered(in_daemon_thread(function), config.check_timeout_s)

    # The probe is a process of its own: it starts first and runs through the imports.
    probe_task = asyncio.ensure_future(
        gathered(
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
        gathered(
            check_llama_server(config.kev_url, config.kev_timeout_s), config.kev_timeout_s + 5
        ),
        threaded(check_kev_serve),
        gathered(
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
        derived("python", _identity, (python,)),
        derived("packages", _identity, (packages,)),
        # The wheels are judged even without a probe (the providers check says why it failed).
        derived("onnxruntime", check_onnxruntime_install, (distributions, Outcome(probe.value))),
        derived("providers", check_providers, (probe,), gpu_present),
        derived(
            "cuda-libraries",
            check_cuda_libraries,
            (probe, scan, Outcome(gpu.value if gpu_present else None)),
        ),
        derived("gpu", check_gpu, (gpu,)),
        derived("vram-budget", check_vram_budget, (gpu,), config.budget),
        derived("llama-server", _identity, (llama,)),
        derived("kev-serve", _identity, (kev_serve,)),
        derived("bitget", _identity, (bitget,)),
        derived("credentials", _identity, (credentials,)),
        derived("configuration", _identity, (configuration,)),
    )
    return DoctorReport(results, time.perf_counter() - started)


def run_doctor(config: DoctorConfig | None = None) -> DoctorReport:
    """`run_checks` on a fresh event loop, for the command line."""
    return asyncio.run(run_checks(config))
