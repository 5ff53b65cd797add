"""Bitget's contract table (`GET /api/v2/mix/market/contracts`, USDT-FUTURES, no key): each
contract's tick, lot, minimums, fees and status, and its cache in the user cache folder.

The tick is `priceEndStep` units of the last of `pricePlace` decimals (pricePlace 1,
priceEndStep 5: 0.5); the lot is `sizeMultiplier`, written with at most `volumePlace` decimals.
The cache keeps the entries as the venue sent them, with their fetch time and the venue's URL,
so the one parser reads both, and a cache from another venue is never taken for this one's.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import NoReturn
from urllib.parse import urlsplit

import orjson

from engine.bitget.endpoints import BITGET_REST_URL, CONTRACTS, PRODUCT_TYPE
from engine.bitget.models import MalformedAnswer
from engine.bitget.rest import BitgetRestClient, BitgetRestError
from engine.market.instruments import Instrument, decimals
from engine.user_files import replacing, user_cache_dir

TRADING_STATUS = "normal"
"""`symbolStatus` of a contract that takes orders; the others (listed, maintain, limit_open,
restrictedAPI, off) do not, or not from an API key."""
PERPETUAL = "perpetual"
CACHE_FORMAT = 1
CACHE_MAX_AGE_S = 3_600.0
"""A cached table younger than this is used without asking the venue."""
_DECIMALS_MAX = 10
"""Instrument's limit on a tick's or lot's decimals."""
_SHOWN_MAX = 40
"""Characters of a refused value quoted in an error."""


class ContractTableError(MalformedAnswer):
    """A contract table that does not parse; the message names the symbol and the field."""


@dataclass(frozen=True, slots=True)
class ContractSpec:
    """One contract as the venue lists it. `instrument` holds the grid (tick, lot) and the
    minimum notional (`minTradeUSDT`); sizes are in base coin, fee rates are fractions
    (0.0002 is 2 bps), and a maximum the table does not give is None."""

    instrument: Instrument
    base_coin: str
    quote_coin: str
    symbol_type: str
    status: str
    min_size: float
    max_order_size: float | None
    max_market_order_size: float | None
    max_leverage: float | None

    @property
    def symbol(self) -> str:
        return self.instrument.symbol

    @property
    def refusal(self) -> str | None:
        """Why the engine cannot trade this contract (its status or type), None if it can."""
        if self.symbol_type != PERPETUAL:
            return f"{self.symbol} is a {self.symbol_type} contract, not a perpetual"
        if self.status != TRADING_STATUS:
            return f"{self.symbol} is not trading: its status is {self.status!r}"
        return None


@dataclass(frozen=True, slots=True)
class ContractTable:
    """The venue's contracts by symbol, and the entries they were read from (for the cache)."""

    specs: Mapping[str, ContractSpec]
    entries: tuple[Mapping[str, object], ...]


def parse_contracts(data: object) -> ContractTable:
    """The table from the `data` of Bitget's answer; `ContractTableError` names the first
    symbol and field that is missing or not of its kind."""
    if not isinstance(data, list):
        raise ContractTableError(f"contract table: expected a list, got {type(data).__name__}")
    if not data:
        raise ContractTableError("contract table: lists no contract")
    specs: dict[str, ContractSpec] = {}
    for index, entry in enumerate(data):
        if not isinstance(entry, Mapping):
            raise ContractTableError(
                f"contract table: entry {index}: expected an object, got {type(entry).__name__}"
            )
        spec = _contract(entry, index)
        if spec.symbol in specs:
            raise ContractTableError(f"contract table: {spec.symbol}: listed twice")
        specs[spec.symbol] = spec
    return ContractTable(MappingProxyType(specs), tuple(data))


def _contract(entry: Mapping[str, object], index: int) -> ContractSpec:
    symbol = entry.get("symbol")
    if not isinstance(symbol, str) or not symbol:
        raise ContractTableError(f"contract table: entry {index}: symbol: {_missing(symbol)}")
    field = _Fields(entry, symbol)
    price_place = field.whole("pricePlace", 0, _DECIMALS_MAX)
    volume_place = field.whole("volumePlace", 0, _DECIMALS_MAX)
    tick = field.positive("priceEndStep") * Decimal(10) ** -price_place
    lot = field.positive("sizeMultiplier")
    if decimals(lot) > volume_place:
        field.refuse("sizeMultiplier", f"has more decimals than volumePlace ({volume_place})")
    min_notional = float(field.number("minTradeUSDT"))
    maker_fee_rate = float(field.rate("makerFeeRate"))
    taker_fee_rate = float(field.rate("takerFeeRate"))
    try:  # Instrument refuses a symbol, tick or lot it cannot hold, in one line
        instrument = Instrument(
            symbol,
            float(tick),
            float(lot),
            min_notional,
            maker_fee_rate=maker_fee_rate,
            taker_fee_rate=taker_fee_rate,
        )
    except ValueError as error:
        raise ContractTableError(f"contract table: {symbol}: {error}") from None
    return ContractSpec(
        instrument=instrument,
        base_coin=field.text("baseCoin"),
        quote_coin=field.text("quoteCoin"),
        symbol_type=field.text("symbolType"),
        status=field.text("symbolStatus"),
        min_size=float(field.positive("minTradeNum")),
        max_order_size=field.optional_positive("maxOrderQty"),
        max_market_order_size=field.optional_positive("maxMarketOrderQty"),
        max_leverage=field.optional_positive("maxLever"),
    )


class _Fields:
    """One entry's fields, each refused with a line naming the symbol and the field."""

    def __init__(self, entry: Mapping[str, object], symbol: str) -> None:
        self._entry = entry
        self._symbol = symbol

    def refuse(self, name: str, problem: str) -> NoReturn:
        raise ContractTableError(f"contract table: {self._symbol}: {name}: {problem}")

    def text(self, name: str) -> str:
        value = self._entry.get(name)
        if not isinstance(value, str) or not value:
            self.refuse(name, _missing(value))
        return value

    def _decimal(self, name: str) -> tuple[str, Decimal]:
        """The field's text and its value (NaN when it is not a number): Bitget sends every
        number of this table as text."""
        text = self.text(name)
        try:
            return text, Decimal(text.strip())
        except InvalidOperation:
            return text, Decimal("NaN")

    def number(self, name: str) -> Decimal:
        text, value = self._decimal(name)
        if not value.is_finite() or value < 0:
            self.refuse(name, f"expected a number >= 0, got {_shown(text)}")
        return value

    def positive(self, name: str) -> Decimal:
        value = self.number(name)
        if value <= 0:
            self.refuse(name, f"expected a number > 0, got {_shown(self._entry[name])}")
        return value

    def optional_positive(self, name: str) -> float | None:
        if self._entry.get(name) in (None, ""):
            return None
        return float(self.positive(name))

    def rate(self, name: str) -> Decimal:
        """A fee rate: a fraction of the notional, under 1 (negative is a rebate)."""
        text, value = self._decimal(name)
        if not value.is_finite() or abs(value) >= 1:
            self.refuse(name, f"expected a fee rate like 0.0002, got {_shown(text)}")
        return value

    def whole(self, name: str, low: int, high: int) -> int:
        text = self.text(name)
        if not (text.isascii() and text.isdigit()) or not low <= int(text) <= high:
            self.refuse(name, f"expected a whole number within {low}..{high}, got {_shown(text)}")
        return int(text)


def _missing(value: object) -> str:
    if value is None or value == "":
        return "missing"
    return f"expected text, got {type(value).__name__} {_shown(value)}"


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN_MAX else f"{text[:_SHOWN_MAX]}..."


# The cache


def contracts_cache_path(url: str) -> Path:
    """The cache of the venue at `url`: Bitget's `bitget-contracts.json`, another venue's (a
    simulator's) a file of its own, so that one never replaces the other."""
    if url == BITGET_REST_URL:
        return user_cache_dir() / "bitget-contracts.json"
    place = re.sub(r"[^A-Za-z0-9.-]+", "_", urlsplit(url).netloc) or "venue"
    return user_cache_dir() / f"contracts-{place}.json"


@dataclass(frozen=True, slots=True)
class CachedTable:
    """A table as cached: where it came from and when (Unix ms)."""

    table: ContractTable
    url: str
    fetched_ms: int


class ContractCacheError(ValueError):
    """A cache file that cannot be read as a contract table; the message names the file."""


def write_cache(path: Path, table: ContractTable, url: str, fetched_ms: int) -> None:
    """The table, its venue URL and fetch time, written whole or not at all."""
    document = {
        "format": CACHE_FORMAT,
        "url": url,
        "fetched_ms": fetched_ms,
        "data": [dict(entry) for entry in table.entries],
    }
    with replacing(path) as scratch:
        scratch.write_bytes(orjson.dumps(document))


def read_cache(path: Path) -> CachedTable | None:
    """The cached table, None when there is no cache file; `ContractCacheError` for one that
    does not read."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise ContractCacheError(f"{path}: {error.strerror}") from None
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise ContractCacheError(f"{path}: not JSON") from None
    if not isinstance(document, dict) or document.get("format") != CACHE_FORMAT:
        raise ContractCacheError(f"{path}: not a contract cache of format {CACHE_FORMAT}")
    url, fetched_ms = document.get("url"), document.get("fetched_ms")
    if not isinstance(url, str) or not isinstance(fetched_ms, int) or isinstance(fetched_ms, bool):
        raise ContractCacheError(f"{path}: lacks its venue url or fetch time")
    try:
        table = parse_contracts(document.get("data"))
    except ContractTableError as error:
        raise ContractCacheError(f"{path}: {error}") from None
    return CachedTable(table, url, fetched_ms)


class TableSource(StrEnum):
    """Where a loaded table came from."""

    VENUE = "venue"
    CACHE = "cache"


@dataclass(frozen=True, slots=True)
class LoadedTable:
    """The table the engine would use, where it came from, when it was fetched and when it
    was loaded (Unix ms)."""

    table: ContractTable
    source: TableSource
    url: str
    fetched_ms: int
    now_ms: int


async def fetch_contracts(client: BitgetRestClient) -> ContractTable:
    """The venue's USDT-M table (public, no key). A table that does not parse is said as such
    (`ContractTableError`), not as a transport failure to retry or fall back from."""
    return parse_contracts(await client.public_data(CONTRACTS, {"productType": PRODUCT_TYPE}))


async def load_contracts(
    client: BitgetRestClient,
    *,
    refresh: bool = False,
    cache_path: Path | None = None,
    max_age_s: float = CACHE_MAX_AGE_S,
    now_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    notice: Callable[[str], None] = lambda line: None,
) -> LoadedTable:
    """The table of `client`'s venue: the cache when it is this venue's and younger than
    `max_age_s` (unless `refresh`), else the venue's (written to the cache). When the venue
    cannot be reached or answers no, this venue's cache of any age is used and its age said
    through `notice`; a cache from another URL is never used (said)."""
    url = client.config.base_url
    path = contracts_cache_path(url) if cache_path is None else cache_path
    cached: CachedTable | None
    try:
        cached = read_cache(path)
    except ContractCacheError as error:
        notice(f"contract cache not used: {error}")
        cached = None
    if cached is not None and cached.url != url:
        notice(f"contract cache not used: it is from {cached.url}, not {url}")
        cached = None
    now = now_ms()
    if cached is not None and not refresh and now - cached.fetched_ms < max_age_s * 1000:
        return LoadedTable(cached.table, TableSource.CACHE, url, cached.fetched_ms, now)
    try:
        table = await fetch_contracts(client)
    except BitgetRestError as error:
        if cached is None:
            raise
        notice(
            f"venue not reached ({error}); using the cached table from "
            f"{age_text(now - cached.fetched_ms)} ago"
        )
        return LoadedTable(cached.table, TableSource.CACHE, url, cached.fetched_ms, now)
    write_cache(path, table, url, now)
    return LoadedTable(table, TableSource.VENUE, url, now, now)


def age_text(age_ms: int) -> str:
    """An age for a person: "45 s", "12 min", "3.5 h", "2.0 days"."""
    seconds = max(0, age_ms) / 1000
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7_200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172_800:
        return f"{seconds / 3_600:.1f} h"
    return f"{seconds / 86_400:.1f} days"
