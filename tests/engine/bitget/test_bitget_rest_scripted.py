"""BitgetRestClient against a scripted loopback server: lost answers, garbage, rate and logs."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Awaitable, Callable

import orjson
import pytest
from aiohttp import web
from scripted_exchange import (
    ScriptedExchange,
    envelope,
    error,
    ok,
    pending,
    pending_order,
    raw,
)
from support.bitget import SCRIPTED_CREDENTIALS
from support.loopback import drop_connection

from engine.bitget.credentials import Credentials
from engine.bitget.endpoints import ALL_POSITION, ORDERS_PENDING, PLACE_ORDER, SERVER_TIME
from engine.bitget.rest import (
    BitgetApiError,
    BitgetRequestWithdrawn,
    BitgetRestClient,
    BitgetRestError,
    BitgetTransportError,
)
from engine.bitget.signing import rest_prehash, sign_bytes

StartClient = Callable[..., Awaitable[BitgetRestClient]]


async def scripted_client(scripted: ScriptedExchange, start_client: StartClient, **config):
    return await start_client(scripted.url, SCRIPTED_CREDENTIALS, **config)


def client_oids_sent(scripted: ScriptedExchange) -> list[str]:
    return [orjson.loads(a.body)["clientOid"] for a in scripted.arrivals_at(PLACE_ORDER)]


async def test_requests_are_signed_over_the_bytes_received(
    scripted: ScriptedExchange, start_client: StartClient
) -> None:
    headers_received: dict[str, dict[str, str]] = {}

    def capture(data: object):
        async def reply(request: web.Request) -> web.StreamResponse:
            headers_received[request.path] = dict(request.headers)
            return envelope(data)

        return reply

    scripted.script(PLACE_ORDER, capture({"orderId": "1", "clientOid": "sig-1"}))
    scripted.script(ALL_POSITION, capture([]))
    client = await scripted_client(scripted, start_client)
    await client.place_order("BTCUSDT", "buy", "0.010", price="60000.5", client_oid="sig-1")
    await client.positions()
    for arrival in scripted.arrivals:
        headers = headers_received[arrival.path]
        prefix = rest_prehash(
            headers["ACCESS-TIMESTAMP"], arrival.method, arrival.path, arrival.query, ""
        )
        expected = sign_bytes(SCRIPTED_CREDENTIALS.api_secret, prefix.encode() + arrival.body)
        assert headers["ACCESS-SIGN"] == expected, arrival.path
        assert headers["ACCESS-PASSPHRASE"] == SCRIPTED_CREDENTIALS.passphrase
        assert "paptrading" not in headers
    assert orjson.loads(scripted.arrivals_at(PLACE_ORDER)[0].body)["price"] == "60000.5"
    assert scripted.arrivals_at(ALL_POSITION)[0].query == "marginCoin=USDT&productType=USDT-FUTURES"


async def test_lost_answer_is_reconciled_and_not_resent_when_the_order_is_pending(
    scripted: ScriptedExchange, start_client: StartClient
) -> None:
    scripted.script(PLACE_ORDER, drop_connection())
    scripted.script(ORDERS_PENDING, pending(pending_order("lost-1", order_id="9001")))
    client = await scripted_client(scripted, start_client)
    ack = await client.place_order("BTCUSDT", "buy", "0.010", price="60000", client_oid="lost-1")
    assert ack.reconciled and ack.order_id == "9001" and ack.attempts == 1
    assert client_oids_sent(scripted) == ["lost-1"]
    (lookup,) = scripted.arrivals_at(ORDERS_PENDING)
    assert "clientOid=lost-1" in lookup.query and "symbol=BTCUSDT" in lookup.query
    assert client.stats().reconciled_placed == 1


async def test_lost_answer_with_the_order_absent_is_resent_with_the_same_client_oid(
    scripted: ScriptedExchange, start_client: StartClient
) -> None:
    scripted.script(PLACE_ORDER, drop_connection(), ok({"orderId": "9002", "clientOid": "re-1"}))
    scripted.script(ORDERS_PENDING, pending())
    client = await scripted_client(scripted, start_client)
    ack = await client.place_order("BTCUSDT", "buy", "0.010", price="60000", client_oid="re-1")
    assert ack.order_id == "9002" and ack.attempts == 2 and not ack.reconciled
    assert client_oids_sent(scripted) == ["re-1", "re-1"]
    bodies = [a.body for a in scripted.arrivals_at(PLACE_ORDER)]
    assert bodies[0] == bodies[1], "a re-send is the identical order"


async def test_generated_client_oid_is_reused_on_resend(
    scripted: ScriptedExchange, start_client: StartClient
) -> None:
    scripted.script(PLACE_ORDER, error("45001", 500), ok({"orderId": "9003"}))
    scripted.script(ORDERS_PENDING, pending())
    client = await scripted_client(scripted, start_client)
    ack = await client.place_order("BTCUSDT", "buy", "0.010", price="60000")
    first, second = client_oids_sent(scripted)
    assert first == second == ack.client_oid
    # A release-window error may come after the order was taken: it was looked up first.
    assert client.stats().reconciliations == 1


async def test_duplicate_client_oid_on_a_resend_means_the_first_attempt_landed(
    scripted: ScriptedExchange, start_client: StartClient
) -> None:
    scripted.script(PLACE_ORDER, raw("<html>502 Bad Gateway</html>", 502), error("43118"))
    # The first lookup misses the order (it lands just after); the one after 43118 finds it.
    scripted.script(ORDERS_PENDING, pending(), pending(pending_order("dup-1", order_id="9004")))
    client = await scripted_client(scripted, start_client)
    ack = await client.place_order("BTCUSDT", "buy", "0.010", price="60000", client_oid="dup-1")
    assert ack.reconciled and ack.order_id == "9004" and ack.attempts == 2
    assert client.stats().errors == {"502": 1, "43118": 1}


async def test_duplicate_client_oid_on_a_first_attempt_is_the_callers_error(
    scripted: ScriptedExchange, start_client: StartClient
) -> None:
    scripted.script(PLACE_ORDER, error("43118"))
    client = await scripted_client(scripted, start_client)
    with pytest.raises(BitgetApiError) as caught:
        await client.place_order("BTCUSDT", "buy", "0.010", price="60000", client_oid="reused")
    assert caught.value.code == "43118" and "fresh id" in caught.value.message_for_operator
    assert scripted.arrivals_at(ORDERS_PENDING) == []


@pytest.mark.parametrize(
    ("order", "expected_force"),
    [({"order_type": "market"}, None), ({"price": "60000", "force": "ioc"}, "ioc")],
)
async def test_taker_order_with_unknown_outcome_is_never_resent(
    scripted: ScriptedExchange, start_client: StartClient, order: dict, expected_force: str | None
) -> None:
    scripted.script(PLACE_ORDER, drop_connection())
    scripted.script(ORDERS_PENDING, pending())
    client = await scripted_client(scripted, start_client)
    with pytest.raises(BitgetTransportError) as caught:
        await client.place_order("BTCUSDT", "buy", "0.010", client_oid="taker-1", **order)
    assert caught.value.outcome_unknown and caught.value.client_oid == "taker-1"
    assert "never rests" in str(caught.value)
    (sent,) = scripted.arrivals_at(PLACE_ORDER)
    assert orjson.loads(sent.body).get("force") == expected_force


async def test_failed_lookup_leaves_the_outcome_unknown(
    scripted: ScriptedExchange, start_client: StartClient
) -> None:
    scripted.script(PLACE_ORDER, drop_connection())
    scripted.script(ORDERS_PENDING, error("40725", 500))
    client = await scripted_client(scripted, start_client)
    with pytest.raises(BitgetTransportError) as caught:
        await client.place_order("BTCUSDT", "buy", "0.010", price="60000", client_oid="unk-1")
    assert caught.value.outcome_unknown and "lookup failed" in str(caught.value)
    assert len(scripted.arrivals_at(PLACE_ORDER)) == 1, "never re-sent blind"
    assert len(scripted.arrivals_at(ORDERS_PENDING)) == client.config.max_attempts


async def test_connection_refused_is_a_transport_error_with_a_known_outcome(
    start_client: StartClient,
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = await start_client(f"http://127.0.0.1:{port}", SCRIPTED_CREDENTIALS)
    with pytest.raises(BitgetTransportError) as caught:
        await client.place_order("BTCUSDT", "buy", "0.010", price="60000")
    assert not caught.value.request_sent and not caught.value.outcome_unknown
    stats = client.stats()
    assert stats.requests[PLACE_ORDER] == client.config.max_attempts
    assert stats.reconciliations == 0, "a request that never left needs no lookup"


@pytest.mark.parametrize(
    "reply",
    [
        raw("<html>maintenance</html>"),
        raw('{"code":"00000","data":{"entrustedList":[{"orderId":5}]}}', content_type="text/json"),
        ok({"entrustedList": "nope"}),
        ok([1, 2, 3]),
        ok({"entrustedList": [{**pending_order("x"), "price": "NaN"}]}),
        ok({"entrustedList": [{**pending_order("x"), "cTime": "-1"}]}),
        ok({"entrustedList": [{**pending_order("x"), "side": "up"}]}),
    ],
)
async def test_unreadable_answers_become_transport_errors(
    scripted: ScriptedExchange, start_client: StartClient, reply
) -> None:
    scripted.script(ORDERS_PENDING, reply)
    client = await scripted_client(scripted, start_client)
    with pytest.raises(BitgetTransportError, match="unreadable answer"):
        await client.pending_orders()
    assert client.stats().errors["transport"] >= 1


@pytest.mark.parametrize(
    ("reply", "code", "retryable"),
    [
        (raw("", 502), "502", True),
        (raw("Forbidden", 403), "403", False),
        (raw('{"code":40085,"msg":"UTA","data":null}', 400, "application/json"), "40085", False),
        (raw('{"code":[1],"msg":null}', 400, "application/json"), "<malformed code>", False),
        (raw('{"code":"00000","msg":"x","data":null}', 401, "application/json"), "00000", False),
    ],
)
async def test_error_answers_are_typed_and_never_crash(
    scripted: ScriptedExchange, start_client: StartClient, reply, code: str, retryable: bool
) -> None:
    scripted.script(ALL_POSITION, reply)
    client = await scripted_client(scripted, start_client, max_attempts=2)
    with pytest.raises(BitgetApiError) as caught:
        await client.positions()
    assert caught.value.code == code and caught.value.retryable is retryable
    assert len(scripted.arrivals_at(ALL_POSITION)) == (2 if retryable else 1)


@pytest.mark.parametrize(
    ("request_time", "stamped"),
    [
        (1_700_000_000_123, 1_700_000_000_123),
        ("1700000000123", 1_700_000_000_123),
        # None of these is a time: the send time on our estimate of the exchange's clock.
        (None, None),
        ("soon", None),
        (True, None),
        (-5, None),
    ],
)
async def test_positions_carry_the_exchanges_own_time_of_the_answer(
    scripted: ScriptedExchange, start_client: StartClient, request_time, stamped
) -> None:
    body = {"code": "00000", "msg": "success", "data": [], "requestTime": request_time}
    scripted.script(ALL_POSITION, raw(orjson.dumps(body).decode(), 200, "application/json"))
    local_ms = 1_800_000_000_000
    client = await scripted_client(
        scripted, start_client, wall_clock_ns=lambda: local_ms * 1_000_000
    )
    answer = await client.positions_at()
    assert answer.positions == []
    assert answer.exchange_ms == (stamped if stamped is not None else local_ms)


async def test_uta_account_gets_the_operator_explanation(
    scripted: ScriptedExchange, start_client: StartClient
) -> None:
    scripted.script(ALL_POSITION, error("40085"))
    client = await scripted_client(scripted, start_client)
    with pytest.raises(BitgetApiError) as caught:
        await client.positions()
    assert "Unified Trading Account" in caught.value.message_for_operator


async def test_rate_limiter_keeps_place_orders_within_10_per_second_at_arrival(
    scripted: ScriptedExchange, start_client: StartClient
) -> None:
    scripted.script(PLACE_ORDER, ok({"orderId": "1"}))
    client = await scripted_client(scripted, start_client)
    await asyncio.gather(
        *(client.place_order("BTCUSDT", "buy", "0.010", price="60000") for _ in range(15))
    )
    times = sorted(arrival.at for arrival in scripted.arrivals_at(PLACE_ORDER))
    assert len(times) == 15
    busiest = max(sum(1 for t in times if start <= t < start + 1.0) for start in times)
    assert busiest == 10, "ten go out at once, the rest wait for the window"
    assert times[10] - times[0] >= 1.0
    stats = client.stats()
    assert stats.rate_limit_waits[PLACE_ORDER] == 5 and stats.rate_limit_wait_s > 0


async def test_requests_that_reach_the_exchange_late_still_keep_its_window_to_10(
    scripted: ScriptedExchange, start_client: StartClient
) -> None:
    """The first ten arrive half a second after they left: the next five must wait a window
    from then (their answers), or the exchange counts fifteen in one second."""
    scripted.script(PLACE_ORDER, ok({"orderId": "1"}))
    scripted.arrive_late(PLACE_ORDER, *[0.5] * 10)
    client = await scripted_client(scripted, start_client)
    await asyncio.gather(
        *(client.place_order("BTCUSDT", "buy", "0.010", price="60000") for _ in range(15))
    )
    times = sorted(arrival.at for arrival in scripted.arrivals_at(PLACE_ORDER))
    assert len(times) == 15
    busiest = max(sum(1 for t in times if start <= t < start + 1.0) for start in times)
    assert busiest == 10
    assert times[10] - times[9] >= 1.0


async def test_a_placement_withdrawn_while_it_waits_for_the_rate_limit_never_leaves(
    scripted: ScriptedExchange, start_client: StartClient
) -> None:
    scripted.script(PLACE_ORDER, ok({"orderId": "1"}))
    client = await scripted_client(scripted, start_client)
    for k in range(10):  # the window's ten
        await client.place_order("BTCUSDT", "buy", "0.010", price="60000", client_oid=f"in-{k}")
    wanted = [True]
    queued = asyncio.ensure_future(
        client.place_order(
            "BTCUSDT",
            "buy",
            "0.010",
            price="60000",
            client_oid="late-1",
            departing=lambda: wanted[0],
        )
    )
    await asyncio.sleep(0.05)
    assert not queued.done()
    wanted[0] = False
    client.recheck_queued_placements()
    # It leaves the queue now, not when the window frees a slot (about a second on).
    with pytest.raises(BitgetRequestWithdrawn, match="withdrawn before it was sent"):
        await asyncio.wait_for(queued, 0.5)
    assert "late-1" not in client_oids_sent(scripted)


async def test_a_placement_refused_unplaced_is_withdrawn_while_it_waits_to_retry(
    scripted: ScriptedExchange, start_client: StartClient
) -> None:
    scripted.script(PLACE_ORDER, error("429", 429), ok({"orderId": "9011"}))
    # A backoff of 10-20 s: only the recheck can end it within the test.
    client = await scripted_client(scripted, start_client, retry_initial_s=20.0, retry_max_s=20.0)
    wanted = [True]
    retrying = asyncio.ensure_future(
        client.place_order(
            "BTCUSDT",
            "buy",
            "0.010",
            price="60000",
            client_oid="back-1",
            departing=lambda: wanted[0],
        )
    )
    while client.stats().retries == 0:  # refused once: waiting out its backoff
        await asyncio.sleep(0.01)
    wanted[0] = False
    client.recheck_queued_placements()
    with pytest.raises(BitgetRequestWithdrawn):
        await asyncio.wait_for(retrying, 5)
    assert client_oids_sent(scripted) == ["back-1"]


@pytest.mark.parametrize(
    ("first_answer", "resent"),
    [(error("429", 429), False), (drop_connection(), True)],
    ids=["refused-unprocessed", "outcome-unknown"],
)
async def test_a_placement_unwanted_after_its_first_attempt_is_resent_only_if_it_may_rest(
    scripted: ScriptedExchange, start_client: StartClient, first_answer, resent: bool
) -> None:
    """After a refusal the order was not taken: withdrawn, it is not sent again. After a lost
    answer it may rest at the exchange: it is resent (and then found) whatever the caller
    wants, so that its fate is known."""
    scripted.script(PLACE_ORDER, first_answer, ok({"orderId": "9010", "clientOid": "ask-1"}))
    scripted.script(ORDERS_PENDING, pending())
    client = await scripted_client(scripted, start_client)
    asked: list[str] = []
    placing = client.place_order(
        "BTCUSDT",
        "buy",
        "0.010",
        price="60000",
        client_oid="ask-1",
        departing=lambda: not asked.append("asked") and len(asked) == 1,
    )
    if resent:
        assert (await placing).order_id == "9010"
        assert client_oids_sent(scripted) == ["ask-1", "ask-1"]
    else:
        with pytest.raises(BitgetRequestWithdrawn):
            await placing
        assert client_oids_sent(scripted) == ["ask-1"]


async def test_endpoints_have_separate_rate_windows(
    scripted: ScriptedExchange, start_client: StartClient
) -> None:
    scripted.script(PLACE_ORDER, ok({"orderId": "1"}))
    scripted.script(SERVER_TIME, ok({"serverTime": "1700000000000"}))
    client = await scripted_client(scripted, start_client)
    for _ in range(10):
        await client.place_order("BTCUSDT", "buy", "0.010", price="60000")
    started = asyncio.get_running_loop().time()
    for _ in range(15):
        await client.server_time()
    assert asyncio.get_running_loop().time() - started < 0.5
    assert client.stats().rate_limit_waits == {}


async def test_secrets_never_reach_logs_errors_or_reprs(
    scripted: ScriptedExchange, start_client: StartClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    secret, passphrase = SCRIPTED_CREDENTIALS.secrets

    async def echo_passphrase(request):  # a hostile or buggy gateway echoing a header
        message = f"bad passphrase {request.headers['ACCESS-PASSPHRASE']}"
        body = orjson.dumps({"code": "40012", "msg": message, "data": None})
        return web.Response(body=body, status=400, content_type="application/json")

    scripted.script(PLACE_ORDER, drop_connection(), error("429", 429), ok({"orderId": "1"}))
    scripted.script(ORDERS_PENDING, pending())
    scripted.script(ALL_POSITION, echo_passphrase)
    client = await scripted_client(scripted, start_client)
    errors: list[BitgetRestError] = []
    await client.place_order("BTCUSDT", "buy", "0.010", price="60000")
    try:
        await client.positions()
    except BitgetApiError as caught:
        errors.append(caught)
    wrong = Credentials(SCRIPTED_CREDENTIALS.api_key, secret, passphrase)
    texts = [caplog.text, repr(client), repr(client.config), repr(client.stats()), repr(wrong)]
    for caught in errors:
        texts += [str(caught), repr(caught), caught.exchange_message, repr(caught.args)]
    assert errors and errors[0].code == "40012"
    assert "bad passphrase <redacted>" in errors[0].exchange_message
    assert "retrying" in caplog.text and "outcome unknown" in caplog.text
    for text in texts:
        assert secret not in text and passphrase not in text


@pytest.mark.parametrize(
    ("reply", "error_type", "match"),
    [
        (raw('{"code":"\u00b2","msg":"x"}', 200, "application/json"), BitgetApiError, "\u00b2"),
        (
            raw('{"code":"00000","data":{"serverTime":"' + "9" * 5000 + '"}}', 200),
            BitgetTransportError,
            "expected an integer",
        ),
        (
            raw('{"code":"00000","data":{"serverTime":"scripted-secret-x9"}}', 200),
            BitgetTransportError,
            "<redacted>",
        ),
    ],
    ids=["superscript-code", "5000-digit-time", "secret-echoed-in-data"],
)
async def test_hostile_answers_found_by_fuzzing_are_typed_errors(
    scripted: ScriptedExchange, start_client: StartClient, reply, error_type, match
) -> None:
    """Found by tests/fuzz: "²" passed str.isdigit but not int(); int() refuses more than 4300
    digits; an unreadable answer's detail repeated the data without scrubbing secrets."""
    scripted.script(SERVER_TIME, reply)
    client = await scripted_client(scripted, start_client, max_attempts=1)
    with pytest.raises(error_type, match=match) as caught:
        await client.server_time()
    assert "scripted-secret-x9" not in str(caught.value)


async def test_a_40008_to_every_request_is_an_error_not_an_endless_resync(
    scripted: ScriptedExchange, start_client: StartClient
) -> None:
    """Found by tests/fuzz: each 40008 resynced the clock with a server-time request, whose own
    40008 resynced again, until RecursionError."""
    scripted.script(SERVER_TIME, *[error("40008", 400)] * 4)
    scripted.script(ALL_POSITION, *[error("40008", 400)] * 4)
    client = await scripted_client(scripted, start_client, max_attempts=2)
    with pytest.raises(BitgetApiError) as caught:
        await client.positions()
    assert caught.value.code == "40008"
