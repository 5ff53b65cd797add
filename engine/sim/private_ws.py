"""The simulated exchange's private websocket (`/v2/ws/private`): login and the orders, fill
and positions channels, shaped as Bitget v2 sends them (bitget-v2.md §5 and §7).

Login is checked like Bitget: `sign = base64(HMAC-SHA256(secret, timestamp + "GET" +
"/user/verify"))` with the timestamp in seconds (milliseconds are accepted too, as live Bitget
does) and within 30 s of exchange time. A refused login is answered with an error frame and the
connection is closed. Private channels need a login first (30004).

The matching engines report every order change (created, each fill, canceled) as it happens.
The changes of one synchronous step (a REST call or a market tick) are pushed together right
after that step: per change an `orders` frame and, for a fill, a `fill` frame; then one
`positions` frame with the full list of open positions (`"data": []` when flat). Pushes are
lost while a `silence` fault is active, as Bitget warns private pushes can be.
"""

from __future__ import annotations

import asyncio
import hmac
import itertools
from collections.abc import Callable
from typing import NamedTuple

import orjson

from engine.bitget.endpoints import (
    ALL_SYMBOLS,
    FILL_CHANNEL,
    MARGIN_COIN,
    ORDERS_CHANNEL,
    POSITIONS_CHANNEL,
    PRIVATE_CHANNELS,
    SIGNING_WINDOW_MS,
)
from engine.bitget.orders import OrderStatus
from engine.bitget.signing import sign, ws_login_prehash
from engine.market.matching import Liquidity, OrderEvent
from engine.sim.frames import INST_TYPE, error_frame, event_frame
from engine.sim.rest import SimExchangeState, number_text, position_figures

LOGIN_REFUSED_CLOSE_CODE = 1008
_USER_CANCEL_REASON = "canceled by user"
"""The matching engine's reason for a cancel requested over REST (Bitget: `normal_cancel`)."""
_SECONDS_TIMESTAMP_DIGITS = 11
_TIMESTAMP_MAX_DIGITS = 16
_FIRST_POSITION_ID = 1_500_000_000_000_000_000

Subscription = tuple[str, str]
"""(channel, instId)."""


class PrivateSession:
    """One private connection: whether it logged in, and what it subscribed."""

    __slots__ = ("close", "logged_in", "send", "subscriptions")

    def __init__(self, send: Callable[[str], None], close: Callable[[int, bytes], None]) -> None:
        self.send = send
        self.close = close
        self.logged_in = False
        self.subscriptions: set[Subscription] = set()


class _PendingChange(NamedTuple):
    event: OrderEvent
    order_profit: float
    """PnL the order has realised so far (Bitget's `totalProfits`)."""


class SimPrivateStream:
    """Logs private connections in, keeps their subscriptions and pushes order changes."""

    def __init__(
        self,
        state: SimExchangeState,
        margin_mode: Callable[[str], str],
        silenced: Callable[[], bool],
    ) -> None:
        self._state = state
        self._margin_mode = margin_mode
        self._silenced = silenced
        self._sessions: set[PrivateSession] = set()
        self._pending: list[_PendingChange] = []
        self._flush_scheduled = False
        self._order_profits: dict[str, float] = {}
        self._position_ids: dict[str, tuple[int, str]] = {}
        self._next_position_id = itertools.count(_FIRST_POSITION_ID)
        self._next_connection_id = itertools.count(1)
        self.frames_pushed = 0

    # Connections

    def open(
        self, send: Callable[[str], None], close: Callable[[int, bytes], None]
    ) -> PrivateSession:
        session = PrivateSession(send, close)
        self._sessions.add(session)
        return session

    def close(self, session: PrivateSession) -> None:
        self._sessions.discard(session)

    def on_request(self, session: PrivateSession, request: dict[str, object]) -> None:
        """A client's JSON request (a ping and unreadable text are handled by the server)."""
        op = request.get("op")
        args = request.get("args")
        if op not in ("login", "subscribe", "unsubscribe"):
            session.send(error_frame(30003, "invalid op", op=op if isinstance(op, str) else None))
            return
        assert isinstance(op, str)
        if op == "login":
            self._login(session, args)
            return
        if not isinstance(args, list) or not args:
            session.send(error_frame(30016, "Param error", op=op))
            return
        for arg in args:
            self._on_channel_request(session, op, arg)

    # Login

    def _login(self, session: PrivateSession, args: object) -> None:
        refusal = self._login_refusal(args)
        if refusal is not None:
            code, message = refusal
            session.send(error_frame(code, message, op="login"))
            session.close(LOGIN_REFUSED_CLOSE_CODE, b"login failed")
            return
        session.logged_in = True
        connection_id = f"{next(self._next_connection_id):08x}"
        session.send(orjson.dumps({"event": "login", "code": 0, "connId": connection_id}).decode())

    def _login_refusal(self, args: object) -> tuple[int, str] | None:
        """Bitget's (code, msg) for a refused login, checked in the REST order; None if valid."""
        if not (isinstance(args, list) and len(args) == 1 and isinstance(args[0], dict)):
            return 30005, "Login failed"
        login = args[0]
        api_key, passphrase, timestamp, signature = (
            login.get(name) for name in ("apiKey", "passphrase", "timestamp", "sign")
        )
        if not isinstance(api_key, str) or not api_key:
            return 30011, "Invalid ACCESS_KEY"
        if not isinstance(passphrase, str) or not passphrase:
            return 30012, "Invalid ACCESS_PASSPHRASE"
        if not isinstance(signature, str) or not signature:
            return 30015, "Invalid signature"
        if (
            not isinstance(timestamp, str)
            or not (timestamp.isascii() and timestamp.isdigit())
            or len(timestamp) > _TIMESTAMP_MAX_DIGITS
        ):
            return 30013, "Invalid ACCESS_TIMESTAMP"
        credentials = self._state.credentials
        if not hmac.compare_digest(api_key.encode(), credentials.api_key.encode()):
            return 30011, "Invalid ACCESS_KEY"
        timestamp_ms = int(timestamp) * (1000 if len(timestamp) <= _SECONDS_TIMESTAMP_DIGITS else 1)
        if abs(self._state.now_ms() - timestamp_ms) > SIGNING_WINDOW_MS:
            return 30014, "Request timestamp expired"
        if not hmac.compare_digest(passphrase.encode(), credentials.passphrase.encode()):
            return 30012, "Invalid ACCESS_PASSPHRASE"
        expected = sign(credentials.api_secret, ws_login_prehash(timestamp))
        if not hmac.compare_digest(signature.encode(), expected.encode()):
            return 30015, "Invalid signature"
        return None

    # Subscriptions

    def _on_channel_request(self, session: PrivateSession, op: str, arg: object) -> None:
        if not isinstance(arg, dict):
            session.send(error_frame(30016, "Param error", op=op, arg=arg))
            return
        inst_type, channel = arg.get("instType"), arg.get("channel")
        inst_id = arg.get("instId", ALL_SYMBOLS)
        if not all(isinstance(value, str) for value in (inst_type, channel, inst_id)):
            session.send(error_frame(30016, "Param error", op=op, arg=arg))
            return
        assert isinstance(channel, str) and isinstance(inst_id, str)
        if channel not in PRIVATE_CHANNELS:
            session.send(error_frame(30016, "Param error", op=op, arg=arg))
            return
        if not session.logged_in:
            session.send(error_frame(30004, "User needs to log in", op=op, arg=arg))
            return
        if channel == POSITIONS_CHANNEL and inst_id != ALL_SYMBOLS:
            # Bitget's positions channel only takes `default`.
            session.send(error_frame(30016, "Param error", op=op, arg=arg))
            return
        if inst_id != ALL_SYMBOLS and inst_id not in self._state.engines:
            message = f"instType:{inst_type},channel:{channel},instId:{inst_id} doesn't exist"
            session.send(error_frame(30001, message, op=op, arg=arg))
            return
        session.send(event_frame(op, arg))
        if inst_type != INST_TYPE:
            return  # like the public side: another instType is acked, then silent
        key = (channel, inst_id)
        if op == "unsubscribe":
            session.subscriptions.discard(key)
            return
        session.subscriptions.add(key)
        if channel == POSITIONS_CHANNEL:
            session.send(self._positions_frame(self._state.now_ms()))
            self.frames_pushed += 1

    # Pushes

    def on_order_event(self, event: OrderEvent) -> None:
        """The matching engines' listener: queue the change, push after the current step."""
        order = event.order
        profit = self._order_profits.get(order.order_id, 0.0) + event.realized_pnl
        if order.status.terminal:
            self._order_profits.pop(order.order_id, None)
        else:
            self._order_profits[order.order_id] = profit
        self._pending.append(_PendingChange(event, profit))
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        changes, self._pending = self._pending, []
        listeners = [s for s in self._sessions if s.logged_in and s.subscriptions]
        if not listeners or self._silenced():
            return
        now_ms = self._state.now_ms()
        for change in changes:
            symbol = change.event.order.symbol
            keys = [(ORDERS_CHANNEL, ALL_SYMBOLS), (ORDERS_CHANNEL, symbol)]
            if change.event.fill is not None:
                keys += [(FILL_CHANNEL, ALL_SYMBOLS), (FILL_CHANNEL, symbol)]
            texts: dict[Subscription, str] = {}
            for session in listeners:
                for key in keys:
                    if key not in session.subscriptions:
                        continue
                    text = texts.get(key)
                    if text is None:
                        entry = (
                            self._order_entry(change)
                            if key[0] == ORDERS_CHANNEL
                            else self._fill_entry(change)
                        )
                        text = texts[key] = _push_frame(key, [entry], now_ms)
                    session.send(text)
                    self.frames_pushed += 1
        positions_key = (POSITIONS_CHANNEL, ALL_SYMBOLS)
        positions_text: str | None = None
        for session in listeners:
            if positions_key in session.subscriptions:
                positions_text = positions_text or self._positions_frame(now_ms)
                session.send(positions_text)
                self.frames_pushed += 1

    # Rendering

    def _order_entry(self, change: _PendingChange) -> dict[str, object]:
        order, fill, realized = change.event
        instrument = self._state.engines[order.symbol].instrument
        reference_price = order.price or order.average_price or (fill.price if fill else 0.0)
        entry: dict[str, object] = {
            "orderId": order.order_id,
            "clientOid": order.client_oid,
            "instId": order.symbol,
            "price": instrument.format_price(order.price) if order.price is not None else "0",
            "size": instrument.format_size(order.size),
            "notionalUsd": number_text(order.size * reference_price),
            "side": str(order.side),
            "tradeSide": f"{order.side}_single",
            "posSide": "net",
            "posMode": "one_way_mode",
            "orderType": str(order.order_type),
            "force": str(order.force),
            "status": str(order.status),
            "accBaseVolume": instrument.format_size(order.filled_size),
            "fillNotionalUsd": number_text(order.filled_size * order.average_price),
            "leverage": str(self._state.account.config.leverage),
            "marginMode": self._margin_mode(order.order_id),
            "marginCoin": MARGIN_COIN,
            "reduceOnly": "yes" if order.reduce_only else "no",
            "enterPointSource": "API",
            "stpMode": "none",
            "cancelReason": _cancel_reason(order.status, order.cancel_reason),
            "feeDetail": [{"feeCoin": MARGIN_COIN, "fee": number_text(-order.fee)}],
            "pnl": number_text(realized),
            "totalProfits": number_text(change.order_profit),
            "presetStopSurplusPrice": "",
            "presetStopLossPrice": "",
            "cTime": str(order.created_ms),
            "uTime": str(order.updated_ms),
        }
        if order.status is not OrderStatus.CANCELED:
            # Bitget leaves priceAvg out of cancel pushes; "0" while nothing is filled.
            entry["priceAvg"] = (
                instrument.format_price(order.average_price) if order.filled_size else "0"
            )
        if fill is not None:
            entry.update(
                {
                    "fillPrice": instrument.format_price(fill.price),
                    "tradeId": fill.trade_id,
                    "baseVolume": instrument.format_size(fill.size),
                    "fillTime": str(fill.ts_ms),
                    "fillFee": number_text(-fill.fee),
                    "fillFeeCoin": MARGIN_COIN,
                    "tradeScope": "M" if fill.liquidity is Liquidity.MAKER else "T",
                }
            )
        return entry

    def _fill_entry(self, change: _PendingChange) -> dict[str, object]:
        order, fill, realized = change.event
        assert fill is not None
        instrument = self._state.engines[fill.symbol].instrument
        return {
            "orderId": fill.order_id,
            "clientOid": fill.client_oid,
            "tradeId": fill.trade_id,
            "symbol": fill.symbol,
            "side": str(fill.side),
            "orderType": str(order.order_type),
            "posMode": "one_way_mode",
            "price": instrument.format_price(fill.price),
            "baseVolume": instrument.format_size(fill.size),
            "quoteVolume": number_text(fill.price * fill.size),
            "profit": number_text(realized),
            "tradeSide": f"{fill.side}_single",
            "tradeScope": str(fill.liquidity),
            "feeDetail": [
                {
                    "feeCoin": MARGIN_COIN,
                    "deduction": "no",
                    "totalDeductionFee": "0",
                    "totalFee": number_text(-fill.fee),
                }
            ],
            "cTime": str(fill.ts_ms),
            "uTime": str(fill.ts_ms),
        }

    def _positions_frame(self, now_ms: int) -> str:
        account = self._state.account
        data: list[dict[str, object]] = []
        for position in account.positions():
            engine = self._state.engines[position.symbol]
            instrument = engine.instrument
            figures = position_figures(position, engine, account)
            data.append(
                {
                    "posId": self._position_id(position.symbol, position.opened_ms),
                    "instId": position.symbol,
                    "marginCoin": MARGIN_COIN,
                    "marginSize": number_text(figures.margin),
                    "marginMode": "crossed",
                    "holdSide": "long" if position.size > 0 else "short",
                    "posMode": "one_way_mode",
                    "total": instrument.format_size(figures.size),
                    "available": instrument.format_size(figures.size - figures.locked),
                    "frozen": instrument.format_size(figures.locked),
                    "openPriceAvg": instrument.format_price(position.entry_price),
                    "leverage": account.config.leverage,
                    "achievedProfits": number_text(position.realized_pnl),
                    "unrealizedPL": number_text(position.unrealized_pnl),
                    "unrealizedPLR": number_text(
                        position.unrealized_pnl / figures.margin if figures.margin else 0.0
                    ),
                    "liquidationPrice": number_text(figures.liquidation_price),
                    "keepMarginRate": number_text(account.config.maintenance_margin_rate),
                    "marginRate": number_text(figures.margin_ratio),
                    "breakEvenPrice": instrument.format_price(figures.break_even_price),
                    "totalFee": "",
                    "deductedFee": number_text(position.fees),
                    "markPrice": instrument.format_price(position.mark_price),
                    "assetMode": "single",
                    "autoMargin": "off",
                    "cTime": str(position.opened_ms),
                    "uTime": str(position.updated_ms),
                }
            )
        return _push_frame((POSITIONS_CHANNEL, ALL_SYMBOLS), data, now_ms)

    def _position_id(self, symbol: str, opened_ms: int) -> str:
        """A position keeps its id until it is closed; a reopened one gets a new id."""
        known = self._position_ids.get(symbol)
        if known is not None and known[0] == opened_ms:
            return known[1]
        position_id = str(next(self._next_position_id))
        self._position_ids[symbol] = (opened_ms, position_id)
        return position_id


def _push_frame(key: Subscription, data: list[dict[str, object]], now_ms: int) -> str:
    channel, inst_id = key
    frame = {
        "action": "snapshot",
        "arg": {"instType": INST_TYPE, "channel": channel, "instId": inst_id},
        "data": data,
        "ts": now_ms,
    }
    return orjson.dumps(frame).decode()


def _cancel_reason(status: OrderStatus, reason: str) -> str:
    if status is not OrderStatus.CANCELED:
        return ""
    return "normal_cancel" if reason == _USER_CANCEL_REASON else reason
