"""What a training run produced (`TrainReport`), the markdown model card written next to the
model, and the short summary for the terminal."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.lab.candidates import GATE_SUFFIX, FittedCandidate
from engine.lab.evaluate import BurstWarningReport
from engine.lab.folds import FoldReport, fold_table
from engine.lab.learning_curve import LearningPoint, learning_curve_table
from engine.lab.train_config import TrainConfig
from engine.laya.feature_set import FEATURE_COUNT
from engine.laya.features import VENUE_SCALED_FEATURES
from engine.laya.model import LayaModelMetadata
from engine.laya.verdict import CLASS_NAMES


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """One training recording as the model card lists it."""

    name: str
    simulated: bool
    symbols: tuple[str, ...]
    frames: int
    labelled: int
    minutes: float
    class_counts: dict[str, int]
    problem: str | None = None
    """What was wrong with the recording (cut short, malformed lines); None: nothing."""
    content_digest: str | None = None
    """`engine.user_files.content_digest` of the recording (None: simulated), by which `eval`
    knows a recording the model was trained on."""


@dataclass(frozen=True, slots=True)
class LatencySummary:
    """Per-frame `LayaClassifier.infer` time of the shipped model on one feature row;
    `runs_on`: where the rows ran, in `laya_runs_on`'s words ("CPU native kernel")."""

    runs_on: str
    frames: int
    p50_us: float
    p99_us: float


@dataclass(frozen=True, slots=True, eq=False)
class TrainReport:
    """What `train` produced and measured; `model_card` renders it."""

    model_path: Path
    card_path: Path
    model_bytes: int
    model_sha256: str
    sessions: tuple[SessionSummary, ...]
    config: TrainConfig
    folds: FoldReport
    """Left out: each session, or each block of market time of one recording."""
    learning_curve: tuple[LearningPoint, ...]
    savings: tuple | None
    """Per left-out session, the backtest of each fold's candidates (`engine.lab.savings`)."""
    choice: str
    choice_reason: str
    fitted: FittedCandidate
    latency: LatencySummary
    bursts: BurstWarningReport | None
    metadata: LayaModelMetadata


def _targets(report: TrainReport) -> list[str]:
    """The issue's targets for the shipped candidate, each met or missed by how much."""
    folds = report.folds
    name = report.choice
    lines = []
    for fold in folds.folds:
        row = fold.row(name)
        imbalance = fold.row("imbalance")
        margins = [
            (side, ours.value - theirs.value)
            for side, ours, theirs in (
                ("ask", row.ask_auc, imbalance.ask_auc),
                ("bid", row.bid_auc, imbalance.bid_auc),
            )
        ]
        lines.append(
            f"- {fold.left_out}: per-side AUC against the imbalance rule's: "
            + ", ".join(
                f"{side} {margin:+.3f} (target +0.10: "
                f"{'met' if margin >= 0.1 else f'short by {0.1 - margin:.3f}'})"
                for side, margin in margins
            )
            + "."
        )
        rule = fold.row("imbalance + jump")
        margin = row.macro_f1.value - rule.macro_f1.value
        lines.append(
            f"- {fold.left_out}: macro-F1 {row.macro_f1.text()} against the imbalance + jump "
            f"rule's {rule.macro_f1.value:.3f}: {margin:+.3f} (target +0.030: "
            f"{'met' if margin >= 0.03 else f'short by {0.03 - margin:.3f}'}); ask AUC "
            f"{row.ask_auc.text()}, bid AUC {row.bid_auc.text()} (target 0.70: "
            + ", ".join(
                f"{side} {'met' if value >= 0.7 else f'short by {0.7 - value:.3f}'}"
                for side, value in (("ask", row.ask_auc.value), ("bid", row.bid_auc.value))
            )
            + ")."
        )
    if report.savings:
        from engine.lab.savings import savings_targets

        lines += savings_targets(report.savings, name, report.config.max_fills_lost)
    return lines


def model_card(report: TrainReport) -> str:
    """The markdown model card written next to the model."""
    config = report.config
    labels = config.dataset.labels
    fitted = report.fitted
    recorded = [item for item in report.sessions if not item.simulated]
    labelled = sum(item.labelled for item in recorded)
    frames = sum(item.frames for item in recorded)
    blocks = len(recorded) == 1
    lines = [
        f"# Laya model card: {report.model_path.name}",
        "",
        f"- Feature set `{report.metadata.feature_set_version}` ({FEATURE_COUNT} features, "
        f"`engine/laya/features.py`), classes {', '.join(CLASS_NAMES)}.",
        f"- Candidate `{report.choice}`: {fitted.spec.describe()} on "
        f"{len(fitted.spec.inputs)} features, {fitted.network.parameter_count} parameters, "
        f"{fitted.epochs} epochs; {report.model_bytes:,} bytes, sha256 "
        f"`{report.model_sha256[:16]}...`, created {report.metadata.created_utc}.",
        f"- Thresholds (probability each class must reach, in class order): "
        f"{', '.join(f'{value:.3f}' for value in fitted.thresholds)}, tuned on "
        f"{fitted.thresholds_from}.",
        f"- Inference: `LayaClassifier.infer` on one row, {report.latency.runs_on}, "
        f"p50 {report.latency.p50_us:.1f} us, p99 {report.latency.p99_us:.1f} us over "
        f"{report.latency.frames} frames.",
        "",
        "## Data",
        "",
        "| recording | content digest | kind | symbols (the leader last) | books15 frames | "
        "labelled | minutes | " + " | ".join(CLASS_NAMES) + " |",
        "|---|---|---|---|---|---|---|" + "---|" * len(CLASS_NAMES),
    ]
    lines += [
        f"| {item.name} | {f'`{item.content_digest[:16]}...`' if item.content_digest else '-'} | "
        f"{'simulated' if item.simulated else 'recorded'} | "
        f"{', '.join(item.symbols)} | {item.frames} | {item.labelled} | {item.minutes:g} | "
        + " | ".join(str(item.class_counts[name]) for name in CLASS_NAMES)
        + " |"
        for item in report.sessions
    ]
    problems = [f"- Reading: {item.problem}" for item in report.sessions if item.problem]
    lines += ["", *problems] if problems else []
    lines += [
        "",
        "## Labels",
        "",
        f"Labels (`engine/laya/labels.py`, scheme {labels.scheme}): horizon {labels.horizon_ms} "
        f"ms; the ask is run over when the mid rises {labels.lean_sigma:g} sigma within it, "
        f"the bid when it falls as far; EMERGENCY when both are or a move reaches "
        f"{labels.emergency_sigma:g} sigma, else LEAN_BUY (ask) or LEAN_SELL (bid). sigma: the "
        f"mean absolute {labels.horizon_ms / 1000:g} s return "
        + (
            f"of the mid on a clock of that step (any book cadence; a horizon without a book "
            f"is a held mid when the next comes within {labels.max_quiet_ms / 1000:g} s) "
            if labels.scheme in ("clock", "tick")
            else "of every frame "
        )
        + f"over the trailing {labels.sigma_window_ms / 1000:g} s x sqrt(pi/2), never below "
        f"the same over {labels.sigma_floor_window_ms / 1000:g} s"
        + (
            f" nor {labels.sigma_floor_steps:g} of the mid's step (its smallest move: half a "
            "tick on a tick grid)"
            if labels.sigma_floor_steps
            else ""
        )
        + f", from {labels.min_sigma_samples} returns. No label in a symbol's first "
        f"{config.dataset.warmup_ms / 1000:g} s (Laya's warm-up).",
        "",
        f"Labelled: {labelled:,} of {frames:,} recorded books15 frames "
        f"({labelled / max(1, frames):.1%}), label version {labels.version} "
        f"(scheme {labels.scheme}).",
        "",
        "## Training",
        "",
        "Every candidate: weighted softmax cross-entropy (class weights (N / (K N_c))^"
        f"{config.class_weight_power:g}, every recorded session weighing the same), Adam with "
        "decoupled weight decay, the mirror image of every frame added (bids and asks swapped, "
        "moves reversed). Epochs and thresholds come from an inner leave-one-session-out (fit "
        "on all training sessions but one, early stopping and predictions on that one), "
        "LEAN_BUY and LEAN_SELL sharing one threshold; two operating points: macro-F1, and "
        f"`{GATE_SUFFIX.strip()}` (macro-F1 with our quotes "
        f"pulled at most {config.gate_pull_rate:.0%} of the market time, each EMERGENCY "
        f"counting its {config.emergency_cooldown_ms:g} ms cooldown).",
        "",
        "| candidate | network | reads |",
        "|---|---|---|",
    ]
    lines += [
        f"| {spec.name} | {spec.describe()} | "
        + (
            ", ".join(f"`{name}`" for name in spec.inputs)
            if len(spec.inputs) < 20
            else f"{len(spec.inputs)} features: all but "
            + ", ".join(f"`{name}`" for name in VENUE_SCALED_FEATURES)
        )
        + " |"
        for spec in config.candidates
    ]
    lines += ["", "## Leave-one-block-out" if blocks else "## Leave-one-session-out", ""]
    if blocks:
        lines += [
            f"One recording: cut into blocks of {config.block_ms / 3_600_000:g} h of market time "
            "(the remainder joins the last), each left out as a session is; frames within the "
            f"label horizon ({labels.horizon_ms} ms) of a cut, on either side, are purged.",
            "",
        ]
    bootstrap = report.folds.bootstrap
    lines += [
        "Each candidate fitted on the other sessions, scored on the left-out one, against "
        "the baselines fitted on the same sessions: majority, the top-5 imbalance rule, and "
        "imbalance + jump (EMERGENCY when `jump_sigmas_5s` reaches j). Per-side AUC: how "
        "P(LEAN_BUY) + P(EMERGENCY) ranks the frames whose ask was run over, and the same "
        "for the bid (for the rules: the imbalance, +2 where the jump rule says EMERGENCY). "
        f"Intervals: {bootstrap.level:.0%} block bootstrap ({bootstrap.resamples} draws of "
        f"{bootstrap.block_ms / 1000:g} s blocks). Pulls: the share of frames whose verdict "
        "pulls a side.",
        "",
        *fold_table(report.folds),
        "",
    ]
    for fold in report.folds.folds:
        parameters = fold.baseline_parameters
        lines.append(
            f"- {fold.left_out}: {fold.frames} labelled frames "
            f"({', '.join(f'{k} {v}' for k, v in fold.class_counts.items())}); baselines: "
            f"majority {CLASS_NAMES[int(parameters['majority'])]}, imbalance tau "
            f"{parameters['imbalance_tau']:.3f}, rule tau {parameters['rule_tau']:.3f} and "
            f"j {parameters['rule_jump_sigmas']:.2f} sigmas."
        )
    lines.append("")
    lines += [
        "## Learning curve",
        "",
        f"`{report.choice}` ({report.fitted.epochs} epochs) fitted on the first hours of each "
        "fold's training market time, per-side AUC on the left-out data (mean over the folds "
        "with that much training time) beside the imbalance rule's (raw top-5 imbalance) on "
        "the same frames; 'all' is the fold table's.",
        "",
        *learning_curve_table(report.learning_curve),
        "",
    ]
    if report.savings:
        from engine.lab.savings import savings_section

        lines += savings_section(report.savings, report.config.max_fills_lost)
    lines += [
        "## Choice",
        "",
        f"`{report.choice}` ships: {report.choice_reason}.",
        "",
        "## Targets",
        "",
        *_targets(report),
        "",
    ]
    if report.bursts is not None:
        bursts = report.bursts
        lead = bursts.as_dict()["median_lead_ms"]
        lines += [
            "## Simulator: warnings ahead of informed bursts",
            "",
            f"A fresh default simulated market (seed {bursts.seed}, {bursts.minutes:g} minutes, "
            f"not used in training): {bursts.caught} of {bursts.bursts} bursts "
            f"({bursts.fraction_caught:.0%}) had an EMERGENCY verdict on the burst's symbol "
            "inside the lead window (burst start to jump start)"
            + (f", a median {lead:.0f} ms before the jump" if lead is not None else "")
            + f". EMERGENCY verdicts away from any burst: {bursts.false_alarms_per_minute:.2f} "
            "a minute.",
            "",
        ]
    lines += [
        "## Limits",
        "",
        f"- {sum(item.minutes for item in recorded):g} minutes of recorded data in "
        f"{len(recorded)} session(s): moves cluster, so each fold holds few distinct events and "
        "its intervals are wide.",
        "- Retrain on recordings of the market the engine trades, several days of them, with "
        "`hft-console train` (see `docs/laya.md`).",
        "",
    ]
    return "\n".join(lines)


def format_report(report: TrainReport) -> str:
    """A short text summary for the terminal."""
    lines = [
        f"model: {report.model_path} ({report.model_bytes:,} bytes), card: {report.card_path}",
        f"shipped: {report.choice} ({report.choice_reason})",
        f"inference p50 {report.latency.p50_us:.1f} us ({report.latency.runs_on})",
    ]
    for fold in report.folds.folds:
        row, rule = fold.row(report.choice), fold.row("imbalance + jump")
        imbalance = fold.row("imbalance")
        lines.append(
            f"left out {fold.left_out}: macro-F1 {row.macro_f1.value:.3f} (imbalance + jump "
            f"{rule.macro_f1.value:.3f}), ask AUC {row.ask_auc.value:.3f} (imbalance "
            f"{imbalance.ask_auc.value:.3f}), bid AUC {row.bid_auc.value:.3f} (imbalance "
            f"{imbalance.bid_auc.value:.3f})"
        )
    lines += [f"recording: {item.problem}" for item in report.sessions if item.problem]
    return "\n".join(lines)
