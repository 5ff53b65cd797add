"""Fast-path latency per stage (and Kev's), the total's distribution, and the p99 budget."""

from __future__ import annotations

import math
from typing import ClassVar

from rich.text import Text

from console.view import ConsoleSnapshot, HistogramBin, LatencyView, StageLatency
from console.widgets import format as fmt
from console.widgets.lines import LinePane

_NAME_WIDTH = 8
_VALUE_WIDTH = 9
_COUNT_WIDTH = 11
_LAYOUTS = (
    # (columns, the cells they need): the widest that fits is used.
    (("p50", "p99", "p99.9", "max", "budget", "count"), 8 + 5 * 9 + 11),
    (("p50", "p99", "p99.9", "max", "budget"), 8 + 5 * 9),
    (("p50", "p99", "max"), 8 + 3 * 9),
)
SPARK_LEVELS = "▁▂▃▄▅▆▇█"
"""Eighth-blocks, lowest first: the cells of a sparkline."""


def sparkline(bins: tuple[HistogramBin, ...], width: int) -> str:
    """The bins' counts as one row of eighth-blocks on a log scale (a lone outlier shows), the
    bins merged evenly when there are more of them than cells."""
    if not bins or width <= 0:
        return ""
    cells = min(width, len(bins))
    merged = [0] * cells
    for index, item in enumerate(bins):
        merged[index * cells // len(bins)] += item.count
    top = math.log1p(max(merged)) or 1.0
    return "".join(
        " " if value == 0 else SPARK_LEVELS[min(7, int(math.log1p(value) / top * 7.999))]
        for value in merged
    )


class LatencyPane(LinePane[LatencyView]):
    """A p99 above its budget is drawn in the warning colour and marked with `!` (for
    terminals without colour)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "latency--header",
        "latency--over",
        "latency--label",
        "latency--bars",
    }
    pane_id = "latency"
    pane_title = "latency"
    budget = "latency_s"

    def part(self, snapshot: ConsoleSnapshot, symbol: str | None) -> LatencyView:
        return snapshot.latency

    def rows(self, view: LatencyView, width: int, height: int) -> list[Text]:
        columns = next(
            (columns for columns, needed in _LAYOUTS if needed <= width), _LAYOUTS[-1][0]
        )
        header = Text(f"{'stage':<{_NAME_WIDTH}}", self.style("latency--header"))
        for column in columns:
            cells = _COUNT_WIDTH if column == "count" else _VALUE_WIDTH
            header.append(f"{column:>{cells}}", self.style("latency--header"))
        lines = [header]
        lines += [self._stage(stage, columns) for stage in view.stages]
        bins = view.total_histogram
        if bins:
            lead = f"total {fmt.duration_us(bins[0].low_us)} "
            tail = f" {fmt.duration_us(bins[-1].high_us)}"
            row = Text(lead, self.style("latency--label"))
            row.append(sparkline(bins, width - len(lead) - len(tail)), self.style("latency--bars"))
            row.append(tail, self.style("latency--label"))
            lines.append(row)
        return lines

    def _stage(self, stage: StageLatency, columns: tuple[str, ...]) -> Text:
        row = Text(f"{stage.name:<{_NAME_WIDTH}}")
        if stage.count == 0:
            row.append(f"{'no samples':>{_VALUE_WIDTH * 2}}", self.style("latency--label"))
            return row
        values = {
            "p50": stage.p50_us,
            "p99": stage.p99_us,
            "p99.9": stage.p999_us,
            "max": stage.max_us,
        }
        for column in columns:
            if column == "budget":
                budget = stage.budget_p99_us
                text = "-" if budget is None else fmt.duration_us(budget)
                row.append(f"{text:>{_VALUE_WIDTH}}", self.style("latency--label"))
            elif column == "count":
                row.append(
                    f"{fmt.count(stage.count):>{_COUNT_WIDTH}}", self.style("latency--label")
                )
            elif column == "p99" and stage.over_budget:
                text = "!" + fmt.duration_us(values[column])
                row.append(f"{text:>{_VALUE_WIDTH}}", self.style("latency--over"))
            else:
                row.append(f"{fmt.duration_us(values[column]):>{_VALUE_WIDTH}}")
        return row
