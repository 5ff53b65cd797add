"""Quitting with positions or orders open: flatten and quit, keep them and quit, or stay."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Static

from console.engine.handle import ShutdownPolicy
from console.screens.dialog import DialogScreen


class QuitScreen(DialogScreen[ShutdownPolicy | None]):
    """Dismisses with the chosen policy, or None to stay."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f", "choose('flatten')", "Flatten and quit", id="quit.flatten"),
        Binding("l", "choose('keep')", "Keep and quit", id="quit.keep"),
        Binding("escape,c", "choose('')", "Cancel", id="quit.cancel"),
    ]

    def __init__(self, exposure: str) -> None:
        super().__init__()
        self._exposure = exposure

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static("Quit", classes="dialog-title")
            yield Static(f"Still open: {self._exposure}.", classes="dialog-text")
            with Horizontal(classes="dialog-buttons"):
                yield Button("f  Flatten and quit", id="flatten", variant="warning")
                yield Button("l  Keep and quit", id="keep")
                yield Button("esc  Cancel", id="cancel", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_choose("" if event.button.id == "cancel" else str(event.button.id))

    def action_choose(self, choice: str) -> None:
        self.dismiss(ShutdownPolicy(choice) if choice else None)
