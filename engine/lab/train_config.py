"""What `train` does, with the defaults the shipped model was trained with."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from engine.lab.candidates import CANDIDATES, GATE_SUFFIX, IMBALANCE_RULE, CandidateSpec
from engine.lab.dataset import DatasetConfig
from engine.lab.folds import BootstrapConfig

DEFAULT_SIM_SEED = 7


@dataclass(frozen=True, slots=True)
class SimulationConfig:
    """Simulator data added to every fit (never scored).

    Bursts are denser than in the default market (0.3 a minute) so the informed-burst pattern
    has examples; `share` is the simulated session's total loss weight against one recorded
    session's.
    """

    minutes: float = 0.0
    seed: int = DEFAULT_SIM_SEED
    burst_rate_per_min: float = 2.0
    share: float = 1.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.minutes) and self.minutes >= 0):
            raise ValueError(f"SimulationConfig.minutes must be >= 0, got {self.minutes}")
        if not (math.isfinite(self.share) and self.share > 0):
            raise ValueError(f"SimulationConfig.share must be > 0, got {self.share}")
        if not (math.isfinite(self.burst_rate_per_min) and self.burst_rate_per_min >= 0):
            raise ValueError(
                f"SimulationConfig.burst_rate_per_min must be >= 0, got {self.burst_rate_per_min}"
            )


@dataclass(frozen=True, slots=True)
class TrainConfig:
    """Everything `train` does, with the defaults the shipped model was trained with.

    `candidate` forces the one to ship (a name of `candidates`, with GATE_SUFFIX for its gate
    thresholds); None chooses it among those whose per-side AUC reaches the imbalance rule's on
    every fold (none: the rule ships, `IMBALANCE_RULE` at its gate thresholds): by what the gate
    saves in the backtest across the folds with `backtest`, else by the margin over the rule's
    per-side AUC on the worst fold and side, at the gate thresholds. `max_fills_lost`: a gate
    may lose at most this share of the no-gate run's fills on every left-out session to be
    chosen on savings.
    """

    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    candidates: tuple[CandidateSpec, ...] = CANDIDATES
    candidate: str | None = None
    class_weight_power: float = 0.5
    gate_pull_rate: float = 0.1
    emergency_cooldown_ms: float = 1_000.0
    """The strategy's EMERGENCY cooldown (`[trading.strategy] emergency_cooldown_ms`), which the
    gate's time budget charges each EMERGENCY verdict."""
    simulation: SimulationConfig = field(default_factory=SimulationConfig)
    bootstrap: BootstrapConfig = field(default_factory=BootstrapConfig)
    backtest: bool = False
    max_fills_lost: float = 0.2
    block_ms: int = 8 * 3_600_000
    """One recording is validated leave-one-block-out, in blocks of this much market time: a
    day makes three, each a different third of the trading day. Every candidate's fit in a fold
    is itself validated leave-one-block-out, so the cost grows with the square of the blocks
    (4 h blocks: about four times as long)."""
    learning_hours: tuple[float, ...] = (1, 2, 4, 8, 16)
    """The learning curve's training market time, besides all of it."""
    backtest_jobs: int = field(default_factory=lambda: os.cpu_count() or 1)
    burst_check_minutes: float = 0.0
    """Minutes of a fresh default simulated market to measure burst warnings on (0: skip)."""
    burst_check_seed: int = 1001
    latency_frames: int = 2000
    progress: bool = True

    def __post_init__(self) -> None:
        names = [spec.name for spec in self.candidates]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"TrainConfig.candidates must have distinct names, got {names}")
        if IMBALANCE_RULE.name in names:
            raise ValueError(
                f"TrainConfig.candidates: {IMBALANCE_RULE.name!r} is the rule's name (what "
                "ships when no candidate out-ranks it); name the candidate otherwise"
            )
        if self.candidate is not None and self.candidate.removesuffix(GATE_SUFFIX) not in names:
            raise ValueError(
                f"TrainConfig.candidate {self.candidate!r} is none of {', '.join(names)} "
                f"(add {GATE_SUFFIX!r} for its gate thresholds)"
            )
        if not (math.isfinite(self.class_weight_power) and 0 <= self.class_weight_power <= 1):
            raise ValueError(
                f"TrainConfig.class_weight_power must be in [0, 1], got {self.class_weight_power}"
            )
        for name in ("gate_pull_rate", "max_fills_lost"):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise ValueError(f"TrainConfig.{name} must be in (0, 1], got {getattr(self, name)}")
        if not (math.isfinite(self.burst_check_minutes) and self.burst_check_minutes >= 0):
            raise ValueError(
                f"TrainConfig.burst_check_minutes must be >= 0, got {self.burst_check_minutes}"
            )
        if self.block_ms <= self.dataset.labels.horizon_ms:
            raise ValueError(
                f"TrainConfig.block_ms ({self.block_ms}) must exceed the label horizon "
                f"({self.dataset.labels.horizon_ms} ms)"
            )
        if self.latency_frames < 1 or self.backtest_jobs < 1:
            raise ValueError("TrainConfig.latency_frames and backtest_jobs must be >= 1")

    def spec(self, name: str) -> CandidateSpec:
        """The candidate of that name (GATE_SUFFIX or not), or the imbalance rule."""
        return next(
            spec
            for spec in (*self.candidates, IMBALANCE_RULE)
            if spec.name == name.removesuffix(GATE_SUFFIX)
        )
