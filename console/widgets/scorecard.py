"""Laya's scorecard: a line per symbol, Laya's per-side AUC over the last 15 minutes against
the imbalance rule's (and a shadow model's), the share of its pulls then run over, and a
sparkline of Laya's rolling AUC less the rule's."""

from __future__ import annotations

import math
from typing import ClassVar

from rich.text import Text

from console.view import ConsoleSnapshot
from console.widgets import format as fmt
from console.widgets.latency import SPARK_LEVELS
from console.widgets.lines import LinePane, fit
from engine.laya.scorecard import ModelScore, ScorecardView, SymbolScore

EDGE_SPAN = 0.1
"""The sparkline's full height: Laya's AUC this far above (or below) the rule's."""


_SPARK_CELLS = 6


def _auc(value: float) -> str:
    """Two decimals without the leading zero (".79"), so a symbol fits a narrow pane."""
    if math.isnan(value):
        return "-"
    return "1.0" if value >= 0.995 else f"{value:.2f}"[1:]


def _pair(model: ModelScore) -> str:
    return f"{_auc(model.ask_auc)}/{_auc(model.bid_auc)}"


def edge_cells(trend: tuple[tuple[float, float], ...], width: int) -> list[tuple[str, bool]]:
    """The last `width` score passes as sparkline cells: |Laya's rolling AUC - the rule's| in
    eighth-blocks (blank where either is not known yet), and whether Laya was ahead."""
    cells = []
    for laya, rule in trend[-width:] if width > 0 else ():
        edge = laya - rule
        if math.isnan(edge):
            cells.append((" ", True))
            continue
        level = min(7, int(min(abs(edge), EDGE_SPAN) / EDGE_SPAN * 7.999))
        cells.append((SPARK_LEVELS[level], edge >= 0))
    return cells


class ScorecardPane(LinePane[ScorecardView]):
    """Laya's AUC is drawn in the success colour where it ranks above the rule on both
    sides, the error colour where below on both; the sparkline's cells likewise by sign."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "scorecard--ahead",
        "scorecard--behind",
        "scorecard--label",
    }
    waiting_text = "waiting for the engine"
    pane_id = "scorecard"
    pane_title = "Laya's scorecard"
    budget = "lists_s"

    def part(self, snapshot: ConsoleSnapshot, symbol: str | None) -> ScorecardView | None:
        return snapshot.scorecard

    def rows(self, view: ScorecardView, width: int, height: int) -> list[Text]:
        label = self.style("scorecard--label")
        header = [(0, Text(f"AUC ask/bid {view.window_s / 60:g} min: Laya vs rule", label))]
        if view.shadow_model:
            header.append((1, Text(" vs shadow", label)))
        lines = [fit(header, width, "")]
        for score in view.symbols:
            lines.append(self._symbol_row(score, width))
        if view.shadow_model:
            lines.append(Text(f"shadow {_name(view.shadow_model)}", label))
        if view.shadow_fault:
            lines.append(
                Text(f"shadow stopped: {view.shadow_fault}", self.style("scorecard--behind"))
            )
        if view.fault:
            lines.append(Text(f"scoring stopped: {view.fault}", self.style("scorecard--behind")))
        if view.dropped:
            lines.append(Text(f"{fmt.count(view.dropped)} books dropped (scorer behind)", label))
        return lines

    def _symbol_row(self, score: SymbolScore, width: int) -> Text:
        label = self.style("scorecard--label")
        if not score.labelled:
            return Text(f"{score.symbol:<9} no labelled books yet", label)
        laya, rule = score.laya, score.rule
        ahead = laya.ask_auc > rule.ask_auc and laya.bid_auc > rule.bid_auc
        behind = laya.ask_auc < rule.ask_auc and laya.bid_auc < rule.bid_auc
        tone = (
            self.style("scorecard--ahead")
            if ahead
            else self.style("scorecard--behind")
            if behind
            else label
        )
        precision = "-" if math.isnan(laya.pull_precision) else f"{laya.pull_precision:.0%}"
        parts: list[tuple[int, Text]] = [
            (0, Text(f"{score.symbol:<8}")),
            (0, Text(_pair(laya), tone)),
            (0, Text(f"vs {_pair(rule)}", label)),
        ]
        if score.shadow is not None:
            parts.append((2, Text(f"vs {_pair(score.shadow)}", label)))
        parts.append((3, Text(f"pulls {precision} run over", label)))
        # The sparkline keeps a few cells however narrow the pane: it is the trend at a glance.
        row = fit(parts, width - _SPARK_CELLS - 1, " ")
        room = width - row.cell_len - 1
        if room > 0:
            row.append(" ")
            ahead_style, behind_style = (
                self.style("scorecard--ahead"),
                self.style("scorecard--behind"),
            )
            for cell, ahead in edge_cells(score.trend, room):
                row.append(cell, ahead_style if ahead else behind_style)
        return row


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]
