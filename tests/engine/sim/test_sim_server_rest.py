"""The sim's private REST API: Bitget auth, validation, order lifecycle and positions."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx
import orjson
import pytest
from sim_clients import WAIT_S, BitgetRest
from support.sim import StartSim

from engine.bitget.orders import OrderSide
from engine.sim.market import SimTrade, sim_market
from engine.sim.server import SimExchange
from engine.sim.standalone import status_line

PLACE = "/api/v2/mix/order/place-order"
CANCEL = "/api/v2/mix/order/cancel-order"
BATCH_CANCEL = "/api/v2/mix/order/batch-cancel-orders"
CANCEL_ALL = "/api/v2/mix/order/cancel-all-orders"
CLOSE = "/api/v2/mix/order/close-positions"
POSITIONS = "/api/v2/mix/position/all-position"
CONTRACTS = "/api/v2/mix/market/contracts"
TICKERS = "/api/v2/mix/market/tickers"
PRODUCT = {"productType": "USDT-FUTURES"}


def assert_failure(response: httpx.Response, code: str, status: int = 400) -> dict[str, object]:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == code, body
    assert body["data"] is None and isinstance(body["requestTime"], int)
    return body


def data_of(response: httpx.Response) -> object:
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["code"] == "00000" and body["msg"] == "success", body
    assert isinstance(body["requestTime"], int)
    return body["data"]


def passive_bid(sim: SimExchange, ticks_below: int = 50) -> str:
    assert sim.market is not None
    book = sim.market.book("BTCUSDT", 1)
    return f"{book.best_bid - ticks_below * 0.1:.1f}"


async def test_server_time_is_public_and_current(rest: BitgetRest) -> None:
    response = await rest.client.get("/api/v2/public/time")
    server_ms = int(data_of(response)["serverTime"])  # type: ignore[index]
    assert abs(server_ms - rest.exchange.now_ms()) < 5_000


async def test_contract_table_is_public_in_bitgets_shape(rest: BitgetRest) -> None:
    table = data_of(await rest.client.get(CONTRACTS, params=PRODUCT))
    assert isinstance(table, list)
    assert [entry["symbol"] for entry in table] == [
        "BTCUSDT", "ETHUSDT", "SOLUSDT", "XRPUSDT", "DOGEUSDT", "ADAUSDT", "TRXUSDT", "LINKUSDT",
        "AVAXUSDT", "DOTUSDT",
    ]  # fmt: skip
    doge = table[4]
    assert (doge["pricePlace"], doge["priceEndStep"], doge["sizeMultiplier"]) == ("5", "1", "1")
    assert all(isinstance(value, (str, list)) for value in doge.values())
    (xrp,) = data_of(await rest.client.get(CONTRACTS, params={**PRODUCT, "symbol": "xrpusdt"}))  # type: ignore[misc]
    assert xrp["symbol"] == "XRPUSDT"
    assert data_of(await rest.client.get(CONTRACTS, params={**PRODUCT, "symbol": "NEXOUSDT"})) == []
    assert_failure(await rest.client.get(CONTRACTS), "40019")
    assert_failure(
        await rest.client.get(CONTRACTS, params={"productType": "COIN-FUTURES"}), "40020"
    )


async def test_tickers_are_public_with_each_markets_last_price(
    rest: BitgetRest, sim: SimExchange
) -> None:
    tickers = data_of(await rest.client.get(TICKERS, params=PRODUCT))
    assert isinstance(tickers, list)
    assert [ticker["symbol"] for ticker in tickers] == ["BTCUSDT", "ETHUSDT"]
    btc = sim.market.book("BTCUSDT", 1)
    assert abs(float(tickers[0]["lastPr"]) - btc.mid) <= btc.best_ask - btc.best_bid
    assert tickers[0]["markPrice"] == tickers[0]["lastPr"] and tickers[0]["ts"].isdigit()
    assert_failure(await rest.client.get(TICKERS), "40019")


async def test_signed_order_is_accepted_and_listed_as_pending(
    rest: BitgetRest, sim: SimExchange
) -> None:
    price = passive_bid(sim)
    placed = data_of(await rest.place(price=price, clientOid="alpha-1"))
    assert placed["clientOid"] == "alpha-1" and placed["orderId"].isdigit()  # type: ignore[index]
    (order,) = await rest.pending()
    assert order["orderId"] == placed["orderId"]  # type: ignore[index]
    assert order["price"] == price and order["size"] == "0.010" and order["status"] == "live"
    assert order["side"] == "buy" and order["force"] == "gtc" and order["reduceOnly"] == "NO"
    assert order["posMode"] == "one_way_mode" and order["marginCoin"] == "USDT"
    assert [o.client_oid for o in sim.open_orders()] == ["alpha-1"]
    # The order joined the queue at its price: it knows the displayed size ahead of it.
    ahead = sim.engine("BTCUSDT").queue_ahead(placed["orderId"])  # type: ignore[index]
    assert ahead is not None and ahead >= 0


async def test_a_fill_is_stamped_when_matched_never_before_its_order_was_placed(
    rest: BitgetRest, sim: SimExchange
) -> None:
    price = passive_bid(sim)
    placed = data_of(await rest.place(price=price, clientOid="late-1"))
    order = sim.engine("BTCUSDT").order(placed["orderId"])  # type: ignore[index]
    assert order is not None
    # A tick's trades carry their own times since the last tick: this one printed before the
    # order arrived, and reaches it only when the tick runs.
    earlier = SimTrade("BTCUSDT", float(price) - 0.1, 1.0, OrderSide.SELL, 1, order.created_ms - 20)
    now_ms = sim.now_ms()
    sim._advance(now_ms, [earlier])
    (fill,) = [fill for fill in sim.fills() if fill.client_oid == "late-1"]
    assert fill.ts_ms == now_ms >= order.created_ms


async def test_bad_signature_is_40009(rest: BitgetRest) -> None:
    headers = rest.headers("POST", PLACE, body="{}")
    headers["ACCESS-SIGN"] = "A" * 44
    response = await rest.client.post(PLACE, content="{}", headers=headers)
    body = assert_failure(response, "40009")
    assert body["msg"] == "sign signature error"


async def test_body_changed_after_signing_is_40009(rest: BitgetRest) -> None:
    signed_body = orjson.dumps({"symbol": "BTCUSDT", "size": "0.01"}).decode()
    sent_body = signed_body.replace("0.01", "0.02")
    headers = rest.headers("POST", PLACE, body=signed_body)
    assert_failure(await rest.client.post(PLACE, content=sent_body, headers=headers), "40009")


async def test_query_changed_after_signing_is_40009(rest: BitgetRest) -> None:
    path = "/api/v2/mix/order/orders-pending"
    headers = rest.headers("GET", path, "productType=USDT-FUTURES")
    response = await rest.client.get(
        f"{path}?productType=USDT-FUTURES&symbol=BTCUSDT", headers=headers
    )
    assert_failure(response, "40009")


@pytest.mark.parametrize(
    ("header", "value", "code"),
    [
        ("ACCESS-KEY", "", "40001"),
        ("ACCESS-SIGN", "", "40003"),
        ("ACCESS-PASSPHRASE", "", "40011"),
        ("ACCESS-TIMESTAMP", "yesterday", "40005"),
        ("ACCESS-KEY", "someone-else", "40037"),
        ("ACCESS-PASSPHRASE", "wrong", "40012"),
    ],
)
async def test_auth_header_problems_get_their_codes(
    rest: BitgetRest, header: str, value: str, code: str
) -> None:
    headers = rest.headers("POST", PLACE, body="{}")
    headers[header] = value
    assert_failure(await rest.client.post(PLACE, content="{}", headers=headers), code)


async def test_timestamp_skew_over_30s_is_40008(rest: BitgetRest) -> None:
    for skew in (-31_000, 31_000):
        headers = rest.headers("POST", PLACE, body="{}", skew_ms=skew)
        assert_failure(await rest.client.post(PLACE, content="{}", headers=headers), "40008")
    headers = rest.headers("POST", PLACE, body="{}", skew_ms=-20_000)
    # Within the window the request gets past auth (and fails validation instead).
    assert_failure(await rest.client.post(PLACE, content="{}", headers=headers), "40019")


async def test_demo_mode_requires_paptrading_header(
    start_sim: Callable[..., Awaitable[SimExchange]],
) -> None:
    demo = await start_sim(demo=True)
    async with httpx.AsyncClient(base_url=demo.rest_url, timeout=WAIT_S) as client:
        demo_client = BitgetRest(demo, client)
        assert data_of(await demo_client.get(POSITIONS, PRODUCT)) == []
        headers = demo_client.headers("GET", POSITIONS, "productType=USDT-FUTURES")
        del headers["paptrading"]
        response = await client.get(f"{POSITIONS}?productType=USDT-FUTURES", headers=headers)
        assert_failure(response, "40099")


async def test_live_mode_refuses_paptrading_header(rest: BitgetRest) -> None:
    response = await rest.post(PLACE, {}, headers={"paptrading": "1"})
    assert_failure(response, "40099")


async def test_duplicate_client_oid_is_43118(rest: BitgetRest, sim: SimExchange) -> None:
    price = passive_bid(sim)
    data_of(await rest.place(price=price, clientOid="dup-1"))
    assert_failure(await rest.place(price=price, clientOid="dup-1"), "43118")
    assert_failure(
        await rest.place(symbol="ETHUSDT", size="0.10", price="3000.00", clientOid="dup-1"),
        "43118",
    )


async def test_cancel_by_id_and_client_oid_then_unknown_is_43001(
    rest: BitgetRest, sim: SimExchange
) -> None:
    price = passive_bid(sim)
    first = data_of(await rest.place(price=price))
    data_of(await rest.place(price=price, clientOid="by-client-id"))
    cancelled = data_of(
        await rest.post(CANCEL, {"symbol": "BTCUSDT", **PRODUCT, "orderId": first["orderId"]})  # type: ignore[index]
    )
    assert cancelled["orderId"] == first["orderId"]  # type: ignore[index]
    data_of(await rest.post(CANCEL, {"symbol": "BTCUSDT", **PRODUCT, "clientOid": "by-client-id"}))
    assert await rest.pending() == []
    response = await rest.post(
        CANCEL, {"symbol": "BTCUSDT", **PRODUCT, "orderId": first["orderId"]}
    )  # type: ignore[index]
    assert_failure(response, "43001")
    assert_failure(await rest.post(CANCEL, {"symbol": "BTCUSDT", **PRODUCT}), "40019")


async def test_cancel_all_then_nothing_left_is_22001(rest: BitgetRest, sim: SimExchange) -> None:
    data_of(await rest.place(price=passive_bid(sim)))
    data_of(await rest.place(symbol="ETHUSDT", size="0.10", price="3000.00"))
    result = data_of(await rest.post(CANCEL_ALL, {**PRODUCT, "marginCoin": "USDT"}))
    assert len(result["successList"]) == 2 and result["failureList"] == []  # type: ignore[index]
    assert sim.open_orders() == []
    assert_failure(await rest.post(CANCEL_ALL, PRODUCT), "22001")


async def test_batch_cancel_reports_successes_and_failures(
    rest: BitgetRest, sim: SimExchange
) -> None:
    placed = data_of(await rest.place(price=passive_bid(sim)))
    body = {
        "symbol": "BTCUSDT",
        **PRODUCT,
        "orderIdList": [{"orderId": placed["orderId"]}, {"orderId": "123"}],  # type: ignore[index]
    }
    result = data_of(await rest.post(BATCH_CANCEL, body))
    assert result["successList"] == [  # type: ignore[index]
        {"orderId": placed["orderId"], "clientOid": placed["clientOid"]}  # type: ignore[index]
    ]
    (failure,) = result["failureList"]  # type: ignore[index]
    assert failure["orderId"] == "123" and failure["errorCode"] == "43001"
    data_of(await rest.place(price=passive_bid(sim)))
    by_symbol = data_of(await rest.post(BATCH_CANCEL, {"symbol": "BTCUSDT", **PRODUCT}))
    assert len(by_symbol["successList"]) == 1  # type: ignore[index]


async def test_market_buy_opens_a_position_that_close_positions_flattens(
    rest: BitgetRest, sim: SimExchange
) -> None:
    data_of(await rest.place(orderType="market", size="0.050"))
    (fill_position,) = sim.positions()
    assert fill_position.size == pytest.approx(0.05)
    assert sim.fills() and all(f.liquidity == "taker" for f in sim.fills())
    (position,) = data_of(await rest.get(POSITIONS, {"marginCoin": "USDT", **PRODUCT}))  # type: ignore[misc]
    assert position["symbol"] == "BTCUSDT" and position["holdSide"] == "long"
    assert position["total"] == "0.050" and position["posMode"] == "one_way_mode"
    assert float(position["openPriceAvg"]) > 0 and float(position["deductedFee"]) > 0
    closed = data_of(await rest.post(CLOSE, {"symbol": "BTCUSDT", **PRODUCT}))
    assert [entry["symbol"] for entry in closed["successList"]] == ["BTCUSDT"]  # type: ignore[index]
    assert sim.positions() == []
    assert data_of(await rest.get(POSITIONS, PRODUCT)) == []


async def test_close_positions_rate_limit_is_one_per_second(rest: BitgetRest) -> None:
    assert_failure(await rest.post(CLOSE, PRODUCT), "22002")
    assert_failure(await rest.post(CLOSE, PRODUCT), "429", status=429)


async def test_place_order_rate_limit_is_ten_per_second(rest: BitgetRest) -> None:
    responses = [await rest.post(PLACE, PRODUCT) for _ in range(11)]
    assert [r.status_code for r in responses[:10]] == [400] * 10  # validation errors, not limits
    assert_failure(responses[10], "429", status=429)


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"size": "0.0015"}, "45111"),
        ({"price": "60000.05"}, "45115"),
        ({"price": "1000.0", "size": "0.001"}, "45110"),
        ({"size": "50.000"}, "40762"),
        ({"tradeSide": "open"}, "40774"),
        ({"symbol": "NOPEUSDT"}, "40034"),
        ({"symbol": None}, "40019"),
        ({"side": None}, "40019"),
        ({"side": "hold"}, "40020"),
        ({"orderType": "stop"}, "40020"),
        ({"force": "day"}, "40020"),
        ({"price": None}, "40019"),
        ({"price": "cheap"}, "40020"),
        ({"size": "-1"}, "40020"),
        ({"productType": "COIN-FUTURES"}, "40020"),
        ({"marginCoin": "BTC"}, "40020"),
        ({"marginMode": "portfolio"}, "40020"),
        ({"reduceOnly": "maybe"}, "40020"),
        ({"clientOid": "x" * 51}, "40304"),
        ({"clientOid": "x" * 65}, "40305"),
        ({"clientOid": "bad/oid"}, "40020"),
        ({"reduceOnly": "YES"}, "40757"),
    ],
)
async def test_order_validation_errors(
    rest: BitgetRest, sim: SimExchange, fields: dict[str, object], code: str
) -> None:
    response = await rest.place(**{"price": passive_bid(sim), **fields})
    assert_failure(response, code)


async def test_non_json_body_is_refused_with_a_bitget_error(rest: BitgetRest) -> None:
    assert_failure(await rest.post(PLACE, "{not json"), "40020")
    assert_failure(await rest.post(PLACE, "[1, 2]"), "40020")


async def test_unknown_route_is_a_bitget_404(rest: BitgetRest) -> None:
    response = await rest.client.get("/api/v2/mix/order/nothing-here")
    assert_failure(response, "40404", status=404)


async def test_a_large_tick_contract_trades_at_its_grid_and_closes_flat(
    start_sim: StartSim,
) -> None:
    sim = await start_sim(market=sim_market(("ADAUSDT", "DOGEUSDT"), seed=7))
    assert sim.market is not None
    ada = sim.market.instrument("ADAUSDT")
    async with httpx.AsyncClient(base_url=sim.rest_url, timeout=WAIT_S * 2) as client:
        rest = BitgetRest(sim, client)
        book = sim.market.book("ADAUSDT", 1)
        between_ticks = f"{book.best_bid - 0.00005:.5f}"
        assert_failure(await rest.place(symbol="ADAUSDT", price=between_ticks, size="100"), "45115")
        assert_failure(await rest.place(symbol="ADAUSDT", price="0.2000", size="100.5"), "45111")
        doge_bid = sim.market.book("DOGEUSDT", 1).best_bid - 0.0005
        resting = data_of(await rest.place(symbol="DOGEUSDT", price=f"{doge_bid:.5f}", size="100"))
        (pending,) = await rest.pending(symbol="DOGEUSDT")
        assert pending["orderId"] == resting["orderId"]  # type: ignore[index]
        assert pending["price"] == f"{doge_bid:.5f}"
        # Two ticks through the ask: taken at once at the book's prices, on ADA's grid.
        through_ask = f"{book.best_ask + 2 * ada.tick_size:.4f}"
        data_of(await rest.place(symbol="ADAUSDT", price=through_ask, size="100"))
        fills = [fill for fill in sim.fills() if fill.symbol == "ADAUSDT"]
        assert fills and all(ada.is_on_tick(fill.price) for fill in fills)
        assert sum(fill.size for fill in fills) == 100
        (position,) = data_of(await rest.get(POSITIONS, {"marginCoin": "USDT", **PRODUCT}))  # type: ignore[misc]
        assert (position["symbol"], position["holdSide"], position["total"]) == (
            "ADAUSDT", "long", "100",
        )  # fmt: skip
        assert len(position["openPriceAvg"].split(".")[1]) == 4
        ada_mid, doge_mid = (sim.market.book(symbol, 1).mid for symbol in sim.market.symbols)
        assert status_line(sim.stats()).endswith(
            f"ADAUSDT {round(ada_mid, 5)!r}  DOGEUSDT {round(doge_mid, 6)!r}"
        )
        data_of(await rest.post(CANCEL_ALL, {"marginCoin": "USDT", **PRODUCT}))
        closed = data_of(await rest.post(CLOSE, {"symbol": "ADAUSDT", **PRODUCT}))
        assert [entry["symbol"] for entry in closed["successList"]] == ["ADAUSDT"]  # type: ignore[index]
        assert sim.positions() == [] and sim.open_orders() == []


async def test_close_positions_closes_a_position_worth_less_than_the_minimum_amount(
    start_sim: StartSim,
) -> None:
    """Flash close takes the whole position at market, however small (Bitget: "Flash order
    allows for immediate closing of the whole position"); an order of that size is refused."""
    sim = await start_sim(market=sim_market(("ADAUSDT", "DOGEUSDT"), seed=7))
    assert sim.market is not None
    ada = sim.market.instrument("ADAUSDT")
    dust = ada.size_of(int(ada.min_notional / sim.market.book("ADAUSDT", 1).best_ask / 2))
    async with httpx.AsyncClient(base_url=sim.rest_url, timeout=WAIT_S * 2) as client:
        rest = BitgetRest(sim, client)
        data_of(await rest.place(symbol="ADAUSDT", orderType="market", size="100"))
        sold = f"{100 - dust:g}"
        data_of(await rest.place(symbol="ADAUSDT", orderType="market", side="sell", size=sold))
        (position,) = sim.positions()
        assert position.size == dust
        assert_failure(
            await rest.place(symbol="ADAUSDT", orderType="market", size=f"{dust:g}"), "45110"
        )
        closed = data_of(await rest.post(CLOSE, PRODUCT))
        assert closed["failureList"] == []  # type: ignore[index]
        assert [entry["symbol"] for entry in closed["successList"]] == ["ADAUSDT"]  # type: ignore[index]
        assert sim.positions() == []
