"""Bitget's CRC32 order-book checksum.

The first 25 levels of each side (bids descending, asks ascending) are interleaved
`bid1:ask1:bid2:ask2:...`, each written `price:size` with the exact strings from the wire, and
joined by ':'. A shorter side is simply skipped once exhausted. The CRC32 (zlib/IEEE) of that
text, read as a signed 32-bit integer, is the `checksum` of a `books` update.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from itertools import zip_longest

CHECKSUM_LEVELS = 25

Level = tuple[str, str]


def checksum_text(bids: Sequence[Level], asks: Sequence[Level]) -> str:
    """The interleaved text that is hashed; levels best first, strings as received."""
    parts: list[str] = []
    for bid, ask in zip_longest(bids[:CHECKSUM_LEVELS], asks[:CHECKSUM_LEVELS]):
        if bid is not None:
            parts.append(f"{bid[0]}:{bid[1]}")
        if ask is not None:
            parts.append(f"{ask[0]}:{ask[1]}")
    return ":".join(parts)


def book_checksum(bids: Sequence[Level], asks: Sequence[Level]) -> int:
    """Signed 32-bit CRC32 of the top 25 levels per side, as Bitget sends it."""
    value = zlib.crc32(checksum_text(bids, asks).encode())
    return value - (1 << 32) if value >= (1 << 31) else value
