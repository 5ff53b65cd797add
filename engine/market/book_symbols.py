"""What makes a book of symbols: the quoted contracts and the one that hedges them."""

from __future__ import annotations

from collections.abc import Sequence

MAX_QUOTED_SYMBOLS = 16
"""The most symbols a book quotes besides its hedge: Bitget takes 10 orders a second per
account, which 16 symbols' requotes already share thinly."""


def check_book_symbols(quoted: Sequence[str], hedge: str | None) -> None:
    """A ValueError, one line naming it, for a book of no symbols or too many, a symbol quoted
    twice or the hedge also quoted."""
    if not 1 <= len(quoted) <= MAX_QUOTED_SYMBOLS:
        raise ValueError(
            f"a book quotes 1 to {MAX_QUOTED_SYMBOLS} symbols besides its hedge, got "
            f"{len(quoted)}: {', '.join(quoted) or 'none'}"
        )
    seen: set[str] = set()
    for symbol in quoted:
        if symbol in seen:
            raise ValueError(f"{symbol} is quoted twice")
        seen.add(symbol)
    if hedge in seen:
        raise ValueError(f"{hedge} is the hedge and cannot also be quoted")
