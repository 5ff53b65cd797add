"""[engine] symbols, hedge and leader: a book of quoted symbols, the one that hedges them (or a
leader only watched), per-symbol strategy tables, and the old "traded, then hedge" form
refused with what it means now."""

from __future__ import annotations

import tomllib

import pytest
from settings_files import write

from engine.bitget.connections import MAX_CONNECTIONS_PER_IP, check_connections
from engine.market.contracts import ContractOrigin
from engine.market.instruments import Instrument
from engine.settings.reader import load_settings
from engine.settings.schema import (
    Settings,
    StrategySettings,
    SymbolStrategySettings,
    recorded_book,
)
from engine.settings.sources import SettingsError
from engine.settings.writer import dump_settings

NO_ENV: dict[str, str] = {}
SOL = Instrument("SOLUSDT", 0.001, 0.1, 5.0)
XRP = Instrument("XRPUSDT", 0.0001, 1.0, 5.0)


def priced(settings: Settings):
    """The book's contracts as a venue lists them, at prices that size its USDT caps."""
    return settings.contracts(
        listed={"SOLUSDT": SOL, "XRPUSDT": XRP},
        listed_origin=ContractOrigin.VENUE,
        prices={"SOLUSDT": 150.0, "XRPUSDT": 0.5, "ETHUSDT": 3_000.0, "BTCUSDT": 60_000.0},
    )


def test_the_default_book_quotes_btcusdt_hedged_with_ethusdt():
    engine = Settings().engine
    assert (engine.symbols, engine.hedge, engine.leader) == (("BTCUSDT",), "ETHUSDT", "BTCUSDT")
    assert Settings().engine_config().symbols == ("BTCUSDT", "ETHUSDT")
    trading = Settings().trading_config()
    assert (trading.quoted, trading.hedge_symbol) == (("BTCUSDT",), "ETHUSDT")


def test_a_book_of_quoted_symbols_and_its_hedge_trades_them_all():
    settings = Settings().with_overrides(
        {"engine.symbols": ["ETHUSDT", "SOLUSDT", "XRPUSDT"], "engine.hedge": "BTCUSDT"}
    )
    trading = settings.trading_config(contracts=priced(settings))
    assert (trading.quoted, trading.hedge_symbol) == (("ETHUSDT", "SOLUSDT", "XRPUSDT"), "BTCUSDT")
    assert {limits.symbol for limits in trading.risk.limits.symbols} >= set(trading.symbols)
    engine = settings.engine_config(trading=trading)
    assert engine.symbols == ("ETHUSDT", "SOLUSDT", "XRPUSDT", "BTCUSDT")


@pytest.mark.parametrize(
    ("leader", "market"),
    [
        ("XRPUSDT", ("ETHUSDT", "SOLUSDT", "XRPUSDT")),  # watched after the quoted ones
        ("SOLUSDT", ("ETHUSDT", "SOLUSDT")),  # quoted itself: not twice
        ("none", ("ETHUSDT", "SOLUSDT")),  # none: the last quoted symbol leads
    ],
)
def test_without_a_hedge_the_leader_is_watched_not_traded(leader, market):
    settings = Settings().with_overrides(
        {"engine.symbols": ["ETHUSDT", "SOLUSDT"], "engine.hedge": "none", "engine.leader": leader}
    )
    contracts = priced(settings)
    assert tuple(contracts.by_symbol) == market  # a contract for the leader too
    trading = settings.trading_config(contracts=contracts)
    assert (trading.symbols, trading.hedge_symbol) == (("ETHUSDT", "SOLUSDT"), None)
    assert "XRPUSDT" not in {limits.symbol for limits in trading.risk.limits.symbols}
    assert settings.engine_config(trading=trading).symbols == market


def test_per_symbol_tables_override_the_strategy_and_weigh_the_net_delta(tmp_path):
    path = write(
        tmp_path,
        '[engine]\nsymbols = ["ETHUSDT", "SOLUSDT"]\nhedge = "BTCUSDT"\n\n'
        "[trading.strategy]\nquote_size = 0.05\nhalf_spread_bps = 1.0\n\n"
        "[trading.symbols.SOLUSDT]\nhalf_spread_bps = 3\nquote_size_usdt = 300\nbeta = 1.4\n",
    )
    settings = load_settings(path=path, environ=NO_ENV)
    trading = settings.trading_config(contracts=priced(settings))
    eth, sol = trading.strategy("ETHUSDT"), trading.strategy("SOLUSDT")
    assert (eth.half_spread_bps, eth.quote_size) == (1.0, 0.05)  # [trading.strategy]'s
    # Its own USDT size wins over [trading.strategy]'s size in coin: 300 USDT at 150.
    assert (sol.half_spread_bps, sol.quote_size) == (3.0, 2.0)
    assert dict(trading.risk.betas) == {"SOLUSDT": 1.4}


def test_the_beta_band_sets_each_quoted_symbols_range_around_its_own_beta(tmp_path):
    path = write(
        tmp_path,
        '[engine]\nsymbols = ["ETHUSDT", "SOLUSDT"]\nhedge = "BTCUSDT"\n\n'
        "[risk]\nbeta_band = [0.8, 1.25]\n\n[trading.symbols.SOLUSDT]\nbeta = 1.4\n",
    )
    settings = load_settings(path=path, environ=NO_ENV)
    risk = settings.risk_config(priced(settings))
    assert risk.beta_band == (0.8, 1.25)
    assert risk.beta_range("ETHUSDT") == (0.8, 1.25)
    assert risk.beta_range("SOLUSDT") == pytest.approx((1.12, 1.75))
    assert Settings().risk_config().beta_band == (1.0, 1.0)  # by default Kev moves no beta


def test_a_beta_band_that_leaves_a_beta_outside_it_is_one_line_naming_it(tmp_path):
    path = write(tmp_path, "[risk]\nbeta_band = [1.1, 1.5]\n")
    with pytest.raises(SettingsError) as refused:
        load_settings(path=path, environ=NO_ENV)
    assert str(refused.value) == (
        f"[risk] beta_band = [1.1, 1.5] ({path} line 2): beta_band must be finite with "
        "0 < low <= 1 <= high, got (1.1, 1.5)"
    )


def test_a_per_symbol_table_has_every_quoting_key_of_the_strategy():
    quoting = {name for name in StrategySettings.__dataclass_fields__ if "hedge" not in name}
    assert set(SymbolStrategySettings.__dataclass_fields__) == {*quoting, "beta"}


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            "[trading.symbols.XRPUSDT]\nbeta = 1.2\n",
            "[trading.symbols.XRPUSDT] ({path} line 6): XRPUSDT is not quoted (the book quotes "
            "BTCUSDT, SOLUSDT): quote it ([engine] symbols, --symbols) or drop the table",
        ),
        (
            "[trading.symbols.ETHUSDT]\nbeta = 0.8\n",
            "[trading.symbols.ETHUSDT] ({path} line 6): ETHUSDT is the hedge, not quoted: it has "
            "no quoting keys or beta of its own (its weight in the net delta is [risk] "
            "hedge_ratio)",
        ),
        (
            "[trading.symbols.SOLUSDT]\nbeta = 11\n",
            '[engine] symbols = ["BTCUSDT", "SOLUSDT"] ({path} line 2); [trading.symbols.SOLUSDT] '
            "beta = 11.0 ({path} line 6): SOLUSDT beta must be within (0, 10], got 11.0",
        ),
    ],
    ids=["not in the book", "the hedge", "beta out of range"],
)
def test_a_per_symbol_table_the_book_cannot_use_is_one_line_naming_it(tmp_path, table, message):
    path = write(
        tmp_path, f'[engine]\nsymbols = ["BTCUSDT", "SOLUSDT"]\nhedge = "ETHUSDT"\n\n{table}'
    )
    with pytest.raises(SettingsError) as refused:
        settings = load_settings(path=path, environ=NO_ENV)
        settings.risk_config(priced(settings))  # a beta: checked by the gateway's own rule
    assert str(refused.value) == message.format(path=path)


def test_config_init_shows_a_per_symbol_table_commented_out(tmp_path):
    text = dump_settings(Settings())
    example = text[text.index("# [trading.symbols.SOLUSDT]") :].split("\n\n")[0]
    uncommented = "\n".join(line.removeprefix("# ") for line in example.splitlines())
    assert tomllib.loads(uncommented)["trading"]["symbols"]["SOLUSDT"]["beta"] == 1.3
    book = '[engine]\nsymbols = ["BTCUSDT", "SOLUSDT"]\nhedge = "ETHUSDT"\n\n'
    settings = load_settings(path=write(tmp_path, book + uncommented), environ=NO_ENV)
    assert settings.trading.symbols["SOLUSDT"].half_spread_bps == 2.0


@pytest.mark.parametrize(
    ("values", "sources", "message"),
    [
        (
            {"engine.symbols": ["BTCUSDT", "ETHUSDT"]},
            {"engine.symbols": "--symbols"},
            "--symbols BTCUSDT,ETHUSDT: --symbols now lists the quoted symbols and --hedge their "
            "hedge: ETHUSDT is the hedge (default) and cannot also be quoted; for the old meaning "
            "(BTCUSDT traded, ETHUSDT its hedge) say --symbols BTCUSDT --hedge ETHUSDT; to quote "
            "both, say another --hedge SYMBOL or --hedge none",
        ),
        (
            {"engine.symbols": ["BTCUSDT", "SOLUSDT"]},
            {"engine.symbols": "--symbols"},
            "--symbols BTCUSDT,SOLUSDT: --symbols now lists the quoted symbols and --hedge their "
            "hedge (default ETHUSDT, given nowhere); for the old meaning (BTCUSDT traded, SOLUSDT "
            "its hedge) say --symbols BTCUSDT --hedge SOLUSDT; to quote both hedged by ETHUSDT, "
            "say --hedge ETHUSDT",
        ),
        (
            {"engine.symbols": ["SOLUSDT"]},
            {"engine.symbols": "--symbols"},
            "--symbols SOLUSDT: --symbols now lists the quoted symbols and --hedge their hedge "
            "(default ETHUSDT, given nowhere); for the old meaning (SOLUSDT traded alone) say "
            "--symbols SOLUSDT --hedge none; to quote it hedged by ETHUSDT, say --hedge ETHUSDT",
        ),
    ],
    ids=["hedge quoted", "another second", "one alone"],
)
def test_the_old_symbols_form_on_the_command_line_says_what_it_means_now(values, sources, message):
    with pytest.raises(SettingsError) as refused:
        Settings().with_overrides(values, sources)
    assert str(refused.value) == message


def test_a_files_hedge_does_not_say_what_two_symbols_on_the_command_line_mean(tmp_path):
    """`config init` writes hedge = "ETHUSDT": --symbols BTCUSDT,SOLUSDT typed as before is
    still refused, until --hedge says which meaning."""
    path = write(tmp_path, '[engine]\nhedge = "ETHUSDT"\n')
    settings = load_settings(path=path, environ=NO_ENV)
    with pytest.raises(SettingsError) as refused:
        settings.with_overrides(
            {"engine.symbols": ["BTCUSDT", "SOLUSDT"]}, {"engine.symbols": "--symbols"}
        )
    assert str(refused.value).startswith(
        "--symbols BTCUSDT,SOLUSDT: --symbols now lists the quoted symbols and --hedge their "
        f"hedge (ETHUSDT from {path} line 2, not on the command line); for the old meaning "
        "(BTCUSDT traded, SOLUSDT its hedge) say --symbols BTCUSDT --hedge SOLUSDT"
    )
    book = settings.with_overrides(
        {"engine.symbols": ["BTCUSDT", "SOLUSDT"], "engine.hedge": "ETHUSDT"},
        {"engine.symbols": "--symbols", "engine.hedge": "--hedge"},
    )
    assert book.engine.market_symbols == ("BTCUSDT", "SOLUSDT", "ETHUSDT")


def test_the_old_symbols_form_in_a_file_says_what_it_means_now(tmp_path):
    """An old `config init` file: [engine] symbols the traded one, then its hedge, no hedge
    key."""
    path = write(tmp_path, '[engine]\nsymbols = ["BTCUSDT", "ETHUSDT"]\n')
    with pytest.raises(SettingsError) as refused:
        load_settings(path=path, environ=NO_ENV)
    assert str(refused.value) == (
        f'[engine] symbols = ["BTCUSDT", "ETHUSDT"] ({path} line 2): [engine] symbols now lists '
        "the quoted symbols and [engine] hedge their hedge: ETHUSDT is the hedge (default) and "
        "cannot also be quoted; for the old meaning (BTCUSDT traded, ETHUSDT its hedge) write "
        'symbols = ["BTCUSDT"] and hedge = "ETHUSDT"; to quote both, write another hedge = '
        '"SYMBOL" or hedge = "none"'
    )


@pytest.mark.parametrize(
    ("hedge_given", "quoted"),
    [
        ({"HFT_CONSOLE_ENGINE__HEDGE": "ETHUSDT"}, ("BTCUSDT", "SOLUSDT")),  # the default, given
        ({"HFT_CONSOLE_ENGINE__HEDGE": "none"}, ("BTCUSDT", "SOLUSDT")),
    ],
)
def test_a_hedge_given_anywhere_takes_two_symbols_at_their_new_meaning(
    tmp_path, hedge_given, quoted
):
    path = write(tmp_path, '[engine]\nsymbols = ["BTCUSDT", "SOLUSDT"]\n')
    settings = load_settings(path=path, environ=hedge_given)
    assert settings.engine.quoted == quoted


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"engine.symbols": ["ETHUSDT", "SOLUSDT", "ETHUSDT"]},
            '[engine] symbols = ["ETHUSDT", "SOLUSDT", "ETHUSDT"] (command line): ETHUSDT is '
            "quoted twice",
        ),
        (
            {"engine.symbols": ["ETHUSDT", "SOLUSDT", "XRPUSDT"], "engine.hedge": "SOLUSDT"},
            "SOLUSDT is the hedge and cannot also be quoted",
        ),
        (
            {"engine.symbols": [f"A{n}USDT" for n in range(17)]},
            "a book quotes 1 to 16 symbols besides its hedge, got 17",
        ),
        ({"engine.hedge": "eth"}, "engine.hedge must be a symbol like BTCUSDT, got 'eth'"),
    ],
    ids=["twice", "hedge quoted", "too many", "not a symbol"],
)
def test_a_book_that_is_not_one_is_refused_naming_it(values, message):
    with pytest.raises(SettingsError, match=None) as refused:
        Settings().with_overrides(values)
    assert message in str(refused.value)


def test_the_feed_connections_a_book_needs_are_checked_by_the_feeds_rule():
    """The public feed's own rule (engine/bitget/connections.py), which the settings run on
    the book's market symbols: a book within MAX_QUOTED_SYMBOLS needs one connection."""
    symbols = [f"S{n}USDT" for n in range(MAX_CONNECTIONS_PER_IP * 24 + 1)]
    with pytest.raises(ValueError, match=r"need 101 connections .* over Bitget's 100 per IP"):
        check_connections(symbols, ("books15", "trade"))
    Settings().with_overrides(
        {"engine.symbols": [f"A{n}USDT" for n in range(16)], "engine.hedge": "BTCUSDT"}
    )


def test_a_recordings_own_symbols_are_its_busiest_quoted_and_the_next_its_hedge():
    book = Settings().with_overrides(recorded_book(("ETHUSDT", "BTCUSDT")))
    assert book.engine.market_symbols == ("ETHUSDT", "BTCUSDT")
    assert book.engine.hedge_symbol == "BTCUSDT"
    alone = Settings().with_overrides(recorded_book(("NEXOUSDT",)))
    assert (alone.engine.market_symbols, alone.engine.hedge_symbol) == (("NEXOUSDT",), None)
