"""Bitget reachable, and the clock against its own."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable

from engine.tools.doctor.report import CheckResult, CheckStatus, shorten

_ANSWER_MAX_BYTES = 65_536


async def check_bitget(
    base_url: str | None,
    timeout_s: float,
    skew_warn_ms: float,
    wall_clock_ns: Callable[[], int] = time.time_ns,
) -> CheckResult:
    """Bitget's public time endpoint: reachable, and how far the local clock is from it."""
    import aiohttp

    from engine.bitget.endpoints import BITGET_REST_URL, SERVER_TIME, SIGNING_WINDOW_MS
    from engine.bitget.models import MalformedAnswer, parse_server_time

    url = f"{(base_url or BITGET_REST_URL).rstrip('/')}{SERVER_TIME}"
    offline = "only demo, live and Bitget's public feed need it; sim and replays work offline"
    timeout = aiohttp.ClientTimeout(total=timeout_s, connect=min(timeout_s, 2.0))
    # Like the trading client: no inherited proxy settings.
    async with aiohttp.ClientSession(timeout=timeout, trust_env=False) as session:
        sent_ns = wall_clock_ns()
        try:
            async with session.get(url) as response:
                # The time is a few dozen bytes; a proxy's or captive portal's page can be big.
                body = await response.content.read(_ANSWER_MAX_BYTES)
                status = response.status
            received_ns = wall_clock_ns()
        except aiohttp.ClientConnectorError as error:
            if isinstance(error.os_error, socket.gaierror):
                detail = f"no network: cannot resolve {error.host} ({error.os_error.strerror})"
            else:
                detail = f"cannot connect to {error.host}:{error.port} ({shorten(str(error))})"
            return CheckResult("bitget", CheckStatus.WARN, detail, offline)
        except TimeoutError:
            return CheckResult(
                "bitget", CheckStatus.WARN, f"no answer from {url} within {timeout_s:g} s", offline
            )
        except aiohttp.ClientError as error:
            return CheckResult(
                "bitget",
                CheckStatus.WARN,
                f"{url}: {type(error).__name__}: {shorten(str(error))}",
                offline,
            )
    round_trip_ms = (received_ns - sent_ns) / 1e6
    try:
        document = json.loads(body)
        if not isinstance(document, dict):
            raise MalformedAnswer(f"expected an object, got {type(document).__name__}")
        if document.get("code") != "00000":
            raise MalformedAnswer(
                f"code {document.get('code')!r}: {shorten(str(document.get('msg')))}"
            )
        server_ms = parse_server_time(document.get("data"))
    except (ValueError, MalformedAnswer) as error:
        text = body[:80].decode(errors="replace").replace("\n", " ")
        reason = str(error) if isinstance(error, MalformedAnswer) else f"not JSON: {text!r}"
        if status == 403:
            fix = "Bitget refuses this country or IP: trade from a location it serves"
        else:
            fix = "check that the URL is Bitget's REST host (or a simulator's: --rest-url)"
        return CheckResult(
            "bitget",
            CheckStatus.WARN,
            f"{url} answered HTTP {status} but not with Bitget's time ({shorten(reason)})",
            fix,
        )
    offset_ms = server_ms - (sent_ns + received_ns) / 2e6
    uncertainty_ms = round_trip_ms / 2
    direction = "behind" if offset_ms > 0 else "ahead of"
    measured = (
        f"reachable ({round_trip_ms:.0f} ms round trip); the local clock is "
        f"{_duration(abs(offset_ms))} {direction} Bitget's (+/- {_duration(uncertainty_ms)})"
    )
    clock_fix = "sync the system clock: timedatectl set-ntp true (or chronyc makestep)"
    if abs(offset_ms) > SIGNING_WINDOW_MS:
        return CheckResult(
            "bitget",
            CheckStatus.FAIL,
            f"{measured}: beyond Bitget's {SIGNING_WINDOW_MS / 1000:g} s signing window, signed "
            "requests are refused (40008)",
            clock_fix,
        )
    if abs(offset_ms) - uncertainty_ms > skew_warn_ms:
        return CheckResult(
            "bitget",
            CheckStatus.WARN,
            f"{measured}: signing works, but book ages and latencies measured against exchange "
            "timestamps are off by as much",
            clock_fix,
        )
    return CheckResult("bitget", CheckStatus.OK, measured)


def _duration(milliseconds: float) -> str:
    if milliseconds < 1_000:
        return f"{milliseconds:.0f} ms"
    return f"{milliseconds / 1000:.1f} s"
