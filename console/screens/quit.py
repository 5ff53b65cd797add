"""Quitting with positions or orders open: flatten and quit, keep them and quit, or stay."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Static

from console.engine.handle import ShutdownPolicy
from console.screens.dialog import ExposureDialog

_QUIT_FLAT = "quit"
"""The choice once nothing is open (a kill closed it all meanwhile): quit as when flat."""
_POLICIES = {
    "flatten": ShutdownPolicy.FLATTEN,
    "keep": ShutdownPolicy.KEEP,
    _QUIT_FLAT: ShutdownPolicy.FLATTEN,
}
"""Each choice's policy; cancel (any other) stays."""


class QuitScreen(ExposureDialog[ShutdownPolicy | None]):
    """Dismisses with the chosen policy, or None to stay. Once nothing is open it offers to
    quit (`q`), as `q` does when nothing is open."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f", "choose('flatten')", "Flatten and quit", id="quit.flatten"),
        Binding("l", "choose('keep')", "Keep and quit", id="quit.keep"),
        Binding("q", f"choose('{_QUIT_FLAT}')", "Quit", id="quit.quit"),
        Binding("escape,c", "choose('')", "Cancel", id="quit.cancel"),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static("Quit", classes="dialog-title")
            yield Static(id="quit-open", classes="dialog-text")
            with Horizontal(classes="dialog-buttons"):
                yield Button("f  Flatten and quit", id="flatten", variant="warning")
                yield Button("l  Keep and quit", id="keep")
                yield Button("q  Quit", id=_QUIT_FLAT, variant="warning")
                yield Button("esc  Cancel", id="cancel", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    def show_exposure(self) -> None:
        exposed = self.trading.exposed
        text = f"Still open: {self.trading.exposure}." if exposed else "Nothing is open now."
        self.query_one("#quit-open", Static).update(text)
        for button_id, shown in (
            ("flatten", exposed),
            ("keep", exposed),
            (_QUIT_FLAT, not exposed),
        ):
            self.query_one(f"#{button_id}", Button).display = shown

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Quitting without a choice only once there is nothing to choose about.
        return action != "choose" or parameters != (_QUIT_FLAT,) or not self.trading.exposed

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_choose("" if event.button.id == "cancel" else str(event.button.id))

    def action_choose(self, choice: str) -> None:
        self.dismiss(_POLICIES.get(choice))
