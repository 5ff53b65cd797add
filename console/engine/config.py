"""`EngineAdapterConfig`: how the engine process feeds the console, and the time limits the
console gives it; the settings build it for both processes."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from console.bandwidth import BUDGETS, Bandwidth
from console.engine.views import DEFAULT_STAGE_BUDGETS_P99_US, PANE_STAGES
from engine.gpu import GpuMonitorConfig
from engine.kev.server import llama_server_pid_path


@dataclass(frozen=True, slots=True)
class EngineAdapterConfig:
    """How the engine side feeds the console.

    `publish_hz`: snapshots a second. The parts a person reads and nothing acts on at once
    (the ladder, the imbalance, Laya's verdicts, the stage latencies) are rebuilt at most
    `detail_hz` (`RedrawBudget.detail_hz`): at 20 Hz they were most of what the console
    received and unpickled, to draw at most 2.5 times a second. The imbalance plot keeps
    `imbalance_window_s` of `imbalance_step_s` means (exchange time, so a replay plots its own
    minutes). The
    `*_shown` and `events_kept` bound what each snapshot carries. `stage_budgets_p99_us` colour
    a stage whose p99 is above. Commands time out after `command_timeout_s`; kill and flatten
    get the trading desk's own limit plus `sequence_margin_s`; the engine process has
    `start_timeout_s` to start and `stop_timeout_s` to stop. `gpu` configures the VRAM monitor
    (None: off); Laya's PID in it is the engine process's.
    """

    publish_hz: float = 20.0
    detail_hz: float = BUDGETS[Bandwidth.FULL].detail_hz
    depth_levels: int = 15
    imbalance_window_s: float = 300.0
    imbalance_step_s: float = 2.0
    verdicts_shown: int = 100
    kev_decisions_shown: int = 50
    fills_shown: int = 100
    events_kept: int = 2_000
    histogram_bins: int = 24
    stage_budgets_p99_us: Mapping[str, float] = field(
        default_factory=lambda: dict(DEFAULT_STAGE_BUDGETS_P99_US)
    )
    command_timeout_s: float = 5.0
    sequence_margin_s: float = 5.0
    start_timeout_s: float = 120.0
    stop_timeout_s: float = 30.0
    gpu: GpuMonitorConfig | None = field(
        default_factory=lambda: GpuMonitorConfig(kev_pid_file=str(llama_server_pid_path()))
    )

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "stage_budgets_p99_us", MappingProxyType(dict(self.stage_budgets_p99_us))
        )
        if not (math.isfinite(self.publish_hz) and 1 <= self.publish_hz <= 60):
            raise ValueError(f"publish_hz must be within [1, 60], got {self.publish_hz!r}")
        if not (math.isfinite(self.detail_hz) and 0.5 <= self.detail_hz <= 60):
            raise ValueError(f"detail_hz must be within [0.5, 60], got {self.detail_hz!r}")
        if not 1 <= self.depth_levels <= 15:
            raise ValueError(f"depth_levels must be within [1, 15], got {self.depth_levels!r}")
        if not (0 < self.imbalance_step_s < self.imbalance_window_s <= 3_600):
            raise ValueError(
                "imbalance_step_s and imbalance_window_s must satisfy 0 < step < window <= "
                f"3600 s, got {self.imbalance_step_s!r} and {self.imbalance_window_s!r}"
            )
        for name in (
            "verdicts_shown",
            "kev_decisions_shown",
            "fills_shown",
            "events_kept",
            "histogram_bins",
        ):
            value = getattr(self, name)
            if not (isinstance(value, int) and value >= 1):
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        unknown = sorted(set(self.stage_budgets_p99_us) - {*PANE_STAGES, "kev"})
        if unknown:
            raise ValueError(f"stage_budgets_p99_us names unknown stages {unknown}")
        for stage, budget in self.stage_budgets_p99_us.items():
            if not (math.isfinite(budget) and budget > 0):
                raise ValueError(f"the p99 budget of {stage} must be > 0 us, got {budget!r}")
        for name in ("command_timeout_s", "sequence_margin_s", "start_timeout_s", "stop_timeout_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be > 0, got {value!r}")
