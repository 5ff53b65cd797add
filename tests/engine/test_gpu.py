"""GpuMonitor against a fake `pynvml` module: there is no GPU on the development machine, and
this is the one place the suite fakes a library. One test runs the real nvidia-ml-py."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from collections.abc import Iterator
from typing import NamedTuple

import pytest
from support.waiting import eventually_blocking

from engine.gpu import GIB, GpuMonitor, GpuMonitorConfig, VramBudget, read_pid_file

MIB = 1 << 20
INVISIBLE_PID = (1 << 22) + 4321
"""Above Linux's largest pid_max (2**22): no process here can have it."""


class NVMLError(Exception):
    pass


class NVMLError_LibraryNotFound(NVMLError):
    def __str__(self) -> str:
        return "NVML Shared Library Not Found"


class NVMLError_NotSupported(NVMLError):
    def __str__(self) -> str:
        return "Not Supported"


class NVMLError_GpuIsLost(NVMLError):
    def __str__(self) -> str:
        return "GPU is lost"


class Memory(NamedTuple):
    total: int
    free: int
    used: int


class Process(NamedTuple):
    pid: int
    usedGpuMemory: int | None


class FakeNvml(types.ModuleType):
    """The part of pynvml the monitor calls, scripted per test."""

    def __init__(self) -> None:
        super().__init__("pynvml")
        self.init_error: Exception | None = None
        self.memory_error: Exception | None = None
        self.compute_error: Exception | None = None
        self.total = 12 * GIB
        self.free = 6 * GIB
        self.compute: list[Process] = []
        self.graphics: list[Process] = []
        self.calls: list[str] = []

    def nvmlInit(self) -> None:
        self.calls.append("init")
        if self.init_error is not None:
            raise self.init_error

    def nvmlShutdown(self) -> None:
        self.calls.append("shutdown")

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        self.calls.append(f"handle {index}")
        return f"device-{index}"

    def nvmlDeviceGetName(self, handle: str) -> bytes:
        return b"NVIDIA GeForce RTX 3060"

    def nvmlDeviceGetMemoryInfo(self, handle: str) -> Memory:
        if self.memory_error is not None:
            raise self.memory_error
        return Memory(self.total, self.free, self.total - self.free)

    def nvmlDeviceGetComputeRunningProcesses(self, handle: str) -> list[Process]:
        if self.compute_error is not None:
            raise self.compute_error
        return list(self.compute)

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle: str) -> list[Process]:
        return list(self.graphics)


@pytest.fixture
def nvml(monkeypatch) -> FakeNvml:
    fake = FakeNvml()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    return fake


@pytest.fixture
def kev_pid() -> Iterator[int]:
    """A real process other than ours, standing for Kev: not our parent, which is pid 1 (the
    "other" process of these tests) when the suite's launcher has exited."""
    kev = subprocess.Popen(["sleep", "600"])
    yield kev.pid
    kev.kill()
    kev.wait()


@pytest.fixture
def kev_pid_file(tmp_path, kev_pid) -> str:
    """Kev's pid file, naming `kev_pid`."""
    path = tmp_path / "llama-server.pid"
    path.write_text(f"{kev_pid}\n")
    return str(path)


def monitor(kev_pid_file: str | None = None, **budget: int) -> GpuMonitor:
    return GpuMonitor(GpuMonitorConfig(kev_pid_file=kev_pid_file, budget=VramBudget(**budget)))


def test_per_process_split_of_laya_kev_and_other(nvml, kev_pid, kev_pid_file):
    nvml.compute = [
        Process(os.getpid(), 900 * MIB),
        Process(kev_pid, 4400 * MIB),
        Process(1, 300 * MIB),
    ]
    sample = monitor(kev_pid_file).sample()
    assert sample.available and sample.per_process
    assert sample.device_name == "NVIDIA GeForce RTX 3060"
    assert (sample.total_bytes, sample.free_bytes, sample.used_bytes) == (
        12 * GIB,
        6 * GIB,
        6 * GIB,
    )
    assert sample.laya_bytes == 900 * MIB
    assert sample.kev_bytes == 4400 * MIB
    assert sample.other_bytes == 6 * GIB - 900 * MIB - 4400 * MIB
    assert sample.laya_bytes + sample.kev_bytes + sample.other_bytes == sample.used_bytes
    assert sample.kev_pid == kev_pid and sample.kev_note == ""
    assert [process.pid for process in sample.processes] == sorted([1, os.getpid(), kev_pid])


def test_a_process_with_compute_and_graphics_contexts_is_counted_once(nvml, kev_pid, kev_pid_file):
    nvml.compute = [Process(os.getpid(), 500 * MIB)]
    nvml.graphics = [Process(os.getpid(), 500 * MIB), Process(kev_pid, 100 * MIB)]
    sample = monitor(kev_pid_file).sample()
    assert sample.laya_bytes == 500 * MIB
    assert sample.kev_bytes == 100 * MIB
    assert len(sample.processes) == 2


def test_laya_on_the_cpu_and_no_kev_count_as_zero(nvml):
    nvml.compute = [Process(1, 2 * GIB)]
    sample = monitor().sample()
    assert sample.per_process
    assert (sample.laya_bytes, sample.kev_bytes, sample.other_bytes) == (0, 0, 6 * GIB)
    assert sample.kev_pid is None and "no pid file configured" in sample.kev_note


def test_headroom_below_the_free_floor_is_flagged(nvml):
    nvml.free = 5 * GIB
    assert monitor(free_floor_bytes=int(5.6 * GIB)).sample().headroom_low
    nvml.free = 6 * GIB
    assert not monitor(free_floor_bytes=int(5.6 * GIB)).sample().headroom_low


def test_no_library_is_not_available_with_the_reason_and_not_retried(nvml):
    nvml.init_error = NVMLError_LibraryNotFound()
    gpu = monitor()
    first = gpu.sample()
    second = gpu.sample()
    assert not first.available
    assert first.reason == "NVMLError_LibraryNotFound: NVML Shared Library Not Found"
    assert second.reason == first.reason
    assert nvml.calls.count("init") == 1


def test_a_transient_error_is_reported_then_sampling_recovers(nvml):
    gpu = monitor()
    nvml.memory_error = NVMLError_GpuIsLost()
    lost = gpu.sample()
    assert not lost.available and "GPU is lost" in lost.reason
    nvml.memory_error = None
    assert gpu.sample().available
    # The lost device's handle was dropped and fetched again.
    assert nvml.calls.count("handle 0") == 2


def test_missing_per_process_memory_falls_back_to_device_totals(nvml, kev_pid, kev_pid_file):
    nvml.compute = [Process(os.getpid(), None), Process(kev_pid, None)]
    sample = monitor(kev_pid_file).sample()
    assert sample.available and not sample.per_process
    assert "WDDM/WSL or MIG" in sample.per_process_note
    assert sample.laya_bytes is None and sample.kev_bytes is None and sample.other_bytes is None
    assert sample.used_bytes == 6 * GIB


def test_host_pids_invisible_here_fall_back_to_device_totals(nvml):
    nvml.compute = [Process(INVISIBLE_PID, GIB), Process(INVISIBLE_PID + 1, GIB)]
    sample = monitor().sample()
    assert not sample.per_process
    assert "--pid=host" in sample.per_process_note


def test_process_listing_not_supported_falls_back_to_device_totals(nvml):
    nvml.compute_error = NVMLError_NotSupported()
    sample = monitor().sample()
    assert sample.available and not sample.per_process
    assert "Not Supported" in sample.per_process_note


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "no Kev pid file"),
        ("", "does not hold a pid"),
        ("llama\n", "does not hold a pid"),
        ("-5", "does not hold a pid"),
    ],
)
def test_a_bad_kev_pid_file_is_explained(tmp_path, content, expected):
    path = tmp_path / "kev.pid"
    if content is not None:
        path.write_text(content)
    pid, note = read_pid_file(str(path))
    assert pid is None and expected in note


def test_a_stale_kev_pid_is_explained(nvml, tmp_path):
    path = tmp_path / "kev.pid"
    path.write_text(str(INVISIBLE_PID))
    sample = monitor(str(path)).sample()
    assert sample.kev_pid == INVISIBLE_PID and "is not running" in sample.kev_note
    assert sample.kev_bytes == 0


def test_the_thread_publishes_samples_and_stop_shuts_nvml_down(nvml):
    gpu = GpuMonitor(GpuMonitorConfig(interval_s=0.5))
    assert gpu.latest().reason == "not sampled yet"
    gpu.start()
    try:
        eventually_blocking(lambda: gpu.latest().available, 5, "a sample", interval_s=0.01)
        assert gpu.latest().available
    finally:
        gpu.stop()
    assert nvml.calls[-1] == "shutdown"
    with pytest.raises(RuntimeError, match="already started"):
        gpu.start()
        gpu.start()
    gpu.stop()


def test_the_real_nvidia_ml_py_never_raises():
    sample = GpuMonitor(GpuMonitorConfig()).sample()
    assert sample.available or sample.reason


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"interval_s": 0.1}, "interval_s"),
        ({"device_index": -1}, "device_index"),
        ({"laya_pid": 0}, "laya_pid"),
    ],
)
def test_config_is_validated(kwargs, message):
    with pytest.raises(ValueError, match=message):
        GpuMonitorConfig(**kwargs)


def test_budget_is_validated():
    with pytest.raises(ValueError, match="free_floor_bytes"):
        VramBudget(free_floor_bytes=-1)
