"""A backtest's figures as text tables and as JSON.

Money is in the quote coin (USDT for the USDT-M perpetuals), signed by its effect on PnL (a fee
paid is negative); markouts in bps, positive when the market moved our way after the fill.
Each report is a list of parts, lines of text and tables, so the terminal and the HTML report
show the same figures. A book's report (several quoted symbols) is a pair's with the book's
figures in its totals, and adds each quoted symbol's quoting and the book's delta before and
after the hedge; its comparison adds each quoted symbol's figures against no gate's.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from engine.laya.decide import QuoteGate
from engine.laya.scorecard import score_lines
from engine.market.instruments import size_text
from engine.tools.backtest.metrics import (
    HORIZONS_MS,
    DeltaFigures,
    MarkoutStats,
    QuoteFigures,
    Saving,
    SessionMetrics,
    SymbolResult,
)
from engine.units import plain


def horizon_label(horizon_ms: int) -> str:
    return f"{horizon_ms} ms" if horizon_ms < 1000 else f"{horizon_ms // 1000} s"


def _signed(value: float, digits: int = 2) -> str:
    return "n/a" if math.isnan(value) else f"{value:+,.{digits}f}"


@dataclass(frozen=True, slots=True)
class Table:
    """Rows of cells, the first the header; the columns from `right_from` on hold figures."""

    rows: tuple[tuple[str, ...], ...]
    right_from: int = 1

    def lines(self) -> list[str]:
        rows = self.rows
        widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
        lines = []
        for row in rows:
            cells = [
                cell.rjust(width) if column >= self.right_from else cell.ljust(width)
                for column, (cell, width) in enumerate(zip(row, widths, strict=True))
            ]
            lines.append("  ".join(cells).rstrip())
        return lines


Part = str | Table
"""A line of text ("" separates blocks) or a table."""


def parts_text(parts: Sequence[Part]) -> str:
    lines: list[str] = []
    for part in parts:
        lines += part.lines() if isinstance(part, Table) else [part]
    return "\n".join(lines)


def _table(rows: Sequence[Sequence[str]], right_from: int = 1) -> Table:
    return Table(tuple(tuple(row) for row in rows), right_from)


@dataclass(frozen=True, slots=True)
class RunGroup:
    """Runs shown together: the gates compared on one recording and grid point (`compared`),
    or, with one gate, every run on one recording."""

    runs: tuple[SessionMetrics, ...]
    compared: bool
    block_s: int | None = None
    """The comparison also per block of this much market time (`--blocks`)."""

    @property
    def title(self) -> str:
        first = self.runs[0]
        name = Path(first.recording).name
        if self.compared:
            point = first.label.partition(" ")[2]
            return f"compare on {name}" + (f" ({point})" if point else "")
        if len(self.runs) == 1:
            return f"{name} [{first.label}]"
        return f"{name}: {len(self.runs)} runs"


def run_groups(
    runs: Sequence[SessionMetrics], gates: int, block_s: int | None = None
) -> list[RunGroup]:
    """`runs` in the plan's order (recording, grid point, gate) in groups: `gates` in a row when
    several were compared (each comparison per block of `block_s` too), else by recording."""
    if gates > 1:
        return [
            RunGroup(tuple(runs[start : start + gates]), True, block_s)
            for start in range(0, len(runs), gates)
        ]
    by_recording: dict[str, list[SessionMetrics]] = {}
    for run in runs:
        by_recording.setdefault(run.recording, []).append(run)
    return [RunGroup(tuple(group), False) for group in by_recording.values()]


def _span_text(metrics: SessionMetrics, start_ns: int | None = None) -> str:
    minutes = metrics.span_s / 60
    return (
        f"{minutes:,.1f} min of market"
        if start_ns is None
        else (
            f"{minutes:,.1f} min of market from "
            f"{datetime.fromtimestamp(start_ns / 1e9, UTC):%Y-%m-%d %H:%M} UTC"
        )
    )


def session_text(metrics: SessionMetrics) -> str:
    """The whole report of one run."""
    return parts_text(session_parts(metrics))


def session_parts(metrics: SessionMetrics) -> list[Part]:
    name = Path(metrics.recording).name
    quote = metrics.symbols[0].quote_coin if metrics.symbols else "USDT"
    lines: list[Part] = [
        f"backtest {name} [{metrics.label}]: {_span_text(metrics)}, {metrics.frames:,} frames "
        f"in {metrics.wall_s:,.1f} s ({metrics.frames_per_s:,.0f} frames/s, "
        f"{metrics.frames_per_cpu_s:,.0f} a CPU second)"
    ]
    if metrics.recording_problem:
        lines.append(f"  recording: {metrics.recording_problem}")
    lines += [f"  {event.text}" for event in metrics.laya_warming]
    rows = [
        [
            f"PnL ({quote})",
            "realized",
            "unrealized",
            "fees",
            "net",
            "volume",
            "fills m/t",
            "position end / max",
        ]
    ]
    for result in metrics.symbols:
        instrument = result.instrument
        rows.append(
            [
                _symbol_title(metrics, result.symbol),
                _signed(result.realized),
                _signed(result.unrealized),
                _signed(result.fees),
                _signed(result.net),
                f"{result.volume:,.0f}",
                f"{result.fills:,} ({result.maker_fills}/{result.taker_fills})",
                f"{size_text(instrument, result.end_position, signed=True)} / "
                f"{size_text(instrument, result.max_abs_position)} {result.base_coin}",
            ]
        )
    rows.append(
        [
            "total",
            _signed(metrics.realized),
            _signed(metrics.unrealized),
            _signed(metrics.fees),
            _signed(metrics.net),
            f"{sum(r.volume for r in metrics.symbols):,.0f}",
            f"{metrics.fill_count:,}",
            "",
        ]
    )
    lines += ["", _table(rows)]
    per_hour = metrics.net / metrics.hours if metrics.hours else math.nan
    lines.append(f"net per hour: {_signed(per_hour)} {quote}")
    lines += [_contract_line(result) for result in metrics.symbols if result.instrument]
    if metrics.is_book:
        lines += ["", _quoting_table(metrics, quote), "", _delta_table(metrics, quote)]
    states = ", ".join(
        f"{state} {seconds / metrics.span_s:.0%}"
        for state, seconds in metrics.state_seconds.items()
        if seconds > 0 and metrics.span_s > 0
    )
    lines += [
        "",
        f"orders {metrics.orders_sent:,} sent, {metrics.cancels:,} cancelled, "
        f"{metrics.denials:,} denied; {metrics.orders_filled:,} traded "
        f"({metrics.fill_ratio:.1%} fill ratio)",
        f"quotes resting {_resting_on(metrics)}: bid {metrics.uptime['bid']:.1%} of the time, "
        f"ask {metrics.uptime['ask']:.1%}; trading state: {states}",
        "",
        _markout_table(metrics),
        "",
        _verdict_line(metrics),
    ]
    if metrics.kev:
        lines.append("Kev: " + ", ".join(f"{k} {v:,}" for k, v in sorted(metrics.kev.items())))
    scorecard = metrics.scorecard
    if scorecard is not None:
        lines += ["", "Laya's scorecard (each book's label once its horizon passed):"]
        for score in scorecard.symbols:
            lines += score_lines(score, scorecard.window_s)
        if scorecard.shadow_fault:
            lines.append(f"shadow model {scorecard.shadow_model} stopped: {scorecard.shadow_fault}")
        if scorecard.fault:
            lines.append(f"the scoring stopped: {scorecard.fault}")
    return lines


def _symbol_title(metrics: SessionMetrics, symbol: str) -> str:
    """A PnL row's title: a book names its hedge and a leader it does not trade."""
    if not metrics.is_book or symbol in metrics.quoted:
        return symbol
    return f"{symbol} (hedge)" if symbol == metrics.hedge else f"{symbol} (leader)"


def _resting_on(metrics: SessionMetrics) -> str:
    if metrics.is_book:
        return f"(the mean of the {len(metrics.quoted)} quoted symbols)"
    return f"on {metrics.quoted[0]}"


def _quotes_title(metrics: SessionMetrics) -> str:
    return "the book's" if metrics.is_book else metrics.quoted[0]


def _quoting_table(metrics: SessionMetrics, quote: str) -> Table:
    """Each quoted symbol of a book: what it made and how its quotes did."""
    rows = [
        [
            "quoted symbol",
            f"net {quote}",
            "net/h",
            "quote fills",
            "up bid/ask",
            *(f"{horizon_label(horizon)} mo" for horizon in HORIZONS_MS),
        ]
    ]
    for quoting in metrics.quoting:
        result = metrics.result(quoting.symbol)
        rows.append(
            [
                quoting.symbol,
                _signed(result.net),
                _signed(result.net / metrics.hours) if metrics.hours else "-",
                f"{result.maker_fills:,}",
                f"{quoting.uptime['bid']:.0%}/{quoting.uptime['ask']:.0%}",
                *(
                    _signed(stats.mean_bps) if stats.count else "-"
                    for stats in quoting.quote_fill_markouts
                ),
            ]
        )
    return _table(rows)


def _delta_table(metrics: SessionMetrics, quote: str) -> Table:
    """The book's delta before and after the hedge, over the run."""
    series = metrics.series
    rows = [
        [
            f"delta, {quote} (weighted as the risk gateway counts it, every {series.step_s:g} s)",
            "end",
            "mean size",
            "largest",
        ],
    ]
    if metrics.hedge is None:
        rows.append(_delta_row("the quoted symbols, not hedged", series.book_delta))
    else:
        rows += [
            _delta_row("the quoted symbols (what the hedge offsets)", series.book_delta),
            _delta_row(f"net, with the hedge {metrics.hedge}", series.net_delta),
        ]
    return _table(rows)


def _delta_row(title: str, delta: np.ndarray) -> list[str]:
    figures = DeltaFigures.of(delta)
    return [title, _signed(figures.end, 0), f"{figures.mean_abs:,.0f}", f"{figures.max_abs:,.0f}"]


def _markout_table(metrics: SessionMetrics) -> Table:
    header = ["markouts, mean bps (median)", *(horizon_label(h) for h in HORIZONS_MS)]
    rows = [header]
    tables = [(f"{_quotes_title(metrics)} quotes' fills", metrics.quote_fill_markouts)]
    if metrics.hedge is not None or not metrics.is_book:  # an unhedged book trades its quotes
        tables.append(("hedge fills", metrics.hedge_markouts))
    tables.append(("quotes pulled (had they filled)", metrics.pulled_markouts))
    for title, stats in tables:
        count = stats[0].count if stats else 0
        rows.append([f"{title} ({count:,})", *(_markout_cell(item) for item in stats)])
    return _table(rows)


def _markout_cell(stats: MarkoutStats) -> str:
    if not stats.count:
        return "-"
    return f"{stats.mean_bps:+.2f} ({stats.median_bps:+.2f})"


def _verdict_line(metrics: SessionMetrics) -> str:
    verdicts = ", ".join(f"{name} {count:,}" for name, count in metrics.verdicts.items())
    acted = ", ".join(f"{name} {count:,}" for name, count in sorted(metrics.actions.items()))
    return f"Laya's verdicts: {verdicts}; acted on: {acted or 'nothing'}"


def compare_text(runs: Sequence[SessionMetrics], block_s: int | None = None) -> str:
    """Variants of one recording side by side, each against quoting with no gate; per block
    of `block_s` of market time too."""
    return parts_text(compare_parts(runs, block_s))


SAVED_CAPTION = (
    "saved/fill 1 s: the quotes' 1 s markout a fill against no gate's, +- half its 95% "
    "interval (the two runs' fills taken as independent, which overlap: conservative); "
    "interval: whether it lies above or below zero (beyond the noise) or holds zero (within it)"
)


@dataclass(frozen=True, slots=True)
class GateFigures:
    """One gate's figures (of a run or a block of it) against no gate's in the same time."""

    label: str
    figures: QuoteFigures
    fills_lost: float | None
    """The share of no gate's quote fills it did not make (None: no gate itself, or none)."""
    saved: Saving | None
    saved_per_hour: float | None

    @classmethod
    def against(cls, label: str, figures: QuoteFigures, base: QuoteFigures | None) -> GateFigures:
        if base is None or figures is base:
            return cls(label, figures, None, None, None)
        lost = (
            (base.quote_fills - figures.quote_fills) / base.quote_fills
            if base.quote_fills
            else None
        )
        saved_hour = (figures.net - base.net) / figures.hours if figures.hours else None
        return cls(
            label, figures, lost, Saving.between(figures.markout_1s, base.markout_1s), saved_hour
        )

    def cells(self) -> list[str]:
        """net/h, quote fills, quote fills lost, saved/fill 1 s, interval."""
        figures, saved = self.figures, self.saved
        return [
            _signed(figures.net_per_hour),
            f"{figures.quote_fills:,}",
            f"{self.fills_lost:.0%}" if self.fills_lost is not None else "-",
            _saved_text(saved) if saved else "-",
            saved.interval if saved else "-",
        ]

    def as_json(self) -> dict[str, object]:
        figures, saved = self.figures, self.saved
        return {
            "gate": self.label,
            "start_ns": figures.start_ns,
            "end_ns": figures.end_ns,
            "net": figures.net,
            "net_per_hour": _finite(figures.net_per_hour),
            "quote_fills": figures.quote_fills,
            "quote_fills_lost": self.fills_lost,
            "markout_1s_bps": _finite(figures.markout_1s.mean_bps),
            "markout_1s_standard_error_bps": _finite(figures.markout_1s.standard_error_bps),
            "saved_per_fill_1s_bps": _finite(saved.bps) if saved else None,
            "saved_half_width_bps": _finite(saved.half_width_bps) if saved else None,
            "saved_interval": saved.interval if saved else None,
            "saved_per_hour": self.saved_per_hour,
        }


def _saved_text(saved: Saving) -> str:
    if math.isnan(saved.bps):  # no fills on a side
        return "n/a"
    if math.isnan(saved.half_width_bps):  # fewer than two fills on a side: no spread
        return f"{_signed(saved.bps)} bps"
    return f"{_signed(saved.bps)} +- {saved.half_width_bps:.2f} bps"


def compared_gates(runs: Sequence[SessionMetrics]) -> list[GateFigures]:
    """Each run's figures (the book's) against the run with no gate (none where none is among
    them)."""
    return _against_ungated(runs, [run.quote_figures() for run in runs])


def compared_symbols(runs: Sequence[SessionMetrics]) -> list[tuple[str, list[GateFigures]]]:
    """Per quoted symbol, each run's figures of that symbol against the run with no gate's."""
    return [
        (symbol, _against_ungated(runs, [run.quote_figures(symbol) for run in runs]))
        for symbol in runs[0].quoted
    ]


def compared_blocks(runs: Sequence[SessionMetrics], block_s: int) -> list[list[GateFigures]]:
    """Per block of `block_s` (`SessionMetrics.block_figures`), each run's figures against the
    run with no gate in the same block."""
    blocks = [run.block_figures(block_s) for run in runs]
    return [
        _against_ungated(runs, [run_blocks[index] for run_blocks in blocks])
        for index in range(len(blocks[0]))
    ]


def _against_ungated(
    runs: Sequence[SessionMetrics], figures: Sequence[QuoteFigures]
) -> list[GateFigures]:
    """`figures` (one a run, in the same time) each against the ungated run's."""
    base = next((f for f, m in zip(figures, runs, strict=True) if _is_ungated(m)), None)
    return [
        GateFigures.against(run.label, item, base) for run, item in zip(runs, figures, strict=True)
    ]


def _is_ungated(metrics: SessionMetrics) -> bool:
    return metrics.label.split(" ", 1)[0] == QuoteGate.NONE.value


def compare_parts(runs: Sequence[SessionMetrics], block_s: int | None = None) -> list[Part]:
    quote = runs[0].symbols[0].quote_coin if runs and runs[0].symbols else "USDT"
    rows = [
        [
            "gate",
            f"net {quote}",
            "net/h",
            "quote fills",
            "1 s mo",
            "5 s mo",
            "up bid/ask",
            "pulled",
            "quote fills lost",
            "saved/fill 1 s",
            "interval",
            "saved/h",
        ]
    ]
    for metrics, gate in zip(runs, compared_gates(runs), strict=True):
        net_hour, fills, lost, saved_fill, interval = gate.cells()
        rows.append(
            [
                metrics.label,
                _signed(metrics.net),
                net_hour,
                fills,
                _signed(metrics.markout(1_000).mean_bps),
                _signed(metrics.markout(5_000).mean_bps),
                f"{metrics.uptime['bid']:.0%}/{metrics.uptime['ask']:.0%}",
                f"{metrics.pulled_markouts[0].count:,}",
                lost,
                saved_fill,
                interval,
                _signed(gate.saved_per_hour) if gate.saved_per_hour is not None else "-",
            ]
        )
    name = Path(runs[0].recording).name if runs else ""
    book = bool(runs) and runs[0].is_book
    whose = "the quoted symbols' maker fills" if book else "the quoted symbol's maker fills"
    parts: list[Part] = [
        f"compare on {name} (quote fills: {whose}; mo = markout)",
        _table(rows),
        SAVED_CAPTION,
    ]
    if book:
        parts += ["", *_symbol_parts(runs, quote)]
    if block_s is not None:
        parts += ["", *_block_parts(runs, block_s, quote)]
    return parts


def _symbol_parts(runs: Sequence[SessionMetrics], quote: str) -> list[Part]:
    rows = [
        [
            "quoted symbol",
            "gate",
            f"net {quote}",
            "net/h",
            "quote fills",
            "quote fills lost",
            "saved/fill 1 s",
            "interval",
        ]
    ]
    for symbol, gates in compared_symbols(runs):
        rows += [[symbol, gate.label, _signed(gate.figures.net), *gate.cells()] for gate in gates]
    return [
        "per quoted symbol: its net (without the hedge's) and its quotes' fills, each gate "
        "against no gate's on the same symbol",
        _table(rows, right_from=2),
    ]


def _block_parts(runs: Sequence[SessionMetrics], block_s: int, quote: str) -> list[Part]:
    rows = [
        [
            "block",
            "from (UTC)",
            "gate",
            "length",
            f"net {quote}",
            "net/h",
            "quote fills",
            "quote fills lost",
            "saved/fill 1 s",
            "interval",
        ]
    ]
    for number, gates in enumerate(compared_blocks(runs, block_s), 1):
        for gate in gates:
            figures = gate.figures
            rows.append(
                [
                    str(number),
                    f"{datetime.fromtimestamp(figures.start_ns / 1e9, UTC):%Y-%m-%d %H:%M}",
                    gate.label,
                    f"{figures.hours:.2f} h"
                    if figures.hours >= 1
                    else f"{figures.hours * 60:.1f} min",
                    _signed(figures.net),
                    *gate.cells(),
                ]
            )
    return [
        f"per block of {block_text(block_s)} of market time from the first frame (the last "
        "takes the remainder, as train's validation blocks do): net = the change in net PnL "
        "(realized, fees, what is open marked to the mid in force) between the block's edges; "
        "the quotes' fills are those filled in the block, each gate against no gate's in the "
        "same block",
        _table(rows, right_from=3),
    ]


def block_text(block_s: int) -> str:
    """A block's length as `--blocks` gives it: "8 h", "90 min"."""
    return f"{block_s / 3600:g} h" if block_s % 3600 == 0 else f"{block_s // 60:g} min"


def compare_json(runs: Sequence[SessionMetrics], block_s: int | None = None) -> dict[str, object]:
    """`compare_parts`' figures: each gate against no gate, per block of `block_s` too."""
    return {
        "recording": runs[0].recording,
        "gates": [gate.as_json() for gate in compared_gates(runs)],
        "symbols": [
            {"symbol": symbol, "gates": [gate.as_json() for gate in gates]}
            for symbol, gates in compared_symbols(runs)
        ],
        "block_s": block_s,
        "blocks": (
            [[gate.as_json() for gate in gates] for gates in compared_blocks(runs, block_s)]
            if block_s is not None
            else []
        ),
    }


def backtest_json(groups: Sequence[RunGroup]) -> dict[str, object]:
    """`--json`'s and report.json's: every run's metrics, and each comparison's figures."""
    return {
        "runs": [metrics_json(run) for group in groups for run in group.runs],
        "compare": [compare_json(group.runs, group.block_s) for group in groups if group.compared],
    }


def ranking_text(runs: Sequence[SessionMetrics]) -> str:
    """A sweep's runs ranked by net PnL."""
    return parts_text(ranking_parts(runs))


def ranking_parts(runs: Sequence[SessionMetrics]) -> list[Part]:
    quote = runs[0].symbols[0].quote_coin if runs and runs[0].symbols else "USDT"
    ranked = sorted(runs, key=lambda m: m.net, reverse=True)
    rows = [
        [
            "rank",
            "run",
            "recording",
            f"net {quote}",
            "net/h",
            "fills",
            "quote fills",
            "1 s mo",
            "5 s mo",
        ]
    ]
    for rank, metrics in enumerate(ranked, 1):
        rows.append(
            [
                str(rank),
                metrics.label,
                Path(metrics.recording).name,
                _signed(metrics.net),
                _signed(metrics.net / metrics.hours) if metrics.hours else "-",
                f"{metrics.fill_count:,}",
                f"{metrics.quote_fills:,}",
                _signed(metrics.markout(1_000).mean_bps),
                _signed(metrics.markout(5_000).mean_bps),
            ]
        )
    return [_table(rows, right_from=3)]


def metrics_json(metrics: SessionMetrics) -> dict[str, object]:
    """Everything but the per-fill rows (those go to the CSV); NaN as null."""

    def markouts(stats: Sequence[MarkoutStats]) -> list[dict[str, object]]:
        return [
            {
                "horizon_ms": item.horizon_ms,
                "count": item.count,
                "mean_bps": _finite(item.mean_bps),
                "median_bps": _finite(item.median_bps),
                "p10_bps": _finite(item.p10_bps),
                "p90_bps": _finite(item.p90_bps),
            }
            for item in stats
        ]

    return {
        "label": metrics.label,
        "recording": metrics.recording,
        "recording_problem": metrics.recording_problem,
        "laya_still_warming_up": [event.text for event in metrics.laya_warming],
        "quoted": list(metrics.quoted),
        "hedge": metrics.hedge,
        "market_span_s": metrics.span_s,
        "frames": metrics.frames,
        "wall_s": metrics.wall_s,
        "frames_per_s": metrics.frames_per_s,
        "cpu_s": metrics.cpu_s,
        "frames_per_cpu_s": metrics.frames_per_cpu_s,
        "rss_kb": {
            "at_100k_frames": metrics.rss_kb_at_100k,
            "end": metrics.rss_kb_end,
            "growth": (
                metrics.rss_kb_end / metrics.rss_kb_at_100k - 1 if metrics.rss_kb_at_100k else None
            ),
        },
        "pnl": {
            "realized": metrics.realized,
            "unrealized": metrics.unrealized,
            "fees": metrics.fees,
            "net": metrics.net,
            "net_per_hour": metrics.net / metrics.hours if metrics.hours else None,
        },
        "symbols": [
            {
                "symbol": result.symbol,
                "quote_coin": result.quote_coin,
                "fills": result.fills,
                "maker_fills": result.maker_fills,
                "taker_fills": result.taker_fills,
                "volume": result.volume,
                "realized": result.realized,
                "unrealized": result.unrealized,
                "fees": result.fees,
                "net": result.net,
                "end_position": result.end_position,
                "max_abs_position": result.max_abs_position,
                "mean_position": result.mean_position,
                "mean_abs_position": result.mean_abs_position,
                "contract": _contract_json(result),
            }
            for result in metrics.symbols
        ],
        "fills": metrics.fill_count,
        "quote_fills": metrics.quote_fills,
        "orders_sent": metrics.orders_sent,
        "cancels": metrics.cancels,
        "denials": metrics.denials,
        "orders_filled": metrics.orders_filled,
        "fill_ratio": metrics.fill_ratio,
        "uptime": metrics.uptime,
        "quoting": [
            {
                "symbol": quoting.symbol,
                "uptime": quoting.uptime,
                "quote_fill_markouts": markouts(quoting.quote_fill_markouts),
            }
            for quoting in metrics.quoting
        ],
        "delta": {
            name: dataclasses.asdict(DeltaFigures.of(values))
            for name, values in (
                ("book", metrics.series.book_delta),
                ("net", metrics.series.net_delta),
            )
        },
        "state_seconds": metrics.state_seconds,
        "markouts": {
            "quote_fills": markouts(metrics.quote_fill_markouts),
            "hedge": markouts(metrics.hedge_markouts),
            "pulled": markouts(metrics.pulled_markouts),
        },
        "verdicts": metrics.verdicts,
        "actions": metrics.actions,
        "kev": metrics.kev,
        "laya_scorecard": metrics.scorecard.as_dict() if metrics.scorecard is not None else None,
        "series": {
            "step_s": metrics.series.step_s,
            "at_ns": metrics.series.at_ns.tolist(),
            "equity": _finite_list(metrics.series.equity),
            "position": _finite_list(metrics.series.position),
            "mid": _finite_list(metrics.series.mid),
            "book_delta": _finite_list(metrics.series.book_delta),
            "net_delta": _finite_list(metrics.series.net_delta),
        },
    }


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value


def _finite_list(values: np.ndarray) -> list[float | None]:
    return [_finite(value) for value in values.tolist()]


def _contract_line(result: SymbolResult) -> str:
    """'NEXOUSDT: tick 0.001, lot 0.1 (recording); fees maker 2, taker 6 bps (contract)'."""
    instrument, contract = result.instrument, result.contract
    assert instrument is not None
    grid = f"{result.symbol}: tick {plain(instrument.tick_size)}, lot {plain(instrument.size_step)}"
    fees = ", ".join(
        f"{side} {plain(round(rate * 10_000, 4))}"
        for side, rate in (
            ("maker", instrument.maker_fee_rate),
            ("taker", instrument.taker_fee_rate),
        )
        if rate is not None
    )
    if contract is None:
        return f"{grid}; fees {fees} bps" if fees else grid
    return f"{grid} ({contract.origin.value}); fees {fees} bps ({contract.fee_origin.value})"


def _contract_json(result: SymbolResult) -> dict[str, object] | None:
    """The contract a symbol traded on, where it came from and the fee rates charged."""
    instrument, contract = result.instrument, result.contract
    if instrument is None:
        return None
    return {
        "tick": instrument.tick_size,
        "lot": instrument.size_step,
        "min_notional": instrument.min_notional,
        "origin": contract.origin.value if contract is not None else None,
        "maker_fee_rate": instrument.maker_fee_rate,
        "taker_fee_rate": instrument.taker_fee_rate,
        "fee_origin": contract.fee_origin.value if contract is not None else None,
    }
