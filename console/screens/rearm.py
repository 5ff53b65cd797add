"""Re-arming the kill switch: the operator types the configured phrase back."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Input, Static

from console.screens.dialog import DialogScreen


class RearmScreen(DialogScreen[str | None]):
    """Dismisses with the phrase once it was typed exactly; escape cancels."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="rearm.cancel")
    ]

    def __init__(self, phrase: str) -> None:
        super().__init__()
        self._phrase = phrase

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static("Re-arm the kill switch", classes="dialog-title")
            yield Static(
                f"Type {self._phrase} and press Enter. Trading restarts PAUSED; resume it with p.",
                classes="dialog-text",
            )
            yield Input(placeholder=self._phrase, id="rearm-phrase")
            yield Static("", id="rearm-error", classes="dialog-error")
            yield Static("enter  re-arm      esc  cancel", classes="dialog-keys")

    @on(Input.Submitted, "#rearm-phrase")
    def submit(self, event: Input.Submitted) -> None:
        event.stop()
        if event.value != self._phrase:
            self.query_one("#rearm-error", Static).update(
                f"That is not {self._phrase}: type it exactly (case matters)."
            )
            event.input.clear()
            return
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
