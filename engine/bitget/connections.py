"""Bitget's limits on public websocket connections, readable without the feed (the settings
check a book against them before anything connects)."""

from __future__ import annotations

import math
from collections.abc import Sequence

MAX_CHANNELS_PER_CONNECTION = 1000
RECOMMENDED_CHANNELS_PER_CONNECTION = 49
"""Bitget: "fewer than 50 channels per connection" for a stable one."""
MAX_CONNECTIONS_PER_IP = 100


def connection_symbols(
    symbols: Sequence[str], channels: Sequence[str], per_connection: int
) -> tuple[tuple[str, ...], ...]:
    """The symbols each connection carries, in order: as few connections of at most
    `per_connection` channels as `symbols` x `channels` need (a symbol's channels share one),
    their symbols balanced (counts differ by one at most)."""
    symbols = tuple(symbols)
    per_connection_symbols = per_connection // len(channels)
    count = math.ceil(len(symbols) / per_connection_symbols)
    size, larger = divmod(len(symbols), count)
    groups = []
    start = 0
    for index in range(count):
        end = start + size + (1 if index < larger else 0)
        groups.append(symbols[start:end])
        start = end
    return tuple(groups)


def check_connections(
    symbols: Sequence[str],
    channels: Sequence[str],
    per_connection: int = RECOMMENDED_CHANNELS_PER_CONNECTION,
) -> None:
    """A ValueError, one line, when `symbols` x `channels` need more connections than Bitget
    takes from one IP."""
    connections = len(connection_symbols(symbols, channels, per_connection))
    if connections > MAX_CONNECTIONS_PER_IP:
        raise ValueError(
            f"{len(symbols)} symbols x {len(channels)} channels need {connections} "
            f"connections of at most {per_connection} channels, over Bitget's "
            f"{MAX_CONNECTIONS_PER_IP} per IP"
        )
