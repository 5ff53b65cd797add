"""A yes/no question answered with one key: `y` confirms, `n` or escape cancels."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Static

from console.screens.dialog import DialogScreen


class ConfirmScreen(DialogScreen[bool]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no"),
    ]

    def __init__(self, question: str, detail: str) -> None:
        super().__init__()
        self._question = question
        self._detail = detail

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(self._question, classes="dialog-title")
            yield Static(self._detail, classes="dialog-text")
            yield Static("y  yes      n / esc  no", classes="dialog-keys")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
