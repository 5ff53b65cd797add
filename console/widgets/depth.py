"""The depth ladder: asks above, bids below, size bars, spread and microprice, our orders."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text

from console.view import ConsoleSnapshot, DepthLevel, DepthView, symbol_view
from console.widgets import format as fmt
from console.widgets.lines import LinePane
from engine.bitget.orders import OrderSide
from engine.market.instruments import Instrument

MAX_LEVELS = 15
_NARROW = 40
"""Below this many cells the columns shrink so the size bars keep some room."""
_BAR_BLOCKS = " ▏▎▍▌▋▊▉█"
PER_TICK_BPS = 1.0
"""From a tick this coarse (bps of the mid), the ladder has a row for every tick, the empty
ones too: on such a book each tick is a price people queue at and a gap is news. Finer books
(BTC's 0.1 is 0.02 bps) list their levels as they come; a row per tick would be mostly empty."""


def _bar(fraction: float, width: int) -> str:
    """A horizontal bar of `fraction` (0..1) of `width` cells, in eighths of a cell."""
    eighths = round(max(0.0, min(1.0, fraction)) * width * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full + (_BAR_BLOCKS[part] if part else "")
    return text[:width]


class DepthPane(LinePane[DepthView]):
    """As many rows a side as the pane's height allows, up to 15: a row per level, or on a
    coarse-tick book (`PER_TICK_BPS`) a row per tick out to the deepest level known, the
    empty ticks blank. Our resting orders are marked with their size at their price, and any
    beyond the ladder are counted."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "depth--header",
        "depth--bid",
        "depth--ask",
        "depth--bid-bar",
        "depth--ask-bar",
        "depth--own",
        "depth--spread",
    }
    pane_id = "depth"
    pane_title = "depth"
    budget = "ladder_s"
    beside_ladder = False

    def part(self, snapshot: ConsoleSnapshot, symbol: str | None) -> DepthView | None:
        return symbol_view(snapshot.depth, symbol)

    def title(self, view: DepthView) -> str:
        return f"depth {view.symbol}"

    def rows(self, view: DepthView, width: int, height: int) -> list[Text]:
        levels = max(1, min(MAX_LEVELS, (height - 2) // 2))
        grid = _tick_grid(view)
        bids = _ticks(view.bids, levels, -1, grid) if grid else view.bids[:levels]
        asks = _ticks(view.asks, levels, 1, grid) if grid else view.asks[:levels]
        largest = max((level.size for level in (*bids, *asks)), default=0.0) or 1.0
        columns = (7, 10, 8) if width < _NARROW else (9, 11, 9)
        bar_width = max(0, width - sum(columns) - 1)
        own: dict[tuple[OrderSide, float], float] = {}
        for order in view.own_orders:
            key = (order.side, round(order.price, view.price_decimals))
            own[key] = own.get(key, 0.0) + order.size
        shown = {(OrderSide.BUY, round(level.price, view.price_decimals)) for level in bids}
        shown |= {(OrderSide.SELL, round(level.price, view.price_decimals)) for level in asks}
        beyond = sum(1 for key in own if key not in shown)

        own_width, price_width, size_width = columns
        header = Text(
            f"{'mine':<{own_width}}{'price':>{price_width}}{'size':>{size_width}} ",
            self.style("depth--header"),
        )
        room = width - header.cell_len
        if beyond:
            note = f"+{beyond} beyond"
            header.append(note if room >= len(note) else f"+{beyond}◆", self.style("depth--own"))
        else:
            stamp = fmt.clock_ms(view.exchange_ts_ms)
            header.append(stamp if room >= len(stamp) else stamp[:8], self.style("depth--header"))
        lines = [header]
        padding = [Text("")] * (levels - len(asks))
        lines += padding
        for level in reversed(asks):
            lines.append(self._level(view, level, OrderSide.SELL, own, largest, columns, bar_width))
        lines.append(self._spread(view, width))
        for level in bids:
            lines.append(self._level(view, level, OrderSide.BUY, own, largest, columns, bar_width))
        return lines

    def _level(
        self,
        view: DepthView,
        level: DepthLevel,
        side: OrderSide,
        own: dict[tuple[OrderSide, float], float],
        largest: float,
        columns: tuple[int, int, int],
        bar_width: int,
    ) -> Text:
        own_width, price_width, size_width = columns
        is_bid = side is OrderSide.BUY
        mine = own.get((side, round(level.price, view.price_decimals)))
        row = Text()
        if mine:
            marker = f"◆{fmt.size(mine, view.size_decimals):>{own_width - 2}} "
            row.append(marker, self.style("depth--own"))
        else:
            row.append(" " * own_width)
        row.append(
            f"{fmt.price(level.price, view.price_decimals):>{price_width}}",
            self.style("depth--bid" if is_bid else "depth--ask"),
        )
        size = fmt.size(level.size, view.size_decimals) if level.size else ""  # an empty tick
        row.append(f"{size:>{size_width}} ")
        row.append(
            _bar(level.size / largest, bar_width),
            self.style("depth--bid-bar" if is_bid else "depth--ask-bar"),
        )
        return row

    def _spread(self, view: DepthView, width: int) -> Text:
        decimals = view.price_decimals
        if not (view.bids and view.asks):
            return Text("one-sided book", self.style("depth--spread"))
        spread = fmt.price(view.spread, decimals)
        micro = fmt.price(view.microprice, decimals + 1)
        bps = f"{view.spread_bps:.2f}"
        ticks = view.spread_ticks
        if ticks is None:
            forms = [f"spread {spread} = {bps} bps · micro {micro}", f"{spread} {bps}bps μ {micro}"]
        else:
            in_ticks = f"{ticks} tick{'' if ticks == 1 else 's'}"
            forms = [
                f"spread {spread} = {in_ticks} = {bps} bps · micro {micro}",
                f"spread {spread} = {in_ticks} = {bps} bps · μ {micro}",
                f"spread {in_ticks} = {bps} bps · μ {micro}",
                f"{spread} {ticks}t {bps}bps μ {micro}",
            ]
        text = next((form for form in forms if len(form) <= width), forms[-1])
        return Text(text, self.style("depth--spread"))


def _tick_grid(view: DepthView) -> Instrument | None:
    """The book's contract where the ladder goes tick by tick: a coarse tick, and every level
    on it (a spot recording's finer prices are listed as they come)."""
    instrument, mid = view.instrument, view.mid
    if instrument is None or not (mid > 0 and instrument.tick_size / mid * 1e4 >= PER_TICK_BPS):
        return None
    if all(instrument.is_on_tick(level.price) for level in (*view.bids, *view.asks)):
        return instrument
    return None


def _ticks(
    levels: tuple[DepthLevel, ...], rows: int, direction: int, instrument: Instrument
) -> tuple[DepthLevel, ...]:
    """`rows` ticks from the best level outwards (`direction`: -1 bids, 1 asks), each with the
    size resting there (0.0: none), out to the deepest level the book holds (past it nothing is
    known, not even that it is empty)."""
    if not levels:
        return ()
    best = instrument.to_ticks(levels[0].price)
    sizes = {instrument.to_ticks(level.price): level.size for level in levels}
    span = abs(instrument.to_ticks(levels[-1].price) - best) + 1
    return tuple(
        DepthLevel(instrument.price_of(tick), sizes.get(tick, 0.0))
        for tick in range(best, best + direction * min(rows, span), direction)
    )
