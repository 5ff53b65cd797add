"""The console's terminal output: `StyleCompactor` shows the same cells as what Textual wrote,
in fewer bytes, and `OutputMeter` counts what was written.

The cells are compared on a small terminal of this test's own (cursor moves, newlines, text
and the SGR styles, read independently of the module under test): every cell must look the
same, a space by what a space shows (its background, and lines or reverse video through it).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import replace

from console_scenarios import FakeEngineHandle, book_snapshot, fixed_events

from console.app import ConsoleConfig, HftConsoleApp
from console.terminal_output import OutputMeter, ShownCells, StyleCompactor
from console.view import DepthLevel

_TOKEN = re.compile(r"\x1b\[([0-9;]*)([A-Za-z])|(\r)|(\n)|([^\x1b\r\n]+)")
_LINES = {"4", "9", "21", "51", "52", "53"}


class Terminal:
    """Cells as a terminal shows them: (character, how it looks)."""

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.cells = [[(" ", ())] * width for _ in range(height)]
        self.x = self.y = 0
        self.attributes: set[str] = set()
        self.foreground = self.background = ""
        self.erased: list[tuple[int, object]] = []

    def feed(self, data: str) -> None:
        for csi, final, cr, lf, text in _TOKEN.findall(data):
            if final == "m":
                self._style(csi.split(";") if csi else ["0"])
            elif final == "H":
                row, _, column = csi.partition(";")
                self.y, self.x = int(row or 1) - 1, int(column or 1) - 1
            elif final == "K":  # erase in line: painted with the current background
                self.erased.append((self.y, self.background))
            elif cr:
                self.x = 0
            elif lf:
                self.y += 1
            for char in text:
                self.cells[self.y][self.x] = (char, self._look(char))
                self.x += 1

    def _look(self, char: str) -> tuple[object, ...]:
        attributes = frozenset(self.attributes)
        if char == " " and not attributes & (_LINES | {"7"}):
            return ("space", self.background)
        return (attributes, self.foreground, self.background)

    def _style(self, codes: list[str]) -> None:
        off = {"22": {"1", "2"}, "23": {"3"}, "24": {"4", "21"}, "25": {"5", "6"}, "27": {"7"}}
        off |= {"28": {"8"}, "29": {"9"}, "54": {"51", "52"}, "55": {"53"}}
        while codes:
            code = codes.pop(0) or "0"
            if code == "0":
                self.attributes, self.foreground, self.background = set(), "", ""
            elif code in off:
                self.attributes -= off[code]
            elif code in ("38", "48"):
                length = 1 if codes[0] == "5" else 3
                colour = ";".join([codes.pop(0)] + [codes.pop(0) for _ in range(length)])
                if code == "38":
                    self.foreground = colour
                else:
                    self.background = colour
            elif code == "39":
                self.foreground = ""
            elif code == "49":
                self.background = ""
            elif 30 <= int(code) <= 37 or 90 <= int(code) <= 97:
                self.foreground = code
            elif 40 <= int(code) <= 47 or 100 <= int(code) <= 107:
                self.background = code
            else:
                self.attributes.add(code)


def shown(writes: list[str], width: int = 160, height: int = 48) -> Terminal:
    terminal = Terminal(width, height)
    for data in writes:
        terminal.feed(data)
    return terminal


def assert_same_cells(
    writes: list[str], sent: list[str], width: int, height: int
) -> tuple[Terminal, Terminal]:
    original, rewritten = shown(writes, width, height), shown(sent, width, height)
    for y in range(height):
        assert rewritten.cells[y] == original.cells[y], f"row {y}"
    return original, rewritten


def assert_same_screen(writes: list[str], width: int = 160, height: int = 48) -> list[str]:
    compact = StyleCompactor()
    compacted = [compact(data) for data in writes]
    original, rewritten = assert_same_cells(writes, compacted, width, height)
    assert rewritten.erased == original.erased
    assert (rewritten.attributes, rewritten.foreground, rewritten.background) == (
        original.attributes,
        original.foreground,
        original.background,
    )
    return compacted


async def test_the_whole_console_and_a_partial_update_look_the_same_in_fewer_bytes():
    handle = FakeEngineHandle()
    app = HftConsoleApp(handle, ConsoleConfig(), clock=lambda: 0.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        compositor = app.screen._compositor
        full = compositor.render_update(full=True).render_segments(app.console)
        refreshed = {app.query_one("#depth"), app.query_one("#status")}
        for widget in refreshed:
            widget.refresh()
        compositor.update_widgets(refreshed)
        partial = compositor.render_update().render_segments(app.console)
    writes = [full, partial]
    compacted = assert_same_screen(writes)
    assert len("".join(compacted).encode()) < 0.7 * len("".join(writes).encode())


def test_styles_turned_off_reverse_and_underlined_spaces_and_erasing_keep_their_look():
    writes = [
        "\x1b[1;38;5;71;48;5;233mlive\x1b[0m\x1b[38;5;253;48;5;233m 6.7/s\x1b[0m",
        "\x1b[1;7;38;5;131;48;5;233m   \x1b[0m\x1b[4;38;5;1m  \x1b[0m\x1b[38;5;2m  \x1b[0m",
        "\x1b[2;1H\x1b[38;2;10;20;30;48;2;1;2;3mab\x1b[0m\x1b[48;2;1;2;3m\x1b[K\x1b[0m",
        "\x1b[3;1H\x1b[92;100mx\x1b[0m\x1b[39;49m y\x1b[0m\r\n\x1b[4;1H\x1b[3;9mz \x1b[23mw\x1b[0m",
    ]
    assert_same_screen(writes, 20, 5)


def test_a_style_it_does_not_read_is_passed_on_and_the_next_one_sent_whole():
    writes = ["\x1b[38;5;2;48;5;3ma\x1b[0m\x1b[58;5;1mb\x1b[38;5;2;48;5;3mc\x1b[0m\x1b[38;5;2md"]
    compacted = assert_same_screen(writes, 10, 2)
    assert "\x1b[58;5;1m" in compacted[0]


def test_one_style_run_after_another_sends_only_what_changes():
    compact = StyleCompactor()
    data = (
        "\x1b[38;5;253;48;5;233mmine \x1b[0m\x1b[38;5;131;48;5;233m63,980.8\x1b[0m"
        "\x1b[38;5;253;48;5;233m 2.227\x1b[0m\x1b[38;5;253;48;5;233m   \x1b[0m"
    )
    assert compact(data) == (
        "\x1b[38;5;253;48;5;233mmine \x1b[38;5;131m63,980.8\x1b[38;5;253m 2.227   \x1b[0m"
    )


def test_the_meter_counts_bytes_and_the_rate_over_its_window():
    now = [10.0]
    meter = OutputMeter(window_s=5.0, clock=lambda: now[0])
    assert not meter.started and meter.rate() == 0.0
    meter.count(1_000)
    assert meter.started
    assert meter.rate() == 1_000.0  # the first paint over a second, not as a burst
    now[0] = 12.0
    assert meter.rate() == 500.0  # over the time since the first write
    meter.count(4_000)
    now[0] = 15.0
    assert meter.rate() == 1_000.0  # the whole window
    now[0] = 15.5
    assert meter.rate() == 800.0  # the first write has left the window
    assert meter.total == 5_000


def through_shown_cells(writes: list[str]) -> list[str]:
    cells, compact = ShownCells(), StyleCompactor()
    return [compact(cells(data)) for data in writes]


async def test_a_change_sends_only_the_cells_it_changes_and_the_screen_looks_the_same():
    handle = FakeEngineHandle()
    app = HftConsoleApp(handle, ConsoleConfig(), clock=lambda: 0.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        compositor = app.screen._compositor
        full = compositor.render_update(full=True).render_segments(app.console)
        depth = app.query_one("#depth")
        depth.refresh()  # every row of the ladder again, the same but for nothing
        compositor.update_widgets({depth})
        again = compositor.render_update().render_segments(app.console)
        view = depth.view
        bids = [
            DepthLevel(level.price, level.size + 0.5) if index % 3 == 0 else level
            for index, level in enumerate(view.bids)
        ]
        depth.view = replace(view, bids=tuple(bids))  # sizes change, prices stay
        compositor.update_widgets({depth})
        moved = compositor.render_update().render_segments(app.console)
    writes = [full, again, moved]
    sent = through_shown_cells(writes)
    assert_same_cells(writes, sent, 160, 48)
    compacted = [StyleCompactor()(data) for data in writes]
    assert len(sent[0]) <= len(compacted[0])
    assert sent[1] == ""  # nothing changed: nothing sent
    assert 0 < len(sent[2]) < 0.5 * len(compacted[2])


def record_frames(app: HftConsoleApp, drawn: list[str | None], sent: list[str | None]) -> None:
    """From now on each frame Textual draws goes to `drawn`, and to `sent` as the console
    would send it: through the App's own `ShownCells`, then a compactor."""
    display, compact = app._display, StyleCompactor()

    def recorded(screen, update) -> None:
        if update is not None:
            data = update.render_segments(app.console)
            drawn.append(data)
            sent.append(compact(app._shown_cells(data)))
        display(screen, update)

    app._display = recorded


async def test_ctrl_l_sends_every_cell_again():
    app = HftConsoleApp(FakeEngineHandle(), ConsoleConfig(), clock=lambda: 0.0)
    drawn: list[str | None] = []
    sent: list[str | None] = []

    async def sent_by(step: Callable[[], Awaitable[object]]) -> str:
        before = len(sent)
        await step()
        await pilot.pause()
        return "".join(filter(None, sent[before:]))

    async def refresh() -> None:
        app.screen.refresh()  # the whole screen again, as it is

    async with app.run_test(size=(80, 24)) as pilot:
        record_frames(app, drawn, sent)
        first = await sent_by(refresh)
        again = await sent_by(refresh)
        redrawn = await sent_by(lambda: pilot.press("ctrl+l"))
    assert len(again) < 20 < len(first)  # at most a style reset
    # Every cell again: a blank terminal shows the whole screen from it alone.
    assert shown([redrawn], 80, 24).cells == shown([first], 80, 24).cells


async def test_through_a_session_the_terminal_shows_what_textual_drew():
    """A book whose prices and positions move, events that scroll the log, and a resize (which
    may clear the terminal: both terminals are cleared there): every frame, sent through the
    App's own `ShownCells` and a compactor, leaves the cells Textual's own frames leave."""
    handle = FakeEngineHandle(current=book_snapshot())
    now = [0.0]
    app = HftConsoleApp(handle, ConsoleConfig(), clock=lambda: now[0])
    drawn: list[str | None] = []  # None: the terminal was resized
    sent: list[str | None] = []
    async with app.run_test(size=(160, 48)) as pilot:
        record_frames(app, drawn, sent)
        app.screen.refresh()
        await pilot.pause()
        first = handle.current
        for step in range(1, 7):
            depth = tuple(
                replace(view, bids=tuple(DepthLevel(b.price, b.size + step) for b in view.bids))
                for view in first.depth
            )
            handle.current = replace(first, depth=depth)
            handle.events = list(fixed_events())[: step + 1]
            now[0] += 1.0
            app.poll()
            await pilot.pause()
            if step == 3:
                drawn.append(None)
                sent.append(None)
                await pilot.resize_terminal(150, 44)
                await pilot.pause()
    assert len([data for data in drawn if data]) > 6
    original = rewritten = shown([])
    for data, data_sent in zip(drawn, sent, strict=True):
        if data is None:
            original, rewritten = shown([], 150, 44), shown([], 150, 44)
            continue
        original.feed(data)
        rewritten.feed(data_sent)
        assert rewritten.cells == original.cells
    assert sum(map(len, filter(None, sent))) < 0.5 * sum(map(len, filter(None, drawn)))


def test_cells_it_cannot_follow_are_sent_and_anything_it_does_not_read_forgets_the_screen():
    cells = ShownCells()
    first = "\x1b[1;1Habc \x1b[1;10H界x"
    assert cells(first) == first
    # The same cells again: only the wide character and what follows it (not followed) are sent.
    assert cells(first) == "\x1b[1;10H界x"
    assert cells("\x1b[1;1Habd") == "\x1b[1;3Hd"
    # An unknown style: the text is sent, and the next time too.
    assert cells("\x1b[58;5;1m\x1b[1;1Hab") == "\x1b[58;5;1m\x1b[1;1Hab"
    assert cells("\x1b[0m\x1b[1;1Hab") == "\x1b[0m\x1b[1;1Hab"
    # Erasing (or scrolling, or another screen): everything is sent again.
    assert cells("\x1b[1;1Hab\x1b[2J\x1b[1;1Hab") == "\x1b[2J\x1b[1;1Hab"
    # A move it does not read: what follows goes as written until a move to a cell.
    assert cells("\x1b[1;1Hab\x1b[Hab\rab\x1b[1;1Hab") == "\x1b[Hab\rab\x1b[1;1Hab"
    assert cells("\x1b[1;1Hab") == ""
    cells.forget()  # as a resize does
    assert cells("\x1b[1;1Hab") == "\x1b[1;1Hab"


def test_a_space_is_sent_again_only_where_what_it_shows_changes():
    cells = ShownCells()
    cells("\x1b[38;5;1;48;5;2m\x1b[1;1H  x")
    # Another foreground: the spaces look the same, the x does not.
    assert cells("\x1b[38;5;3;48;5;2m\x1b[1;1H  x") == "\x1b[38;5;3;48;5;2m\x1b[1;3Hx"
    # Reversed, a space shows its foreground.
    assert cells("\x1b[7;38;5;3;48;5;2m\x1b[1;1H  x") == "\x1b[7;38;5;3;48;5;2m\x1b[1;1H  x"
    # Changes a few cells apart go as one run; far apart, with a cursor move between.
    cells("\x1b[0m\x1b[2;1H" + "a" * 30)
    near = "\x1b[2;1H" + "b" + "a" * 3 + "b" + "a" * 25
    assert cells(near) == "\x1b[2;1Hbaaab"
    far = "\x1b[2;1H" + "c" + "a" * 3 + "b" + "a" * 20 + "c" + "a" * 4
    assert cells(far) == "\x1b[2;1Hc\x1b[2;26Hc"
