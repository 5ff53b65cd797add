"""Training Laya: recordings (a session each) -> candidates validated leave-one-session-out ->
the one that saves the most -> ONNX + model card.

Every candidate (`engine.lab.candidates`) is a softmax model over HOLD, LEAN_BUY, LEAN_SELL and
EMERGENCY, trained in numpy (`engine.lab.mlp`: weighted cross-entropy, Adam with decoupled weight
decay) on the per-side labels:

- "rule": a calibrated rule, a linear softmax on the book's imbalance and the recent jumps
  (`RULE_FEATURES`), the signals that carried across venues in the study behind issue 14;
- "compact": the same and the market's activity against its own recent past
  (`COMPACT_FEATURES`);
- "linear": a linear softmax on every feature a model reads (`MODEL_FEATURES`);
- "mlp": 128 -> 32 -> 16 -> 4 on the same features.

All are exported as the `mlp` graph family (a linear model is one Gemm, the features it does
not read have zero weights), so the engine's path and the native kernel are the same whichever
ships. Training adds the mirror image of every frame (`MIRROR_SOURCE`: bids and asks swapped,
moves reversed, LEAN_BUY and LEAN_SELL swapped), so a model reads both sides alike, and weighs
every session the same however many frames its feed sent.

Nothing is chosen on a slice of one session. With several sessions, each candidate's epochs
and thresholds come from its predictions on sessions it was not fitted on (an inner leave-one-
session-out, `engine.lab.fit`), and the candidates are compared leave-one-session-out
(`engine.lab.folds`); one recording is cut into blocks of market time that stand for sessions
(`TrainConfig.block_ms`, purged around the cuts). A candidate ranking either side below the
imbalance rule on a fold is never chosen (none left: the rule ships, at the gate thresholds);
of the rest, with `backtest`, the one whose gate saves the most in the backtest on each left-out
session (`engine.lab.savings`), else the one furthest above the rule's per-side AUC in its worst
fold, at the gate thresholds. The card has the
chosen one's learning curve (`engine.lab.learning_curve`). Two operating points per candidate:
thresholds for macro-F1, and thresholds for the gate (macro-F1 with our quotes pulled at most
`gate_pull_rate` of the market time, an EMERGENCY's cooldown included;
`engine.lab.thresholds`). The model card is `engine.lab.model_card`'s.

tqdm is the `train` extra and is imported inside the function that uses it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from engine.feed.recording import check_recording, require_distinct_recordings
from engine.lab.candidates import GATE_SUFFIX, IMBALANCE_RULE, FittedCandidate
from engine.lab.dataset import Dataset, DatasetConfig, build_dataset, require_symbols
from engine.lab.evaluate import burst_warnings, started_classifier
from engine.lab.fit import fit_candidate
from engine.lab.folds import (
    FoldReport,
    labelled_rows,
    leave_one_session_out,
    market_time_blocks,
    session_name,
)
from engine.lab.learning_curve import learning_curve
from engine.lab.model_card import (
    LatencySummary,
    SessionSummary,
    TrainReport,
    format_report,
    model_card,
)
from engine.lab.train_config import DEFAULT_SIM_SEED, SimulationConfig, TrainConfig
from engine.laya.config import DEFAULT_MODEL_PATH
from engine.laya.feature_set import FEATURE_COUNT, FEATURE_SET_VERSION
from engine.laya.model import LayaModelMetadata
from engine.sim.market import MarketGeneratorConfig
from engine.sim.recording import simulate_recording
from engine.tools.cluster.workers import Place, Workers
from engine.user_files import check_output_file, replacing


def _progress_bar(enabled: bool, **options):
    """A tqdm bar (the `train` extra), or a stand-in that ignores updates."""
    if not enabled:
        return _NoProgress()
    from tqdm import tqdm

    return tqdm(file=sys.stderr, dynamic_ncols=True, **options)


class _NoProgress:
    """Stands in for a tqdm bar when progress is off."""

    def update(self, count: int = 1) -> None:
        return None

    def set_postfix_str(self, text: str) -> None:
        return None

    def set_description_str(self, text: str) -> None:
        return None

    def close(self) -> None:
        return None


def _candidate_fitter(
    config: TrainConfig, bar
) -> Callable[[Sequence[Dataset]], dict[str, FittedCandidate]]:
    """What each fold fits: every candidate at both operating points."""

    def fit(train_sessions: Sequence[Dataset]) -> dict[str, FittedCandidate]:
        recorded = [session for session in train_sessions if not _is_simulated(session)]
        simulated = [session for session in train_sessions if _is_simulated(session)]
        fitted = {}
        for spec in config.candidates:
            bar.set_description_str(f"fold: {spec.name}")
            candidate = fit_candidate(spec, recorded, config, simulated, lambda *_: bar.update())
            fitted[spec.name] = candidate
            fitted[spec.name + GATE_SUFFIX] = candidate.at_gate()
        return fitted

    return fit


def _fitted_on(
    ray: Workers, config: TrainConfig, sessions: Sequence[Dataset], extra: Sequence[Dataset]
) -> Callable[[Sequence[Dataset]], dict[str, FittedCandidate]]:
    """Every fold's candidates fitted side by side, a task each on the Ray cluster `ray`, on
    what `leave_one_session_out` trains each fold on (every session but one, then `extra`);
    each fold is then given what its task fitted."""
    trainings = [
        (*sessions[:index], *sessions[index + 1 :], *extra) for index in range(len(sessions))
    ]
    fitted = dict(ray.map(_fold_fit, [(training, config) for training in trainings]))
    by_training = {
        tuple(map(id, training)): fitted[index] for index, training in enumerate(trainings)
    }
    return lambda training: by_training[tuple(map(id, training))]


def _fold_fit(
    job: tuple[Sequence[Dataset], TrainConfig], place: Place
) -> dict[str, FittedCandidate]:
    """On a worker: one fold's candidates."""
    training, config = job
    return _candidate_fitter(config, _NoProgress())(training)


_SIMULATED_PREFIX = "simulated-"


def _is_simulated(session: Dataset) -> bool:
    return session_name(session).startswith(_SIMULATED_PREFIX)


def _summary(session: Dataset, digest: str | None) -> SessionSummary:
    span = session.exchange_ts_ms.max() - session.exchange_ts_ms.min() if len(session) else 0
    return SessionSummary(
        name=session_name(session),
        content_digest=digest,
        simulated=_is_simulated(session),
        symbols=session.recording_symbols[0],
        frames=len(session),
        labelled=int(session.labelled.sum()),
        minutes=round(float(span) / 60_000, 2),
        class_counts=session.class_counts(),
        problem=session.recording_problems[0],
    )


def _measure_latency(model_path: Path, features: np.ndarray, frames: int) -> LatencySummary:
    classifier = started_classifier(model_path)
    try:
        rows = np.ascontiguousarray(features[:frames], dtype=np.float32)
        buffer = np.zeros((1, FEATURE_COUNT), dtype=np.float32)
        samples = np.empty(rows.shape[0], dtype=np.int64)
        for index in range(rows.shape[0]):
            buffer[0] = rows[index]
            started = time.perf_counter_ns()
            classifier.infer(buffer)
            samples[index] = time.perf_counter_ns() - started
        runs_on = classifier.runs_on
    finally:
        classifier.stop()
    return LatencySummary(
        runs_on=runs_on,
        frames=int(samples.size),
        p50_us=float(np.percentile(samples, 50)) / 1000.0,
        p99_us=float(np.percentile(samples, 99)) / 1000.0,
    )


def _ranks_as_well_as_the_rule(folds: FoldReport, name: str) -> bool:
    """Whether the candidate's per-side AUC reaches the imbalance rule's on both sides of every
    left-out fold (a candidate never ships worse than the rule)."""
    return all(
        fold.row(name).ask_auc.value >= fold.row("imbalance").ask_auc.value
        and fold.row(name).bid_auc.value >= fold.row("imbalance").bid_auc.value
        for fold in folds.folds
    )


def choose_candidate(
    config: TrainConfig, folds: FoldReport, savings: tuple | None
) -> tuple[str, str]:
    """The candidate to ship and why (see `TrainConfig`)."""
    if config.candidate is not None:
        return config.candidate, "chosen by the configuration (TrainConfig.candidate)"
    names = [
        name
        for spec in config.candidates
        for name in (spec.name, spec.name + GATE_SUFFIX)
        if _ranks_as_well_as_the_rule(folds, name)
    ]
    if not names:
        return IMBALANCE_RULE.name + GATE_SUFFIX, (
            "no candidate's per-side AUC reached the imbalance rule's on both sides of every "
            "left-out fold, so the rule ships: the top-5 imbalance alone, as a linear softmax, "
            "at the pull budget"
        )
    why_ranking = "no backtest asked for"
    if savings:
        from engine.lab.savings import rank_by_savings

        chosen = rank_by_savings(savings, names, config.max_fills_lost)
        if chosen is not None:
            return chosen
        why_ranking = "no gate's backtest saving had a 95% interval above zero"
    # By ranking, at the pull budget (an operating point does not change it): the candidate
    # surest to beat the rule, by its margin on its worst fold and side (a mean would let one
    # strong fold hide a weak one; the folds' intervals are wide).
    margins = {name: _worst_margin(folds, name) for name in names if name.endswith(GATE_SUFFIX)}
    best = max(margins, key=margins.get)
    return best, (
        f"the widest margin over the imbalance rule's per-side AUC on its worst fold and side, "
        f"{margins[best]:+.3f}, and at least the rule's on both sides of every fold "
        f"({why_ranking})"
    )


def _worst_margin(folds: FoldReport, name: str) -> float:
    """The candidate's per-side AUC less the imbalance rule's, on its worst fold and side."""
    return min(
        min(
            fold.row(name).ask_auc.value - fold.row("imbalance").ask_auc.value,
            fold.row(name).bid_auc.value - fold.row("imbalance").bid_auc.value,
        )
        for fold in folds.folds
    )


def train(
    recordings: Sequence[str | os.PathLike[str]],
    out_path: str | os.PathLike[str] = DEFAULT_MODEL_PATH,
    config: TrainConfig | None = None,
    *,
    force: bool = False,
    ray: Workers | None = None,
) -> TrainReport:
    """Train a Laya model on recordings (a session each, plus simulator data), validate the
    candidates leave-one-session-out, ship one, write its card next to it (suffix `.md`).
    An existing model or card is replaced only with `force`; everything is checked first.
    Each recording's dataset, and each fold's candidate fits, are tasks on the Ray cluster
    `ray` when given."""
    config = config or TrainConfig()
    simulation = config.simulation
    if not recordings:
        raise ValueError("train needs at least one recording")
    out = Path(out_path)
    paths = [Path(path) for path in recordings]
    card = out.with_suffix(".md")
    if card == out:
        raise ValueError(
            f"--out {out}: the model card would be written over the model; name "
            "the model MODEL.onnx"
        )
    check_output_file(out, f"--out {out}", force=force, inputs=paths)
    check_output_file(card, f"the model card {card}", force=force, inputs=paths)
    if config.backtest and len(paths) < 2:
        raise ValueError(
            "--backtest compares the candidates on left-out recordings: give two or more recordings"
        )
    # The same recording twice would be "left out" while its copy trains the candidates.
    digests = require_distinct_recordings(paths)
    if config.dataset.symbols is not None:  # here, not first on a worker
        for path in paths:
            check_recording(path)
            require_symbols(path, config.dataset.symbols)
    names = [path.name for path in paths]
    repeated = next((name for name in names if names.count(name) > 1), None)
    if repeated is not None:
        raise ValueError(
            f"two recordings are named {repeated}: each session is known by its file name "
            "(the folds, the model card), so rename one"
        )
    bar = _progress_bar(
        config.progress,
        desc="replaying recordings",
        unit="B",
        unit_scale=True,
        total=sum(path.stat().st_size for path in paths),
    )
    try:
        sessions = recording_datasets(paths, config.dataset, bar.update, ray)
    finally:
        bar.close()
    for session in sessions:
        if not session.labelled.any():
            raise ValueError(
                f"{session_name(session)} has no labelled frames: shorter than the label "
                f"warm-up ({config.dataset.labels.min_sigma_samples} returns in the sigma "
                f"window) and Laya's ({config.dataset.warmup_ms / 1000:g} s)"
            )
    # One recording is validated out of block: blocks of its market time stand for sessions.
    validation = sessions
    if len(sessions) == 1:
        validation = market_time_blocks(
            sessions[0], config.block_ms, config.dataset.labels.horizon_ms
        )
    simulated: list[Dataset] = []
    if simulation.minutes > 0:
        with tempfile.TemporaryDirectory(prefix="laya-train-") as folder:
            market = MarketGeneratorConfig(burst_rate_per_min=simulation.burst_rate_per_min)
            name = f"{_SIMULATED_PREFIX}seed{simulation.seed}-{simulation.minutes:g}min.gz"
            recording = simulate_recording(
                Path(folder) / name, simulation.minutes, simulation.seed, market=market
            )
            # The simulator's own symbols: `config.dataset.symbols` name the recordings'.
            own = dataclasses.replace(config.dataset, symbols=None)
            simulated.append(build_dataset([recording.path], own))
    savings = None
    bar = _progress_bar(config.progress, desc="folds", unit=" epochs")
    fit = _candidate_fitter(config, bar)
    try:
        if ray is not None:
            fit = _fitted_on(ray, config, validation, simulated)
        folds = leave_one_session_out(
            validation,
            fit,
            config.bootstrap,
            extra_training=simulated,
            on_fold=lambda name: bar.set_postfix_str(f"leaving out {name}"),
        )
    finally:
        bar.close()
    if config.backtest:
        from engine.lab.savings import fold_savings

        savings = fold_savings(
            folds,
            {session_name(session): path for session, path in zip(sessions, paths, strict=True)},
            jobs=config.backtest_jobs,
            labels=config.dataset.labels,
            progress=config.progress,
        )
    choice, reason = choose_candidate(config, folds, savings)
    bar = _progress_bar(config.progress, desc=f"training {choice}", unit=" epochs")
    try:
        fitted = fit_candidate(
            config.spec(choice), validation, config, simulated, lambda *_: bar.update()
        )
    finally:
        bar.close()
    if choice.endswith(GATE_SUFFIX):
        fitted = fitted.at_gate()
    bar = _progress_bar(config.progress, desc="learning curve", unit=" fits")
    try:
        curve = learning_curve(
            validation, folds, choice, fitted.spec, fitted.epochs, config, simulated, bar.update
        )
    finally:
        bar.close()
    summaries = (
        *(_summary(session, digest) for session, digest in zip(sessions, digests, strict=True)),
        *(_summary(session, None) for session in simulated),
    )
    metadata = LayaModelMetadata(
        feature_set_version=FEATURE_SET_VERSION,
        feature_count=FEATURE_COUNT,
        label_parameters=config.dataset.labels.as_metadata(),
        label_version=config.dataset.labels.version,
        thresholds=fitted.thresholds,
        training_summary=_training_summary(config, summaries, fitted, choice, folds),
        model_family="mlp",
    )
    fitted.export(out, metadata)
    held = labelled_rows(sessions)
    latency = _measure_latency(out, np.asarray(held.features), config.latency_frames)
    bursts = None
    if config.burst_check_minutes > 0:
        bursts = burst_warnings(out, config.burst_check_minutes, config.burst_check_seed)
    report = TrainReport(
        model_path=out,
        card_path=card,
        model_bytes=out.stat().st_size,
        model_sha256=hashlib.sha256(out.read_bytes()).hexdigest(),
        sessions=summaries,
        config=config,
        folds=folds,
        learning_curve=curve,
        savings=savings,
        choice=choice,
        choice_reason=reason,
        fitted=fitted,
        latency=latency,
        bursts=bursts,
        metadata=metadata,
    )
    with replacing(card) as written:
        written.write_text(model_card(report))
    return report


def recording_datasets(
    paths: Sequence[Path],
    config: DatasetConfig,
    on_bytes: Callable[[int], None] | None = None,
    ray: Workers | None = None,
) -> list[Dataset]:
    """A dataset of each recording, built here, or as tasks on the Ray cluster `ray` (the
    same datasets); `on_bytes` hears the recordings' bytes read."""
    if ray is None:
        return [build_dataset([path], config, on_bytes) for path in paths]
    built: dict[int, Dataset] = {}
    for index, dataset in ray.map(_recording_dataset, [(path, config) for path in paths], paths):
        built[index] = dataset
        if on_bytes is not None:
            on_bytes(paths[index].stat().st_size)
    return [built[index] for index in range(len(paths))]


def _recording_dataset(job: tuple[Path, DatasetConfig], place: Place) -> Dataset:
    """On a worker: the dataset of one recording, which it names as the driver does."""
    path, config = job
    dataset = build_dataset([place.local(path)], config)
    return dataclasses.replace(dataset, recordings=(os.fspath(path),))


def _training_summary(
    config: TrainConfig,
    summaries: tuple[SessionSummary, ...],
    fitted: FittedCandidate,
    choice: str,
    folds: FoldReport,
) -> dict[str, object]:
    """The model metadata's free-form training summary."""
    return {
        "recordings": [
            {
                "name": item.name,
                "content_digest": item.content_digest,
                "simulated": item.simulated,
                "symbols": list(item.symbols),
                "frames": item.frames,
                "labelled": item.labelled,
                "minutes": item.minutes,
            }
            for item in summaries
        ],
        "candidate": choice,
        "inputs": list(fitted.spec.inputs),
        "architecture": [len(fitted.spec.inputs), *fitted.spec.network.hidden_layers, 4],
        "epochs": fitted.epochs,
        "thresholds_from": fitted.thresholds_from,
        "f1_thresholds": list(fitted.f1_thresholds),
        "gate_thresholds": list(fitted.gate_thresholds),
        "gate_pull_rate": config.gate_pull_rate,
        "class_weight_power": config.class_weight_power,
        "mirror_augmented": True,
        "warmup_ms": config.dataset.warmup_ms,
        "folds": {
            fold.left_out: {
                row.name: {
                    "macro_f1": row.macro_f1.value,
                    "ask_auc": row.ask_auc.value,
                    "bid_auc": row.bid_auc.value,
                }
                for row in fold.rows
            }
            for fold in folds.folds
        },
    }


def train_command(
    recordings: Sequence[str],
    out_path: str | os.PathLike[str] = DEFAULT_MODEL_PATH,
    *,
    symbols: tuple[str, ...] | None = None,
    sim_minutes: float = 0.0,
    seed: int = DEFAULT_SIM_SEED,
    backtest: bool = False,
    force: bool = False,
    ray: Workers | None = None,
) -> str:
    """What `hft-console train` runs: train with the defaults, return the summary to print."""
    config = TrainConfig(
        dataset=DatasetConfig(symbols=symbols),
        simulation=SimulationConfig(minutes=sim_minutes, seed=seed),
        backtest=backtest,
    )
    return format_report(train(recordings, out_path, config, force=force, ray=ray))
