"""What each fold's candidates save as the quote gate, in the backtest of the session they
were not fitted on: the whole engine on the recording (`engine.tools.backtest`), once with no gate,
once with the top-5 imbalance gate, and once with Laya's gate on each candidate's model.

A candidate saves what its gate adds to the 1 s markout of our quotes' fills against no gate
(bps a fill): the adverse selection it avoids. Pulling quotes also trades less, which on its
own raises the PnL of a losing strategy, so a gate counts only while it keeps most of the
fills (`max_fills_lost`).
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.lab.candidates import GATE_SUFFIX, IMBALANCE_RULE
from engine.lab.folds import FoldReport
from engine.laya.decide import QuoteGate
from engine.laya.labels import LabelConfig
from engine.laya.model import LayaModelMetadata
from engine.settings.schema import Settings
from engine.tools.backtest.metrics import SessionMetrics, saving_half_width
from engine.tools.backtest.plan import GridPoint, backtest_specs, run_specs
from engine.tools.backtest.report import compare_text

FIVE_SECONDS_MS = 5_000


@dataclass(frozen=True, slots=True)
class GateRun:
    """One gate on one session, the figures the selection reads."""

    name: str
    net_per_hour: float
    fills: int
    markout_1s_bps: float
    markout_1s_se_bps: float
    """The standard error of that mean (the fills' spread / sqrt(fills))."""
    markout_5s_bps: float
    uptime: tuple[float, float]
    """Of the bid and the ask."""

    @classmethod
    def of(cls, name: str, metrics: SessionMetrics) -> GateRun:
        one_second = metrics.quote_figures().markout_1s  # the mean and its error, one source
        return cls(
            name=name,
            net_per_hour=metrics.net / metrics.hours if metrics.hours else float("nan"),
            fills=metrics.quote_fills,
            markout_1s_bps=one_second.mean_bps,
            markout_1s_se_bps=one_second.standard_error_bps,
            markout_5s_bps=metrics.markout(FIVE_SECONDS_MS).mean_bps,
            uptime=(metrics.uptime["bid"], metrics.uptime["ask"]),
        )


@dataclass(frozen=True, slots=True)
class SessionSavings:
    """A left-out session's backtests: no gate, the imbalance gate, each candidate's gate,
    and the compare table (`hft-console backtest --compare`'s) of them all."""

    recording: str
    none: GateRun
    imbalance: GateRun
    candidates: tuple[GateRun, ...]
    table: str

    def run(self, name: str) -> GateRun:
        return next(run for run in self.candidates if run.name == name)

    def fills_lost(self, run: GateRun) -> float:
        return (self.none.fills - run.fills) / self.none.fills if self.none.fills else float("nan")

    def saved_per_fill(self, run: GateRun) -> float:
        return run.markout_1s_bps - self.none.markout_1s_bps

    def saved_half_width(self, run: GateRun) -> float:
        """Half the 95% interval of `saved_per_fill` (`saving_half_width`)."""
        return saving_half_width(run.markout_1s_se_bps, self.none.markout_1s_se_bps)


def fold_savings(
    report: FoldReport,
    recordings: Mapping[str, Path],
    *,
    jobs: int,
    labels: LabelConfig,
    settings: Settings | None = None,
    progress: bool = False,
) -> tuple[SessionSavings, ...]:
    """Backtest every fold's candidates on its left-out recording (`recordings` by session
    name); their files carry the `labels` they were trained on. `settings` default to the
    defaults, on the CPU; the runs go to `jobs` workers."""
    settings = (settings or Settings()).with_overrides({"laya.prefer_gpu": False})
    with tempfile.TemporaryDirectory(prefix="laya-savings-") as folder:
        specs = []
        plan = []
        for fold in report.folds:
            recording = recordings[fold.left_out]
            candidates = report.predictors[fold.left_out]
            for index, (name, predictor) in enumerate(candidates.items()):
                path = Path(folder) / f"{fold.left_out}-{index}.onnx"
                predictor.export(path, _fold_metadata(predictor, labels, fold.left_out, name))
                point = GridPoint((("laya.model_path", str(path)),))
                (spec,) = backtest_specs(settings, [recording], None, [point], (QuoteGate.LAYA,))
                specs.append(dataclasses.replace(spec, label=f"laya {name}"))
                plan.append((fold.left_out, name))
            # Laya runs on every frame whatever the gate (its verdicts are counted, not acted
            # on), so the other gates need a model too: the fold's last.
            for gate in (QuoteGate.NONE, QuoteGate.IMBALANCE):
                (spec,) = backtest_specs(settings, [recording], None, [point], (gate,))
                specs.append(dataclasses.replace(spec, label=gate.value))
                plan.append((fold.left_out, gate.value))
        metrics = run_specs(specs, jobs, done=_printer(len(specs)) if progress else None)
    by_session: dict[str, dict[str, SessionMetrics]] = {}
    for (session, name), result in zip(plan, metrics, strict=True):
        by_session.setdefault(session, {})[name] = result
    savings = []
    for session, runs in by_session.items():
        none = runs.pop(QuoteGate.NONE.value)
        imbalance = runs.pop(QuoteGate.IMBALANCE.value)
        savings.append(
            SessionSavings(
                recording=session,
                none=GateRun.of("none", none),
                imbalance=GateRun.of("imbalance", imbalance),
                candidates=tuple(GateRun.of(name, result) for name, result in runs.items()),
                table=compare_text([*runs.values(), none, imbalance]),
            )
        )
    return tuple(savings)


def _fold_metadata(predictor, labels: LabelConfig, left_out: str, name: str) -> LayaModelMetadata:
    from engine.laya.feature_set import FEATURE_COUNT, FEATURE_SET_VERSION

    return LayaModelMetadata(
        feature_set_version=FEATURE_SET_VERSION,
        feature_count=FEATURE_COUNT,
        label_parameters=labels.as_metadata(),
        label_version=labels.version,
        thresholds=predictor.thresholds,
        training_summary={"fold_model": name, "left_out": left_out},
    )


def _printer(total: int):
    import sys

    def done(index: int, metrics: SessionMetrics) -> None:
        print(f"backtest {index + 1}/{total}: {metrics.label}", file=sys.stderr, flush=True)

    return done


def rank_by_savings(
    savings: Sequence[SessionSavings], names: Sequence[str], max_fills_lost: float
) -> tuple[str, str] | None:
    """The candidate whose gate saves the most 1 s markout a fill on average over the
    sessions, among those losing at most `max_fills_lost` of the fills on every one and whose
    saving's 95% interval lies above zero; None when no gate's does (noise is no reason to
    choose). When none keeps to `max_fills_lost`, the budget becomes the least any candidate
    kept to (said so): a gate that stops most of the quoting saves per fill only by trading
    less."""

    def saved(name: str) -> tuple[float, float]:
        """The mean saving over the sessions and half its 95% interval (sessions apart)."""
        runs = [(item, item.run(name)) for item in savings]
        mean = float(np.mean([item.saved_per_fill(run) for item, run in runs]))
        half = float(np.hypot.reduce([item.saved_half_width(run) for item, run in runs]))
        return mean, half / len(runs)

    def worst_lost(name: str) -> float:
        return max(item.fills_lost(item.run(name)) for item in savings)

    budget = max(max_fills_lost, min(worst_lost(name) for name in names))
    clear = [
        name for name in names if worst_lost(name) <= budget and saved(name)[0] - saved(name)[1] > 0
    ]
    if not clear:
        return None
    best = max(clear, key=lambda name: saved(name)[0])
    mean, half = saved(best)
    reason = (
        f"its gate saved the most 1 s markout a fill over no gate across the left-out "
        f"sessions, {mean:+.3f} +- {half:.3f} bps on average (95%), losing at most "
        f"{worst_lost(best):.0%} of the fills"
    )
    if budget > max_fills_lost:
        reason += (
            f"; no candidate kept within {max_fills_lost:.0%} fills lost on every session, "
            f"so the budget was the least any kept to, {budget:.0%}"
        )
    return best, reason


def savings_section(savings: Sequence[SessionSavings], max_fills_lost: float) -> list[str]:
    """The model card's backtest section: each session's compare table, then a summary."""
    lines = [
        "## Backtest on each left-out session",
        "",
        "`hft-console backtest --compare` with each fold's candidates as Laya's model (default "
        "settings, CPU): no gate, the top-5 imbalance gate, Laya's gate. Saved: 1 s markout a "
        "fill against no gate, +- half its 95% interval (the fills' spread); a gate counts if "
        f"it loses at most {max_fills_lost:.0%} of the fills. Laya stands aside for its warm-up "
        "(`[laya] warmup_s`, 30 s) and the other gates do not, which costs its gate some fills "
        "on a ten-minute session.",
        "",
    ]
    for item in savings:
        lines += ["```", item.table, "```", ""]
    names = [run.name for run in savings[0].candidates]
    lines += [
        "| candidate | "
        + " | ".join(f"{item.recording}: saved/fill, fills lost" for item in savings)
        + " | mean saved/fill |",
        "|---|" + "---|" * (len(savings) + 1),
    ]
    for name in names:
        runs = [(item, item.run(name)) for item in savings]
        cells = [
            f"{item.saved_per_fill(run):+.3f} +- {item.saved_half_width(run):.3f} bps, "
            f"{item.fills_lost(run):.0%}"
            for item, run in runs
        ]
        mean = np.mean([item.saved_per_fill(item.run(name)) for item in savings])
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {mean:+.3f} bps |")
    lines.append("")
    return lines


def savings_targets(
    savings: Sequence[SessionSavings], name: str, max_fills_lost: float
) -> list[str]:
    """The backtest targets for the shipped candidate: beats no gate on 1 s markout a fill on
    every session, beats the imbalance gate on two of three, within the fills budget. The rule
    shipped when no candidate qualified was no candidate, so it has no fold backtest."""
    if name.removesuffix(GATE_SUFFIX) == IMBALANCE_RULE.name:
        return [
            f"- No backtest of the shipped {IMBALANCE_RULE.name} rule in the folds (only "
            "candidates are backtested); each left-out session's compare table has the "
            "imbalance gate's."
        ]
    lines = []
    beat_imbalance = 0
    for item in savings:
        run = item.run(name)
        over_none = run.markout_1s_bps - item.none.markout_1s_bps
        over_imbalance = run.markout_1s_bps - item.imbalance.markout_1s_bps
        beat_imbalance += over_imbalance > 0
        lost = item.fills_lost(run)
        width = item.saved_half_width(run)
        verdict = "beats it" if over_none > 0 else "does not beat it"
        if abs(over_none) < width:
            verdict += ", within the noise"
        lines.append(
            f"- backtest {item.recording}: 1 s markout a fill {run.markout_1s_bps:+.3f} bps, "
            f"{over_none:+.3f} +- {width:.3f} against no gate ({verdict}), "
            f"{over_imbalance:+.3f} against the imbalance gate; {lost:.0%} of the fills lost "
            f"(budget {max_fills_lost:.0%}: {'met' if lost <= max_fills_lost else 'missed'})."
        )
    lines.append(
        f"- The imbalance gate beaten on 1 s markout a fill on {beat_imbalance} of "
        f"{len(savings)} sessions (target: two of three)."
    )
    return lines
