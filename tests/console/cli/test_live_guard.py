"""The typed live-trading confirmation: only the exact phrase starts live trading."""

from __future__ import annotations

import io
from dataclasses import replace

import pytest

from console.cli.live_guard import confirm_live, confirmation_phrase
from engine.risk.limits import RiskLimits, SymbolLimits

API_KEY = "bg_a1b2c3d4e5f60718293a4b5c6d7e8f9"
SYMBOLS = ("BTCUSDT", "ETHUSDT")
LIMITS = RiskLimits(
    symbols=(
        SymbolLimits("BTCUSDT", max_position=0.5, max_notional=40_000, max_order_size=0.05),
        SymbolLimits("ETHUSDT", max_position=8.0, max_notional=30_000, max_order_size=1.0),
    ),
    max_net_delta=50_000,
    daily_loss_soft=750,
    daily_loss_hard=1_500,
)


class Operator:
    """Answers the prompt with a scripted reply (or raises), recording what was shown."""

    def __init__(self, reply: str | BaseException) -> None:
        self.reply = reply
        self.prompts: list[str] = []
        self.lines: list[str] = []

    def read(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if isinstance(self.reply, BaseException):
            raise self.reply
        return self.reply

    def write(self, line: str) -> None:
        self.lines.append(line)

    @property
    def screen(self) -> str:
        return "\n".join([*self.lines, *self.prompts])


def ask(operator: Operator, **overrides: object) -> bool:
    arguments: dict[str, object] = {
        "account": "Bitget main account",
        "symbols": SYMBOLS,
        "hedge": "ETHUSDT",
        "read": operator.read,
        "write": operator.write,
        "api_key": API_KEY,
        "limits": LIMITS,
    }
    arguments.update(overrides)
    return confirm_live(**arguments)  # type: ignore[arg-type]


def test_the_exact_phrase_confirms() -> None:
    operator = Operator("LIVE BTCUSDT ETHUSDT")
    assert ask(operator) is True
    assert operator.prompts == ["Type LIVE BTCUSDT ETHUSDT to start live trading "
                                "(anything else cancels): "]  # fmt: skip
    assert operator.lines[-1] == "Confirmed: starting live trading."


def test_the_screen_says_live_real_money_the_masked_key_symbols_and_limits() -> None:
    operator = Operator("no")
    ask(operator)
    screen = operator.screen
    assert "LIVE TRADING" in screen and "real money" in screen
    assert "Bitget main account" in screen
    assert "bg_…8f9" not in screen and "bg_…e8f9" in screen
    assert API_KEY not in screen
    assert "BTCUSDT (quoted), ETHUSDT (hedge)" in screen
    assert "BTCUSDT: position <= 0.5, notional <= 40,000 USDT, order <= 0.05" in screen
    assert "ETHUSDT: position <= 8, notional <= 30,000 USDT, order <= 1" in screen
    assert "reduce-only at 750, halt at 1,500 USDT" in screen
    assert "Nothing has been sent yet" in screen


def test_the_screen_writes_a_large_lot_contracts_limits_in_full() -> None:
    """A coin counted in millions (`:g` wrote 2.5e+06, 1.23457e+06: digits lost)."""
    operator = Operator("no")
    pepe = SymbolLimits(
        "PEPEUSDT", max_position=2_500_000.0, max_notional=30, max_order_size=1_234_567.0
    )
    ask(operator, symbols=("PEPEUSDT",), limits=replace(LIMITS, symbols=(pepe,)))
    assert "PEPEUSDT: position <= 2500000, notional <= 30 USDT, order <= 1234567" in operator.screen


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "y",
        "yes",
        "LIVE",
        "LIVE BTCUSDT",
        "live btcusdt ethusdt",
        "LIVE ETHUSDT BTCUSDT",
        "LIVE BTCUSDT  ETHUSDT",
        "LIVE BTCUSDT ETHUSDT!",
    ],
)
def test_anything_but_the_phrase_declines(reply: str) -> None:
    operator = Operator(reply)
    assert ask(operator) is False
    assert "live trading not started, nothing sent" in operator.lines[-1]
    assert len(operator.prompts) == 1  # one attempt: no typing through repeated prompts


def test_surrounding_whitespace_is_forgiven() -> None:
    assert ask(Operator("  LIVE BTCUSDT ETHUSDT \t")) is True


@pytest.mark.parametrize("interrupt", [EOFError(), KeyboardInterrupt()])
def test_end_of_input_or_ctrl_c_declines(interrupt: BaseException) -> None:
    operator = Operator(interrupt)
    assert ask(operator) is False
    assert operator.lines[-1] == (
        "Not confirmed (input ended): live trading not started, nothing sent."
    )


def test_what_was_typed_is_never_echoed() -> None:
    pasted = "S3cretPastedByMistake0123456789"
    operator = Operator(pasted)
    assert ask(operator) is False
    assert pasted not in operator.screen


def test_one_symbol_asks_for_that_symbol_only() -> None:
    assert confirmation_phrase(["BTCUSDT"]) == "LIVE BTCUSDT"
    operator = Operator("LIVE BTCUSDT")
    assert ask(operator, symbols=["BTCUSDT"], limits=None, api_key=None) is True
    assert "API key" not in operator.screen and "limits" not in operator.screen


def test_control_sequences_in_the_account_label_are_neutralised() -> None:
    operator = Operator("no")
    ask(operator, account="main\x1b[2J\x1b[H")
    assert "\x1b" not in operator.screen and "main?[2J?[H" in operator.screen


def test_the_screen_names_each_symbol_of_a_book_quoted_or_the_hedge() -> None:
    operator = Operator("no")
    ask(operator, symbols=("SOLUSDT", "XRPUSDT", "ETHUSDT"), limits=None)
    assert "SOLUSDT (quoted), XRPUSDT (quoted), ETHUSDT (hedge)" in operator.screen
    operator = Operator("no")
    ask(operator, symbols=("SOLUSDT", "XRPUSDT"), hedge=None, limits=None)
    assert "SOLUSDT (quoted), XRPUSDT (quoted)" in operator.screen


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"account": "  "}, "account"),
        ({"symbols": ()}, "at least one symbol"),
        ({"symbols": ("btcusdt",)}, "a symbol like BTCUSDT"),
        ({"symbols": ("BTC USDT",)}, "a symbol like BTCUSDT"),
    ],
)
def test_bad_arguments_are_refused_before_anything_is_asked(
    overrides: dict[str, object], message: str
) -> None:
    operator = Operator("LIVE BTCUSDT")
    with pytest.raises(ValueError, match=message):
        ask(operator, **overrides)
    assert operator.prompts == [] and operator.lines == []


@pytest.mark.parametrize("stdin", ["LIVE BTCUSDT\n", ""])
def test_the_default_reader_refuses_input_that_is_not_a_terminal(
    monkeypatch: pytest.MonkeyPatch, stdin: str
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))  # piped: even the phrase declines
    shown: list[str] = []
    assert confirm_live(account="main", symbols=["BTCUSDT"], write=shown.append) is False
    assert "standard input is not a terminal" in shown[-1]
