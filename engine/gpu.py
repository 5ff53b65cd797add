"""GPU memory for the console: the device, Laya (this process), Kev (llama-server) and the rest.

`GpuMonitor` samples NVML (nvidia-ml-py, imported as `pynvml` on first use) once a second on
its own daemon thread, never on the engine loop, and keeps the latest frozen `GpuSample`.
Nothing here raises: no library, no driver or no device make a sample that is not available
and says why; a process list NVML cannot give (containers without the host PID namespace,
WSL's WDDM driver, MIG) makes a device-level sample that says so.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from engine.validation import require_integer

GIB = 1 << 30

_PERMANENT_ERRORS = (
    "NVMLError_LibraryNotFound",
    "NVMLError_DriverNotLoaded",
    "NVMLError_LibRmVersionMismatch",
    "NVMLError_NoPermission",
)
"""NVML errors that retrying every second cannot cure: the monitor stays unavailable."""


@dataclass(frozen=True, slots=True)
class VramBudget:
    """What each user of the GPU may take and the headroom kept free. The defaults are the
    reference RTX 3060 12 GB setup: Kev ~4.4 GiB, Laya capped at 2 GiB (its `gpu_mem_limit`),
    ~5.6 GiB free."""

    kev_bytes: int = int(4.4 * GIB)
    laya_bytes: int = 2 * GIB
    free_floor_bytes: int = int(5.6 * GIB)

    def __post_init__(self) -> None:
        for name in ("kev_bytes", "laya_bytes", "free_floor_bytes"):
            require_integer("VramBudget", name, getattr(self, name), 0)


@dataclass(frozen=True, slots=True)
class GpuMonitorConfig:
    """`kev_pid_file` holds llama-server's PID (re-read every sample: the server may restart);
    None when Kev does not run on this machine. `laya_pid` defaults to this process."""

    device_index: int = 0
    interval_s: float = 1.0
    kev_pid_file: str | None = None
    laya_pid: int = field(default_factory=os.getpid)
    budget: VramBudget = field(default_factory=VramBudget)

    def __post_init__(self) -> None:
        require_integer("GpuMonitorConfig", "device_index", self.device_index, 0)
        if not (math.isfinite(self.interval_s) and self.interval_s >= 0.5):
            # NVML refreshes its counters at 1-6 Hz; sampling faster only costs CPU.
            raise ValueError(f"interval_s must be >= 0.5 s, got {self.interval_s!r}")
        if not (isinstance(self.laya_pid, int) and self.laya_pid > 0):
            raise ValueError(f"laya_pid must be a positive integer, got {self.laya_pid!r}")


class ProcessMemory(NamedTuple):
    """One process NVML lists on the device; `used_bytes` is None where NVML cannot say."""

    pid: int
    used_bytes: int | None


@dataclass(frozen=True, slots=True)
class GpuSample:
    """One reading of the device. When `available` is False only `reason` means anything.

    With `per_process` True, `laya_bytes`, `kev_bytes` and `other_bytes` (everything else in
    use: other processes, the driver) add up to `used_bytes`. With it False they are None and
    `per_process_note` says why only device totals are known. `kev_note` explains a missing
    Kev PID. `headroom_low` is True when `free_bytes` is below the budget's free floor.
    """

    available: bool
    reason: str
    device_name: str = ""
    total_bytes: int = 0
    used_bytes: int = 0
    free_bytes: int = 0
    per_process: bool = False
    per_process_note: str = ""
    laya_pid: int = 0
    kev_pid: int | None = None
    kev_note: str = ""
    laya_bytes: int | None = None
    kev_bytes: int | None = None
    other_bytes: int | None = None
    processes: tuple[ProcessMemory, ...] = ()
    headroom_low: bool = False
    at_ns: int = 0


def read_pid_file(path: str) -> tuple[int | None, str]:
    """The PID in `path` and "", or None and why not."""
    try:
        text = Path(path).read_text(encoding="ascii", errors="replace").strip()
    except FileNotFoundError:
        return None, f"no Kev pid file at {path}"
    except OSError as error:
        return None, f"cannot read Kev pid file {path}: {error.strerror or error}"
    if not text.isdigit() or int(text) <= 0:
        return None, f"Kev pid file {path} does not hold a pid: {text[:20]!r}"
    return int(text), ""


def _pid_visible(pid: int) -> bool:
    """Whether `pid` names a process in our PID namespace."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def _error_text(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return text if text.startswith(type(error).__name__) else f"{type(error).__name__}: {text}"


class GpuMonitor:
    """Samples one NVIDIA device at `interval_s` on a daemon thread; `latest()` is lock-free
    (one reference read) and safe from any thread."""

    def __init__(self, config: GpuMonitorConfig) -> None:
        self.config = config
        self._nvml: Any = None
        self._handle: Any = None
        self._failed_for_good = ""
        self._latest = GpuSample(False, "not sampled yet")
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("GpuMonitor already started")
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="gpu-monitor", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stop.set()
            thread.join(timeout_s)
        if self._nvml is not None and self._handle is not None:
            with contextlib.suppress(Exception):  # shutting down: nothing left to report to
                self._nvml.nvmlShutdown()
        self._nvml = None
        self._handle = None

    def latest(self) -> GpuSample:
        return self._latest

    def _run(self) -> None:
        interval = self.config.interval_s
        while not self._stop.is_set():
            self._latest = self.sample()
            self._stop.wait(interval)

    def sample(self) -> GpuSample:
        """Read the device now (blocking NVML calls: keep it off the engine loop)."""
        now_ns = time.time_ns()
        if self._failed_for_good:
            return GpuSample(False, self._failed_for_good, at_ns=now_ns)
        try:
            handle = self._device()
            memory = self._nvml.nvmlDeviceGetMemoryInfo(handle)
            name = self._nvml.nvmlDeviceGetName(handle)
        except Exception as error:  # any NVML failure is a reading, never a crash
            return GpuSample(False, self._unavailable(error), at_ns=now_ns)
        if isinstance(name, bytes):
            name = name.decode(errors="replace")
        total, free = int(memory.total), int(memory.free)
        used = max(0, total - free)
        kev_pid, kev_note = (None, "Kev runs elsewhere (no pid file configured)")
        if self.config.kev_pid_file is not None:
            kev_pid, kev_note = read_pid_file(self.config.kev_pid_file)
            if kev_pid is not None and not _pid_visible(kev_pid):
                kev_note = f"Kev pid {kev_pid} (from {self.config.kev_pid_file}) is not running"
        processes, note = self._processes(handle)
        sample = GpuSample(
            True,
            "",
            device_name=str(name),
            total_bytes=total,
            used_bytes=used,
            free_bytes=free,
            laya_pid=self.config.laya_pid,
            kev_pid=kev_pid,
            kev_note=kev_note,
            processes=processes,
            headroom_low=free < self.config.budget.free_floor_bytes,
            at_ns=now_ns,
        )
        if note:
            return replace(sample, per_process_note=note)
        usage = {process.pid: process.used_bytes or 0 for process in processes}
        laya = usage.get(self.config.laya_pid, 0)
        kev = usage.get(kev_pid, 0) if kev_pid is not None else 0
        return replace(
            sample,
            per_process=True,
            laya_bytes=laya,
            kev_bytes=kev,
            other_bytes=max(0, used - laya - kev),
        )

    def _device(self) -> Any:
        if self._handle is None:
            if self._nvml is None:
                try:
                    import pynvml
                except ImportError as error:
                    self._failed_for_good = f"nvidia-ml-py is not installed ({error})"
                    raise
                self._nvml = pynvml
            self._nvml.nvmlInit()
            try:
                self._handle = self._nvml.nvmlDeviceGetHandleByIndex(self.config.device_index)
            except Exception:
                with contextlib.suppress(Exception):
                    self._nvml.nvmlShutdown()
                raise
        return self._handle

    def _unavailable(self, error: Exception) -> str:
        if self._failed_for_good:
            return self._failed_for_good
        text = _error_text(error)
        if type(error).__name__ in _PERMANENT_ERRORS:
            self._failed_for_good = text
        elif self._handle is not None and type(error).__name__ == "NVMLError_GpuIsLost":
            self._handle = None  # re-acquire once the device is back
        return text

    def _processes(self, handle: Any) -> tuple[tuple[ProcessMemory, ...], str]:
        """Compute and graphics contexts merged by PID, and "" or why they cannot be used."""
        nvml = self._nvml
        usage: dict[int, int | None] = {}
        for name in (
            "nvmlDeviceGetComputeRunningProcesses",
            "nvmlDeviceGetGraphicsRunningProcesses",
        ):
            query = getattr(nvml, name, None)
            if query is None:
                continue
            try:
                listed = query(handle)
            except Exception as error:  # NotSupported, a struct version mismatch, ...
                return (), f"NVML cannot list processes: {_error_text(error)}"
            for process in listed:
                pid = int(process.pid)
                used = process.usedGpuMemory
                used = None if used is None else int(used)
                if pid in usage and usage[pid] is not None and used is not None:
                    # A process with a compute and a graphics context: count its memory once.
                    used = max(usage[pid], used)
                usage[pid] = used
        processes = tuple(ProcessMemory(pid, used) for pid, used in sorted(usage.items()))
        if any(process.used_bytes is None for process in processes):
            return processes, "NVML does not report per-process memory here (WDDM/WSL or MIG)"
        if processes and not any(_pid_visible(process.pid) for process in processes):
            return processes, (
                "NVML lists host PIDs this PID namespace cannot see "
                "(a container without --pid=host)"
            )
        return processes, ""
