"""Walk-forward optimisation: for each fold after the first, an Optuna study searches the space
on the folds before it (the in-sample stretch) and the point it chooses is scored on that fold
(out of sample).

A trial is judged by `evaluate`: one settings point over one stretch of market time of the
recordings, a pure function of (settings, point, recordings, window) run as independent
backtests, in this process or in worker processes; a batch of trials (one per job) is asked of
the sampler at once and run together.

The studies live in one Optuna journal file, a study a step, each carrying what it was made
for (`Search.identity`): a run that stops (Ctrl-C) resumes where it stood, a trial cut off
mid-run is marked failed rather than counted, and a step whose trials and out-of-sample score
are in the file is never run again. Each trial's sampler is seeded from (seed, step, trial
number), so a run repeats for the same seed and `jobs` (the batch size).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engine.extras import require_module
from engine.settings.schema import Settings
from engine.tools.backtest.plan import GridPoint, backtest_specs, run_specs
from engine.tools.backtest.session import BacktestSpec, MarketWindow
from engine.tools.cluster.workers import Workers
from engine.tools.optimize.figures import Goal, WindowFigures, window_figures
from engine.tools.optimize.folds import Fold, RecordingSpan, fold_windows
from engine.tools.optimize.space import Dimension

if TYPE_CHECKING:
    import optuna

RESEARCH_EXTRA = "pip install 'hft-console[research]'"
_PROBLEM_ATTR = "search"
_OUT_OF_SAMPLE_ATTR = "out_of_sample"


class StudyMismatch(ValueError):
    """The study file was made for another search; the message names what differs."""


def require_optuna() -> None:
    """A one-line ImportError naming the extra when Optuna cannot be imported."""
    require_module("optuna", "optimize searches with Optuna, which did not import", RESEARCH_EXTRA)


@dataclass(frozen=True, slots=True)
class Search:
    """What is searched, on what, and how it is judged: a study file holds one search."""

    space: tuple[Dimension, ...]
    recordings: tuple[RecordingSpan, ...]
    folds: tuple[Fold, ...]
    goal: Goal
    seed: int
    fixed: tuple[tuple[str, object], ...] = ()
    """Settings set for every trial (`--set`)."""
    symbols: tuple[str, ...] | None = None

    def base_settings(self, settings: Settings) -> Settings:
        """`settings` with the fixed ones on top: what each trial's point goes over."""
        return settings.with_overrides(dict(self.fixed), {k: f"--set {k}" for k, _ in self.fixed})

    def identity(self) -> dict[str, object]:
        """As the study file keeps it (JSON); a resumed run must match it."""
        return {
            "space": [dimension.text for dimension in self.space],
            "recordings": [
                f"{span.path.name} {span.first_ns}..{span.last_ns}" for span in self.recordings
            ],
            "folds": len(self.folds),
            "objective": self.goal.objective,
            "min_markout_1s_bps": self.goal.min_markout_1s_bps,
            "max_drawdown_usdt": self.goal.max_drawdown,
            "seed": self.seed,
            "set": [f"{key}={value}" for key, value in self.fixed],
            "symbols": list(self.symbols) if self.symbols else None,
        }


@dataclass(frozen=True, slots=True)
class TrialResult:
    number: int
    point: dict[str, object]
    value: float
    feasible: bool
    figures: WindowFigures


@dataclass(frozen=True, slots=True)
class StepResult:
    """Step `number`: optimised on folds 0 .. number-1, scored on fold `number`."""

    number: int
    in_sample: tuple[int, int]
    """Market time [start, end) of the folds optimised on."""
    out_of_sample: Fold
    trials: tuple[TrialResult, ...]
    chosen: TrialResult | None
    """The best trial that met the constraints; None when none did."""
    out_of_sample_figures: WindowFigures | None
    importance: dict[str, float]
    """Of each setting to the objective over this step's trials (empty for too few)."""


def point_specs(
    settings: Settings,
    point: Mapping[str, object],
    windows: Sequence[tuple[Path, MarketWindow]],
    symbols: tuple[str, ...] | None,
) -> list[BacktestSpec]:
    """The backtests that evaluate `point` over `windows` (each recording's part of one
    stretch of market time): independent, pure, in any order or place."""
    grid_point = GridPoint(tuple(point.items()))
    sources = {key: f"--space {key}" for key in point}
    specs = []
    for recording, window in windows:
        specs += backtest_specs(
            settings, [recording], symbols, [grid_point], [None], sources=sources, window=window
        )
    return specs


def evaluate(
    settings: Settings,
    points: Sequence[Mapping[str, object]],
    spans: Sequence[RecordingSpan],
    start_ns: int,
    end_ns: int,
    symbols: tuple[str, ...] | None,
    jobs: int,
    ray: Workers | None = None,
) -> list[WindowFigures]:
    """Each point's figures over `[start_ns, end_ns)` of the recordings, its runs in up to
    `jobs` worker processes, or as tasks on the Ray cluster `ray`."""
    windows = fold_windows(spans, start_ns, end_ns)
    specs = [point_specs(settings, point, windows, symbols) for point in points]
    runs = run_specs([spec for point in specs for spec in point], jobs, ray=ray)
    figures, at = [], 0
    for point in specs:
        figures.append(window_figures(runs[at : at + len(point)]))
        at += len(point)
    return figures


def open_storage(path: Path | None, search: Search) -> optuna.storages.BaseStorage:
    """The journal file at `path` (made if new; None: in memory, for a run not kept); raises
    StudyMismatch when it holds a study of another search, naming the first thing that
    differs."""
    import optuna
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    if path is None:
        return optuna.storages.InMemoryStorage()
    _require_journal(path)
    storage = JournalStorage(JournalFileBackend(str(path)))
    ours = search.identity()
    for study in storage.get_all_studies():
        theirs = study.user_attrs.get(_PROBLEM_ATTR)
        if not isinstance(theirs, dict):
            raise StudyMismatch(f"--study {path}: holds a study that optimize did not make")
        for key, value in ours.items():
            if theirs.get(key) != value:
                raise StudyMismatch(
                    f"--study {path}: made for another search: its {key} is "
                    f"{_said(theirs.get(key))}, this run's {_said(value)} (a new search "
                    "takes a new --study file)"
                )
    return storage


def _require_journal(path: Path) -> None:
    """Optuna would append to any file: one that is not its journal is refused untouched (a
    last line cut short by a crash mid-write is Optuna's to pass over)."""
    if not path.is_file():
        return
    with path.open("rb") as file:
        for number, line in enumerate(file, 1):
            if not line.endswith(b"\n"):
                break
            try:
                entry = json.loads(line)
            except ValueError:
                entry = None
            if not isinstance(entry, dict) or "op_code" not in entry:
                raise StudyMismatch(
                    f"--study {path}: not an Optuna journal file (line {number:,} is not one "
                    "of its entries)"
                )


def run_walk_forward(
    search: Search,
    settings: Settings,
    storage: optuna.storages.BaseStorage,
    trials: int,
    jobs: int,
    on_trials: Callable[[int, int, int, int], None] | None = None,
    ray: Workers | None = None,
) -> list[StepResult]:
    """Every step in order; `on_trials(step, done, trials, batch)` hears each batch's end. The
    trials' backtests run as tasks on the Ray cluster `ray` when given (`jobs` trials a batch
    all the same, so a run repeats wherever it runs)."""
    base = search.base_settings(settings)
    return [
        _run_step(search, base, storage, number, trials, jobs, on_trials, ray)
        for number in range(1, len(search.folds))
    ]


def _run_step(
    search: Search,
    settings: Settings,
    storage: optuna.storages.BaseStorage,
    number: int,
    trials: int,
    jobs: int,
    on_trials: Callable[[int, int, int, int], None] | None,
    ray: Workers | None,
) -> StepResult:
    import optuna
    from optuna.trial import TrialState

    name = f"step-{number}"
    try:  # not create_study(load_if_exists): it would append to the journal every time
        study = optuna.load_study(study_name=name, storage=storage)
    except KeyError:
        study = optuna.create_study(study_name=name, storage=storage, direction="maximize")
    if _PROBLEM_ATTR not in study.user_attrs:
        study.set_user_attr(_PROBLEM_ATTR, search.identity())
    # A trial left running is one a stopped run cut off: never counted, never reported.
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
    start_ns, end_ns = search.folds[0].start_ns, search.folds[number].start_ns
    done = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
    while done < trials:
        batch = []
        for _ in range(min(jobs, trials - done)):
            study.sampler = _sampler(search, number, len(study.trials))
            trial = study.ask()
            batch.append((trial, {d.key: d.suggest(trial) for d in search.space}))
        figures = evaluate(
            settings,
            [point for _, point in batch],
            search.recordings,
            start_ns,
            end_ns,
            search.symbols,
            jobs,
            ray,
        )
        for (trial, _), found in zip(batch, figures, strict=True):
            trial.set_user_attr("figures", found.as_json())
            for constraint, missed_by in search.goal.violations(found).items():
                trial.set_constraint(constraint, missed_by)
            study.tell(trial, search.goal.value(found))
        done += len(batch)
        if on_trials is not None:
            on_trials(number, done, trials, len(batch))
    results = tuple(_trial_result(trial, search.goal) for trial in _complete(study))
    feasible = [result for result in results if result.feasible]
    chosen = max(feasible, key=lambda r: (r.value, -r.number)) if feasible else None
    fold = search.folds[number]
    scored = None
    if chosen is not None:
        stored = study.user_attrs.get(_OUT_OF_SAMPLE_ATTR)
        if isinstance(stored, dict) and stored.get("trial") == chosen.number:
            scored = WindowFigures.from_json(stored["figures"])
        else:
            (scored,) = evaluate(
                settings,
                [chosen.point],
                search.recordings,
                fold.start_ns,
                fold.end_ns,
                search.symbols,
                jobs,
                ray,
            )
            study.set_user_attr(
                _OUT_OF_SAMPLE_ATTR, {"trial": chosen.number, "figures": scored.as_json()}
            )
    return StepResult(
        number, (start_ns, end_ns), fold, results, chosen, scored, _importance(study, search)
    )


def _sampler(search: Search, step: int, trial_number: int) -> optuna.samplers.BaseSampler:
    from optuna.samplers import TPESampler

    seed = int(np.random.SeedSequence([search.seed, step, trial_number]).generate_state(1)[0])
    return TPESampler(seed=seed)


def _complete(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    from optuna.trial import TrialState

    return study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))


def _trial_result(trial: optuna.trial.FrozenTrial, goal: Goal) -> TrialResult:
    figures = WindowFigures.from_json(trial.user_attrs["figures"])
    assert trial.value is not None
    return TrialResult(trial.number, dict(trial.params), trial.value, goal.met(figures), figures)


def _importance(study: optuna.Study, search: Search) -> dict[str, float]:
    """fANOVA's share of the objective's variance each setting explains (seeded: repeats)."""
    from optuna.importance import FanovaImportanceEvaluator, get_param_importances

    complete = _complete(study)
    varied = [d.key for d in search.space if len({str(t.params[d.key]) for t in complete}) > 1]
    if len(complete) < 2 or not varied or len({t.value for t in complete}) < 2:
        return {}
    evaluator = FanovaImportanceEvaluator(seed=search.seed)
    found = get_param_importances(study, evaluator=evaluator, params=varied)
    return {key: float(share) for key, share in found.items()}


def _said(value: object) -> str:
    if isinstance(value, list):
        return ", ".join(str(item) for item in value) or "none"
    return str(value)
