"""The base of every dialog: modal, centred, and the kill switch still works from it."""

from __future__ import annotations

from typing import ClassVar, TypeVar

from textual.binding import Binding, BindingType
from textual.screen import ModalScreen

ResultT = TypeVar("ResultT")


class DialogScreen(ModalScreen[ResultT]):
    """A modal screen hides the App's bindings, so the kill switch is bound here again, under
    the same id (a keymap moves both). In a text field the key types a character instead."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("k", "app.kill", "KILL", id="console.kill")]

    def __init__(self) -> None:
        super().__init__(classes="dialog-screen")
