"""Short garbage collections for the console's two processes.

A full collection stops the process that runs it: in the console, the App's loop and with it
the kill switch; in the engine, the fast path. Measured on the simulator at 160x48 (the console
on the engine, 20 kill presses): the console's full collections took 100-290 ms, every 1.5-2 s,
longer as the run went on, and a press that met one waited for it (p99 180-230 ms against a
p50 of 26 ms). Two causes, each removed here:

- Textual's strips refer to themselves (below), so every strip the screen has drawn is freed by
  the cycle collector instead of at once; they outlive the young generations and pile up until
  a full collection.
- A full collection walks every object the process holds, most of them the modules, classes and
  functions made at start-up (about 120,000 in the console, 160,000 in the engine), which never
  become garbage: frozen once started, they are never walked again. The console freezes twice:
  once the engine has started, and again once the App's first frame is on screen, since the
  App's own start-up (styles, widgets, the first layouts) brought full collections of 55-60 ms
  just as the trading screen first appeared.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.style import Style
    from textual.strip import Strip


def break_strip_cycles() -> None:
    """Textual (8.2.8) caches a strip divided at its own end as `[self]` and one cropped or
    extended to its own length as `self`: the compositor divides every line it draws, so each
    strip refers to itself. Not caching those two results (the same strip, nothing computed)
    lets reference counting free a strip as soon as the screen lets go of it. Idempotent."""
    from textual.strip import Strip  # here: the engine's process freezes too, without Textual

    if getattr(Strip.divide, "breaks_cycles", False):
        return
    divide: Callable[[Strip, Iterable[int]], Sequence[Strip]] = Strip.divide
    crop_extend: Callable[[Strip, int, int, Style | None], Strip] = Strip.crop_extend

    def divide_without_self(self: Strip, cuts: Iterable[int]) -> Sequence[Strip]:
        strips = divide(self, cuts)
        if len(strips) == 1 and strips[0] is self:
            self._divide_cache.clear()  # it held [self]
        return strips

    def crop_extend_without_self(self: Strip, start: int, end: int, style: Style | None) -> Strip:
        strip = crop_extend(self, start, end, style)
        if strip is self:
            self._crop_extend_cache.clear()  # it held self
        return strip

    divide_without_self.breaks_cycles = True  # type: ignore[attr-defined]
    Strip.divide = divide_without_self  # type: ignore[method-assign]
    Strip.crop_extend = crop_extend_without_self  # type: ignore[method-assign]


def freeze_startup_objects(generation: int = 2) -> None:
    """Collect once, then keep what is left (start-up's modules, classes, functions, the
    process's long-lived state) out of every later collection. Called once a process has
    started (the console's again once its App is up), never in a process that starts Apps
    over and over (the tests): what is frozen is never freed. `generation` 2 collects
    everything first; a lower one only the young objects, for a process whose loop is already
    serving keys (a full collection there stops it for 50-60 ms; the little older garbage it
    leaves is frozen with the rest)."""
    gc.collect(generation)
    gc.freeze()
