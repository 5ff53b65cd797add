"""Fault specs, the injector's state machine and frame corruption (no server)."""

from __future__ import annotations

import math

import orjson
import pytest

from engine.sim.faults import (
    FaultInjector,
    FaultKind,
    FaultSpec,
    FaultSpecError,
    MalformedKind,
    corrupt_frame,
    parse_fault_spec,
)

BOOK_FRAME = (
    '{"action":"snapshot","arg":{"instType":"USDT-FUTURES","channel":"books15","instId":"BTCUSDT"},'
    '"data":[{"asks":[["64010.5","1.203"]],"bids":[["64010.0","2.118"]],"checksum":0,'
    '"seq":5,"pseq":0,"ts":"1726000000150"}],"ts":1726000000160}'
)
TRADE_FRAME = (
    '{"action":"update","arg":{"instType":"USDT-FUTURES","channel":"trade","instId":"BTCUSDT"},'
    '"data":[{"ts":"1726000000321","price":"64010.5","size":"0.015","side":"buy",'
    '"tradeId":"1"}],"ts":1726000000330}'
)


class ManualClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("disconnect", FaultSpec(FaultKind.DISCONNECT)),
        ("silence:30", FaultSpec(FaultKind.SILENCE, seconds=30.0)),
        ("malformed:20", FaultSpec(FaultKind.MALFORMED, count=20)),
        ("slow-rest:1.5", FaultSpec(FaultKind.SLOW_REST, seconds=1.5)),
        ("rest-error:429:10", FaultSpec(FaultKind.REST_ERROR, code=429, count=10)),
        ("rest-error:40009:5", FaultSpec(FaultKind.REST_ERROR, code=40009, count=5)),
        ("rest-error:503:3", FaultSpec(FaultKind.REST_ERROR, code=503, count=3)),
        ("silence:30@12.5", FaultSpec(FaultKind.SILENCE, seconds=30.0, delay_s=12.5)),
        ("disconnect@4", FaultSpec(FaultKind.DISCONNECT, delay_s=4.0)),
        ("  clear  ", FaultSpec(FaultKind.CLEAR)),
    ],
)
def test_specs_parse(text: str, expected: FaultSpec) -> None:
    assert parse_fault_spec(text) == expected
    assert parse_fault_spec(str(expected)) == expected


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("explode", "unknown fault 'explode'"),
        ("silence", "silence:SECONDS"),
        ("silence:soon", "silence:SECONDS"),
        ("silence:-1", "silence:SECONDS"),
        ("silence:nan", "silence:SECONDS"),
        ("malformed:0", "at least 1"),
        ("malformed:2.5", "malformed:COUNT"),
        ("rest-error:429", "rest-error:CODE:COUNT"),
        ("rest-error:42:1", "HTTP status"),
        ("rest-error:x:1", "rest-error:CODE:COUNT"),
        ("disconnect:3", "disconnect"),
        ("silence:5@later", "silence:SECONDS"),
    ],
)
def test_bad_specs_are_refused_with_a_message_naming_them(text: str, hint: str) -> None:
    with pytest.raises(FaultSpecError) as refused:
        parse_fault_spec(text)
    message = str(refused.value)
    assert repr(text) in message
    assert hint in message


def test_delayed_specs_fire_after_start_plus_delay() -> None:
    clock = ManualClock()
    disconnects: list[float] = []
    injector = FaultInjector(on_disconnect=lambda: disconnects.append(clock.now), clock=clock)
    injector.add("disconnect@5")
    injector.add("silence:3@1")
    clock.now = 200.0
    injector.start()
    assert not injector.silenced and disconnects == []
    clock.now = 201.0
    injector.poll()
    assert injector.silenced
    clock.now = 204.5
    injector.poll()
    assert not injector.silenced and disconnects == []
    clock.now = 205.0
    injector.poll()
    assert disconnects == [205.0]
    # Once running, @T counts from when the spec is added.
    injector.add("slow-rest:2@10")
    clock.now = 214.0
    injector.poll()
    assert injector.rest_delay_s == 0
    clock.now = 215.0
    injector.poll()
    assert injector.rest_delay_s == 2.0


def test_malformed_cycles_through_every_kind_then_stops() -> None:
    injector = FaultInjector(on_disconnect=lambda: None, clock=ManualClock())
    injector.malformed(7)
    taken = [injector.take_malformed() for _ in range(8)]
    assert taken == [*MalformedKind, MalformedKind.NON_JSON, None]


def test_rest_errors_count_down_and_clear_resets_everything() -> None:
    clock = ManualClock()
    injector = FaultInjector(on_disconnect=lambda: None, clock=clock)
    injector.start()
    injector.add("rest-error:429:2")
    assert [injector.take_rest_error() for _ in range(3)] == [429, 429, None]
    injector.add("rest-error:503:5")
    injector.add("silence:60")
    injector.add("malformed:3")
    injector.add("slow-rest:2")
    injector.add("disconnect@30")
    injector.add("clear")
    assert injector.take_rest_error() is None and injector.take_malformed() is None
    assert not injector.silenced and injector.rest_delay_s == 0
    assert injector.describe()["scheduled"] == []
    with pytest.raises(ValueError, match="HTTP status"):
        injector.rest_error(7, 1)


def test_describe_reports_active_and_scheduled_faults() -> None:
    clock = ManualClock()
    injector = FaultInjector(on_disconnect=lambda: None, clock=clock)
    injector.start()
    injector.add("silence:10")
    injector.add("rest-error:40009:2")
    injector.add("malformed:4@3")
    state = injector.describe()
    assert state["silenceLeftSeconds"] == 10.0
    assert state["restError"] == {"code": 40009, "left": 2}
    assert state["scheduled"] == [{"spec": "malformed:4@3", "inSeconds": 3.0}]


def test_corruptions_of_a_book_frame() -> None:
    non_json = corrupt_frame(BOOK_FRAME, MalformedKind.NON_JSON)
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(non_json)
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(corrupt_frame(BOOK_FRAME, MalformedKind.TRUNCATED))
    assert "data" not in orjson.loads(corrupt_frame(BOOK_FRAME, MalformedKind.MISSING_FIELDS))
    crossed = orjson.loads(corrupt_frame(BOOK_FRAME, MalformedKind.CROSSED_BOOK))["data"][0]
    assert float(crossed["bids"][0][0]) > float(crossed["asks"][0][0])
    negative = orjson.loads(corrupt_frame(BOOK_FRAME, MalformedKind.NEGATIVE_SIZE))["data"][0]
    assert float(negative["bids"][0][1]) < 0
    nan = orjson.loads(corrupt_frame(BOOK_FRAME, MalformedKind.NAN))["data"][0]
    assert math.isnan(float(nan["bids"][0][0]))


def test_corruptions_of_a_trade_frame() -> None:
    negative = orjson.loads(corrupt_frame(TRADE_FRAME, MalformedKind.CROSSED_BOOK))["data"][0]
    assert float(negative["size"]) < 0
    nan = orjson.loads(corrupt_frame(TRADE_FRAME, MalformedKind.NAN))["data"][0]
    assert math.isnan(float(nan["price"]))
