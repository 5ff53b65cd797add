"""What each key does, with the keys in force (after any keymap)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Vertical
from textual.widgets import Static

from console.screens.dialog import DialogScreen


class HelpScreen(DialogScreen[None]):
    """`keys` pairs a key as displayed with what it does."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "close", "Close", id="help.close")
    ]

    def __init__(self, keys: Sequence[tuple[str, str]]) -> None:
        super().__init__()
        self._keys = keys

    def compose(self) -> ComposeResult:
        # Two columns: a text too long for its line wraps under itself, never under the keys.
        with Vertical(classes="dialog help"):
            yield Static("Keys", classes="dialog-title")
            with Grid(classes="help-keys"):
                for key, text in self._keys:
                    yield Static(key, classes="help-key", markup=False)
                    yield Static(text, classes="help-text", markup=False)
            yield Static("esc  close", classes="dialog-keys")

    def action_close(self) -> None:
        self.dismiss(None)
