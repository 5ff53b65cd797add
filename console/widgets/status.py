"""The status pane: mode, feeds, trading state, exposure and PnL, Laya and Kev at a glance."""

from __future__ import annotations

from typing import ClassVar, Literal, NamedTuple

from rich.text import Text
from textual.reactive import var

from console.engine.handle import EngineLost
from console.view import FeedView, KevState, StatusView
from console.widgets import format as fmt
from console.widgets.lines import LinePane, fit
from engine.feed.events import FeedState
from engine.market.instruments import Instrument, price_text
from engine.risk.events import TradingState
from engine.trading.config import TradingMode
from engine.units import QUOTE_COIN, amount, coin

_STATE_STYLE = {
    TradingState.ACTIVE: "status--good",
    TradingState.PAUSED: "status--warning",
    TradingState.REDUCING: "status--warning",
    TradingState.HALTED: "status--bad",
}
FEED_STYLE = {
    FeedState.LIVE: "status--good",
    FeedState.STALE: "status--warning",
    FeedState.CONNECTING: "status--warning",
    FeedState.RECONNECTING: "status--warning",
    FeedState.FAILED: "status--bad",
    FeedState.STOPPED: "status--bad",
}
_KEV_STYLE = {
    KevState.ONLINE: "status--good",
    KevState.BUSY: "status--warning",
    KevState.OFFLINE: "status--bad",
}


class CommandNote(NamedTuple):
    """A safety key's command on the status bar: `sent` (no answer yet), `done` or `failed`,
    and what its answer said."""

    text: str
    outcome: Literal["sent", "done", "failed"]


_NOTE_STYLE = {"sent": "status--warning", "done": "status--good", "failed": "status--bad"}


class StatusPane(LinePane[StatusView]):
    """Three rows: mode, state and money; feeds and the two AIs; positions. On a narrow
    terminal the details go first, the mode, state, PnL and feeds last. `problem` is set by the
    App when the engine stopped answering or publishing: what is on screen is stale. `lost`,
    when the engine died: the rows say so and what is unknown instead. `output`: what the
    terminal is sent a second ("screen 9.8 kB/s"). `command`: the last safety key's command,
    beside the trading state."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "status--mode",
        "status--live",
        "status--problem",
        "status--label",
        "status--good",
        "status--warning",
        "status--bad",
        "status--profit",
        "status--loss",
    }

    problem: var[str] = var("")
    lost: var[EngineLost | None] = var(None)
    output: var[str] = var("")
    command: var[CommandNote | None] = var(None)

    def watch_problem(self) -> None:
        self.redraw()

    def watch_lost(self) -> None:
        self.redraw()

    def watch_output(self) -> None:
        self.redraw()

    def watch_command(self) -> None:
        self.redraw()

    def urgent(self, shown: StatusView, view: StatusView) -> bool:
        """The mode, the trading state and why, a flatten, a feed or Kev changing state, and a
        fill as the positions row shows it (a size, or a book's counts): at once. Money, rates
        and ages wait for the budget (a book of symbols fills several times a second)."""
        if _at_once(shown) != _at_once(view):
            return True
        width = self.size.width
        return self._positions_shown(shown, width) != self._positions_shown(view, width)

    def _positions_shown(self, view: StatusView, width: int) -> tuple[object, ...]:
        """What the positions row says of the positions, money aside: each size where they
        are listed, the counts where a book's are counted."""
        positions = [(p.symbol, p.size) for p in view.trading.positions if p.size != 0]
        if self._position_layout(view, width)[1]:
            return tuple(positions)
        return (len(positions), sum(1 for _, size in positions if size > 0))

    def rows(self, view: StatusView, width: int, height: int) -> list[Text]:
        if self.lost is not None:
            return self._lost_rows(view, self.lost, width)
        return [
            fit(self._state_parts(view), width, " │ "),
            fit(self._systems_parts(view, width), width, " │ "),
            fit(self._position_parts(view, width), width, " │ "),
        ]

    def _lost_rows(self, view: StatusView, lost: EngineLost, width: int) -> list[Text]:
        first = self._mode_badge(view)
        first.append("ENGINE DIED", self.style("status--bad"))
        first.append(f"  {lost.cause}")
        rest = Text(
            f"{lost.unknown}. q quits (exit status 1); the panes below are its last picture.",
            self.style("status--warning"),
        )
        return [first, *rest.wrap(self.app.console, width)]

    def _mode_badge(self, view: StatusView) -> Text:
        badge = Text(
            f" {view.mode.name} ",
            self.style("status--live" if view.mode is TradingMode.LIVE else "status--mode"),
        )
        badge.append(" ")
        return badge

    def _label(self, text: str) -> Text:
        return Text(text, self.style("status--label"))

    def _money(self, label: str, value: float, unit: bool = False) -> Text:
        """`label` and a signed amount; `unit`: followed by USDT (once for a group)."""
        text = self._label(label)
        text.append(amount(value), self.style("status--profit" if value >= 0 else "status--loss"))
        if unit:
            text.append_text(self._label(f" {QUOTE_COIN}"))
        return text

    def _state_parts(self, view: StatusView) -> list[tuple[int, Text]]:
        trading = view.trading
        parts: list[tuple[int, Text]] = []
        if self.problem:
            parts.append((0, Text(f" STALE: {self.problem} ", self.style("status--problem"))))
        badge = self._mode_badge(view)
        badge.append(trading.state.name, self.style(_STATE_STYLE[trading.state]))
        if trading.flattening:
            badge.append(" flattening", self.style("status--warning"))
        parts.append((0, badge))
        note = self.command
        if note is not None:
            parts.append((0, Text(note.text, self.style(_NOTE_STYLE[note.outcome]))))
        if trading.reason:
            parts.append((3, self._label(trading.reason)))
        pnl = trading.pnl
        parts.append((1, self._money("day ", pnl.daily, unit=True)))
        details = self._money("real ", pnl.realized)
        details.append("  ")
        details.append_text(self._money("unreal ", pnl.unrealized))
        details.append("  ")
        details.append_text(self._money("fees ", -pnl.fees, unit=True))  # paid: negative
        parts.append((4, details))
        delta = self._label("net Δ ")
        near_limit = abs(trading.net_delta) > 0.8 * trading.max_net_delta
        delta.append(
            f"{trading.net_delta:+,.0f}",
            self.style("status--warning" if near_limit else "status--good"),
        )
        delta.append_text(self._label(f" / {trading.max_net_delta:,.0f} {QUOTE_COIN}"))
        scale = trading.overrides.risk_scale
        if scale is not None and scale < 1:  # Kev or the operator scaled every limit down
            delta.append_text(self._label(" · risk "))
            delta.append(f"{scale:.3g}", self.style("status--warning"))
        parts.append((2, delta))
        return parts

    def _systems_parts(self, view: StatusView, width: int) -> list[tuple[int, Text]]:
        parts = [
            (0 if index == 0 else 1, self._feed(feed)) for index, feed in enumerate(view.feeds)
        ]
        if sum(text.cell_len + 3 for _, text in parts) > max(width // 2, 60):
            # A book of symbols: the feeds counted by state, the book pane lists each.
            parts = [(0, self._feeds_counted(view.feeds))]
        if view.contracts:  # after the feeds; dropped before Laya's and Kev's state
            parts.append((3, self._contract(view.contracts[0])))
        laya = self._label("Laya ")
        runs_on = view.laya.runs_on
        laya.append(runs_on, self.style("status--good" if runs_on == "CUDA" else "status--label"))
        parts.append((2, laya))
        warming, waits = view.laya.warming, view.laya.warming_s
        if len(warming) > width // 3 and len(waits) > 1:  # a book: the book pane lists each
            longest = max(wait for _, wait in waits)
            warming = f"warming up {len(waits)} symbols: {longest:,.1f} s to go"
        if warming:  # why no verdicts come yet
            parts.append((1, Text(warming, self.style("status--warning"))))
        parts.append((5, self._label(view.laya.model_version)))
        kev = view.kev
        status = self._label("Kev ")
        status.append(kev.state.value, self.style(_KEV_STYLE[kev.state]))
        if kev.last_latency_ms is not None:
            status.append(f" {fmt.duration_ms(kev.last_latency_ms)}")
        parts.append((2, status))
        parts.append((4, self._label(kev.model)))
        if kev.detail:
            parts.append((3, self._label(kev.detail)))
        if self.output:  # before Kev's model and why it is offline, which can be long
            parts.append((2, self._label(self.output)))
        return parts

    def _feeds_counted(self, feeds: tuple[FeedView, ...]) -> Text:
        """ "feeds 8 live, 1 stale ADAUSDT": the symbols named where a feed is not live."""
        text = self._label("feeds ")
        for index, state in enumerate(
            state for state in FeedState if state in {feed.state for feed in feeds}
        ):
            named = [feed.symbol for feed in feeds if feed.state is state]
            if index:
                text.append(", ")
            text.append(f"{len(named)} {state.value}", self.style(FEED_STYLE[state]))
            if state is not FeedState.LIVE:
                text.append(f" {' '.join(named)}")
        return text

    def _feed(self, feed: FeedView) -> Text:
        text = Text(f"{feed.symbol} ")
        text.append(feed.state.value, self.style(FEED_STYLE[feed.state]))
        text.append(f" {feed.frames_per_s:,.1f}/s {fmt.age_ms(feed.last_frame_age_ms)}")
        return text

    def _contract(self, contract: Instrument) -> Text:
        """The quoted contract's tick and the fee rates it lists, in bps of the notional."""
        text = Text(f"{contract.symbol} ")
        text.append_text(self._label("tick "))
        text.append(price_text(contract, contract.tick_size))
        maker, taker = contract.maker_fee_rate, contract.taker_fee_rate
        if maker is None or taker is None:
            text.append_text(self._label(" · fee n/a"))
            return text
        text.append_text(self._label(" · maker "))
        text.append(f"{maker * 10_000:g}")
        text.append_text(self._label(" taker "))
        text.append(f"{taker * 10_000:g}")
        text.append_text(self._label(" bps"))
        return text

    def _position_parts(self, view: StatusView, width: int) -> list[tuple[int, Text]]:
        return self._position_layout(view, width)[0]

    def _position_layout(self, view: StatusView, width: int) -> tuple[list[tuple[int, Text]], bool]:
        """Each position by its size in its coin (which names the symbol), entry price and
        unrealized PnL; the entry prices go first when they do not all fit, and a book's that
        still do not are counted (False: not listed)."""
        trading = view.trading
        orders = trading.open_orders
        count = (1, Text(f"{orders} open order{'' if orders == 1 else 's'}"))
        positions = [position for position in trading.positions if position.size != 0]
        if not positions:
            return [(0, self._label("flat")), count], True
        for with_entry in (True, False):
            parts = []
            for position in positions:
                text = Text(coin(position.symbol, position.size, signed=True))
                if with_entry:
                    text.append(
                        f" @ {_entry_text(view.contract(position.symbol), position.entry_price)}"
                    )
                text.append_text(self._money(" ", position.unrealized_pnl, unit=True))
                parts.append((0, text))
            shown = sum(text.cell_len for _, text in parts) + 3 * (len(parts) - 1)
            if shown <= width:  # the order count goes first where it does not fit too
                return [*parts, count], True
        # A book of symbols: counted here, listed in the book pane.
        longs = sum(1 for position in positions if position.size > 0)
        counted = Text(f"{len(positions)} positions: {longs} long, {len(positions) - longs} short")
        return [(0, counted), count], False


def _entry_text(contract: Instrument | None, price: float) -> str:
    """An entry price at its contract's decimals; off the tick (an average over fills at
    several prices) one decimal finer, where `price_text` would write every digit."""
    if contract is None or contract.is_on_tick(price):
        return price_text(contract, price, grouped=True)
    return fmt.price(price, contract.price_decimals + 1)


def _at_once(view: StatusView) -> tuple[object, ...]:
    trading = view.trading
    return (
        view.mode,
        trading.state,
        trading.reason,
        trading.flattening,
        tuple((feed.symbol, feed.state) for feed in view.feeds),
        view.kev.state,
    )
