"""Open orders and the latest fills."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text

from console.view import ConsoleSnapshot
from console.widgets import format as fmt
from console.widgets.lines import LinePane
from engine.bitget.orders import OrderSide
from engine.bitget.private_events import FillUpdate, OrderUpdate
from engine.market.instruments import Instrument, price_text, size_text
from engine.units import coin, fee_usdt

_WIDE = 60
"""From this many cells, rows name the symbol (narrower, the size's coin says it) and fills
show the fee and times the milliseconds."""

OrdersView = tuple[tuple[OrderUpdate, ...], tuple[FillUpdate, ...], tuple[Instrument, ...]]
"""The snapshot's open orders and recent fills, and the contracts their prices are written in
(`StatusView.contracts`)."""


class OrdersPane(LinePane[OrdersView]):
    """Open orders first (newest first, up to half the height when fills are waiting), then
    fills, newest first."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"orders--buy", "orders--sell", "orders--label"}
    pane_id = "orders"
    pane_title = "orders and fills"
    budget = "lists_s"

    def part(self, snapshot: ConsoleSnapshot, symbol: str | None) -> OrdersView:
        return (snapshot.orders, snapshot.fills, snapshot.status.contracts)

    def urgent(self, shown: OrdersView, view: OrdersView) -> bool:
        """A fill at once; the open orders (requoted often) wait for the budget."""
        return shown[1] != view[1]

    def rows(self, view: OrdersView, width: int, height: int) -> list[Text]:
        orders, fills, contracts = view
        contract = {instrument.symbol: instrument for instrument in contracts}.get
        wide = width >= _WIDE
        lines = [Text(f"open orders {len(orders)}", self.style("orders--label"))]
        room = max(1, (height - 2) // 2) if fills else height - 1
        for order in sorted(orders, key=lambda item: item.updated_ms, reverse=True)[:room]:
            row = Text(f"{order.symbol:<8} " if wide else "")
            row.append(f"{order.side.value:<4} ", self._side(order.side))
            instrument = contract(order.symbol)
            limit = (
                "market"
                if order.price is None
                else price_text(instrument, order.price, grouped=True)
            )
            row.append(f"{coin(order.symbol, order.size)} @ {limit} ")
            if order.filled_size:
                filled = size_text(instrument, order.filled_size)
                status = f"filled {filled}" if wide else f"+{filled}"
            else:
                status = order.status.value
            if order.reduce_only:
                status += " reduce-only" if wide else " R"
            row.append(status, self.style("orders--label"))
            lines.append(row)
        lines.append(Text(f"fills {len(fills)}", self.style("orders--label")))
        for fill in reversed(fills):
            stamp = fmt.clock_ms(fill.filled_ms)
            row = Text(f"{stamp} {fill.symbol:<8} " if wide else f"{stamp[:8]} ")
            row.append(f"{fill.side.value:<4} ", self._side(fill.side))
            price = price_text(contract(fill.symbol), fill.price, grouped=True)
            row.append(f"{coin(fill.symbol, fill.size)} @ {price} ")
            if wide:
                row.append("maker" if fill.maker else "taker", self.style("orders--label"))
                row.append(f", fee {fee_usdt(fill.fee)}")
            else:
                row.append("M" if fill.maker else "T", self.style("orders--label"))
            lines.append(row)
        return lines

    def _side(self, side: OrderSide):
        return self.style("orders--buy" if side is OrderSide.BUY else "orders--sell")
