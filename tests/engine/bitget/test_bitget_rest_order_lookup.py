"""Looking an order up after its pushes were lost: order detail and its fills, on the real
simulator, and the parsers on the shapes Bitget documents."""

from __future__ import annotations

from decimal import Decimal

import pytest
from support.bitget import FAST_RETRIES, sim_credentials

from engine.bitget.models import MalformedAnswer, parse_fill_page, parse_order_detail
from engine.bitget.orders import OrderSide, TimeInForce
from engine.bitget.rest import BitgetApiError, BitgetRestClient, BitgetRestConfig


@pytest.fixture
async def client(sim):
    rest = BitgetRestClient(
        BitgetRestConfig(base_url=sim.rest_url, **FAST_RETRIES), sim_credentials(sim)
    )
    await rest.start()
    yield rest
    await rest.stop()


async def test_a_filled_order_is_found_with_every_fill(sim, client):
    book = sim.market.book("BTCUSDT", 15)
    # Through the whole displayed ask side: a taker order that fills at several levels.
    size = Decimal("0.005")
    price = Decimal(str(round(book.best_ask * 1.001, 1)))
    ack = await client.place_order(
        "BTCUSDT", OrderSide.BUY, size, price=price, client_oid="lookup-1"
    )
    detail = await client.order_detail("BTCUSDT", client_oid="lookup-1")
    assert (detail.order_id, detail.client_oid, detail.symbol) == (
        ack.order_id,
        "lookup-1",
        "BTCUSDT",
    )
    assert detail.status == "filled" and detail.filled_size == size
    assert detail.side is OrderSide.BUY and detail.price == price
    by_id = await client.order_detail("BTCUSDT", order_id=ack.order_id)
    assert by_id == detail

    fills = await client.order_fills("BTCUSDT", ack.order_id)
    sim_fills = [fill for fill in sim.fills() if fill.client_oid == "lookup-1"]
    assert sorted(fill.trade_id for fill in fills) == sorted(f.trade_id for f in sim_fills)
    assert sum(fill.size for fill in fills) == size
    assert all(not fill.maker and fill.order_id == ack.order_id for fill in fills)
    # Bitget's totalFee is negative for a cost; ours is what was paid, positive.
    fees = {fill.trade_id: float(fill.fee) for fill in fills}
    for fill in sim_fills:
        assert fees[fill.trade_id] == pytest.approx(fill.fee) and fill.fee > 0


async def test_a_resting_order_is_live_without_fills(sim, client):
    price = Decimal(str(round(sim.market.book("BTCUSDT", 1).best_bid - 80, 1)))
    ack = await client.place_order(
        "BTCUSDT",
        OrderSide.BUY,
        Decimal("0.002"),
        price=price,
        force=TimeInForce.POST_ONLY,
        client_oid="lookup-2",
    )
    detail = await client.order_detail("BTCUSDT", client_oid="lookup-2")
    assert detail.status == "live" and detail.filled_size == 0
    assert await client.order_fills("BTCUSDT", ack.order_id) == []
    await client.cancel_order("BTCUSDT", client_oid="lookup-2")
    detail = await client.order_detail("BTCUSDT", order_id=ack.order_id)
    assert detail.status == "canceled" and detail.cancel_reason


async def test_an_order_the_exchange_never_had_is_refused_40109(client):
    with pytest.raises(BitgetApiError) as refused:
        await client.order_detail("BTCUSDT", client_oid="never-placed")
    assert refused.value.code == "40109"
    with pytest.raises(ValueError, match="order_id or a client_oid"):
        await client.order_detail("BTCUSDT")


def _detail(**fields: object) -> dict[str, object]:
    detail: dict[str, object] = {
        "symbol": "ethusdt",
        "size": "2",
        "orderId": "123456",
        "clientOid": "77777",
        "baseVolume": "2",
        "price": "1900",
        "state": "filled",
        "side": "buy",
        "reduceOnly": "yes",
        "cancelReason": "",
        "uTime": "1627300098776",
    }
    detail.update(fields)
    return detail


def test_order_detail_reads_state_or_status():
    assert parse_order_detail(_detail()).status == "filled"
    documented_table = _detail(status="canceled")
    del documented_table["state"]
    parsed = parse_order_detail(documented_table)
    assert parsed.status == "canceled" and parsed.symbol == "ETHUSDT" and parsed.reduce_only


@pytest.mark.parametrize(
    "broken",
    [
        _detail(state="exploded"),
        _detail(baseVolume="lots"),
        _detail(side="up"),
        {k: v for k, v in _detail().items() if k != "orderId"},
        [],
    ],
)
def test_a_malformed_order_detail_is_refused(broken):
    with pytest.raises(MalformedAnswer):
        parse_order_detail(broken)


def _fill(**fields: object) -> dict[str, object]:
    fill: dict[str, object] = {
        "tradeId": "123",
        "symbol": "ethusdt",
        "orderId": "121212",
        "price": "1900",
        "baseVolume": "1",
        "feeDetail": [{"feeCoin": "USDT", "totalDeductionFee": "0", "totalFee": "-0.0114"}],
        "side": "buy",
        "tradeScope": "maker",
        "cTime": "1627293509612",
    }
    fill.update(fields)
    return fill


def test_fill_pages_carry_the_cursor_and_the_fee_as_paid():
    fills, end_id = parse_fill_page({"fillList": [_fill()], "endId": "123"})
    assert end_id == "123"
    (fill,) = fills
    assert fill.fee == Decimal("0.0114") and fill.maker and fill.symbol == "ETHUSDT"
    assert parse_fill_page({"fillList": None, "endId": None}) == ([], None)


@pytest.mark.parametrize(
    "broken",
    [
        _fill(baseVolume="0"),
        _fill(price="-1"),
        _fill(tradeScope="middle"),
        _fill(feeDetail="free"),
        _fill(feeDetail=[{"feeCoin": "USDT"}]),
        _fill(cTime="yesterday"),
    ],
)
def test_a_malformed_fill_is_refused(broken):
    with pytest.raises(MalformedAnswer):
        parse_fill_page({"fillList": [broken]})
