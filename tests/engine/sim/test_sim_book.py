"""A book of symbols: quoted contracts following their hedge, the market's leader, through a
common factor; its statistics, determinism, independence of symbols and bad input."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
import pytest

from engine.market.book_symbols import MAX_QUOTED_SYMBOLS
from engine.sim.market import (
    InformedBurst,
    MarketGenerator,
    MarketGeneratorConfig,
    SimTrade,
    sim_book,
)

START_MS = 1_726_000_000_000
SAMPLE_MS = 100
HOUR_MS = 3_600_000


class HourOfBook(NamedTuple):
    config: MarketGeneratorConfig
    log_fair: dict[str, np.ndarray]
    """Every symbol's latent log fair price, every SAMPLE_MS."""


@pytest.fixture(scope="module")
def hour() -> HourOfBook:
    """A simulated hour of three quoted symbols of different betas and lags under BTCUSDT."""
    config = dataclasses.replace(
        sim_book(("ETHUSDT", "SOLUSDT", "TRXUSDT"), seed=2024), start_ms=START_MS
    )
    generator = MarketGenerator(config)
    rows = []
    for t in range(START_MS + SAMPLE_MS, START_MS + HOUR_MS + 1, SAMPLE_MS):
        generator.advance_to(t)
        rows.append([np.log(generator.fair_price(symbol)) for symbol in generator.symbols])
    columns = np.array(rows).T
    return HourOfBook(config, dict(zip(generator.symbols, columns, strict=True)))


def ols(response: np.ndarray, regressors: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares coefficients (with an intercept, left out of the answer) and their
    covariance, from the residuals."""
    design = np.column_stack([*regressors, np.ones(len(response))])
    coefficients, *_ = np.linalg.lstsq(design, response, rcond=None)
    residuals = response - design @ coefficients
    variance = residuals @ residuals / (len(response) - design.shape[1])
    covariance = variance * np.linalg.inv(design.T @ design)
    return coefficients[:-1], covariance[:-1, :-1]


def test_quoted_symbols_move_with_the_leader_at_their_betas(hour: HourOfBook) -> None:
    per_second = 1000 // SAMPLE_MS
    leader = np.diff(hour.log_fair["BTCUSDT"][::per_second])
    for quoted in hour.config.quoted:
        symbol = quoted.market.instrument.symbol
        own = np.diff(hour.log_fair[symbol][::per_second])
        # This second's and the last one's leader returns: a lag of a few hundred ms spills over.
        coefficients, covariance = ols(own[1:], [leader[1:], leader[:-1]])
        beta = coefficients.sum()
        standard_error = np.sqrt(covariance.sum())
        assert abs(beta - quoted.beta) < 4 * standard_error, (symbol, beta, standard_error)
        assert standard_error < 0.05 * quoted.beta, "an hour measures the beta"
        assert np.corrcoef(leader, own)[0, 1] > 0.3, symbol


def test_the_leader_leads(hour: HourOfBook) -> None:
    leader = np.diff(hour.log_fair["BTCUSDT"])
    lags = 6
    for quoted in hour.config.quoted:
        own = np.diff(hour.log_fair[quoted.market.instrument.symbol])
        n = len(own)
        # The quoted symbol's return on the leader's: now, its past (0.1 s to 0.6 s before) and
        # its next return. The past explains it; the leader's future does not.
        past = [leader[lags - lag : n - 1 - lag] for lag in range(lags + 1)]
        future = leader[lags + 1 :]
        coefficients, covariance = ols(own[lags : n - 1], [*past, future])
        errors = np.sqrt(np.diag(covariance))
        assert coefficients[1] > 10 * errors[1], "the last 0.1 s of the leader moves it"
        assert abs(coefficients[-1]) < 4 * errors[-1], "the leader's next move does not"


class BookSeen(NamedTuple):
    symbol: str
    bid_prices: list[float]
    ask_sizes: list[float]


Seen = SimTrade | BookSeen | InformedBurst


def frames(config: MarketGeneratorConfig, step_pattern: list[int]) -> list[Seen]:
    """Every symbol's book and trades after each advance, and the bursts at the end."""
    generator = MarketGenerator(config)
    seen: list[Seen] = []
    t = config.start_ms
    for step in step_pattern:
        t += step
        seen.extend(generator.advance_to(t))
        for symbol in generator.symbols:
            book = generator.book(symbol, 15)
            seen.append(BookSeen(symbol, book.bid_prices.tolist(), book.ask_sizes.tolist()))
    seen.extend(generator.bursts)
    return seen


BOOK = ("ETHUSDT", "XRPUSDT", "DOGEUSDT")


def test_a_book_is_the_same_from_the_same_seed_however_the_clock_is_advanced() -> None:
    config = dataclasses.replace(sim_book(BOOK, seed=5), start_ms=START_MS, burst_rate_per_min=6)
    evenly = frames(config, [150] * 200)
    unevenly = frames(config, [7, 143, 37, 113] * 100)
    for kind in (SimTrade, InformedBurst):
        assert [item for item in evenly if isinstance(item, kind)] == [
            item for item in unevenly if isinstance(item, kind)
        ]
    last_books = len(BOOK) + 1
    assert [item for item in evenly if isinstance(item, BookSeen)][-last_books:] == [
        item for item in unevenly if isinstance(item, BookSeen)
    ][-last_books:]
    assert any(isinstance(item, InformedBurst) for item in evenly)
    assert evenly == frames(config, [150] * 200)
    assert evenly != frames(dataclasses.replace(config, seed=6), [150] * 200)


def own_part(seen: list[Seen], symbols: set[str]) -> list[Seen]:
    """What `frames` saw of `symbols`: their trades, books and bursts."""
    return [item for item in seen if item.symbol in symbols]


def test_adding_a_symbol_to_a_book_leaves_the_others_paths_as_they_were() -> None:
    small = dataclasses.replace(
        sim_book(("ETHUSDT", "SOLUSDT"), seed=9), start_ms=START_MS, burst_rate_per_min=6
    )
    large = dataclasses.replace(
        sim_book(("XRPUSDT", "ETHUSDT", "AVAXUSDT", "SOLUSDT"), seed=9),
        start_ms=START_MS,
        burst_rate_per_min=6,
    )
    kept = {"ETHUSDT", "SOLUSDT", "BTCUSDT"}
    pattern = [100] * 600
    before, after = frames(small, pattern), frames(large, pattern)
    assert own_part(before, kept) == own_part(after, kept)
    assert any(isinstance(item, SimTrade) for item in own_part(before, kept))
    bursts = [item for item in own_part(after, kept) if isinstance(item, InformedBurst)]
    assert {burst.symbol for burst in bursts} >= {"ETHUSDT", "SOLUSDT"}, "each its own bursts"


def test_every_symbol_of_a_book_of_eight_trades_on_its_grid_around_its_price() -> None:
    quoted = ("ETHUSDT", "SOLUSDT", "XRPUSDT", "DOGEUSDT", "ADAUSDT", "TRXUSDT", "LINKUSDT")
    config = dataclasses.replace(sim_book((*quoted, "AVAXUSDT"), seed=3), start_ms=START_MS)
    generator = MarketGenerator(config)
    assert generator.symbols == (*quoted, "AVAXUSDT", "BTCUSDT")
    traded: set[str] = set()
    for t in range(START_MS + 500, START_MS + 60_000, 500):
        for trade in generator.advance_to(t):
            instrument = generator.instrument(trade.symbol)
            assert instrument.is_on_tick(trade.price) and instrument.is_on_step(trade.size)
            traded.add(trade.symbol)
    assert traded == set(generator.symbols)
    for leg in (*config.quoted, None):
        market = config.hedge if leg is None else leg.market
        book = generator.book(market.instrument.symbol)
        assert book.best_bid < book.best_ask
        assert abs(book.mid / market.start_price - 1) < 0.05


@pytest.mark.parametrize(
    ("quoted", "hedge", "message"),
    [
        (("ETHUSDT", "NEXOUSDT"), "BTCUSDT", "the simulator has no NEXOUSDT: it runs BTCUSDT, "),
        (("ETHUSDT",), "NEXOUSDT", "the simulator has no NEXOUSDT: it runs BTCUSDT, "),
        (("ETHUSDT", "BTCUSDT"), "BTCUSDT", "BTCUSDT is the hedge and cannot also be quoted"),
        (("ETHUSDT", "SOLUSDT", "ETHUSDT"), "BTCUSDT", "ETHUSDT is quoted twice"),
        (
            tuple(f"COIN{n}USDT" for n in range(MAX_QUOTED_SYMBOLS + 1)),
            "BTCUSDT",
            "a book quotes 1 to 16 symbols besides its hedge, got 17: COIN0USDT, COIN1USDT, ",
        ),
        ((), "BTCUSDT", "a book quotes 1 to 16 symbols besides its hedge, got 0: none"),
    ],
)
def test_a_bad_book_is_one_line_naming_it(
    quoted: tuple[str, ...], hedge: str, message: str
) -> None:
    with pytest.raises(ValueError) as refused:
        sim_book(quoted, seed=1, hedge=hedge)
    assert str(refused.value).startswith(message)
    assert "\n" not in str(refused.value)


def test_a_book_config_refuses_the_hedge_quoted_however_it_is_built() -> None:
    config = sim_book(("ETHUSDT", "SOLUSDT"), seed=1)
    with pytest.raises(ValueError, match=r"^SOLUSDT is the hedge and cannot also be quoted$"):
        dataclasses.replace(config, hedge=config.quoted[1].market)
    with pytest.raises(ValueError, match="first quoted"):
        dataclasses.replace(config, traded=config.quoted[1].market)
