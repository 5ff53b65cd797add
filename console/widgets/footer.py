"""The key footer: Textual's, recomposed only when the keys it shows change."""

from __future__ import annotations

from textual.widgets import Footer


class KeysFooter(Footer):
    """Textual recomposes its footer on every bindings refresh (focus set, a screen resumed, a
    dialog closed), and each recompose removes and mounts every key and lays out the whole
    screen: 20-30 ms, two or three times as the console starts, which a kill key pressed then
    waited for. Here a refresh that leaves the shown keys as they are does nothing."""

    def __init__(self) -> None:
        super().__init__()
        self._composed_for: tuple[object, ...] | None = None

    def _shown_keys(self) -> tuple[object, ...] | None:
        """What `compose` draws from: each shown binding, whether enabled, its tooltip."""
        if not self._bindings_ready:
            return None
        return tuple(
            (binding, enabled, tooltip)
            for _, binding, enabled, tooltip in self.screen.active_bindings.values()
            if binding.show
        )

    async def recompose(self) -> None:
        shown = self._shown_keys()
        if shown is not None and shown == self._composed_for:
            return
        self._composed_for = shown
        await super().recompose()
