"""CancelLane: HTTP/1.1 answers parsed by hand, signed requests the simulator accepts, and a
lane that steps aside (not ready) whenever it cannot send at once."""

from __future__ import annotations

import asyncio
import time

import orjson
import pytest
from support.bitget import sim_credentials

from engine.bitget.cancel_lane import PRESIGNED_MAX_AGE_MS, CancelLane, _ResponseReader
from engine.bitget.credentials import Credentials
from engine.bitget.orders import OrderSide, OrderType, TimeInForce
from engine.bitget.rate_limit import SlidingWindowRateLimiter
from engine.bitget.rest import BitgetTransportError
from engine.market.matching import OrderRequest


def answers(*chunks: bytes):
    reader = _ResponseReader()
    found, error = [], ""
    for chunk in chunks:
        parsed, error = reader.feed(chunk)
        found.extend(parsed)
    return [(answer.status, answer.body, closes) for answer, closes in found], error


def window(limit: int = 10) -> SlidingWindowRateLimiter:
    """The cancel-all endpoint's window, as the REST client keeps it (1 s and its margin)."""
    return SlidingWindowRateLimiter(limit, 1.1)


def lane_on(
    sim,
    *,
    credentials: Credentials | None = None,
    limiter: SlidingWindowRateLimiter | None = None,
    clock_offset_ms: int = 0,
    **options,
) -> CancelLane:
    """A lane to the simulator with its own cancel-all window (`window()` unless given)."""
    return CancelLane(
        sim.rest_url,
        credentials if credentials is not None else sim_credentials(sim),
        demo=False,
        clock_offset_ms=lambda: clock_offset_ms,
        limiter=limiter if limiter is not None else window(),
        **options,
    )


def test_a_content_length_answer_split_anywhere_is_read_whole():
    raw = b'HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n{"code":"0"}'
    for cut in (1, 20, len(raw) - 3):
        assert answers(raw[:cut], raw[cut:]) == ([(200, b'{"code":"0"}', False)], "")


def test_chunked_answers_and_two_answers_in_one_read():
    chunked = (
        b"HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n"
    )
    plain = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
    assert answers(chunked + plain) == (
        [(400, b"hello world", False), (200, b"ok", True)],
        "",
    )


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        (b"SSH-2.0-OpenSSH\r\n\r\n", "not an HTTP/1.1 status line"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: many\r\n\r\n", "unusable Content-Length"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "bad chunk size"),
        (b"HTTP/1.1 200 OK\r\nX: " + b"a" * 20_000, "too long"),
    ],
)
def test_garbage_is_an_error_not_an_exception(raw, error):
    found, text = answers(raw)
    assert found == [] and error in text


async def test_a_signed_cancel_all_is_accepted_and_cancels_everything(sim):
    engine = sim.engine("BTCUSDT")
    for k in range(3):
        request = OrderRequest(OrderSide.BUY, OrderType.LIMIT, 0.001, 60_000.0 - k, TimeInForce.GTC)
        engine.submit(request, sim.now_ms())
    lane = lane_on(sim)
    await lane.start()
    try:
        assert lane.ready
        sent = lane.send_cancel_all()
        assert sent is not None
        future, sent_ns = sent
        assert sent_ns > 0 and not lane.ready  # one request at a time
        answer = await future
        envelope = orjson.loads(answer.body)
        assert (answer.status, envelope["code"]) == (200, "00000")
        assert len(envelope["data"]["successList"]) == 3
        assert sim.open_orders() == []
        assert lane.ready
        again = await lane.send_cancel_all()[0]  # nothing left: Bitget's 22001
        assert orjson.loads(again.body)["code"] == "22001"
    finally:
        await lane.stop()


async def test_a_wrong_secret_is_refused_by_the_exchange(sim):
    config = sim.config
    wrong = Credentials(config.api_key, "not-the-secret", config.passphrase)
    lane = lane_on(sim, credentials=wrong)
    await lane.start()
    try:
        answer = await lane.send_cancel_all()[0]
        assert orjson.loads(answer.body)["code"] == "40009"
    finally:
        await lane.stop()


async def test_a_lost_connection_fails_the_answer_and_the_lane_reconnects(sim, eventually):
    lane = lane_on(sim, answer_timeout_s=0.3)
    await lane.start()
    try:
        sim.faults.slow_rest(1.0)  # the answer will come too late
        future, _ = lane.send_cancel_all()
        with pytest.raises(BitgetTransportError) as raised:
            await future
        assert raised.value.request_sent  # it left: its outcome is unknown
        sim.faults.slow_rest(0.0)
        await eventually(lambda: lane.ready and lane.connects >= 2, 5)
        answer = await lane.send_cancel_all()[0]
        assert answer.status in (200, 400)
    finally:
        await lane.stop()


async def test_the_lane_steps_aside_past_the_endpoint_rate(sim):
    lane = lane_on(sim, limiter=window(2))
    await lane.start()
    try:
        for _ in range(2):
            await lane.send_cancel_all()[0]
        assert not lane.ready and lane.send_cancel_all() is None
        await asyncio.sleep(1.15)
        assert lane.ready
    finally:
        await lane.stop()


async def test_the_lanes_window_runs_from_each_cancels_answer(sim):
    """A cancel answered late may have reached the exchange late: the lane's second of ten
    (here two) runs from the answer, not from when the bytes left."""
    lane = lane_on(sim, limiter=window(2))
    await lane.start()
    try:
        sim.faults.slow_rest(0.5)
        sent = time.monotonic()
        await lane.send_cancel_all()[0]
        answered = time.monotonic()
        sim.faults.slow_rest(0.0)
        await lane.send_cancel_all()[0]
        await asyncio.sleep(max(0.0, sent + 1.15 - time.monotonic()))
        assert not lane.ready, "a window from the first cancel's send has passed, not its answer's"
        await asyncio.sleep(max(0.0, answered + 1.15 - time.monotonic()))
        assert lane.ready
    finally:
        await lane.stop()


async def test_a_cancel_the_socket_refused_does_not_hold_its_slot_forever(sim):
    limiter = SlidingWindowRateLimiter(1, 0.05)
    lane = lane_on(sim, limiter=limiter)
    await lane.start()
    try:
        transport = lane._protocol.transport

        def refuse(data: bytes) -> None:
            raise RuntimeError("Cannot call write() after write_eof()")

        transport.write = refuse
        with pytest.raises(RuntimeError):
            lane.send_cancel_all()
        await asyncio.sleep(0.06)
        assert limiter.has_room(), "settled, not left in flight: free once its window passed"
    finally:
        await lane.stop()


def signed_timestamp_ms(lane: CancelLane) -> int:
    request = lane._signed_cancel
    return int(request.split(b"ACCESS-TIMESTAMP: ", 1)[1].split(b"\r\n", 1)[0])


async def test_the_request_is_signed_ahead_and_renewed_or_signed_on_the_spot(sim):
    # The lane's clock is the test's: it moves only when the test moves it, so the signed
    # timestamps are exact (two readings of the real clock can straddle a millisecond).
    now_ns = time.time_ns()

    def wall_clock_ns() -> int:
        return now_ns

    lane = lane_on(sim, clock_offset_ms=7, wall_clock_ns=wall_clock_ns)
    await lane.start()
    try:
        first = signed_timestamp_ms(lane)
        assert first == now_ns // 1_000_000 + 7
        now_ns += 600_000_000
        await asyncio.sleep(PRESIGNED_MAX_AGE_MS / 2_000 + 0.2)  # renewed while idle
        assert signed_timestamp_ms(lane) == first + 600
        # A clock that jumped past the renewals: the stale request is signed again at once.
        now_ns += 5 * PRESIGNED_MAX_AGE_MS * 1_000_000
        future, sent_ns = lane.send_cancel_all()
        assert sent_ns == now_ns
        assert signed_timestamp_ms(lane) == now_ns // 1_000_000 + 7
        answer = await future
        assert answer.status in (200, 400)  # signed right: accepted (22001: nothing to cancel)
        assert orjson.loads(answer.body)["code"] in ("00000", "22001")
    finally:
        await lane.stop()
