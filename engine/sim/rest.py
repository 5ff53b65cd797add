"""The simulated exchange's REST API: Bitget v2 auth, validation, rate limits and handlers.

Private calls are checked in Bitget's order: headers present (40001/40003/40011/40005), key
known (40006/40037), timestamp within 30 s (40008), passphrase (40012), HMAC over the exact
bytes received (40009), demo header (40099), then the per-endpoint rate limit (HTTP 429).
The timestamp is judged, and server time answered, on the exchange clock plus the injected
`clock-skew`; `refusals` counts the refusals by code.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
import math
import operator
import re
from collections import Counter, OrderedDict, deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import NamedTuple, TypeVar

import orjson
from aiohttp import web

from engine.bitget import endpoints
from engine.bitget.credentials import Credentials
from engine.bitget.errors import SUCCESS_CODE, lookup_error
from engine.bitget.models import text_field
from engine.bitget.orders import OrderSide, OrderStatus, OrderType, TimeInForce
from engine.bitget.signing import rest_prehash, sign_bytes
from engine.market.matching import (
    Fill,
    MatchingEngine,
    Order,
    OrderRejected,
    OrderRequest,
    Position,
    SimAccount,
)
from engine.sim.faults import FaultInjector, FaultSpecError

logger = logging.getLogger(__name__)

FAULTS = "/sim/faults"
CANCEL_PATHS = frozenset(
    {endpoints.CANCEL_ORDER, endpoints.BATCH_CANCEL_ORDERS, endpoints.CANCEL_ALL_ORDERS}
)

_Listed = TypeVar("_Listed")
_ORDER_ID = operator.attrgetter("order_id")
_TRADE_ID = operator.attrgetter("trade_id")
_CLIENT_OID = re.compile(r"^[0-9A-Za-z_:#+\- ]+$")
_BATCH_CANCEL_MAX = 50
_PENDING_PAGE_MAX = 100
_MARGIN_MODES_KEPT = 10_000
_GATEWAY_PAGE = (
    "<html><head><title>{code}</title></head><body><center><h1>{code} {reason}</h1></center>"
    "</body></html>"
)


class SimExchangeState(NamedTuple):
    """What the REST API and the private stream both serve from: the one account's
    credentials and environment (demo: private calls carry `paptrading: 1`), the matching
    engines by symbol, the margin account and exchange time."""

    credentials: Credentials
    demo: bool
    engines: Mapping[str, MatchingEngine]
    account: SimAccount
    now_ms: Callable[[], int]


class _RequestError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class SlidingWindowLimiter:
    """At most `limit` events per key in any window of `window_s` seconds."""

    def __init__(self, window_s: float) -> None:
        self._window_s = window_s
        self._events: dict[object, deque[float]] = {}

    def allow(self, key: object, limit: int, now: float) -> bool:
        events = self._events.setdefault(key, deque())
        while events and events[0] <= now - self._window_s:
            events.popleft()
        if len(events) >= limit:
            return False
        events.append(now)
        return True


Handler = Callable[[dict[str, object]], object]


class SimRestApi:
    """Serves the REST routes against the matching engines and the account."""

    def __init__(
        self,
        state: SimExchangeState,
        faults: FaultInjector,
        on_fills: Callable[[list[Fill]], None],
        contracts: Iterable[dict[str, object]] = (),
    ) -> None:
        self._state = state
        self._contracts = tuple(contracts)
        self._faults = faults
        self._on_fills = on_fills
        self._limiter = SlidingWindowLimiter(endpoints.RATE_WINDOW_S)
        self._margin_modes: OrderedDict[str, str] = OrderedDict()
        self.requests_served = 0
        self.refusals: Counter[str] = Counter()

    def routes(self) -> list[web.RouteDef]:
        private_posts = {
            endpoints.PLACE_ORDER: self._place_order,
            endpoints.CANCEL_ORDER: self._cancel_order,
            endpoints.BATCH_CANCEL_ORDERS: self._batch_cancel_orders,
            endpoints.CANCEL_ALL_ORDERS: self._cancel_all_orders,
            endpoints.CLOSE_POSITIONS: self._close_positions,
        }
        private_gets = {
            endpoints.ORDERS_PENDING: self._orders_pending,
            endpoints.ORDER_DETAIL: self._order_detail,
            endpoints.ORDER_FILLS: self._order_fills,
            endpoints.ALL_POSITION: self._all_position,
        }
        routes = [web.post(path, self._private(path, h)) for path, h in private_posts.items()]
        routes += [web.get(path, self._private(path, h)) for path, h in private_gets.items()]
        routes += [
            web.get(endpoints.SERVER_TIME, self._server_time),
            web.get(endpoints.CONTRACTS, self._contract_table),
            web.get(endpoints.TICKERS, self._tickers),
            web.post(FAULTS, self._post_faults),
            web.get(FAULTS, self._get_faults),
        ]
        return routes

    async def not_found(self, request: web.Request) -> web.Response:
        return self._failure("40404", "Request URL NOT FOUND", status=404)

    @web.middleware
    async def error_middleware(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        """Answer a bug in a handler with a Bitget-shaped 500 instead of aiohttp's text page."""
        try:
            return await handler(request)
        except (web.HTTPException, ConnectionResetError):
            raise  # an HTTP answer, or a client that left before its request was read
        except Exception:
            logger.exception("sim REST handler failed for %s %s", request.method, request.path)
            return self._failure("45001", "Internal error of the simulated exchange", status=500)

    # Envelopes

    def _success(self, data: object) -> web.Response:
        envelope = {
            "code": SUCCESS_CODE,
            "msg": "success",
            "requestTime": self._state.now_ms(),
            "data": data,
        }
        return web.Response(body=orjson.dumps(envelope), content_type="application/json")

    def _failure(self, code: str, message: str, status: int = 400) -> web.Response:
        self.refusals[code] += 1
        envelope = {"code": code, "msg": message, "requestTime": self._state.now_ms(), "data": None}
        return web.Response(
            body=orjson.dumps(envelope), status=status, content_type="application/json"
        )

    def _injected_failure(self, code: int) -> web.Response:
        if 500 <= code <= 599:
            self.refusals[str(code)] += 1
            reason = "Service Temporarily Unavailable" if code == 503 else "Server Error"
            return web.Response(
                text=_GATEWAY_PAGE.format(code=code, reason=reason),
                status=code,
                content_type="text/html",
            )
        known = lookup_error(code)
        message = known.exchange_message if known is not None else "injected error"
        status = code if code < 1000 else 400
        return self._failure(str(code), message, status=status)

    # Private pipeline

    def _private(
        self, path: str, handler: Handler
    ) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def serve(request: web.Request) -> web.Response:
            await self._delay()
            self.requests_served += 1
            injected = self._faults.take_cancel_error() if path in CANCEL_PATHS else None
            if injected is None:
                injected = self._faults.take_rest_error()
            if injected is not None:
                return self._injected_failure(injected)
            body = await request.read()
            refusal = self._authenticate(request, body)
            if refusal is not None:
                return refusal
            loop_time = asyncio.get_running_loop().time()
            if not self._limiter.allow(
                (self._state.credentials.api_key, path),
                endpoints.RATE_LIMITS_PER_S[path],
                loop_time,
            ):
                return self._failure("429", "Too Many Requests", status=429)
            try:
                params = _json_object(body) if request.method == "POST" else dict(request.query)
                return self._success(handler(params))
            except _RequestError as error:
                return self._failure(error.code, error.message)

        return serve

    async def _delay(self) -> None:
        delay = self._faults.rest_delay_s
        if delay > 0:
            await asyncio.sleep(delay)

    def _authenticate(self, request: web.Request, body: bytes) -> web.Response | None:
        headers = request.headers
        credentials = self._state.credentials
        api_key = headers.get("ACCESS-KEY", "")
        signature = headers.get("ACCESS-SIGN", "")
        passphrase = headers.get("ACCESS-PASSPHRASE", "")
        timestamp = headers.get("ACCESS-TIMESTAMP", "")
        if not api_key:
            return self._failure("40001", "ACCESS_KEY cannot be empty")
        if not signature:
            return self._failure("40003", "Signature cannot be empty")
        if not passphrase:
            return self._failure("40011", "ACCESS_PASSPHRASE cannot be empty")
        if not (timestamp.isascii() and timestamp.isdigit()) or len(timestamp) > 16:
            return self._failure("40005", "Invalid ACCESS_TIMESTAMP")
        if len(api_key) > 100 or not api_key.isascii() or not api_key.isprintable():
            return self._failure("40006", "Invalid ACCESS_KEY")
        if not hmac.compare_digest(api_key.encode(), credentials.api_key.encode()):
            return self._failure("40037", "Apikey does not exist")
        if abs(self._skewed_now_ms() - int(timestamp)) > endpoints.SIGNING_WINDOW_MS:
            return self._failure("40008", "Request timestamp expired")
        if not hmac.compare_digest(passphrase.encode(), credentials.passphrase.encode()):
            return self._failure("40012", "apikey/password is incorrect")
        url = request.rel_url
        prefix = rest_prehash(timestamp, request.method, url.raw_path, url.raw_query_string, "")
        expected = sign_bytes(credentials.api_secret, prefix.encode() + body)
        if not hmac.compare_digest(signature.encode(), expected.encode()):
            return self._failure("40009", "sign signature error")
        if (headers.get("paptrading") == "1") != self._state.demo:
            return self._failure("40099", "exchange environment is incorrect")
        return None

    # Public and control routes

    async def _server_time(self, request: web.Request) -> web.Response:
        await self._delay()
        if not self._public_allowed(request, endpoints.SERVER_TIME):
            return self._failure("429", "Too Many Requests", status=429)
        return self._success({"serverTime": str(self._skewed_now_ms())})

    async def _market_refusal(self, request: web.Request, path: str) -> web.Response | None:
        """What a public market endpoint answers before its data: Bitget's 429 past its per-IP
        limit, its error for a missing or other product type; None when it may answer."""
        await self._delay()
        self.requests_served += 1
        if not self._public_allowed(request, path):
            return self._failure("429", "Too Many Requests", status=429)
        try:
            _product_type(request.query)
        except _RequestError as error:
            return self._failure(error.code, error.message)
        return None

    async def _contract_table(self, request: web.Request) -> web.Response:
        """Bitget's contract table: every contract, or the one `symbol` names (none: [])."""
        if (refusal := await self._market_refusal(request, endpoints.CONTRACTS)) is not None:
            return refusal
        symbol = request.query.get("symbol", "").upper()
        return self._success(
            [entry for entry in self._contracts if not symbol or entry["symbol"] == symbol]
        )

    def relist(self, symbol: str, fields: Mapping[str, str]) -> None:
        """`symbol`'s table entry with `fields` changed (SimExchange.relist)."""
        if not any(entry["symbol"] == symbol for entry in self._contracts):
            raise ValueError(f"the contract table has no {symbol}")
        self._contracts = tuple(
            {**entry, **fields} if entry["symbol"] == symbol else entry for entry in self._contracts
        )

    def delist(self, symbol: str) -> None:
        """`symbol`'s entry taken out of the contract table (SimExchange.delist)."""
        if not any(entry["symbol"] == symbol for entry in self._contracts):
            raise ValueError(f"the contract table has no {symbol}")
        self._contracts = tuple(entry for entry in self._contracts if entry["symbol"] != symbol)

    async def _tickers(self, request: web.Request) -> web.Response:
        """Bitget's tickers of the product type: each traded symbol's last (mark) price, in
        Bitget's field names (the ones a client reads; the volume fields are left out)."""
        if (refusal := await self._market_refusal(request, endpoints.TICKERS)) is not None:
            return refusal
        now = str(self._skewed_now_ms())
        tickers = []
        for symbol in self._state.engines:
            price = self._state.account.position(symbol).mark_price
            if price > 0:
                text = number_text(price)
                tickers.append({"symbol": symbol, "lastPr": text, "markPrice": text, "ts": now})
        return self._success(tickers)

    def _public_allowed(self, request: web.Request, path: str) -> bool:
        """Within the per-IP rate limit of a public endpoint."""
        return self._limiter.allow(
            (request.remote, path),
            endpoints.RATE_LIMITS_PER_S[path],
            asyncio.get_running_loop().time(),
        )

    def _skewed_now_ms(self) -> int:
        return self._state.now_ms() + self._faults.clock_offset_ms

    async def _post_faults(self, request: web.Request) -> web.Response:
        if not _is_loopback(request.remote):
            return self._failure("40018", "Invalid IP: fault control is loopback-only", status=403)
        try:
            params = _json_object(await request.read())
            specs = params.get("faults")
            if (
                not isinstance(specs, list)
                or not specs
                or not all(isinstance(s, str) for s in specs)
            ):
                raise _RequestError(
                    "40020", 'body must be {"faults": ["spec", ...]}, e.g. ["silence:5"]'
                )
            applied = [str(self._faults.add(spec)) for spec in specs]
        except _RequestError as error:
            return self._failure(error.code, error.message)
        except FaultSpecError as error:
            return self._failure("40020", str(error))
        return self._success({"accepted": applied, "state": self._faults.describe()})

    async def _get_faults(self, request: web.Request) -> web.Response:
        if not _is_loopback(request.remote):
            return self._failure("40018", "Invalid IP: fault control is loopback-only", status=403)
        return self._success(self._faults.describe())

    # Handlers

    def _place_order(self, params: dict[str, object]) -> object:
        engine = self._engine(params)
        _product_type(params)
        margin_mode = _choice(params, "marginMode", ("isolated", "crossed"))
        _margin_coin(params, required=True)
        size = _positive_number(params, "size")
        side = OrderSide(_choice(params, "side", ("buy", "sell")))
        if params.get("tradeSide") not in (None, ""):
            raise _RequestError(
                "40774",
                "The order type for unilateral position must also be the unilateral position type",
            )
        order_type = OrderType(_choice(params, "orderType", ("limit", "market")))
        force = TimeInForce(
            _choice(params, "force", tuple(TimeInForce), default=TimeInForce.GTC.value)
        )
        price = _positive_number(params, "price") if order_type is OrderType.LIMIT else None
        reduce_only = _choice(params, "reduceOnly", ("YES", "NO"), default="NO") == "YES"
        client_oid = _client_oid(params)
        if client_oid is not None and any(
            order.client_oid == client_oid
            for other in self._state.engines.values()
            for order in other.open_orders()
        ):
            raise _RequestError("43118", "clientOrderId duplicate")
        request = OrderRequest(side, order_type, size, price, force, reduce_only, client_oid)
        try:
            result = engine.submit(request, self._state.now_ms())
        except OrderRejected as rejection:
            raise _RequestError(rejection.code, rejection.message) from None
        self._remember_margin_mode(result.order.order_id, margin_mode)
        self._on_fills(result.fills)
        return {"orderId": result.order.order_id, "clientOid": result.order.client_oid}

    def _cancel_order(self, params: dict[str, object]) -> object:
        engine = self._engine(params)
        _product_type(params)
        _margin_coin(params, required=False)
        order_id = _optional_text(params, "orderId")
        client_oid = _optional_text(params, "clientOid")
        if order_id is None and client_oid is None:
            raise _RequestError("40019", "Parameter orderId or clientOid cannot be empty")
        try:
            order = engine.cancel(self._state.now_ms(), order_id=order_id, client_oid=client_oid)
        except OrderRejected as rejection:
            raise _RequestError(rejection.code, rejection.message) from None
        return {"orderId": order.order_id, "clientOid": order.client_oid}

    def _batch_cancel_orders(self, params: dict[str, object]) -> object:
        _product_type(params)
        _margin_coin(params, required=False)
        id_list = params.get("orderIdList")
        if id_list is None:
            return self._cancel_everything(self._engines_asked(params))
        engine = self._engine(params)
        if not isinstance(id_list, list) or len(id_list) > _BATCH_CANCEL_MAX:
            raise _RequestError(
                "40020", f"Parameter orderIdList must be a list of at most {_BATCH_CANCEL_MAX}"
            )
        success: list[dict[str, str]] = []
        failure: list[dict[str, str]] = []
        for item in id_list:
            entry = item if isinstance(item, dict) else {}
            order_id = _optional_text(entry, "orderId")
            client_oid = _optional_text(entry, "clientOid")
            try:
                if order_id is None and client_oid is None:
                    raise OrderRejected("40019", "Parameter orderId or clientOid cannot be empty")
                order = engine.cancel(
                    self._state.now_ms(), order_id=order_id, client_oid=client_oid
                )
            except OrderRejected as rejection:
                failure.append(
                    {
                        "orderId": order_id or "",
                        "clientOid": client_oid or "",
                        "errorMsg": rejection.message,
                        "errorCode": rejection.code,
                    }
                )
                continue
            success.append({"orderId": order.order_id, "clientOid": order.client_oid})
        return {"successList": success, "failureList": failure}

    def _cancel_all_orders(self, params: dict[str, object]) -> object:
        _product_type(params)
        _margin_coin(params, required=False)
        return self._cancel_everything(list(self._state.engines.values()))

    def _cancel_everything(self, engines: list[MatchingEngine]) -> object:
        now = self._state.now_ms()
        cancelled = [order for engine in engines for order in engine.cancel_all(now)]
        if not cancelled:
            raise _RequestError("22001", "No order to cancel")
        return {
            "successList": [
                {"orderId": order.order_id, "clientOid": order.client_oid} for order in cancelled
            ],
            "failureList": [],
        }

    def _close_positions(self, params: dict[str, object]) -> object:
        _product_type(params)
        hold_side = _optional_text(params, "holdSide")
        if hold_side is not None and hold_side not in ("long", "short"):
            raise _RequestError("40020", "Parameter holdSide error")
        engines = self._engines_asked(params)
        targets = [
            (engine, self._state.account.position(engine.symbol))
            for engine in engines
            if self._state.account.position(engine.symbol).size
        ]
        if not targets:
            raise _RequestError("22002", "No position to close")
        success: list[dict[str, str]] = []
        failure: list[dict[str, str]] = []
        for engine, position in targets:
            side = OrderSide.SELL if position.size > 0 else OrderSide.BUY
            request = OrderRequest(
                side, OrderType.MARKET, abs(position.size), reduce_only=True, flash_close=True
            )
            try:
                result = engine.submit(request, self._state.now_ms())
            except OrderRejected as rejection:
                failure.append(
                    {
                        "orderId": "",
                        "clientOid": "",
                        "symbol": engine.symbol,
                        "errorMsg": rejection.message,
                        "errorCode": rejection.code,
                    }
                )
                continue
            self._on_fills(result.fills)
            success.append(
                {
                    "orderId": result.order.order_id,
                    "clientOid": result.order.client_oid,
                    "symbol": engine.symbol,
                }
            )
        return {"successList": success, "failureList": failure}

    def _orders_pending(self, params: dict[str, object]) -> object:
        _product_type(params)
        engines = self._engines_asked(params)
        order_id = _optional_text(params, "orderId")
        client_oid = _optional_text(params, "clientOid")
        status = _optional_text(params, "status")
        if status is not None and status not in (
            OrderStatus.LIVE.value,
            OrderStatus.PARTIALLY_FILLED.value,
        ):
            raise _RequestError("40020", "Parameter status error")
        orders = (
            order
            for engine in engines
            for order in engine.open_orders()
            if (order_id is None or order.order_id == order_id)
            and (client_oid is None or order.client_oid == client_oid)
            and (status is None or order.status == status)
        )
        return _newest_page(orders, _ORDER_ID, params, "entrustedList", self._order_json)

    def _all_position(self, params: dict[str, object]) -> object:
        _product_type(params)
        _margin_coin(params, required=False)
        return [self._position_json(position) for position in self._state.account.positions()]

    def _order_detail(self, params: dict[str, object]) -> object:
        """One order, open or recently closed, by orderId (preferred) or clientOid."""
        engine = self._engine(params)
        _product_type(params)
        order_id = _optional_text(params, "orderId")
        client_oid = _optional_text(params, "clientOid")
        if order_id is None and client_oid is None:
            raise _RequestError("40019", "Parameter orderId or clientOid cannot be empty")
        order = (
            engine.order(order_id)
            if order_id is not None
            else engine.order_by_client_oid(str(client_oid))
        )
        if order is None:
            raise _RequestError("40109", "The data of the order cannot be found")
        detail = self._order_json(order)
        detail["state"] = detail.pop("status")  # the detail endpoint names it `state`
        detail["cancelReason"] = order.cancel_reason
        return detail

    def _order_fills(self, params: dict[str, object]) -> object:
        """The fills of one order, newest first, paged by tradeId. Bitget also lists an
        account's fills without an orderId; the simulator keeps fills per order only."""
        _product_type(params)
        order_id = _optional_text(params, "orderId")
        if order_id is None:
            raise _RequestError(
                "40019", "Parameter orderId cannot be empty (the simulator lists fills by order)"
            )
        fills = (
            fill for engine in self._engines_asked(params) for fill in engine.order_fills(order_id)
        )
        return _newest_page(fills, _TRADE_ID, params, "fillList", self._fill_json)

    # Rendering

    def _fill_json(self, fill: Fill) -> dict[str, object]:
        instrument = self._state.engines[fill.symbol].instrument
        return {
            "tradeId": fill.trade_id,
            "symbol": fill.symbol,
            "orderId": fill.order_id,
            "price": instrument.format_price(fill.price),
            "baseVolume": instrument.format_size(fill.size),
            "feeDetail": [
                {
                    "deduction": "no",
                    "feeCoin": endpoints.MARGIN_COIN,
                    "totalDeductionFee": "0",
                    "totalFee": number_text(-fill.fee),
                }
            ],
            "side": str(fill.side),
            "quoteVolume": number_text(fill.price * fill.size),
            "profit": "0",
            "enterPointSource": "API",
            "tradeSide": f"{fill.side}_single",
            "posMode": "one_way_mode",
            "tradeScope": str(fill.liquidity),
            "cTime": str(fill.ts_ms),
        }

    def _order_json(self, order: Order) -> dict[str, object]:
        instrument = self._state.engines[order.symbol].instrument
        return {
            "symbol": order.symbol,
            "size": instrument.format_size(order.size),
            "orderId": order.order_id,
            "clientOid": order.client_oid,
            "baseVolume": instrument.format_size(order.filled_size),
            "fee": number_text(-order.fee),
            "price": instrument.format_price(order.price) if order.price is not None else "",
            "priceAvg": instrument.format_price(order.average_price) if order.filled_size else "",
            "status": str(order.status),
            "side": str(order.side),
            "force": str(order.force),
            "totalProfits": "0",
            "posSide": "net",
            "marginCoin": endpoints.MARGIN_COIN,
            "quoteVolume": number_text(order.filled_size * order.average_price),
            "leverage": str(self._state.account.config.leverage),
            "marginMode": self.margin_mode(order.order_id),
            "reduceOnly": "YES" if order.reduce_only else "NO",
            "enterPointSource": "API",
            "tradeSide": f"{order.side}_single",
            "posMode": "one_way_mode",
            "orderType": str(order.order_type),
            "orderSource": "normal",
            "presetStopSurplusPrice": "",
            "presetStopLossPrice": "",
            "cTime": str(order.created_ms),
            "uTime": str(order.updated_ms),
        }

    def _position_json(self, position: Position) -> dict[str, object]:
        engine = self._state.engines[position.symbol]
        instrument = engine.instrument
        figures = position_figures(position, engine, self._state.account)
        return {
            "marginCoin": endpoints.MARGIN_COIN,
            "symbol": position.symbol,
            "holdSide": "long" if position.size > 0 else "short",
            "openDelegateSize": instrument.format_size(figures.open_delegate),
            "marginSize": number_text(figures.margin),
            "available": instrument.format_size(figures.size - figures.locked),
            "locked": instrument.format_size(figures.locked),
            "total": instrument.format_size(figures.size),
            "leverage": str(self._state.account.config.leverage),
            "achievedProfits": number_text(position.realized_pnl),
            "openPriceAvg": instrument.format_price(position.entry_price),
            "marginMode": "crossed",
            "posMode": "one_way_mode",
            "unrealizedPL": number_text(position.unrealized_pnl),
            "liquidationPrice": number_text(figures.liquidation_price),
            "keepMarginRate": number_text(self._state.account.config.maintenance_margin_rate),
            "markPrice": instrument.format_price(position.mark_price),
            "marginRatio": number_text(figures.margin_ratio),
            "breakEvenPrice": instrument.format_price(figures.break_even_price),
            "totalFee": "0",
            "deductedFee": number_text(position.fees),
            "takeProfit": "",
            "stopLoss": "",
            "assetMode": "single",
            "cTime": str(position.opened_ms),
            "uTime": str(position.updated_ms),
        }

    def _engine(self, params: Mapping[str, object]) -> MatchingEngine:
        symbol = params.get("symbol")
        if symbol in (None, ""):
            raise _RequestError("40019", "Parameter symbol cannot be empty")
        if not isinstance(symbol, str) or symbol not in self._state.engines:
            raise _RequestError("40034", f"Parameter {symbol} does not exist")
        return self._state.engines[symbol]

    def _engines_asked(self, params: Mapping[str, object]) -> list[MatchingEngine]:
        """The symbol's engine when the request names one, else every engine."""
        if params.get("symbol"):
            return [self._engine(params)]
        return list(self._state.engines.values())

    def margin_mode(self, order_id: str) -> str:
        """The marginMode an order was placed with (`crossed` for orders not placed over REST)."""
        return self._margin_modes.get(order_id, "crossed")

    def _remember_margin_mode(self, order_id: str, margin_mode: str) -> None:
        self._margin_modes[order_id] = margin_mode
        if len(self._margin_modes) > _MARGIN_MODES_KEPT:
            self._margin_modes.popitem(last=False)


# Parameter parsing


def _json_object(body: bytes) -> dict[str, object]:
    if not body.strip():
        return {}
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise _RequestError("40020", "Parameter verification failed: body is not JSON") from None
    if not isinstance(value, dict):
        raise _RequestError("40020", "Parameter verification failed: body must be a JSON object")
    return value


def _optional_text(params: Mapping[str, object], name: str) -> str | None:
    return text_field(params, name, _parameter_error)


def _parameter_error(name: str, value: object) -> _RequestError:
    return _RequestError("40020", f"Parameter {name} error")


def _required_text(params: Mapping[str, object], name: str) -> str:
    value = _optional_text(params, name)
    if value is None:
        raise _RequestError("40019", f"Parameter {name} cannot be empty")
    return value


def _choice(
    params: Mapping[str, object], name: str, allowed: tuple[str, ...], default: str | None = None
) -> str:
    value = _optional_text(params, name)
    if value is None:
        if default is None:
            raise _RequestError("40019", f"Parameter {name} cannot be empty")
        return default
    for option in allowed:
        if value.lower() == option.lower():
            return option
    raise _RequestError("40020", f"Parameter {name} error: {value!r} is not one of {list(allowed)}")


def _product_type(params: Mapping[str, object]) -> None:
    value = _required_text(params, "productType")
    if value.upper() != endpoints.PRODUCT_TYPE:
        raise _RequestError(
            "40020", f"Parameter productType error: the sim only trades {endpoints.PRODUCT_TYPE}"
        )


def _margin_coin(params: Mapping[str, object], *, required: bool) -> None:
    value = (
        _required_text(params, "marginCoin") if required else _optional_text(params, "marginCoin")
    )
    if value is not None and value.upper() != endpoints.MARGIN_COIN:
        raise _RequestError("40020", f"Parameter marginCoin error: use {endpoints.MARGIN_COIN}")


def _positive_number(params: Mapping[str, object], name: str) -> float:
    value = params.get(name)
    if value is None or value == "":
        raise _RequestError("40019", f"Parameter {name} cannot be empty")
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise _RequestError("40020", f"Parameter {name} error")
    try:
        number = Decimal(str(value).strip())
    except InvalidOperation:
        raise _RequestError("40020", f"Parameter {name} error: {value!r} is not a number") from None
    if not number.is_finite() or number <= 0:
        raise _RequestError("40020", f"Parameter {name} error: must be a positive number")
    result = float(number)
    if not math.isfinite(result):
        raise _RequestError("40020", f"Parameter {name} error: out of range")
    return result


def _client_oid(params: Mapping[str, object]) -> str | None:
    value = _optional_text(params, "clientOid")
    if value is None:
        return None
    if len(value) > 64:
        raise _RequestError("40305", "clientOid length cannot exceed 64")
    if len(value) > 50:
        raise _RequestError("40304", "clientOid length cannot exceed 50")
    if not _CLIENT_OID.match(value):
        raise _RequestError("40020", "Parameter clientOid error: use [0-9A-Za-z_#-]")
    return value


def _newest_page(
    items: Iterable[_Listed],
    item_id: Callable[[_Listed], str],
    params: Mapping[str, object],
    list_name: str,
    render: Callable[[_Listed], dict[str, object]],
) -> dict[str, object]:
    """One page of Bitget's id paging: newest (largest id) first, below `idLessThan` when
    given, at most `limit`; `endId` is the last one listed (the next page's `idLessThan`)."""
    id_less_than = _optional_text(params, "idLessThan")
    below = None if id_less_than is None else _int_text(id_less_than)
    limit = _page_limit(params)
    kept = [item for item in items if below is None or int(item_id(item)) < below]
    kept.sort(key=lambda item: int(item_id(item)), reverse=True)
    page = kept[:limit]
    return {
        list_name: [render(item) for item in page],
        "endId": item_id(page[-1]) if page else None,
    }


def _page_limit(params: Mapping[str, object]) -> int:
    text = _optional_text(params, "limit")
    if text is None:
        return _PENDING_PAGE_MAX
    limit = _int_text(text)
    if not 1 <= limit <= _PENDING_PAGE_MAX:
        raise _RequestError(
            "40020", f"Parameter limit error: must be within 1..{_PENDING_PAGE_MAX}"
        )
    return limit


def _int_text(text: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise _RequestError("40020", f"Parameter error: {text!r} is not an integer")
    return int(text)


def number_text(value: float) -> str:
    """A USDT amount or a rate as Bitget writes it: plain decimal, at most 8 places."""
    text = f"{value:.8f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


class PositionFigures(NamedTuple):
    """What a position implies beyond its own fields (sizes base coin, amounts USDT)."""

    size: float
    """Absolute size."""
    locked: float
    """Size held by reduce-only orders on the closing side."""
    open_delegate: float
    """Size of open orders that would add to the position."""
    margin: float
    liquidation_price: float
    margin_ratio: float
    break_even_price: float


def position_figures(
    position: Position, engine: MatchingEngine, account: SimAccount
) -> PositionFigures:
    size = abs(position.size)
    closing_side = OrderSide.SELL if position.size > 0 else OrderSide.BUY
    open_side = closing_side.opposite
    open_orders = engine.open_orders()
    locked = min(
        size,
        sum(o.remaining_size for o in open_orders if o.reduce_only and o.side is closing_side),
    )
    open_delegate = sum(
        o.remaining_size for o in open_orders if not o.reduce_only and o.side is open_side
    )
    maintenance = account.config.maintenance_margin_rate
    equity = account.equity
    return PositionFigures(
        size=size,
        locked=locked,
        open_delegate=open_delegate,
        margin=size * position.entry_price / account.config.leverage,
        liquidation_price=_liquidation_price(position, account.balance, maintenance),
        margin_ratio=maintenance * size * position.mark_price / equity if equity > 0 else 1.0,
        break_even_price=position.entry_price + position.fees / position.size,
    )


def _liquidation_price(position: Position, balance: float, maintenance_rate: float) -> float:
    """Crossed-margin price at which equity falls to maintenance margin (0 when none)."""
    size = abs(position.size)
    if position.size > 0:
        price = (size * position.entry_price - balance) / (size * (1.0 - maintenance_rate))
    else:
        price = (balance + size * position.entry_price) / (size * (1.0 + maintenance_rate))
    return max(0.0, price)


def _is_loopback(remote: str | None) -> bool:
    if remote is None:
        return False
    try:
        return ipaddress.ip_address(remote).is_loopback
    except ValueError:
        return False
