"""`--report DIR`'s pictures and page: each figure of charts.py as a PNG (matplotlib, the
`report` extra, drawn on its Agg canvas without pyplot), and report.html, one self-contained
file (the PNGs inline) with the same tables as the terminal."""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping, Sequence
from datetime import UTC
from pathlib import Path

from engine.extras import require_module
from engine.tools.backtest.charts import Chart, Figure, time_text
from engine.tools.backtest.report import (
    Part,
    RunGroup,
    Table,
    compare_parts,
    ranking_parts,
    session_parts,
)

REPORT_EXTRA = "pip install '.[report]'"
_INCHES_WIDE = 13.0
_DPI = 100
_STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; color: #222; margin: 0; background: #fafafa; }
main { max-width: 1340px; margin: 0 auto; padding: 1.5rem 2rem 4rem; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; }
h2 { font-size: 1.25rem; margin-top: 2.5rem; border-bottom: 1px solid #ddd; }
.meta { color: #555; }
nav ul { padding-left: 1.2rem; columns: 2; }
table { border-collapse: collapse; margin: 0.8rem 0; font-variant-numeric: tabular-nums; }
th, td { padding: 0.25rem 0.7rem; border-bottom: 1px solid #e4e4e4; white-space: nowrap; }
th { background: #f0f0f0; text-align: left; font-weight: 600; }
td.figure, th.figure { text-align: right; }
tr:last-child td { border-bottom: none; }
figure { margin: 1rem 0; }
img { max-width: 100%; height: auto; background: #fff; border: 1px solid #e4e4e4; }
p { margin: 0.5rem 0; }
"""


def require_matplotlib() -> None:
    """A one-line ValueError naming the extra when matplotlib cannot be imported."""
    require_module(
        "matplotlib.backends.backend_agg",
        "--report draws its charts with matplotlib, which did not import",
        REPORT_EXTRA,
        ValueError,
    )


def figure_png(figure: Figure) -> bytes:
    """The figure's market-time charts stacked on a shared time axis, the others (the markout
    curve) beside them."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as Canvas

    timed = [chart for chart in figure.charts if chart.time_axis]
    named = [chart for chart in figure.charts if not chart.time_axis]
    rows = max(len(timed), len(named), 1)
    canvas = Canvas(figsize=(_INCHES_WIDE, 0.6 + 3.2 * rows), dpi=_DPI, layout="constrained")
    columns = (3 if timed else 1) if named else 1
    grid = canvas.add_gridspec(rows, columns)
    first = None
    for row, chart in enumerate(timed):
        axes = canvas.add_subplot(grid[row, : columns - 1 if named else 1], sharex=first)
        first = first or axes
        _draw(axes, chart, bottom=row == len(timed) - 1)
    for row, chart in enumerate(named):
        span = slice(None) if len(named) == 1 else row
        _draw(canvas.add_subplot(grid[span, columns - 1]), chart, bottom=True)
    canvas.suptitle(figure.title, fontsize=14, fontweight="bold")
    out = io.BytesIO()
    FigureCanvasAgg(canvas).print_png(out)
    return out.getvalue()


def _draw(axes, chart: Chart, bottom: bool) -> None:
    from matplotlib import dates

    axes.set_title(chart.title, loc="left", fontsize=11)
    axes.set_ylabel(chart.unit)
    axes.grid(alpha=0.3)
    axes.spines[["top", "right"]].set_visible(False)
    drawable = chart.drawable()
    if not drawable:
        axes.text(0.5, 0.5, chart.empty, ha="center", va="center", transform=axes.transAxes)
        axes.set_xticks([])
        axes.set_yticks([])
        return
    for series in drawable:
        x = series.x.astype("datetime64[ns]") if chart.time_axis else series.x
        colour = series.colour[1]
        if series.kind in ("buy", "sell"):
            marker = "^" if series.kind == "buy" else "v"
            axes.scatter(x, series.y, s=16, marker=marker, color=colour, label=series.label)
        elif series.kind == "step":
            axes.step(x, series.y, where="post", color=colour, lw=1.3, label=series.label)
        else:
            axes.plot(
                x,
                series.y,
                color=colour,
                lw=1.1 if chart.time_axis else 1.6,
                marker=None if chart.time_axis else "o",
                label=series.label,
                zorder=1 if series.label == "mid" else 2,
            )
    if chart.zero_line:
        axes.axhline(0.0, color="#888888", lw=0.8, ls="--", zorder=0)
    axes.ticklabel_format(axis="y", useOffset=False, style="plain")
    if chart.time_axis:
        locator = dates.AutoDateLocator(tz=UTC, minticks=5)
        locator.intervald[dates.MINUTELY] = [1, 2, 5, 10, 15, 30]  # 2 min: 5 ticks in 10 min
        axes.xaxis.set_major_locator(locator)
        axes.xaxis.set_major_formatter(
            dates.ConciseDateFormatter(locator, tz=UTC, show_offset=False)
        )
        if bottom:
            start_ns = min(int(series.x.min()) for series in drawable)
            axes.set_xlabel(f"{chart.x_title} from {time_text(start_ns)}")
        else:
            axes.tick_params(labelbottom=False)
    else:
        axes.set_xticks(range(len(chart.x_labels)), chart.x_labels)
        axes.set_xlabel(chart.x_title)
    axes.legend(loc="best", fontsize=9, frameon=False)


def report_html(
    groups: Sequence[RunGroup], figures: Sequence[Figure], pngs: Mapping[str, bytes]
) -> str:
    """The page: each group's figure (and its comparison), the ranking, then each run;
    `figures` as `report_figures` gives them, `pngs` by figure name."""
    runs = [run for group in groups for run in group.runs]
    overviews, run_figures = figures[: len(groups)], figures[len(groups) :]
    recordings = sorted({Path(run.recording).name for run in runs})
    market = time_text(min(int(run.series.at_ns[0]) for run in runs))
    quote = next((run.symbols[0].quote_coin for run in runs if run.symbols), "USDT")
    nav = [f'<li><a href="#group-{n}">{_e(g.title)}</a></li>' for n, g in enumerate(groups, 1)]
    if len(runs) > 1:
        nav.append('<li><a href="#ranking">ranking by net PnL</a></li>')
    nav += [
        f'<li><a href="#run-{number}">{_e(figure.title)}</a></li>'
        for number, figure in enumerate(run_figures, 1)
    ]
    body = [
        f"<h1>Backtest: {_e(', '.join(recordings))}</h1>",
        f'<p class="meta">{len(runs)} run{"s" if len(runs) != 1 else ""} from {market} UTC '
        f"(market time). Money in {_e(quote)}, signed by its effect on PnL (a fee paid is "
        "negative); markouts in bps, positive when the market moved our way after the fill."
        "</p>",
        f"<nav><ul>{''.join(nav)}</ul></nav>",
    ]
    for number, (group, figure) in enumerate(zip(groups, overviews, strict=True), 1):
        body += [f'<section id="group-{number}">', f"<h2>{_e(group.title)}</h2>"]
        body.append(figure_html(figure, pngs[figure.name]))
        if group.compared:
            body.append(parts_html(compare_parts(group.runs, group.block_s)))
        body.append("</section>")
    if len(runs) > 1:
        body += [
            '<section id="ranking"><h2>Ranking by net PnL</h2>',
            parts_html(ranking_parts(runs)),
            "</section>",
        ]
    for number, (run, figure) in enumerate(zip(runs, run_figures, strict=True), 1):
        body += [
            f'<section id="run-{number}">',
            f"<h2>{_e(figure.title)}</h2>",
            parts_html(session_parts(run)),
            figure_html(figure, pngs[figure.name]),
            "</section>",
        ]
    return page_html(f"Backtest: {', '.join(recordings)}", body)


def page_html(title: str, body: Sequence[str]) -> str:
    """A self-contained page titled `title` around the HTML of `body`."""
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            '<head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{_e(title)}</title>",
            f"<style>{_STYLE}</style></head>",
            "<body><main>",
            *body,
            "</main></body></html>",
            "",
        ]
    )


def figure_html(figure: Figure, png: bytes) -> str:
    alt = f"{figure.title}: " + "; ".join(chart.title for chart in figure.charts)
    data = base64.b64encode(png).decode("ascii")
    return f'<figure><img src="data:image/png;base64,{data}" alt="{_e(alt)}"></figure>'


def parts_html(parts: Sequence[Part]) -> str:
    """Lines of text between blank ones as a paragraph each; tables as tables."""
    out: list[str] = []
    lines: list[str] = []
    for part in [*parts, ""]:
        if isinstance(part, Table) or not part:
            if lines:
                out.append(f"<p>{'<br>'.join(_e(line) for line in lines)}</p>")
                lines = []
            if isinstance(part, Table):
                out.append(_table_html(part))
        else:
            lines.append(part)
    return "\n".join(out)


def _table_html(table: Table) -> str:
    def cells(row: Sequence[str], tag: str) -> str:
        figure = ' class="figure"'
        return "".join(
            f"<{tag}{figure if column >= table.right_from else ''}>{_e(cell)}</{tag}>"
            for column, cell in enumerate(row)
        )

    header, *rows = table.rows
    body = "".join(f"<tr>{cells(row, 'td')}</tr>" for row in rows)
    return f"<table><thead><tr>{cells(header, 'th')}</tr></thead><tbody>{body}</tbody></table>"


def _e(text: str) -> str:
    return html.escape(text, quote=True)
