"""The websocket pieces both Bitget feeds share: the reconnect backoff and how one session
picks its end (the message limiter is the REST one: test_rate_limit.py).

How a session reconnects, pings and closes is exercised through both feeds, against loopback
servers, in test_bitget_public_ws.py and test_bitget_private_ws.py.
"""

from __future__ import annotations

import pytest

from engine.bitget.private_ws import BitgetPrivateFeedConfig
from engine.bitget.websocket import (
    ReconnectBackoff,
    ReconnectingSocket,
    SessionEnd,
    SessionTasks,
    SocketCounters,
)


class _FixedDraw:
    """A random source whose uniform(a, b) returns a fixed fraction of the way from a to b."""

    def __init__(self, fraction: float) -> None:
        self.fraction = fraction

    def uniform(self, low: float, high: float) -> float:
        return low + (high - low) * self.fraction


def test_backoff_ceiling_doubles_then_is_capped():
    backoff = ReconnectBackoff(0.5, 30.0)
    ceilings = [backoff.ceiling_s(failures) for failures in range(1, 10)]
    assert ceilings == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]
    assert backoff.ceiling_s(10_000) == 30.0


def test_backoff_delay_is_full_jitter_between_zero_and_the_ceiling():
    assert ReconnectBackoff(0.5, 30.0, _FixedDraw(1.0)).delay_s(4) == 4.0
    assert ReconnectBackoff(0.5, 30.0, _FixedDraw(0.0)).delay_s(4) == 0.0
    assert ReconnectBackoff(0.5, 30.0, _FixedDraw(0.5)).delay_s(20) == 15.0
    seeded = ReconnectBackoff(0.5, 30.0)
    delays = [seeded.delay_s(failures) for failures in range(1, 12) for _ in range(20)]
    assert all(0.0 <= delay <= 30.0 for delay in delays)
    assert len(set(delays)) > 100  # jittered, not a fixed schedule


class _Connection:
    closed = False

    async def close(self) -> None:
        self.closed = True


class _Owner:
    """Every task ends at once: the receiver's end is the one to win, whatever the order."""

    def __init__(self, live: bool) -> None:
        self.live = live

    def session_tasks(self, websocket: object) -> SessionTasks:
        async def ends(reason: str) -> SessionEnd:
            return SessionEnd(reason)

        async def done() -> None:
            return None

        return SessionTasks(
            "test-receive", ends("receiver"), {"test-login": done(), "test-other": ends("other")}
        )

    def session_closed(self) -> bool:
        return self.live


@pytest.mark.parametrize("live", [True, False])
async def test_a_session_ends_with_the_receivers_reason_and_keeps_no_connection(live):
    socket = ReconnectingSocket(BitgetPrivateFeedConfig(), SocketCounters())
    connection = _Connection()
    end, was_live = await socket._session(_Owner(live), connection)  # type: ignore[arg-type]
    assert end == SessionEnd("receiver")
    assert was_live is live
    assert connection.closed
    with pytest.raises(AssertionError, match="outside a session"):
        await socket.send(b"ping")
