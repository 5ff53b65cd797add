"""report.html: one well-formed page that needs nothing else, with every run, the comparison and
the ranking, its tables as HTML tables and its pictures inline; the PNGs themselves."""

from __future__ import annotations

import base64
import dataclasses
import re
import struct
from html.parser import HTMLParser

from engine.tools.backtest.charts import report_figures
from engine.tools.backtest.html_report import figure_png, report_html
from engine.tools.backtest.report import RunGroup, run_groups

_VOID = {"meta", "img", "br", "link"}


class _Page(HTMLParser):
    """The tags that stay open, those closed out of order, and what the checks look at."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.misnested: list[str] = []
        self.sections: list[str] = []
        self.links: list[str] = []
        self.images: list[str] = []
        self.headings: list[str] = []
        self.header_cells: list[list[str]] = []
        self._heading: list[str] | None = None
        self._header: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag not in _VOID:
            self.open.append(tag)
        if tag == "section":
            self.sections.append(attributes["id"])
        elif tag == "a":
            self.links.append(attributes["href"])
        elif tag == "img":
            self.images.append(attributes["src"])
        elif tag == "h2":
            self._heading = []
        elif tag == "thead":
            self._header = []

    def handle_endtag(self, tag):
        if not self.open or self.open.pop() != tag:
            self.misnested.append(tag)
        if tag == "h2" and self._heading is not None:
            self.headings.append("".join(self._heading))
            self._heading = None
        elif tag == "thead" and self._header is not None:
            self.header_cells.append(self._header)
            self._header = None

    def handle_data(self, data):
        if self._heading is not None:
            self._heading.append(data)
        if self._header is not None and self.open[-1] == "th":
            self._header.append(data)


def parsed(page: str) -> _Page:
    parser = _Page()
    parser.feed(page)
    parser.close()
    return parser


def test_the_page_holds_each_run_the_comparison_and_the_ranking(compared_runs):
    groups = run_groups(compared_runs, 3)
    figures = report_figures(groups)
    pngs = {figure.name: figure_png(figure) for figure in figures}
    page = report_html(groups, figures, pngs)
    structure = parsed(page)
    assert structure.open == [] and structure.misnested == []
    labels = [run.label for run in compared_runs]
    assert structure.headings == [
        "compare on simulated.bitget.gz",
        "Ranking by net PnL",
        *(f"simulated.bitget.gz [{label}]" for label in labels),
    ]
    assert structure.sections == ["group-1", "ranking", "run-1", "run-2", "run-3"]
    assert structure.links == [f"#{section}" for section in structure.sections]
    # The comparison, the ranking, and each run's PnL and markouts.
    assert [cells[0] for cells in structure.header_cells] == [
        "gate",
        "rank",
        *(["PnL (USDT)", "markouts, mean bps (median)"] * 3),
    ]
    assert "quote fills lost" in structure.header_cells[0]
    inline = [
        base64.b64decode(src.removeprefix("data:image/png;base64,")) for src in structure.images
    ]
    assert inline == [pngs[figure.name] for figure in figures]
    # Self-contained: every source inline, every link within the page, no script.
    assert not re.search(r'(src|href)="(?!data:image/png;base64,|#)', page)
    assert "<script" not in page and "<link" not in page


def test_labels_are_escaped_and_a_single_run_has_no_ranking(compared_runs):
    run = dataclasses.replace(compared_runs[0], label="<b>laya</b> & co")
    groups = [RunGroup((run,), False)]
    figures = report_figures(groups)
    page = report_html(groups, figures, {figure.name: b"\x89PNG" for figure in figures})
    structure = parsed(page)
    assert structure.misnested == [] and "<b>" not in page
    assert structure.headings == ["simulated.bitget.gz [<b>laya</b> & co]"] * 2
    assert structure.sections == ["group-1", "run-1"]


def test_a_figure_is_a_png_a_screen_wide(compared_runs):
    overview, *_ = report_figures(run_groups(compared_runs, 3))
    png = figure_png(overview)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    width, height = struct.unpack(">II", png[16:24])
    assert (width, height) == (1300, 700)  # three charts: two over time, the markouts beside


def test_the_comparison_per_block_is_a_table_below_the_whole_runs(compared_runs):
    (group,) = run_groups(compared_runs, 3, block_s=60)
    figures = report_figures([group])
    page = report_html([group], figures, {figure.name: b"\x89PNG" for figure in figures})
    structure = parsed(page)
    assert structure.misnested == []
    first_cells = [cells[0] for cells in structure.header_cells]
    assert first_cells[:2] == ["gate", "block"]
    assert "interval" in structure.header_cells[0] and "saved/fill 1 s" in structure.header_cells[1]
    assert "per block of 1 min of market time" in page
