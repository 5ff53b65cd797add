"""The pane registry (console.panes) is the one place a pane is added: a pane registered here
alone is built, laid out, held to its budget, fed its part of each snapshot and shown by `v`."""

from __future__ import annotations

from console_scenarios import FakeEngineHandle, book_snapshot
from rich.text import Text

from console.app import ConsoleConfig, HftConsoleApp
from console.bandwidth import BUDGETS, Bandwidth
from console.panes import PANES
from console.view import ConsoleSnapshot
from console.widgets.lines import LinePane


class SymbolCountPane(LinePane[tuple[str, int]]):
    """A pane no file of the console knows: the picked symbol and the book's size."""

    pane_id = "symbol-count"
    pane_title = "symbols"
    budget = "vram_s"

    def part(self, snapshot: ConsoleSnapshot, symbol: str | None) -> tuple[str, int]:
        return (symbol or "", len(snapshot.status.feeds))

    def rows(self, view: tuple[str, int], width: int, height: int) -> list[Text]:
        return [Text(f"{view[0]} of {view[1]}")]


async def test_a_pane_registered_alone_is_built_fed_budgeted_and_shown():
    app = HftConsoleApp(
        FakeEngineHandle(book_snapshot()),
        ConsoleConfig(bandwidth=Bandwidth.LOW),
        clock=lambda: 0.0,
        panes=(*PANES, SymbolCountPane),
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        pane = app.query_one(SymbolCountPane)
        assert pane.id == "symbol-count" and pane.border_title == "symbols"
        assert pane.interval_s == BUDGETS[Bandwidth.LOW].vram_s
        assert pane.view == ("BTCUSDT", 9)
        assert list(app._secondary)[-1] == "symbol-count"  # `v` shows it after the others
        while not pane.region.area:
            await pilot.press("v")
            await pilot.pause()
        assert pane.render_line(0).text.rstrip() == "BTCUSDT of 9"


def test_every_registered_pane_names_its_place_title_and_budget():
    budget = BUDGETS[Bandwidth.FULL]
    ids = [pane.pane_id for pane in PANES]
    assert len(set(ids)) == len(ids)
    for pane in PANES:
        assert pane.pane_title
        assert pane.budget is None or isinstance(getattr(budget, pane.budget), float)
