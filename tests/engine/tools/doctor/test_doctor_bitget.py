"""The Bitget check: the simulator, and loopback stand-ins for Bitget's time endpoint."""

from __future__ import annotations

import time

from support.doctor import (
    time_routes,
)
from support.loopback import serve
from support.sim import running_sim

from engine.kev.server import free_port
from engine.sim.server import SimExchangeConfig
from engine.tools.doctor.bitget import check_bitget
from engine.tools.doctor.report import CheckStatus


async def test_the_simulator_answers_bitgets_time_with_no_skew() -> None:
    async with running_sim(SimExchangeConfig()) as sim:
        result = await check_bitget(sim.rest_url, 2.0, 1_000)
    assert result.status is CheckStatus.OK, result.detail
    assert result.detail.startswith("reachable (")


async def test_a_clock_beyond_the_signing_window_fails(bitget_time) -> None:
    def clock_45_s_behind() -> int:
        return time.time_ns() - 45 * 1_000_000_000

    result = await check_bitget(bitget_time.url, 2.0, 1_000, clock_45_s_behind)
    assert result.status is CheckStatus.FAIL
    assert "the local clock is 45.0 s behind Bitget's" in result.detail
    assert "refused (40008)" in result.detail
    assert "timedatectl set-ntp true" in result.fix


async def test_a_server_clock_a_few_seconds_ahead_warns() -> None:
    server = await serve(time_routes(offset_ms=5_000))
    try:
        result = await check_bitget(server.url, 2.0, 1_000)
    finally:
        await server.stop()
    assert result.status is CheckStatus.WARN
    assert "5.0 s behind Bitget's" in result.detail and "signing works" in result.detail


async def test_a_refusal_page_is_not_taken_for_the_time() -> None:
    server = await serve(time_routes(body="<html>Access denied</html>", status=403))
    try:
        result = await check_bitget(server.url, 2.0, 1_000)
    finally:
        await server.stop()
    assert result.status is CheckStatus.WARN
    assert "answered HTTP 403 but not with Bitget's time" in result.detail
    assert "Access denied" in result.detail and "country or IP" in result.fix


async def test_no_route_and_no_name_are_network_warnings() -> None:
    refused = await check_bitget(f"http://127.0.0.1:{free_port()}", 2.0, 1_000)
    assert refused.status is CheckStatus.WARN and "cannot connect" in refused.detail
    unresolved = await check_bitget("http://doctor-check.invalid", 2.0, 1_000)
    assert unresolved.status is CheckStatus.WARN
    assert unresolved.detail.startswith("no network: cannot resolve doctor-check.invalid")
    assert "sim and replays work offline" in unresolved.fix
