"""KevClient against a scripted llama-server on loopback: every failure is a reply with a
reason, never an exception."""

from __future__ import annotations

import orjson
import pytest
from support.loopback import drop_connection
from support.scripted_llama import (
    TIMINGS,
    command,
    completion,
    delayed,
    error,
    raw,
)

from engine.kev.client import KevClient, KevFailure, KevTimings
from engine.kev.command import KevCommandSpec
from engine.kev.config import KevClientConfig
from engine.kev.server import free_port
from engine.risk.commands import KevAction

CHAT = "/v1/chat/completions"


@pytest.fixture
async def client(scripted):
    kev = KevClient(KevClientConfig(base_url=scripted.url, request_timeout_s=1.0), KevCommandSpec())
    async with kev:
        yield kev


async def test_a_valid_command_comes_back_with_timings_and_model(scripted, client):
    scripted.script(CHAT, command(act="reduce", risk=80, hedge=60, skew=-12, ttl=2500, why="vpin"))
    reply = await client.ask("BTCUSDT EMERGENCY ...")
    assert reply.failure is None and reply.reason == ""
    assert reply.command.action is KevAction.REDUCE
    assert (reply.command.risk_scale, reply.command.hedge_ratio) == (0.8, 0.6)
    assert reply.command.skew_bps == pytest.approx(-1.2)
    assert reply.timings == KevTimings(236, 88, 41.5, 31, 210.25)
    assert reply.model == "scripted.gguf" and reply.finish_reason == "stop"
    assert reply.wall_ms > 0 and orjson.loads(reply.raw)["act"] == "reduce"


async def test_the_request_has_the_nested_schema_cache_prompt_and_a_fixed_prefix(scripted, client):
    scripted.script(CHAT, command())
    await client.ask("first context")
    await client.ask("second context")
    first, second = scripted.requests
    assert first["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "kev_command", "schema": KevCommandSpec().json_schema()},
    }
    assert first["cache_prompt"] is True and first["stream"] is False
    assert first["temperature"] == 0.0 and first["max_tokens"] == 96
    assert first["messages"][0] == second["messages"][0]  # the cached prefix
    assert first["messages"][0]["role"] == "system"
    assert [m["content"] for m in (first["messages"][1], second["messages"][1])] == [
        "first context",
        "second context",
    ]


async def test_503_while_loading(scripted, client):
    scripted.script(CHAT, error(503, "Loading model", "unavailable_error"))
    reply = await client.ask("ctx")
    assert reply.command is None and reply.failure is KevFailure.LOADING
    assert reply.reason == "server not ready: Loading model"


async def test_connection_refused():
    port = free_port()
    config = KevClientConfig(base_url=f"http://127.0.0.1:{port}")
    async with KevClient(config, KevCommandSpec()) as kev:
        reply = await kev.ask("ctx")
        health = await kev.health()
    assert reply.failure is KevFailure.UNREACHABLE
    assert reply.reason.startswith(f"cannot connect to http://127.0.0.1:{port}")
    assert health.state == "unreachable"


async def test_a_slow_server_times_out(scripted):
    scripted.script(CHAT, delayed(2.0, command()))
    config = KevClientConfig(base_url=scripted.url, request_timeout_s=0.2)
    async with KevClient(config, KevCommandSpec()) as kev:
        reply = await kev.ask("ctx")
    assert reply.failure is KevFailure.TIMEOUT
    assert reply.reason == "no answer within 0.2 s"
    assert 150 < reply.wall_ms < 1_500


async def test_output_cut_at_max_tokens_is_a_truncation(scripted, client):
    scripted.script(CHAT, completion('{"act":"reduce","risk":8', finish_reason="length"))
    reply = await client.ask("ctx", max_tokens=8)
    assert reply.failure is KevFailure.TRUNCATED
    assert reply.reason == "output cut at max_tokens=8"
    assert reply.raw == '{"act":"reduce","risk":8' and reply.timings is not None
    assert scripted.requests[0]["max_tokens"] == 8


async def test_invalid_json(scripted, client):
    scripted.script(CHAT, completion("Sure! Here is my answer: reduce"))
    reply = await client.ask("ctx")
    assert reply.failure is KevFailure.INVALID_JSON
    assert reply.reason.startswith("not JSON:")
    assert reply.raw == "Sure! Here is my answer: reduce"


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (command(risk=150), "risk 150 is outside [0, 100]"),
        (
            command(act="resume"),
            "act must be one of hold/reduce/flatten/pause_quoting, got 'resume'",
        ),
        (completion('{"act":"hold"}'), "missing risk, hedge, beta, skew, ttl, why"),
        (completion("[]"), "expected a JSON object, got list"),
    ],
)
async def test_schema_violations(scripted, client, reply, reason):
    scripted.script(CHAT, reply)
    answer = await client.ask("ctx")
    assert answer.failure is KevFailure.SCHEMA_VIOLATION
    assert answer.reason == reason


async def test_http_errors_carry_the_server_message(scripted, client):
    scripted.script(CHAT, error(400, "Failed to parse grammar", "invalid_request_error"))
    reply = await client.ask("ctx")
    assert reply.failure is KevFailure.HTTP_ERROR
    assert reply.reason == "HTTP 400: Failed to parse grammar"


@pytest.mark.parametrize(
    "answer",
    [
        raw("<html>bad gateway</html>"),
        completion(None),
        raw('{"choices": []}'),
    ],
)
async def test_unreadable_answers(scripted, client, answer):
    scripted.script(CHAT, answer)
    reply = await client.ask("ctx")
    assert reply.failure is KevFailure.BAD_RESPONSE
    assert reply.reason.startswith("unreadable answer")


async def test_a_dropped_connection(scripted, client):
    scripted.script(CHAT, drop_connection())
    reply = await client.ask("ctx")
    assert reply.failure is KevFailure.UNREACHABLE


async def test_missing_timings_are_tolerated(scripted, client):
    scripted.script(CHAT, completion(orjson.dumps(dict(TIMINGS)).decode(), timings={}))
    reply = await client.ask("ctx")
    assert reply.timings is None and reply.failure is KevFailure.SCHEMA_VIOLATION


async def test_health_props_and_metrics(scripted, client):
    assert (await client.health()).state == "ok"
    scripted.script("/health", error(503, "Loading model", "unavailable_error"))
    assert tuple(await client.health()) == ("loading", "Loading model")
    props = await client.props()
    assert (props.model, props.context_size, props.slots) == ("scripted.gguf", 4096, 1)
    scripted.script(
        "/metrics",
        raw(
            "# HELP llamacpp:prompt_tokens_total x\n"
            "llamacpp:prompt_tokens_total 1234\n"
            "llamacpp:requests_processing 1\n"
        ),
    )
    assert await client.metrics() == {
        "llamacpp:prompt_tokens_total": 1234.0,
        "llamacpp:requests_processing": 1.0,
    }
    scripted.script("/metrics", error(501, "This server does not support metrics endpoint."))
    assert await client.metrics() == {}


async def test_an_unstarted_client_is_a_programming_error():
    kev = KevClient(KevClientConfig(), KevCommandSpec())
    with pytest.raises(RuntimeError, match="KevClient is not started"):
        await kev.ask("ctx")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"base_url": "127.0.0.1:8001"},
        {"request_timeout_s": 0},
        {"max_tokens": 0},
        {"temperature": -0.1},
        {"max_connections": 0},
    ],
)
def test_a_config_out_of_bounds_is_refused(kwargs):
    with pytest.raises(ValueError, match="KevClientConfig"):
        KevClientConfig(**kwargs)
