"""Which contract a run's symbols trade on, where it came from, and the fees that apply."""

from __future__ import annotations

import pytest

from engine.market.contracts import (
    ContractMissing,
    ContractOrigin,
    FeeOrigin,
    FeeRates,
    MarketContract,
    resolve_contracts,
)
from engine.market.instruments import Instrument

NEXO = Instrument("NEXOUSDT", 0.001, 0.1, 5.0)
NEXO_LISTED = Instrument("NEXOUSDT", 0.0001, 1.0, 5.0, maker_fee_rate=0.0002, taker_fee_rate=0.0006)
PAPER = FeeRates(0.0002, 0.0006)


def test_the_first_source_that_has_a_symbol_gives_its_contract() -> None:
    configured = Instrument("NEXOUSDT", 0.01, 1.0, 5.0)
    cases = [
        ({"configured": {"NEXOUSDT": configured}, "recorded": {"NEXOUSDT": NEXO}}, configured),
        ({"recorded": {"NEXOUSDT": NEXO}, "listed": {"NEXOUSDT": NEXO_LISTED}}, NEXO),
        ({"listed": {"NEXOUSDT": NEXO_LISTED}}, NEXO_LISTED),
    ]
    origins = [ContractOrigin.CONFIG, ContractOrigin.RECORDING, ContractOrigin.VENUE]
    for (sources, expected), origin in zip(cases, origins, strict=True):
        contract = resolve_contracts(["NEXOUSDT"], default_fees=PAPER, **sources).by_symbol[
            "NEXOUSDT"
        ]
        assert (contract.instrument.tick_size, contract.instrument.size_step) == (
            expected.tick_size,
            expected.size_step,
        )
        assert contract.origin is origin


def test_a_built_in_symbol_needs_no_source_and_an_unknown_one_names_how_to_give_it() -> None:
    contracts = resolve_contracts(["BTCUSDT", "ETHUSD"], default_fees=PAPER)
    assert [c.origin for c in contracts.by_symbol.values()] == [ContractOrigin.BUILT_IN] * 2
    assert contracts.by_symbol["ETHUSD"].instrument.tick_size == 0.01
    with pytest.raises(ContractMissing, match=r"NEXOUSDT, DOGEUSDT: give it with --instrument"):
        resolve_contracts(
            ["NEXOUSDT", "BTCUSDT", "DOGEUSDT"], missing_hint="--instrument SYMBOL:tick=.."
        )


@pytest.mark.parametrize(
    ("listed", "fees", "expected", "origin"),
    [
        (NEXO_LISTED, FeeRates(), (0.0002, 0.0006), FeeOrigin.CONTRACT),
        (NEXO_LISTED, FeeRates(maker=-0.0001), (-0.0001, 0.0006), FeeOrigin.CONFIG),
        (NEXO, FeeRates(), (0.0002, 0.0006), FeeOrigin.PAPER_DEFAULT),
        (NEXO, FeeRates(0.0, 0.0004), (0.0, 0.0004), FeeOrigin.CONFIG),
    ],
)
def test_the_fee_rates_that_apply_and_where_they_came_from(listed, fees, expected, origin) -> None:
    contract = resolve_contracts(
        ["NEXOUSDT"], listed={"NEXOUSDT": listed}, fees=fees, default_fees=PAPER
    ).by_symbol["NEXOUSDT"]
    instrument = contract.instrument
    assert (instrument.maker_fee_rate, instrument.taker_fee_rate) == expected
    assert contract.fee_origin is origin
    assert (instrument.tick_size, instrument.size_step) == (listed.tick_size, listed.size_step)


def test_usdt_become_the_nearest_whole_lots_at_the_reference_price() -> None:
    contract = MarketContract(NEXO, ContractOrigin.RECORDING, FeeOrigin.CONTRACT, 1.21)
    assert contract.lots_of(120.0) == 992  # 99.17 NEXO in lots of 0.1
    priced_nowhere = MarketContract(NEXO, ContractOrigin.RECORDING, FeeOrigin.CONTRACT)
    assert priced_nowhere.lots_of(120.0) is None


def test_a_price_that_is_no_price_is_not_kept() -> None:
    for price in (0.0, -1.0, float("nan"), float("inf")):
        contracts = resolve_contracts(
            ["NEXOUSDT"], recorded={"NEXOUSDT": NEXO}, prices={"NEXOUSDT": price}
        )
        assert contracts.by_symbol["NEXOUSDT"].reference_price is None
