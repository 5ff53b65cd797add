"""The GPU through NVML, and the VRAM budget against it."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from engine.gpu import GIB, GpuMonitor, GpuMonitorConfig, GpuSample, VramBudget
from engine.tools.doctor.report import CheckResult, CheckStatus

MINIMUM_DRIVER = {12: "525.60", 13: "580.65"}
"""The oldest Linux driver each CUDA major runs on (NVIDIA's CUDA toolkit release notes)."""


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
