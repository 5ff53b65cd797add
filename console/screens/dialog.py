"""The base of every dialog (modal, centred), and of those that show the engine's state."""

from __future__ import annotations

from typing import TypeVar

from textual.screen import ModalScreen

from console.view import TradingView

ResultT = TypeVar("ResultT")


class DialogScreen(ModalScreen[ResultT]):
    """The kill switch works here as everywhere: the App takes its keys before any screen or
    focused widget sees them, a text field included."""

    def __init__(self) -> None:
        super().__init__(classes="dialog-screen")


class LiveDialog(DialogScreen[ResultT]):
    """A dialog that shows the engine's state: the App hands it each picture it takes while
    the dialog is up (`follow`), so it shows the state as it is now, not as it opened."""

    def follow(self, trading: TradingView) -> None:
        raise NotImplementedError


class ExposureDialog(LiveDialog[ResultT]):
    """A dialog that lists what is open, as it is now (a kill closes it all meanwhile)."""

    def __init__(self, trading: TradingView) -> None:
        super().__init__()
        self.trading = trading

    def on_mount(self) -> None:
        self.show_exposure()

    def follow(self, trading: TradingView) -> None:
        """The latest picture: what is open is redrawn when it changed."""
        if trading.exposure == self.trading.exposure:
            return
        self.trading = trading
        if self.is_mounted:
            self.show_exposure()

    def show_exposure(self) -> None:
        """Draws `trading`'s exposure, each dialog its own way (on mount, then on changes)."""
        raise NotImplementedError
