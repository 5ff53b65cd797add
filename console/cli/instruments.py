"""`hft-console instruments`: the contract table the engine would use (engine/bitget/contracts.py),
from the per-user cache while it is fresh, else from the venue. A symbol asked for that the
table lacks, or that does not trade, is one line with its status and exit 2."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from typing import TYPE_CHECKING

from console.cli.errors import error_line
from engine.bitget.endpoints import BITGET_REST_URL

if TYPE_CHECKING:
    from engine.bitget.contracts import ContractSpec, LoadedTable

NAME = "hft-console instruments"
_COLUMNS = ("symbol", "status", "tick", "lot", "min size", "min USDT", "maker bps", "taker bps")


def add_instruments_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "instruments",
        help="print Bitget's USDT-M contract table: tick, lot, minimums, fees, status",
        description="The contract table the engine would use: from the per-user cache when "
        "it is under an hour old and from this venue, else from the venue (and cached). "
        "Offline, the cache of any age is used and its age said. Exits 2 when a SYMBOL is "
        "not in the table or is not trading.",
    )
    parser.add_argument("symbols", metavar="SYMBOL", nargs="*", help="only these (e.g. XRPUSDT)")
    parser.add_argument("--refresh", action="store_true", help="ask the venue even if cached")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--url",
        default=BITGET_REST_URL,
        help=f"the venue's REST base (default {BITGET_REST_URL}; a simulator's for tests)",
    )


def run_instruments(args: argparse.Namespace) -> int:
    from engine.bitget.rest import BitgetRestError

    # The client logs each retry; the one line below says how the last attempt ended.
    quiet = logging.NullHandler()
    logging.getLogger().addHandler(quiet)
    try:
        loaded = asyncio.run(_load(args.url, args.refresh))
    except ValueError as error:  # a --url that is not one, a table that does not parse
        print(f"{NAME}: {error_line(error)}", file=sys.stderr)
        return 2
    except BitgetRestError as error:
        print(f"{NAME}: no contract table from {args.url}: {error}", file=sys.stderr)
        return 1
    finally:
        logging.getLogger().removeHandler(quiet)
    symbols = [symbol.upper() for symbol in args.symbols]
    refusals = [_refusal(loaded, symbol) for symbol in symbols]
    if any(refusals):
        for refusal in filter(None, refusals):
            print(f"{NAME}: {refusal}", file=sys.stderr)
        return 2
    specs = [loaded.table.specs[symbol] for symbol in symbols] or [
        loaded.table.specs[symbol] for symbol in sorted(loaded.table.specs)
    ]
    print(f"{NAME}: {_source_text(loaded)}", file=sys.stderr)
    if args.json:
        print(json.dumps(_document(loaded, specs)))
    else:
        print(_table_text(specs))
    return 0


async def _load(url: str, refresh: bool) -> LoadedTable:
    from engine.bitget.contracts import load_contracts
    from engine.bitget.rest import BitgetRestClient, BitgetRestConfig

    config = BitgetRestConfig(base_url=url)
    async with BitgetRestClient(config, None) as client:
        return await load_contracts(
            client,
            refresh=refresh,
            notice=lambda line: print(f"{NAME}: {line}", file=sys.stderr),
        )


def _refusal(loaded: LoadedTable, symbol: str) -> str | None:
    spec = loaded.table.specs.get(symbol)
    if spec is None:
        return f"{symbol}: not in the contract table of {loaded.url}"
    return spec.refusal


def _source_text(loaded: LoadedTable) -> str:
    from engine.bitget.contracts import TableSource, age_text

    count = len(loaded.table.specs)
    if loaded.source is TableSource.VENUE:
        return f"{count} contracts from {loaded.url}, just fetched"
    age = age_text(loaded.now_ms - loaded.fetched_ms)
    return f"{count} contracts of {loaded.url}, cached {age} ago"


def _row(spec: ContractSpec) -> tuple[str, ...]:
    from engine.bitget.contracts import PERPETUAL

    instrument = spec.instrument
    return (
        spec.symbol,
        spec.status if spec.symbol_type == PERPETUAL else f"{spec.status} ({spec.symbol_type})",
        instrument.format_price(instrument.tick_size),
        instrument.format_size(instrument.size_step),
        instrument.format_size(spec.min_size),
        f"{instrument.min_notional:g}",
        f"{spec.instrument.maker_fee_rate * 10_000:g}",
        f"{spec.instrument.taker_fee_rate * 10_000:g}",
    )


def _table_text(specs: list[ContractSpec]) -> str:
    from engine.tools.backtest.report import Table

    return "\n".join(Table((_COLUMNS, *(_row(spec) for spec in specs)), right_from=2).lines())


def _document(loaded: LoadedTable, specs: list[ContractSpec]) -> dict[str, object]:
    return {
        "url": loaded.url,
        "source": loaded.source,
        "fetched_ms": loaded.fetched_ms,
        "contracts": [
            {
                "symbol": spec.symbol,
                "status": spec.status,
                "type": spec.symbol_type,
                "trading": spec.refusal is None,
                "base_coin": spec.base_coin,
                "quote_coin": spec.quote_coin,
                "tick": spec.instrument.tick_size,
                "lot": spec.instrument.size_step,
                "min_size": spec.min_size,
                "min_notional_usdt": spec.instrument.min_notional,
                "maker_fee_bps": round(spec.instrument.maker_fee_rate * 10_000, 6),
                "taker_fee_bps": round(spec.instrument.taker_fee_rate * 10_000, 6),
                "max_order_size": spec.max_order_size,
                "max_market_order_size": spec.max_market_order_size,
                "max_leverage": spec.max_leverage,
            }
            for spec in specs
        ],
    }
