"""The GPU and VRAM checks: this machine's NVML (no GPU), and a fake `pynvml` for a card."""

from __future__ import annotations

import sys
import types
from typing import NamedTuple

import pytest

from engine.gpu import GIB, VramBudget
from engine.tools.doctor.gpu import check_gpu, check_vram_budget, read_gpu_facts
from engine.tools.doctor.report import CheckStatus


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
