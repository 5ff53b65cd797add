"""QuotingStrategy and BookHedger: quotes and hedge orders checked against hand-computed
values."""

from __future__ import annotations

import dataclasses
import math
import random

import pytest

from engine.bitget.orders import OrderSide, OrderType, TimeInForce
from engine.laya.decide import QuoteIntent
from engine.market.instruments import BTCUSDT, ETHUSDT, Instrument
from engine.risk.events import TradingState
from engine.risk.gateway import RiskGateway
from engine.risk.intents import DenialReason, OrderIntent, Source
from engine.risk.limits import SymbolLimits
from engine.trading.config import HedgeConfig, QuotingStrategyConfig, default_risk_config
from engine.trading.strategy import BookHedger, Grid, Quote, QuotePlan, QuotingStrategy

ACTIVE = TradingState.ACTIVE
KEEP = QuoteIntent.KEEP_QUOTING
NOW = 1_000_000_000_000
BTC_LIMITS = default_risk_config().limits.for_symbol("BTCUSDT")
"""0.01 BTC an order (and a cap of 0.02 BTC: 2,000 USDT is 1,280 at 64,000)."""


def strategy(limits=BTC_LIMITS, **overrides) -> QuotingStrategy:
    settings = {
        "quote_size": 0.002,
        "half_spread_bps": 0.5,
        "inventory_skew_bps": 1.0,
        "emergency_cooldown_ms": 1_000,
        "denial_backoff_ms": 250,
    }
    settings.update(overrides)
    return QuotingStrategy(QuotingStrategyConfig(**settings), BTCUSDT, limits)


def quote(
    subject: QuotingStrategy,
    *,
    book=(64_000.0, 1.0, 64_000.2, 1.0),
    position=0.0,
    position_cap=0.02,
    scale=1.0,
    state=ACTIVE,
    intent=KEEP,
    now=NOW,
) -> QuotePlan:
    return subject.quotes(*book, position, position_cap, scale, state, intent, now)


def test_flat_quotes_sit_half_a_spread_around_the_microprice():
    # microprice 64000.1; 0.5 bps of it is 3.200005: bid 63996.899995 -> 63996.8 (floor),
    # ask 64003.300005 -> 64003.4 (ceil).
    plan = quote(strategy())
    assert plan == QuotePlan(Quote(63_996.8, 0.002), Quote(64_003.4, 0.002))


def test_microprice_leans_towards_the_thin_side():
    # bid size 3, ask size 1: microprice (64000*1 + 64000.2*3) / 4 = 64000.15;
    # bid 64000.15 * (1 - 5e-5) = 63996.949992 -> 63996.9; ask 64003.350008 -> 64003.4.
    plan = quote(strategy(), book=(64_000.0, 3.0, 64_000.2, 1.0))
    assert plan.bid == Quote(63_996.9, 0.002)
    assert plan.ask == Quote(64_003.4, 0.002)


def test_a_long_position_skews_both_quotes_down():
    # q/Q = 0.5, skew 1 bps: centre 64000.1 * (1 - 0.5e-4) = 63996.899995;
    # bid 63996.899995 * (1 - 5e-5) = 63993.700150 -> 63993.7;
    # ask 63996.899995 * (1 + 5e-5) = 64000.099840 -> 64000.1.
    plan = quote(strategy(), position=0.01)
    assert plan == QuotePlan(Quote(63_993.7, 0.002), Quote(64_000.1, 0.002))


def test_skew_is_capped_at_the_position_cap():
    at_max = quote(strategy(), position=0.02)
    beyond = quote(strategy(), position=0.05, position_cap=0.02)
    assert at_max.ask == beyond.ask
    assert at_max.bid is None and beyond.bid is None  # no room left to buy


def test_post_only_quotes_never_cross_the_touch():
    # No spread: the bid may not reach the ask and the ask not the bid.
    plan = quote(strategy(half_spread_bps=0.0), book=(64_000.0, 1.0, 64_000.1, 3.0))
    assert plan.bid == Quote(64_000.0, 0.002)
    assert plan.ask == Quote(64_000.1, 0.002)


def test_sizes_follow_the_risk_scale_in_whole_lots():
    assert quote(strategy(), scale=0.5).bid == Quote(63_996.8, 0.001)
    assert quote(strategy(), scale=0.4) == QuotePlan(None, None)  # 0.0008 is below one lot


def test_room_to_the_position_cap_caps_each_side():
    plan = quote(strategy(), position=0.019)
    assert plan.bid is not None and plan.bid.size == 0.001
    assert plan.ask is not None and plan.ask.size == 0.002
    short = quote(strategy(), position=-0.0195)
    assert short.ask is None  # 0.0005 of room is below one lot
    assert short.bid is not None and short.bid.size == 0.002


def test_quotes_ask_for_no_more_than_the_max_order_size():
    capped = strategy(
        quote_size=0.005, limits=dataclasses.replace(BTC_LIMITS, max_order_size=0.003)
    )
    plan = quote(capped)
    assert (plan.bid.size, plan.ask.size) == (0.003, 0.003)


def test_quotes_sized_to_the_gateways_position_cap_pass_its_gate():
    # 1,000 USDT at the gateway's mark 64000.1 is 0.015625 BTC, tighter than 0.02. Long 0.014:
    # the bid has 0.0016 of room (one lot), the ask 0.0296 (a whole quote).
    limits = dataclasses.replace(BTC_LIMITS, max_notional=1_000)
    gateway = RiskGateway(
        dataclasses.replace(
            default_risk_config(),
            limits=dataclasses.replace(
                default_risk_config().limits,
                symbols=(limits, *default_risk_config().limits.symbols[1:]),
            ),
        )
    )
    gateway.on_mark("BTCUSDT", 64_000.1, 64_000.1, 64_000.0, 64_000.2, NOW)
    gateway.on_position_sync("BTCUSDT", 0.014, 64_000.0, NOW)
    plan = quote(strategy(), position=0.014, position_cap=gateway.position_cap("BTCUSDT"))
    assert (plan.bid.size, plan.ask.size) == (0.001, 0.002)

    def bid(size: float, client_oid: str) -> OrderIntent:
        price = plan.bid.price
        force = TimeInForce.POST_ONLY
        args = (OrderType.LIMIT, client_oid, Source.STRATEGY, force)
        return OrderIntent("BTCUSDT", OrderSide.BUY, size, price, *args)

    assert gateway.check(bid(plan.bid.size, "q1"), NOW).approved
    # A whole quote, as the max position alone would allow, is denied.
    assert gateway.check(bid(0.002, "q2"), NOW).reason is DenialReason.NOTIONAL_LIMIT


def test_minimum_notional_is_respected():
    tiny = Instrument("BTCUSDT", tick_size=0.1, size_step=0.001, min_notional=200.0)
    subject = QuotingStrategy(QuotingStrategyConfig(), tiny, BTC_LIMITS)
    assert quote(subject) == QuotePlan(None, None)  # 0.002 * 64000 = 128 < 200


def test_laya_intents_pull_one_side_or_everything():
    subject = strategy()
    assert quote(subject, intent=QuoteIntent.PULL_ASKS).ask is None
    assert quote(subject, intent=QuoteIntent.PULL_ASKS).bid is not None
    assert quote(subject, intent=QuoteIntent.PULL_BIDS).bid is None
    assert quote(subject, intent=QuoteIntent.PULL_BIDS).ask is not None
    assert quote(subject, intent=QuoteIntent.CANCEL_ALL) == QuotePlan(None, None)
    # Laya warming up: nothing quoted, and no cooldown after it.
    assert quote(subject, intent=QuoteIntent.STAND_ASIDE) == QuotePlan(None, None)
    assert not subject.in_cooldown(NOW) and quote(subject).bid is not None


def test_emergency_cooldown_blocks_quotes_until_it_has_passed():
    subject = strategy()
    subject.on_emergency(NOW)
    assert subject.in_cooldown(NOW + 999_000_000)
    assert quote(subject, now=NOW + 999_000_000) == QuotePlan(None, None)
    assert quote(subject, now=NOW + 1_000_000_000).bid is not None


def test_a_denied_side_backs_off_alone():
    subject = strategy()
    subject.on_denied(OrderSide.BUY, NOW)
    plan = quote(subject, now=NOW + 100_000_000)
    assert plan.bid is None and plan.ask is not None
    assert quote(subject, now=NOW + 250_000_000).bid is not None


def test_the_last_plan_is_given_again_only_while_its_inputs_hold():
    subject = strategy()
    first = quote(subject)
    assert quote(subject, now=NOW + 1) is first  # the same inputs a moment later
    # A denial on an unmoved book still backs that side off, and its end brings it back.
    subject.on_denied(OrderSide.BUY, NOW + 2)
    backed_off = quote(subject, now=NOW + 3)
    assert backed_off.bid is None and backed_off.ask == first.ask
    later = NOW + 2 + 250_000_000
    assert quote(subject, now=later) == first
    # Each input moves the plan: the touch, the position, the cap, the scale, the state.
    moved = quote(subject, book=(64_010.0, 1.0, 64_010.2, 1.0), now=later)
    assert moved.bid == Quote(64_006.8, 0.002)
    assert quote(subject, position=0.02, now=later).bid is None
    assert quote(subject, position_cap=0.001, now=later).bid == Quote(63_996.8, 0.001)
    assert quote(subject, scale=0.5, now=later).bid == Quote(63_996.8, 0.001)
    assert quote(subject, position=0.005, state=TradingState.REDUCING, now=later).bid is None
    assert quote(subject, now=later) == first


def test_reducing_quotes_only_the_side_that_shrinks_the_position():
    long_plan = quote(strategy(), position=0.005, state=TradingState.REDUCING)
    assert long_plan.bid is None
    assert long_plan.ask is not None
    assert long_plan.ask.reduce_only and long_plan.ask.size == 0.002
    small = quote(strategy(), position=0.0015, state=TradingState.REDUCING)
    assert small.ask is not None and small.ask.size == 0.001
    assert quote(strategy(), state=TradingState.REDUCING) == QuotePlan(None, None)


@pytest.mark.parametrize("state", [TradingState.PAUSED, TradingState.HALTED])
def test_paused_and_halted_quote_nothing(state):
    assert quote(strategy(), position=0.01, state=state) == QuotePlan(None, None)


def test_unusable_books_quote_nothing():
    assert quote(strategy(), book=(64_000.2, 1.0, 64_000.0, 1.0)) == QuotePlan(None, None)
    assert quote(strategy(), book=(64_000.0, 0.0, 64_000.2, 1.0)) == QuotePlan(None, None)


def test_requote_only_when_price_or_size_drift_enough():
    subject = strategy(requote_threshold_bps=0.3, requote_size_fraction=0.25)
    # 0.3 bps of 64000 is 1.92.
    assert not subject.wants_requote(64_000.0, 0.002, Quote(64_001.9, 0.002))
    assert subject.wants_requote(64_000.0, 0.002, Quote(64_002.0, 0.002))
    assert not subject.wants_requote(64_000.0, 0.004, Quote(64_000.0, 0.005))
    assert subject.wants_requote(64_000.0, 0.001, Quote(64_000.0, 0.002))


ETH_LIMITS = SymbolLimits("ETHUSDT", max_position=1.5, max_notional=10_000, max_order_size=0.5)


def hedger(limits=ETH_LIMITS, **overrides) -> BookHedger:
    return BookHedger(HedgeConfig(**overrides), ETHUSDT, limits)


def hedge_plan(subject, **overrides):
    arguments = {
        "book_delta": 0.01 * 64_000.0,
        "hedge_position": 0.0,
        "hedge_best_bid": 3_400.00,
        "hedge_best_ask": 3_400.02,
        "hedge_microprice": 3_400.01,
        "hedge_ratio": 1.0,
        "max_slippage_bps": 10.0,
        "state": ACTIVE,
        "position_cap": ETH_LIMITS.max_position,
    }
    arguments.update(overrides)
    return subject.plan(**arguments)


def hedge(subject, **overrides):
    """The plan's order (None: none, or no plan)."""
    plan = hedge_plan(subject, **overrides)
    return plan.order if plan is not None else None


def test_hedge_sells_the_beta_adjusted_delta_back_to_zero():
    # Net delta 0.01 * 64000 = 640 USDT; target -640 / 3400.01 = -0.18823 -> 0.19 ETH;
    # limit 3400.00 * (1 - 3e-4) = 3398.98, inside the 10 bps band (3396.61).
    order = hedge(hedger())
    assert order is not None
    assert (order.side, order.size, order.price, order.reduce_only) == (
        OrderSide.SELL,
        0.19,
        3_398.98,
        False,
    )
    assert order.net_delta == pytest.approx(640.0)


def test_hedge_ratio_scales_the_hedge():
    # h = 0.5: target -640 / (0.5 * 3400.01) = -0.37647 -> 0.38.
    order = hedge(hedger(), hedge_ratio=0.5)
    assert order is not None and order.size == 0.38


def test_inside_the_deadband_nothing_is_hedged():
    assert hedge(hedger(), book_delta=32.0) is None
    assert hedge(hedger(), hedge_position=-0.19) is None  # 640 - 646 = -6 USDT
    assert hedge(hedger(), hedge_ratio=0.0) is None  # the hedge offsets nothing


def test_hedge_price_stays_inside_the_gateway_band():
    # 1 bps band around min(mid, microprice) = 3400.01: at most 3400.35 for a buy.
    order = hedge(hedger(slippage_bps=3.0), book_delta=-640.0, max_slippage_bps=1.0)
    assert order is not None and order.side is OrderSide.BUY
    assert order.price == 3_400.35


def test_reducing_hedges_only_by_shrinking_the_hedge():
    assert hedge(hedger(), state=TradingState.REDUCING) is None
    order = hedge(hedger(), book_delta=0.0, hedge_position=-0.19, state=TradingState.REDUCING)
    assert order is not None
    assert (order.side, order.size, order.reduce_only) == (OrderSide.BUY, 0.19, True)


def test_the_hedge_asks_for_no_more_than_its_cap_allows_and_says_what_it_leaves():
    # Target -0.18823 ETH (sell 0.19); a cap of 0.12: sell 0.12, and at the cap
    # 640 - 0.12 * 3400.01 = 232 USDT of net delta stays outside the 50 USDT deadband.
    plan = hedge_plan(hedger(), position_cap=0.12)
    assert (plan.order.side, plan.order.size) == (OrderSide.SELL, 0.12)
    assert plan.order.net_delta == pytest.approx(640.0)
    assert plan.unhedged == pytest.approx(640.0 - 0.12 * 3_400.01)
    # At the cap: no order (the gateway would deny it), the same delta left.
    at_cap = hedge_plan(hedger(), hedge_position=-0.12, position_cap=0.12)
    assert at_cap == (None, pytest.approx(640.0 - 0.12 * 3_400.01), 0.12)
    # Less than a lot of room: nothing either.
    assert hedge_plan(hedger(), hedge_position=-0.115, position_cap=0.12).order is None
    # Beyond a cap lowered since (the risk scale): nothing further.
    beyond = hedge_plan(hedger(), hedge_position=-0.15, position_cap=0.12)
    assert beyond == (None, pytest.approx(640.0 - 0.15 * 3_400.01), 0.12)


def test_what_the_cap_leaves_is_said_until_the_target_is_within_it():
    # A cap of 0.185: sell 0.18 (whole lots); 640 - 0.185 * 3400.01 = 11 USDT left at the cap,
    # inside the deadband (the desk says the hedge is back under its cap only at 0).
    plan = hedge_plan(hedger(), position_cap=0.185)
    assert plan.order.size == 0.18
    assert plan.unhedged == pytest.approx(640.0 - 0.185 * 3_400.01)
    # At a cap of 0.18 the net delta 28 USDT is inside the deadband: no order, 28 still left.
    at_cap = hedge_plan(hedger(), hedge_position=-0.18, position_cap=0.18)
    assert at_cap.order is None
    assert at_cap.unhedged == pytest.approx(640.0 - 0.18 * 3_400.01)
    assert hedge_plan(hedger()).unhedged == 0.0  # within the cap
    inside = hedge_plan(hedger(), book_delta=32.0)  # inside the deadband
    assert (inside.order, inside.unhedged) == (None, 0.0)


def test_the_max_order_size_splits_the_hedge_without_capping_it():
    small_orders = dataclasses.replace(ETH_LIMITS, max_order_size=0.05)
    plan = hedge_plan(hedger(small_orders))
    assert (plan.order.size, plan.unhedged) == (0.05, 0.0)


def test_the_cap_binds_a_long_hedge_and_never_a_reducing_order():
    # The book short 640 USDT: buy towards +0.18823, a cap of 0.1 stops at +0.1.
    plan = hedge_plan(hedger(), book_delta=-640.0, position_cap=0.1)
    assert (plan.order.side, plan.order.size) == (OrderSide.BUY, 0.1)
    assert plan.unhedged == pytest.approx(-640.0 + 0.1 * 3_400.01)
    # Shrinking a short hedge of 0.3 (beyond the cap) to zero is reduce-only: not clipped.
    reducing = hedge_plan(hedger(), book_delta=0.0, hedge_position=-0.3, position_cap=0.1)
    assert (reducing.order.size, reducing.order.reduce_only) == (0.3, True)


def test_grid_rounding():
    grid = Grid(BTCUSDT)
    assert grid.floor_price(64_000.19999) == 64_000.1
    assert grid.ceil_price(64_000.10001) == 64_000.2
    assert grid.ceil_price(64_000.1) == 64_000.1
    assert grid.floor_size(0.0029999) == 0.002
    assert grid.floor_size(0.003) == 0.003
    assert grid.floor_size(-1.0) == 0.0


@pytest.mark.parametrize(
    ("tick", "step"), [(0.1, 0.001), (0.01, 0.01), (0.5, 1.0), (0.25, 0.0001), (1e-5, 5.0)]
)
def test_grid_gives_what_rounding_the_product_to_its_decimals_gave(tick, step):
    """The grid's one division is the double nearest n * tick, as round(n * tick, decimals)."""
    grid = Grid(Instrument("TESTUSDT", tick_size=tick, size_step=step))
    slack = 1e-9
    rng = random.Random(13)
    for _ in range(20_000):
        price = rng.uniform(0.0, 200_000.0 * tick * 1e3)
        size = rng.uniform(0.0, 5_000.0 * step)
        assert grid.floor_price(price) == round(
            math.floor(price / tick + slack) * tick, grid.price_decimals
        )
        assert grid.ceil_price(price) == round(
            math.ceil(price / tick - slack) * tick, grid.price_decimals
        )
        assert grid.floor_size(size) == round(
            math.floor(size / step + slack) * step, grid.size_decimals
        )
        assert grid.round_size(size) == round(round(size / step) * step, grid.size_decimals)


def test_instruments_must_match_the_configuration():
    with pytest.raises(ValueError, match="is not the quoted"):
        QuotingStrategy(QuotingStrategyConfig(), ETHUSDT, BTC_LIMITS)
    with pytest.raises(ValueError, match="is not the hedge"):
        BookHedger(HedgeConfig(), BTCUSDT, ETH_LIMITS)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("quote_size", 0.0),
        ("half_spread_bps", -1.0),
        ("requote_size_fraction", 2.0),
        ("symbol", "btc"),
    ],
)
def test_config_rejects_nonsense(field, value):
    with pytest.raises(ValueError):
        QuotingStrategyConfig(**{field: value})
