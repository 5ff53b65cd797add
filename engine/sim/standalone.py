"""Run the simulated exchange in the foreground until Ctrl+C or SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from collections.abc import Sequence
from typing import TextIO

from engine.sim.faults import FaultSpec, parse_fault_spec
from engine.sim.rest import FAULTS
from engine.sim.server import SimExchange, SimExchangeConfig, SimStats

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def run_standalone(
    config: SimExchangeConfig,
    faults: Sequence[str],
    *,
    status_interval_s: float = 5.0,
    out: TextIO | None = None,
) -> None:
    """Serve until interrupted, printing URLs, credentials and a periodic status line.

    Fault specs are parsed before anything starts; a bad one raises `FaultSpecError` naming it.
    """
    if status_interval_s <= 0:
        raise ValueError(f"status_interval_s must be positive, got {status_interval_s}")
    specs = [parse_fault_spec(text) for text in faults]
    asyncio.run(_serve(config, specs, status_interval_s, out or sys.stdout))


async def _serve(
    config: SimExchangeConfig, specs: list[FaultSpec], status_interval_s: float, out: TextIO
) -> None:
    exchange = SimExchange(config)
    for spec in specs:
        exchange.faults.add(spec)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for stop_signal in _STOP_SIGNALS:
        loop.add_signal_handler(stop_signal, stop.set)
    try:
        await exchange.start()
        _print(out, _banner(exchange, specs))
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), status_interval_s)
            except TimeoutError:
                _print(out, status_line(exchange.stats()))
    finally:
        for stop_signal in _STOP_SIGNALS:
            loop.remove_signal_handler(stop_signal)
        await exchange.stop()
        _print(out, "sim exchange stopped")


def _banner(exchange: SimExchange, specs: list[FaultSpec]) -> str:
    config = exchange.config
    market = config.market
    fault_text = ", ".join(str(spec) for spec in specs) if specs else "none"
    hedge = market.hedge.instrument.symbol
    if market.quoted:
        quoted = ", ".join(leg.market.instrument.symbol for leg in market.quoted)
        symbols = f"{quoted} (quoted), {hedge} (hedge)"
        model = f"a book: every quoted symbol follows {hedge}, the market's leader"
    else:
        traded = market.traded.instrument.symbol
        symbols = f"{traded} (traded), {hedge} (hedge)"
        model = f"a pair: {hedge} follows {traded} (--hedge makes --symbols a book)"
    return "\n".join(
        (
            f"sim exchange running (Bitget v2 USDT-FUTURES, demo {'on' if config.demo else 'off'})",
            f"  public websocket   {exchange.ws_url}",
            f"  private websocket  {exchange.private_ws_url}",
            f"  REST               {exchange.rest_url}",
            f"  api key            {config.api_key}",
            f"  api secret         {config.api_secret}",
            f"  passphrase         {config.passphrase}",
            f"  symbols            {symbols}, seed {market.seed}",
            f"  market             {model}",
            f"  faults             {fault_text}",
            f'  fault control      POST {exchange.rest_url}{FAULTS} {{"faults": ["silence:10"]}}',
            "Ctrl+C to stop",
        )
    )


def status_line(stats: SimStats) -> str:
    """One line: clock, clients, frames pushed, open orders, fills, REST calls and mids (as
    rounded, whatever their contract's decimals)."""
    mids = "  ".join(f"{symbol} {mid!r}" for symbol, mid in stats.mids.items())
    return (
        f"{time.strftime('%H:%M:%S')}  clients {stats.clients}  frames {stats.frames_pushed}  "
        f"orders {stats.open_orders}  fills {stats.fills}  rest {stats.rest_requests}  {mids}"
    )


def _print(out: TextIO, text: str) -> None:
    out.write(text + "\n")
    out.flush()
