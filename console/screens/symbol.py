"""Picking the symbol the detail panes (depth, imbalance, Laya's verdicts) show."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from console.screens.dialog import DialogScreen
from console.view import StatusView


class SymbolScreen(DialogScreen[str | None]):
    """The book's symbols with their roles, the one shown highlighted; dismisses with the
    symbol picked (enter), or None (escape)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="symbol.close"),
    ]

    def __init__(self, status: StatusView, shown: str | None) -> None:
        super().__init__()
        self._status = status
        self._shown = shown

    def compose(self) -> ComposeResult:
        status = self._status
        width = max((len(symbol) for symbol in status.symbols), default=0)
        options = [
            Option(f"{symbol:<{width}}  {status.role(symbol).value}", id=symbol)
            for symbol in status.symbols
        ]
        with Vertical(classes="dialog symbol-picker"):
            yield Static("Show which symbol?", classes="dialog-title")
            yield OptionList(*options, id="symbols")
            yield Static("↑↓  move   enter  show   esc  close", classes="dialog-keys")

    def on_mount(self) -> None:
        symbols = self.query_one("#symbols", OptionList)
        if self._shown in self._status.symbols:
            symbols.highlighted = self._status.symbols.index(self._shown)
        symbols.focus()

    @on(OptionList.OptionSelected)
    def picked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_close(self) -> None:
        self.dismiss(None)
