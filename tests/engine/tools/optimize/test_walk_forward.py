"""Walk-forward on the shared spot recording: in-sample on the past folds, the chosen point
scored on the next; the same seed repeats it; the study file resumes and never reruns a step."""

from __future__ import annotations

import math

import pytest

from engine.feed.recording import iter_recording
from engine.settings.reader import load_settings
from engine.tools.optimize.figures import Goal
from engine.tools.optimize.folds import recording_span, walk_forward_folds
from engine.tools.optimize.space import parse_space
from engine.tools.optimize.walk_forward import (
    Search,
    StudyMismatch,
    open_storage,
    run_walk_forward,
)
from tests.support.recordings import shared_spot

optuna = pytest.importorskip("optuna")  # the research extra
SETTINGS = load_settings(environ={"HFT_CONSOLE_LAYA__PREFER_GPU": "false"})
SPACE = (
    parse_space("trading.strategy.half_spread_bps=0.5:6:log"),
    parse_space("trading.strategy.post_only=true,false"),
)
TRIALS = 3


def search_for(seed=7, space=SPACE, goal=None) -> Search:
    span = recording_span(shared_spot())
    folds = tuple(walk_forward_folds([span], 2))
    return Search(space, (span,), folds, goal or Goal(), seed)


def summary(steps):
    return [
        (
            [(t.number, t.point, t.value) for t in step.trials],
            step.chosen.number if step.chosen else None,
            step.out_of_sample_figures,
        )
        for step in steps
    ]


def walk(search, path, trials=TRIALS):
    return run_walk_forward(search, SETTINGS, open_storage(path, search), trials, jobs=1)


@pytest.fixture(scope="module")
def first_walk(tmp_path_factory):
    path = tmp_path_factory.mktemp("study") / "study.journal"
    return path, walk(search_for(), path)


def test_each_step_optimises_on_the_past_and_scores_on_the_next_fold(first_walk):
    _, (step,) = first_walk
    search = search_for()
    span, (_, fold) = search.recordings[0], search.folds
    assert step.in_sample == (span.first_ns, fold.start_ns) and step.out_of_sample == fold
    assert len(step.trials) == TRIALS and step.chosen is not None
    assert step.chosen.value == max(t.value for t in step.trials)
    # In sample: from the first frame to the last one before the fold (a run ends at a frame).
    before = max(t for t, _ in iter_recording(span.path) if t < fold.start_ns)
    assert step.chosen.figures.hours == pytest.approx((before - span.first_ns) / 3.6e12)
    out = step.out_of_sample_figures
    assert out is not None and out.fills > 0  # it traded out of sample: the score is one
    # The out-of-sample run traded from the fold's start to the recording's last frame.
    assert out.hours == pytest.approx((span.last_ns - fold.start_ns) / 3.6e12)


def test_the_same_seed_gives_the_same_walk_and_another_seed_another(first_walk, tmp_path):
    _, steps = first_walk
    again = walk(search_for(), tmp_path / "again.journal")
    assert summary(again) == summary(steps)
    other = walk(search_for(seed=8), tmp_path / "other.journal", trials=1)
    assert other[0].trials[0].point != steps[0].trials[0].point


def test_a_finished_step_is_never_run_again(first_walk):
    path, steps = first_walk
    before = path.read_bytes()
    assert summary(walk(search_for(), path)) == summary(steps)
    assert path.read_bytes() == before  # not a trial, not a score, written again


def test_a_trial_a_stopped_run_cut_off_is_failed_not_counted(tmp_path):
    search = search_for()
    path = tmp_path / "cut.journal"
    storage = open_storage(path, search)
    study = optuna.create_study(study_name="step-1", storage=storage, direction="maximize")
    study.set_user_attr("search", search.identity())
    study.ask()  # what a run interrupted mid-trial leaves: a trial still running
    (step,) = walk(search, path, trials=1)
    assert [t.number for t in step.trials] == [1]
    states = [t.state for t in optuna.load_study(study_name="step-1", storage=storage).trials]
    assert states == [optuna.trial.TrialState.FAIL, optuna.trial.TrialState.COMPLETE]


def test_a_study_file_of_another_search_is_refused(first_walk):
    path, _ = first_walk
    other = search_for(space=SPACE[:1])
    with pytest.raises(StudyMismatch) as raised:
        open_storage(path, other)
    said = str(raised.value)
    assert said.startswith(f"--study {path}: made for another search: its space is ")
    assert "\n" not in said


def test_no_point_meeting_the_constraints_chooses_nothing(tmp_path):
    goal = Goal(min_markout_1s_bps=1_000.0)
    space = (parse_space("trading.strategy.half_spread_bps=0.5:1"),)  # fills: a markout
    (step,) = walk(search_for(space=space, goal=goal), tmp_path / "c.journal", trials=2)
    assert all(not t.feasible and t.figures.quote_fills for t in step.trials)
    assert step.chosen is None and step.out_of_sample_figures is None
    assert not math.isnan(step.trials[0].figures.markout_1s_bps)
