"""The base of every dialog: modal, centred, and the kill switch still works from it."""

from __future__ import annotations

from typing import ClassVar, TypeVar

from textual.binding import BindingType
from textual.screen import ModalScreen

from console.keymap import dialog_kill_binding

ResultT = TypeVar("ResultT")


class DialogScreen(ModalScreen[ResultT]):
    """A modal screen hides the App's bindings, so the kill switch is bound here again, under
    the same id (a keymap moves both). In a text field the key types a character instead."""

    BINDINGS: ClassVar[list[BindingType]] = [dialog_kill_binding()]

    def __init__(self) -> None:
        super().__init__(classes="dialog-screen")
