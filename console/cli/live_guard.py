"""The typed confirmation before live trading: real money moves only after the operator has
read what is about to happen and typed the exact phrase it asks for, at a terminal. Piped or
redirected input never confirms: a script, a here-doc or `yes LIVE ... |` is not an operator."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from engine.bitget.credentials import mask_api_key
from engine.risk.limits import RiskLimits
from engine.units import plain
from engine.validation import require_symbol

_RULE = "=" * 72


class NotATerminalError(EOFError):
    """Standard input is not a terminal: nobody is there to confirm."""


def read_from_terminal(prompt: str) -> str:
    """`input`, from a terminal only."""
    if not sys.stdin.isatty():
        raise NotATerminalError
    return input(prompt)


def confirmation_phrase(symbols: Sequence[str]) -> str:
    """What the operator must type: `LIVE` and every symbol that will trade, in order."""
    return " ".join(("LIVE", *symbols))


def confirm_live(
    *,
    account: str,
    symbols: Sequence[str],
    hedge: str | None = None,
    read: Callable[[str], str] = read_from_terminal,
    write: Callable[[str], None] = print,
    api_key: str | None = None,
    limits: RiskLimits | None = None,
) -> bool:
    """Show what going live means and ask for the phrase; True only for an exact match.
    `symbols` are every symbol that will trade: the quoted ones and `hedge`, the book's hedge.

    One attempt: a mismatch, end of input, Ctrl+C or (with the default reader) a standard input
    that is not a terminal answers False (nothing has been sent, and the caller must send
    nothing). What was typed is never echoed: it may be a pasted secret.
    """
    if not account.strip():
        raise ValueError("account must name the account that will trade")
    if not symbols:
        raise ValueError("symbols must name at least one symbol")
    for symbol in symbols:
        require_symbol("live confirmation", "symbols", symbol)
    phrase = confirmation_phrase(symbols)
    write(_RULE)
    write("  LIVE TRADING: real orders with real money on Bitget USDT-M perpetual futures")
    write(_RULE)
    write(f"  account   {_printable(account)}")
    if api_key is not None:
        write(f"  API key   {mask_api_key(api_key)}")
    write(f"  symbols   {_symbols_line(symbols, hedge)}")
    if limits is not None:
        for number, line in enumerate(_limits_lines(limits)):
            write(f"  {'limits' if number == 0 else '':<8}  {line}")
    write("  Nothing has been sent yet. Orders may go out as soon as you confirm.")
    try:
        typed = read(f"Type {phrase} to start live trading (anything else cancels): ")
    except NotATerminalError:
        write(
            f"Not confirmed (standard input is not a terminal: {phrase} must be typed by a "
            "person, in a terminal, tmux or screen): live trading not started, nothing sent."
        )
        return False
    except (EOFError, KeyboardInterrupt):
        write("")
        write("Not confirmed (input ended): live trading not started, nothing sent.")
        return False
    if typed.strip() != phrase:
        write(f"Not confirmed (that was not {phrase}): live trading not started, nothing sent.")
        return False
    write("Confirmed: starting live trading.")
    return True


def _symbols_line(symbols: Sequence[str], hedge: str | None) -> str:
    return ", ".join(f"{s} ({'hedge' if s == hedge else 'quoted'})" for s in symbols)


def _limits_lines(limits: RiskLimits) -> list[str]:
    lines = [
        f"{s.symbol}: position <= {plain(s.max_position)}, notional <= "
        f"{s.max_notional:,.0f} USDT, order <= {plain(s.max_order_size)}"
        for s in limits.symbols
    ]
    lines.append(
        f"net delta <= {limits.max_net_delta:,.0f} USDT; daily loss: reduce-only at "
        f"{limits.daily_loss_soft:,.0f}, halt at {limits.daily_loss_hard:,.0f} USDT"
    )
    lines.append(
        f"orders <= {limits.orders_per_second}/s and {limits.orders_per_minute}/min, "
        f"<= {limits.max_open_orders} open; slippage <= {limits.max_slippage_bps:g} bps"
    )
    return lines


def _printable(text: str) -> str:
    """Terminal control sequences in a label must not reach the operator's screen."""
    return "".join(ch if ch.isprintable() else "?" for ch in text)
