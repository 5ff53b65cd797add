"""Fuzzing the REST client's answer handling: the parsing pipeline with 100s of answers, and
the public client methods against a real loopback server answering fuzzed bodies."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web
from fuzz_rest_target import (
    ENDPOINTS,
    SEED_ANSWERS,
    SERVER_TIME,
    STATUSES,
    answers,
    check_error,
)
from fuzz_tally import InvariantViolation, fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from support.loopback import catch_all, serving

from engine.bitget.credentials import Credentials
from engine.bitget.rest import BitgetApiError, BitgetRestClient, BitgetRestConfig, BitgetRestError


def test_documented_answers_parse(rest_target) -> None:
    for path, status, body in SEED_ANSWERS:
        rest_target.check_answer(path, status, body)


def test_the_error_check_catches_an_echoed_secret() -> None:
    error = BitgetApiError("1", 400, "bad", False, SERVER_TIME, "rest-fuzz-secret-42")
    with pytest.raises(InvariantViolation, match="secret"):
        check_error(error, SERVER_TIME)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (200, '{"code":"\u00b2","msg":"x"}'.encode()),
        (200, b'{"code":"00000","data":{"serverTime":"' + b"9" * 5000 + b'"}}'),
        (200, b'{"code":"00000","data":{"serverTime":"rest-fuzz-secret-42"}}'),
    ],
    ids=["superscript-code", "5000-digit-time", "secret-in-data"],
)
def test_answers_that_once_escaped_are_typed_errors(rest_target, status, body) -> None:
    rest_target.check_answer(SERVER_TIME, status, body)


@fuzz_settings(ci_examples=500)
@given(answers())
def test_answers_raise_only_typed_errors(rest_target, answer) -> None:
    rest_target.check_answer(*answer)


@fuzz_settings(ci_examples=300)
@given(st.sampled_from(ENDPOINTS), st.sampled_from(STATUSES), st.binary(max_size=200))
def test_raw_bytes_answers_raise_only_typed_errors(rest_target, path, status, body) -> None:
    rest_target.check_answer(path, status, body)


async def _call_loopback(status: int, body: bytes) -> list[BaseException | object]:
    """Each public call against a server that answers `status`/`body` (close-positions is
    left out: its 1 request/s limit would make every example wait)."""

    async def answer(request: web.Request) -> web.Response:
        return web.Response(status=status, body=body, content_type="application/json")

    results: list[BaseException | object] = []
    async with serving(catch_all(answer)) as server:
        config = BitgetRestConfig(
            base_url=server.url,
            max_attempts=1,
            reconcile_grace_s=0,
            retry_initial_s=0.001,
            retry_max_s=0.001,
        )
        async with BitgetRestClient(
            config, Credentials("rest-fuzz-key", "rest-fuzz-secret-42", "rest-fuzz-pass-42")
        ) as client:
            for call in (
                client.server_time(),
                client.positions(),
                client.pending_orders("BTCUSDT"),
                client.cancel_order("BTCUSDT", order_id="1"),
                client.batch_cancel("BTCUSDT", client_oids=["a"]),
                client.cancel_all("BTCUSDT"),
                client.place_order("BTCUSDT", "buy", "0.01", price="100", client_oid="hc1"),
            ):
                try:
                    results.append(await call)
                except BitgetRestError as error:
                    results.append(error)
    return results


@fuzz_settings(ci_examples=25)
@given(answers())
def test_client_calls_on_a_loopback_server_raise_only_typed_errors(answer) -> None:
    _, status, body = answer
    for result in asyncio.run(_call_loopback(status, body)):
        if isinstance(result, BitgetRestError):
            check_error(result, result.endpoint)
