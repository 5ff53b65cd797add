"""Known secrets, a scanner for them in every form a leak would take (raw, UTF-16, hex,
percent-encoded, base64 at any alignment, and decoded where the secret is base64 itself), and
the simulator holding them as its keys."""

from __future__ import annotations

import base64
import binascii
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from urllib.parse import quote

from engine.sim.market import MarketGeneratorConfig
from engine.sim.server import SimExchange, SimExchangeConfig

API_KEY = "bg_9f2c4e6a8b0d1f3e5a7c9b1d3f5e7a9c"
API_SECRET = "c2NhbnNlY3JldDpmNGQ3YTlkMWUzYjVjN2U5ZjFhM2I1YzdkOWUxZjM="
"""Bitget secrets are long random strings; this one is valid base64 too, so its decoded bytes
are scanned for as well."""
PASSPHRASE = "Scan9Passphrase7x"
WRONG_PASSPHRASE = "Wrong4Passphrase2y"
SECRETS = (API_KEY, API_SECRET, PASSPHRASE, WRONG_PASSPHRASE)


def _base64_anywhere(secret: bytes) -> Iterator[bytes]:
    """The base64 characters that encode `secret` at each of the three byte alignments it can
    have inside a longer encoded blob (only the characters made of its bits alone)."""
    for offset in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(b"\0" * offset + secret + b"\0\0")
            first = -(-8 * offset // 6)
            last = (8 * (offset + len(secret)) - 6) // 6
            yield encoded[first : last + 1].rstrip(b"=")


def needles(secret: str) -> list[bytes]:
    raw = secret.encode()
    found = [
        raw,
        secret.encode("utf-16-le"),
        raw.hex().encode(),
        raw.hex().upper().encode(),
        quote(secret, safe="").encode(),
        *_base64_anywhere(raw),
    ]
    try:
        decoded = base64.b64decode(secret, validate=True)
    except binascii.Error:
        decoded = b""
    if len(decoded) >= 8:
        found += [decoded, decoded.hex().encode()]
    return found


NEEDLES = {secret: needles(secret) for secret in SECRETS}


def leaks(blob: bytes | str) -> list[str]:
    """Which secrets `blob` carries, in any of the scanned forms."""
    data = blob.encode() if isinstance(blob, str) else blob
    return [secret for secret, forms in NEEDLES.items() if any(form in data for form in forms)]


@asynccontextmanager
async def sim_with_keys(seed: int) -> AsyncIterator[SimExchange]:
    """The simulator holding the keys above (its market from `seed`), for the length of a block."""
    exchange = SimExchange(
        SimExchangeConfig(
            book_interval_ms=30,
            warmup_ms=2_000,
            market=MarketGeneratorConfig(seed=seed),
            api_key=API_KEY,
            api_secret=API_SECRET,
            passphrase=PASSPHRASE,
        )
    )
    await exchange.start()
    try:
        yield exchange
    finally:
        await exchange.stop()
