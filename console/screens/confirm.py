"""A yes/no question about what is open (the flatten), answered with one key: `y` confirms,
`n` or escape cancels."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Static

from console.screens.dialog import ExposureDialog
from console.view import TradingView


class ConfirmScreen(ExposureDialog[bool]):
    """`effect`: what a yes does; what is open follows under it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no"),
    ]

    def __init__(self, question: str, effect: str, trading: TradingView) -> None:
        super().__init__(trading)
        self._question = question
        self._effect = effect

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(self._question, classes="dialog-title")
            yield Static(id="confirm-detail", classes="dialog-text")
            yield Static("y  yes      n / esc  no", classes="dialog-keys")

    def show_exposure(self) -> None:
        detail = f"{self._effect} Open: {self.trading.exposure}."
        self.query_one("#confirm-detail", Static).update(detail)

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
