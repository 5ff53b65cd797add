"""What `hft-console optimize` shows: each step's chosen settings with their in-sample and
out-of-sample figures and the gap, then all the steps together; as JSON; and `--report DIR`:
each step's optimisation history and the importance of each setting as charts (drawn as the
backtest report draws its own) beside a backtest report of the last step's choice on the fold
it was scored on."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engine.tools.backtest.charts import PALETTE, Chart, Figure, Series, time_text
from engine.tools.backtest.report import Part, RunGroup, Table
from engine.tools.optimize.figures import WindowFigures, combined
from engine.tools.optimize.walk_forward import Search, StepResult
from engine.user_files import folder_made_whole


def _cell(value: float, digits: int = 2, signed: bool = True) -> str:
    if math.isnan(value):
        return "n/a"
    return f"{value:+,.{digits}f}" if signed else f"{value:,.{digits}f}"


def figures_table(in_sample: WindowFigures | None, out_of_sample: WindowFigures | None) -> Table:
    """Rates compare across stretches of different lengths: their gap is out of sample minus
    in sample."""
    rows: list[tuple[str, ...]] = [("", "in-sample", "out-of-sample", "gap")]

    def rate(name: str, of, digits: int = 2, signed: bool = True) -> None:
        ins = of(in_sample) if in_sample is not None else math.nan
        out = of(out_of_sample) if out_of_sample is not None else math.nan
        rows.append(
            (name, _cell(ins, digits, signed), _cell(out, digits, signed), _cell(out - ins, digits))
        )

    def total(name: str, of, digits: int = 2, signed: bool = True) -> None:
        ins = of(in_sample) if in_sample is not None else math.nan
        out = of(out_of_sample) if out_of_sample is not None else math.nan
        rows.append((name, _cell(ins, digits, signed), _cell(out, digits, signed), ""))

    rate("net per hour (USDT)", lambda f: f.net_per_hour)
    rate("fills per hour", lambda f: f.fills / f.hours if f.hours else math.nan, 0, False)
    rate("quotes' 1 s markout (bps)", lambda f: f.markout_1s_bps)
    total("net (USDT)", lambda f: f.net)
    total("fills", lambda f: float(f.fills), 0, False)
    total("max drawdown (USDT)", lambda f: f.max_drawdown, 2, False)
    total("market hours", lambda f: f.hours, 3, False)
    return Table(tuple(rows))


def overall(steps: Sequence[StepResult]) -> tuple[WindowFigures | None, WindowFigures | None]:
    """The chosen points' in-sample figures together, and their out-of-sample ones."""
    ins = [step.chosen.figures for step in steps if step.chosen is not None]
    outs = [step.out_of_sample_figures for step in steps if step.out_of_sample_figures]
    return (combined(ins) if ins else None), (combined(outs) if outs else None)


def walk_forward_parts(search: Search, steps: Sequence[StepResult]) -> list[Part]:
    names = ", ".join(span.path.name for span in search.recordings)
    fold_min = search.folds[0].covered_s / 60
    parts: list[Part] = [
        f"walk-forward over {names}: {len(search.folds)} folds of {fold_min:.1f} min of "
        f"market time, objective {search.goal.objective}{_constraints_text(search)}, seed "
        f"{search.seed}",
    ]
    for step in steps:
        start_ns, end_ns = step.in_sample
        fold = step.out_of_sample
        parts += [
            "",
            f"step {step.number}: optimised on {_span(start_ns, end_ns)}, scored on "
            f"{_span(fold.start_ns, fold.end_ns)}; {len(step.trials)} trials",
        ]
        if step.chosen is None:
            parts.append("no trial met the constraints: nothing to score out of sample")
            continue
        parts.append(f"chosen: trial {step.chosen.number}: {_point_text(step.chosen.point)}")
        if step.importance:
            shares = ", ".join(f"{key} {share:.2f}" for key, share in step.importance.items())
            parts.append(f"importance: {shares}")
        parts.append(figures_table(step.chosen.figures, step.out_of_sample_figures))
    ins, outs = overall(steps)
    parts += ["", "all steps: the chosen settings in sample and out of sample"]
    parts.append(figures_table(ins, outs))
    return parts


def walk_forward_json(search: Search, steps: Sequence[StepResult]) -> dict[str, object]:
    ins, outs = overall(steps)
    return {
        "search": search.identity(),
        "folds": [
            {
                "number": f.number,
                "start_ns": f.start_ns,
                "end_ns": f.end_ns,
                "covered_s": f.covered_s,
            }
            for f in search.folds
        ],
        "steps": [
            {
                "step": step.number,
                "in_sample": {"start_ns": step.in_sample[0], "end_ns": step.in_sample[1]},
                "out_of_sample_fold": step.out_of_sample.number,
                "trials": [
                    {
                        "number": trial.number,
                        "point": trial.point,
                        "value": trial.value,
                        "feasible": trial.feasible,
                        "figures": trial.figures.as_json(),
                    }
                    for trial in step.trials
                ],
                "chosen": None if step.chosen is None else step.chosen.number,
                "point": None if step.chosen is None else step.chosen.point,
                "in_sample_figures": _figures_json(step.chosen.figures if step.chosen else None),
                "out_of_sample_figures": _figures_json(step.out_of_sample_figures),
                "importance": step.importance,
            }
            for step in steps
        ],
        "overall": {"in_sample": _figures_json(ins), "out_of_sample": _figures_json(outs)},
    }


def step_figure(step: StepResult, objective: str) -> Figure:
    """The objective of each trial in order and the best so far; each setting's importance."""
    numbers = np.array([trial.number for trial in step.trials], float)
    values = np.array([trial.value for trial in step.trials], float)
    best = np.maximum.accumulate(values) if len(values) else values
    labels = tuple(str(int(number)) for number in numbers)
    history = Chart(
        f"step {step.number}: {objective} of each trial (in sample)",
        objective,
        (
            Series("trial", np.arange(len(values), dtype=float), values, "buy", PALETTE[0]),
            Series("best so far", np.arange(len(values), dtype=float), best, "step", PALETTE[1]),
        ),
        x_labels=labels,
        x_title="trial",
        zero_line=True,
    )
    keys = tuple(step.importance)
    importance = Chart(
        f"step {step.number}: importance of each setting (fANOVA)",
        "share of the variance",
        (
            Series(
                "importance",
                np.arange(len(keys), dtype=float),
                np.array([step.importance[key] for key in keys], float),
                "line",
                PALETTE[2],
            ),
        ),
        x_labels=keys or ("",),
        x_title="setting",
        empty="too few trials, or no setting varied",
    )
    return Figure(f"step-{step.number}", f"Optimisation, step {step.number}", (history, importance))


def write_optimize_report(
    folder: Path,
    search: Search,
    steps: Sequence[StepResult],
    chosen_groups: Sequence[RunGroup],
) -> None:
    """folder/optimisation.html (the walk-forward tables and each step's charts), charts/ (the
    PNGs), walk-forward.json, and backtest/ (`write_report` of `chosen_groups`); made in a
    scratch folder beside it and moved into place whole."""
    from engine.tools.backtest.files import write_report
    from engine.tools.backtest.html_report import figure_html, figure_png, page_html, parts_html

    with folder_made_whole(folder) as scratch:
        (scratch / "walk-forward.json").write_text(
            json.dumps(walk_forward_json(search, steps), indent=2), "utf-8"
        )
        if chosen_groups:
            write_report(scratch / "backtest", chosen_groups)
        (scratch / "charts").mkdir()
        body = [
            f"<h1>Optimisation: {', '.join(s.path.name for s in search.recordings)}</h1>",
            parts_html(walk_forward_parts(search, steps)),
        ]
        if chosen_groups:
            body.append(
                '<p><a href="backtest/report.html">The backtest of the last step\'s choice on '
                "the fold it was scored on</a></p>"
            )
        for step in steps:
            figure = step_figure(step, search.goal.objective)
            png = figure_png(figure)
            (scratch / "charts" / f"{figure.name}.png").write_bytes(png)
            body.append(figure_html(figure, png))
        (scratch / "optimisation.html").write_text(page_html("Optimisation", body), "utf-8")


def _figures_json(figures: WindowFigures | None) -> dict[str, object] | None:
    if figures is None:
        return None
    return {**figures.as_json(), "net_per_hour": figures.net_per_hour}


def _constraints_text(search: Search) -> str:
    goal = search.goal
    said = []
    if goal.min_markout_1s_bps is not None:
        said.append(f"1 s markout >= {goal.min_markout_1s_bps:g} bps")
    if goal.max_drawdown is not None:
        said.append(f"drawdown <= {goal.max_drawdown:g} USDT")
    return f" ({', '.join(said)})" if said else ""


def _span(start_ns: int, end_ns: int) -> str:
    return f"{time_text(start_ns)} to {time_text(end_ns)[11:]}"


def _point_text(point: dict[str, object]) -> str:
    return ", ".join(
        f"{key}={value:.6g}" if isinstance(value, float) else f"{key}={value}"
        for key, value in point.items()
    )
