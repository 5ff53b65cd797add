"""What the console writes to its terminal: fewer bytes for the same screen, and a count of them.

Textual writes every run of styled text as `ESC[<style>m text ESC[0m`, the whole style again
after every reset: two cells of the same colour side by side cost two full colour codes. Over
SSH every byte is a byte the link carries before the operator's next key. `StyleCompactor`
rewrites what Textual writes so that the terminal shows the same cells: a colour is sent only
where it changes, and only what changes in it (the foreground alone when the background
stays), a space whose background is already right is sent without one, and a newline just
before a cursor move is dropped. Before it, `ShownCells` drops the cells the terminal already
shows: Textual sends a changed line from the pane's left edge to the last change, the border and
every unchanged number on the way. `metered_driver` puts both in front of Textual's driver and
counts what is written, for the status bar's output rate.
"""

from __future__ import annotations

import re
import threading
import time
from collections import deque
from collections.abc import Callable
from functools import lru_cache
from typing import NamedTuple

from rich.cells import cell_len
from textual.driver import Driver

_TOKEN = re.compile(
    r"\x1b\[(?P<sgr>[0-9;]*)m"  # a style
    r"|(?P<move>\x1b\[\d*;\d*H)"  # a cursor move: the style does not touch it
    r"|(?P<newline>\r?\n)(?=\x1b\[\d*;\d*H)"  # a newline the next move makes needless
    r"|(?P<other>\x1b[^\[]|\x1b\[[0-?]*[ -/]*[@-~]|[\x00-\x1f])"  # anything else
    r"|(?P<text>[^\x00-\x1f\x1b]+)"
)

# Attributes as bits: (SGR code, the code that turns it off).
_ATTRIBUTES = {
    1: 22,  # bold
    2: 22,  # dim (22 turns off both)
    3: 23,  # italic
    4: 24,  # underline
    5: 25,  # blink
    6: 25,  # rapid blink
    7: 27,  # reverse
    8: 28,  # conceal
    9: 29,  # strike
    21: 24,  # double underline
    51: 54,  # frame
    52: 54,  # encircle
    53: 55,  # overline
}
_BIT = {code: 1 << index for index, code in enumerate(_ATTRIBUTES)}
_OFF = {
    off: sum(_BIT[code] for code in _ATTRIBUTES if _ATTRIBUTES[code] == off)
    for off in {*_ATTRIBUTES.values()}
}
_REVERSE = _BIT[7]
_LINES = _BIT[4] | _BIT[9] | _BIT[21] | _BIT[51] | _BIT[52] | _BIT[53]
"""Attributes a space shows: lines through or around the cell."""


class _Style(NamedTuple):
    attributes: int = 0
    foreground: str = ""
    background: str = ""
    """A colour as its SGR parameters ("38;5;131", "31"); "" is the terminal's default."""


_PLAIN = _Style()
_UNKNOWN = None
"""The terminal's style after a parameter this module does not read: the next change resets."""


# Memoized: Textual draws with a few dozen styles, so the same codes and the same changes come
# again in every frame (parsing and choosing them was most of the writer's time).
@lru_cache(maxsize=4096)
def _parse(parameters: str, style: _Style | None) -> _Style | None:
    """`style` after `ESC[parameters m`; None when a parameter is not one Textual writes."""
    codes = parameters.split(";") if parameters else ["0"]
    attributes, foreground, background = style if style is not None else (0, "", "")
    index = 0
    while index < len(codes):
        try:
            code = int(codes[index] or 0)
        except ValueError:
            return _UNKNOWN
        index += 1
        if code == 0:
            attributes, foreground, background = 0, "", ""
            if style is None:
                style = _PLAIN  # known again from here
        elif style is None:
            return _UNKNOWN
        elif code in _BIT:
            attributes |= _BIT[code]
        elif code in _OFF:
            attributes &= ~_OFF[code]
        elif 30 <= code <= 37 or 90 <= code <= 97:
            foreground = str(code)
        elif 40 <= code <= 47 or 100 <= code <= 107:
            background = str(code)
        elif code in (39, 49):
            foreground, background = ("", background) if code == 39 else (foreground, "")
        elif code in (38, 48) and index < len(codes) and codes[index] in ("5", "2"):
            length = 2 if codes[index] == "5" else 4
            if len(codes) < index + length:
                return _UNKNOWN
            colour = ";".join(codes[index - 1 : index + length])
            index += length
            if code == 38:
                foreground = colour
            else:
                background = colour
        else:
            return _UNKNOWN
    return _Style(attributes, foreground, background)


@lru_cache(maxsize=4096)
def _change(shown: _Style | None, wanted: _Style) -> str:
    """The shortest `ESC[...m` (or nothing) that turns `shown` into `wanted`."""
    if shown == wanted:
        return ""
    if wanted == _PLAIN:
        return "\x1b[0m"
    codes: list[str] = []
    if shown is None:
        codes.append("0")
        shown = _PLAIN
    attributes = shown.attributes
    for off, bits in _OFF.items():
        if attributes & bits & ~wanted.attributes:
            codes.append(str(off))
            attributes &= ~bits
    codes += [str(code) for code, bit in _BIT.items() if wanted.attributes & bit & ~attributes]
    if wanted.foreground != shown.foreground:
        codes.append(wanted.foreground or "39")
    if wanted.background != shown.background:
        codes.append(wanted.background or "49")
    full = "0;" + ";".join(
        [str(code) for code, bit in _BIT.items() if wanted.attributes & bit]
        + [part for part in (wanted.foreground, wanted.background) if part]
    )
    return f"\x1b[{min(';'.join(codes), full, key=len)}m"


def _space_looks_the_same(shown: _Style | None, wanted: _Style) -> bool:
    """A space shows only its background (and lines through it): the foreground, bold,
    italic and the like need not change for it."""
    if shown is None:
        return False
    either = shown.attributes | wanted.attributes
    return not either & (_REVERSE | _LINES) and shown.background == wanted.background


class StyleCompactor:
    """Rewrites what Textual writes to show the same cells in fewer bytes. It follows the
    terminal's style from one write to the next, and leaves it after each write as the
    original would have."""

    def __init__(self) -> None:
        self._shown: _Style | None = _PLAIN  # what the terminal has
        self._wanted: _Style | None = _PLAIN  # what the original has set by now

    def __call__(self, data: str) -> str:
        out: list[str] = []
        shown, wanted = self._shown, self._wanted
        for token in _TOKEN.finditer(data):
            kind = token.lastgroup
            if kind == "sgr":
                parsed = _parse(token["sgr"], wanted)
                if parsed is None:  # not understood: passed on as it is, on the style it follows
                    if wanted is not None:
                        out.append(_change(shown, wanted))
                    out.append(token[0])
                    shown = None
                wanted = parsed
            elif kind == "move":
                out.append(token[0])
            elif kind == "text":
                text = token[0]
                if wanted is not None and not (
                    text.strip(" ") == "" and _space_looks_the_same(shown, wanted)
                ):
                    out.append(_change(shown, wanted))
                    shown = wanted
                out.append(text)
            elif kind == "other":
                # Erasing, scrolling and the like may paint with the style: exactly as sent.
                if wanted is not None:
                    out.append(_change(shown, wanted))
                    shown = wanted
                out.append(token[0])
        if wanted is not None:
            out.append(_change(shown, wanted))
            shown = wanted
        self._shown, self._wanted = shown, wanted
        return "".join(out)


_CELL_TOKEN = re.compile(
    r"\x1b\[(?P<sgr>[0-9;]*)m"
    r"|(?P<move>\x1b\[\d*;\d*H)"
    r"|(?P<return>\r)"
    r"|(?P<newline>\n)"
    r"|(?P<harmless>\x1b\[\?(?:25|2026)[hl]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\))"
    r"|(?P<other>\x1b[^\[\]]|\x1b\[[0-?]*[ -/]*[@-~]|[\x00-\x1f])"
    r"|(?P<text>[^\x00-\x1f\x1b]+)"
)
"""`harmless`: showing or hiding the cursor, a synchronized update's start and end, and OSC
strings (a title, a link): they change no cell."""

_Cell = tuple[str, object]
"""A character and how it looks: its style, or for a space only what a space shows."""

_SKIPPED_GAP = 8
"""Unchanged cells fewer than this between two changes of one run are sent again: a cursor move
costs as much."""


def _looks(style: _Style) -> object:
    """What a space in `style` shows: its background, and the foreground where it is reversed or
    lined (an underline has the foreground's colour)."""
    if style.attributes & (_REVERSE | _LINES):
        return style
    return style.background


class ShownCells:
    """Follows what each cell of the terminal shows and drops from a write the cells that would
    not change, moving the cursor past them instead (Textual hides the terminal's cursor: where
    a write leaves it does not matter). Anything it does not follow (erasing, scrolling, a
    relative move, another screen) makes it forget what is shown, and so does `forget` (the App
    calls it when the terminal is resized): then everything is sent until it is known again."""

    def __init__(self) -> None:
        self._rows: dict[int, list[_Cell | None]] = {}
        self._style: _Style | None = _PLAIN
        self._at: tuple[int, int] | None = (0, 0)
        """Where the written stream's cursor is (None: not known, until it is moved to a cell:
        till then everything is passed on as it is)."""
        self._cursor: tuple[int, int] | None = None
        """Where the terminal's cursor is (None: not known)."""

    def forget(self) -> None:
        self._rows.clear()
        self._cursor = None

    def __call__(self, data: str) -> str:
        out: list[str] = []
        for token in _CELL_TOKEN.finditer(data):
            kind = token.lastgroup
            if kind == "sgr":
                self._style = _parse(token["sgr"], self._style)
                out.append(token[0])  # the compactor sends only the styles text needs
            elif kind == "move":
                row, column = token[0][2:-1].split(";")
                self._at = (int(column or 1) - 1, int(row or 1) - 1)
            elif kind == "harmless" or self._at is None:
                out.append(token[0])
            elif kind == "text":
                self._text(self._at, token[0], out)
            elif kind == "return":
                self._at = (0, self._at[1])
            elif kind == "newline":
                self._at = (self._at[0], self._at[1] + 1)
            else:  # it may paint, scroll or move the cursor
                self._move(out)
                out.append(token[0])
                self.forget()
                self._at = None
        return "".join(out)

    def _move(self, out: list[str]) -> None:
        if self._cursor != self._at and self._at is not None:
            x, y = self._at
            out.append(f"\x1b[{y + 1};{x + 1}H")
            self._cursor = self._at

    def _text(self, at: tuple[int, int], text: str, out: list[str]) -> None:
        x, y = at
        style = self._style
        width = cell_len(text)
        row = self._rows.setdefault(y, [])
        if len(row) < x + width:
            row += [None] * (x + width - len(row))
        if style is None or width != len(text):  # cells it cannot follow: sent, then unknown
            self._move(out)
            out.append(text)
            row[x : x + width] = [None] * width
            self._at = self._cursor = (x + width, y)
            return
        space = _looks(style)
        cells = [(char, space if char == " " else style) for char in text]
        self._at = (x + width, y)
        if row[x : x + width] == cells:  # most runs of a frame: compared at C speed
            return
        start = end = -1  # the run of cells to send
        for index, cell in enumerate(cells):
            if row[x + index] == cell:
                continue
            if start >= 0 and index - end >= _SKIPPED_GAP:
                self._send(at, text, cells, start, end, row, out)
                start = -1
            if start < 0:
                start = index
            end = index + 1
        if start >= 0:
            self._send(at, text, cells, start, end, row, out)

    def _send(
        self,
        at: tuple[int, int],
        text: str,
        cells: list[_Cell],
        start: int,
        end: int,
        row: list[_Cell | None],
        out: list[str],
    ) -> None:
        x, y = at
        if self._cursor != (x + start, y):
            out.append(f"\x1b[{y + 1};{x + start + 1}H")
        out.append(text[start:end])
        row[x + start : x + end] = cells[start:end]
        self._cursor = (x + end, y)


class OutputMeter:
    """Bytes written to the terminal, and the rate over the last `window_s` seconds. Written
    on the driver's thread, read on the UI's."""

    def __init__(self, window_s: float = 5.0, clock: Callable[[], float] = time.monotonic):
        self.window_s = window_s
        self.total = 0
        self._clock = clock
        self._lock = threading.Lock()
        self._writes: deque[tuple[float, int]] = deque()
        self._started: float | None = None

    @property
    def started(self) -> bool:
        """Something was written (a headless run writes nothing)."""
        return self._started is not None

    def count(self, size: int) -> None:
        now = self._clock()
        with self._lock:
            if self._started is None:
                self._started = now
            self.total += size
            self._writes.append((now, size))
            self._forget(now)

    def rate(self) -> float:
        """Bytes a second over the window (over the time since the first write when that is
        shorter, and at least a second: the first paint is not a rate)."""
        now = self._clock()
        with self._lock:
            if self._started is None:
                return 0.0
            self._forget(now)
            written = sum(size for _, size in self._writes)
            return written / min(self.window_s, max(now - self._started, 1.0))

    def _forget(self, now: float) -> None:
        writes = self._writes
        while writes and writes[0][0] < now - self.window_s:
            writes.popleft()


def metered_driver(base: type[Driver], meter: OutputMeter, shown: ShownCells) -> type[Driver]:
    """`base` (the driver Textual picked for this terminal) writing the cells that change, in
    compacted styles, and counting them in `meter`."""

    compact = StyleCompactor()

    class MeteredDriver(base):  # type: ignore[valid-type, misc]
        def write(self, data: str) -> None:
            data = compact(shown(data))
            meter.count(len(data.encode("utf-8", errors="replace")))
            super().write(data)

    MeteredDriver.__name__ = MeteredDriver.__qualname__ = f"Metered{base.__name__}"
    return MeteredDriver
