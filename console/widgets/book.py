"""The book at a glance: a line per symbol with its role, position, PnL, our quotes, its weight
in the net delta, Laya's state and its feed; the symbol the detail panes show is marked."""

from __future__ import annotations

from typing import ClassVar, NamedTuple

from rich.style import Style
from rich.text import Text
from textual.geometry import Size

from console.view import ConsoleSnapshot, FeedView, PositionLine, StatusView, SymbolRole
from console.widgets import format as fmt
from console.widgets.lines import LinePane
from console.widgets.status import FEED_STYLE
from console.widgets.verdicts import CLASS_STYLE
from engine.bitget.orders import OrderSide
from engine.bitget.private_events import OrderUpdate
from engine.feed.events import FeedState
from engine.laya.decide import VerdictRecord, VerdictStreamView
from engine.laya.verdict import Verdict
from engine.units import amount, coin


class BookLines(NamedTuple):
    """What the overview draws: the status (feeds, roles, positions, Laya's warm-up), the open
    orders, the verdict stream, and the symbol picked for the detail panes."""

    status: StatusView
    orders: tuple[OrderUpdate, ...]
    verdicts: VerdictStreamView
    picked: str | None


class _Column(NamedTuple):
    header: str
    width: int
    rank: int
    """Which columns a narrow pane drops first: the highest rank."""
    right: bool = False


_PICKED = "▶"
_WEIGHT = "beta/ratio"
_COLUMNS = (
    _Column("symbol", 12, 0),
    _Column("role", 7, 6),
    _Column("position", 12, 1, right=True),
    _Column("PnL", 9, 2, right=True),
    _Column("quotes b/a", 10, 4, right=True),
    _Column(_WEIGHT, 10, 7, right=True),
    _Column("Laya", 14, 3),
    _Column("feed", 17, 5),
)
_GAP = "  "


class BookPane(LinePane[BookLines]):
    """One row per symbol, in the engine's order, under a header; the columns a pane too
    narrow for all of them drops go first by rank (the weight, the role, the feed, the quotes),
    so the position and its PnL stay. PnL is the symbol's session PnL (realized less fees plus
    unrealized); the role says `paused` while the gateway stands the symbol aside alone;
    quotes count our open orders on each side; beta/ratio, in a book with a hedge, is each
    symbol's weight in the net delta in force (a quoted symbol's beta, the hedge's ratio),
    after its configured one and an arrow where Kev or the operator moved it; Laya's state is
    its warm-up wait, `no model` where its model would not start, or its verdict on the
    symbol's last book (with its probability while the verdict stream's last record of the
    symbol agrees); the feed's rate is books a second and its age that of the last book (`<1 s`
    while they flow). Every change waits for the lists' budget: the status bar draws what must
    be seen at once."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "book--label",
        "book--picked",
        # In the status bar's and the verdicts pane's colours (styles/console.tcss).
        "status--profit",
        "status--loss",
        *FEED_STYLE.values(),
        *CLASS_STYLE.values(),
    }
    pane_id = "book"
    pane_title = "book"
    budget = "lists_s"
    _rows_laid_out = 1
    """The rows the grid last gave the overview (a row per symbol and the header)."""

    def part(self, snapshot: ConsoleSnapshot, symbol: str | None) -> BookLines:
        return BookLines(snapshot.status, snapshot.orders, snapshot.verdicts, symbol)

    def title(self, view: BookLines) -> str:
        symbols = len(view.status.feeds)
        return f"book: {symbols} symbol{'' if symbols == 1 else 's'}"

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """A row per symbol under the header: the grid gives the overview what it needs."""
        view = self.view
        return 1 if view is None else 1 + len(view.status.feeds)

    def watch_view(self, view: BookLines | None) -> None:
        rows = 1 if view is None else 1 + len(view.status.feeds)
        if rows != self._rows_laid_out:  # a symbol came or went: the grid makes room
            self._rows_laid_out = rows
            self.refresh(layout=True)
        super().watch_view(view)

    def rows(self, view: BookLines, width: int, height: int) -> list[Text]:
        status = view.status
        columns = _columns_for(width, hedged=status.hedge is not None)
        label = self.style("book--label")
        header = Text(
            _GAP.join(
                column.header.rjust(column.width)
                if column.right
                else column.header.ljust(column.width)
                for column in columns
            ),
            label,
        )
        lines = [header]
        positions = {line.symbol: line for line in status.trading.positions}
        waits = dict(status.laya.warming_s)
        laya_aside = dict(status.laya.stood_aside)
        current = view.verdicts.current
        latest = _latest_verdicts(view.verdicts, {feed.symbol for feed in status.feeds})
        quotes = _quotes(view.orders)
        for feed in status.feeds:
            symbol = feed.symbol
            cells: dict[str, Text] = {}
            marked = symbol == view.picked
            cells["symbol"] = Text(
                f"{_PICKED if marked else ' '} {symbol}",
                self.style("book--picked") if marked else "",
            )
            role = status.role(symbol)
            position = positions.get(symbol)
            paused = position is not None and position.stood_aside
            cells["role"] = (
                Text("paused", self.style("status--warning")) if paused else Text(role.value, label)
            )
            if position is not None:
                size = coin(symbol, position.size, signed=True) if position.size else "flat"
                cells["position"] = Text(size, "" if position.size else label)
                pnl = position.pnl
                cells["PnL"] = Text(
                    amount(pnl), self.style("status--profit" if pnl >= 0 else "status--loss")
                )
            if role is not SymbolRole.WATCHED:
                bids, asks = quotes.get(symbol, (0, 0))
                cells["quotes b/a"] = Text(f"{bids}/{asks}", "" if bids or asks else label)
                if position is not None:
                    cells[_WEIGHT] = self._weight(position, label)
            cells["Laya"] = self._laya(
                waits.get(symbol), laya_aside.get(symbol), latest.get(symbol), current.get(symbol)
            )
            cells["feed"] = self._feed(feed)
            row = []
            for column in columns:
                cell = cells.get(column.header, Text())
                cell.truncate(column.width, overflow="ellipsis")
                padding = " " * (column.width - cell.cell_len)
                row.append(Text(padding) + cell if column.right else cell + padding)
            lines.append(Text(_GAP).join(row))
        return lines

    def _weight(self, position: PositionLine, label: Style) -> Text:
        """The weight in force; moved, its configured one first, then an arrow and the new
        one in the warning colour (as the events write a change: old -> new)."""
        now = f"{position.delta_weight:.3g}"
        if position.delta_weight == position.configured_weight:
            return Text(now)
        return Text.assemble(
            (f"{position.configured_weight:.3g}→", label), (now, self.style("status--warning"))
        )

    def _laya(
        self,
        wait_s: float | None,
        aside: str | None,
        record: VerdictRecord | None,
        current: Verdict | None,
    ) -> Text:
        """Warming up, no model (it would not start: Laya stands aside), else its verdict on
        its last book, with the probability while the stream's last record of it is that
        verdict."""
        if wait_s is not None:
            return Text(f"warming {wait_s:,.0f} s", self.style("status--warning"))
        if aside is not None:
            return Text("no model", self.style("status--loss"))
        verdict = current if current is not None else record.verdict if record else None
        if verdict is None:
            return Text()
        text = Text(verdict.name, self.style(CLASS_STYLE[verdict]))
        if record is not None and record.verdict is verdict:
            text.append(f" {record.probability:.2f}")
        return text

    def _feed(self, feed: FeedView) -> Text:
        text = Text(feed.state.value, self.style(FEED_STYLE[feed.state]))
        if feed.state is not FeedState.LIVE or feed.frames_per_s:
            # Whole books a second: a tenth that flickers every second is bytes, not news.
            text.append(f" {feed.frames_per_s:,.0f}/s")
        text.append(f" {fmt.age_ms(feed.last_frame_age_ms)}")
        return text


def _columns_for(width: int, hedged: bool) -> tuple[_Column, ...]:
    """The columns that fit `width`, dropping the highest rank first; the weight only in a
    book with a hedge (without one no weight moves)."""
    kept = [column for column in _COLUMNS if hedged or column.header != _WEIGHT]

    def needed() -> int:
        return sum(column.width + len(_GAP) for column in kept) - len(_GAP)

    while len(kept) > 1 and needed() > width:
        kept.remove(max(kept, key=lambda column: column.rank))
    return tuple(kept)


def _latest_verdicts(stream: VerdictStreamView, symbols: set[str]) -> dict[str, VerdictRecord]:
    """Each symbol's newest verdict in the stream (newest last), stopping once all are found."""
    found: dict[str, VerdictRecord] = {}
    for record in reversed(stream.recent):
        if record.symbol in symbols and record.symbol not in found:
            found[record.symbol] = record
            if len(found) == len(symbols):
                break
    return found


def _quotes(orders: tuple[OrderUpdate, ...]) -> dict[str, tuple[int, int]]:
    """Our open orders per symbol: (bids, asks)."""
    counts: dict[str, tuple[int, int]] = {}
    for order in orders:
        bids, asks = counts.get(order.symbol, (0, 0))
        buy = order.side is OrderSide.BUY
        counts[order.symbol] = (bids + 1, asks) if buy else (bids, asks + 1)
    return counts
