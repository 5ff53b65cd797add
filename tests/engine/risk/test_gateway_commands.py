"""Operator overrides (inside the hard bounds) and Kev's commands (never loosening anything)."""

from __future__ import annotations

import inspect
import math

import pytest
from support.risk import BTC, BUY, ETH, MIDS, MS, SECOND, SELL, T0, limit, make_gateway

from engine.risk.commands import KevAction
from engine.risk.events import CommandRejected, RiskLimitChanged, TradingState
from engine.risk.gateway import RiskGateway
from engine.risk.intents import DenialReason, Source
from engine.risk.overrides import RiskOverrides
from engine.units import exact


def limit_changes(gateway: RiskGateway) -> list[tuple[str, float, float, Source]]:
    return [
        (e.name, e.old, e.new, e.source)
        for e in gateway.drain_events()
        if isinstance(e, RiskLimitChanged)
    ]


def test_max_position_override_applies_at_once_with_an_event():
    gateway = make_gateway()
    gateway.drain_events()
    assert gateway.set_limits(RiskOverrides(max_position={BTC: 0.3}), T0).accepted
    assert gateway.check(limit(BTC, BUY, 0.4), T0).reason is DenialReason.POSITION_LIMIT
    assert gateway.set_limits(RiskOverrides(max_position={BTC: 2.0}), T0).accepted
    assert gateway.check(limit(BTC, BUY, 0.4), T0).approved
    assert limit_changes(gateway) == [
        ("max_position BTCUSDT", 1.0, 0.3, Source.OPERATOR),
        ("max_position BTCUSDT", 0.3, 2.0, Source.OPERATOR),
    ]


@pytest.mark.parametrize(
    "overrides",
    [
        RiskOverrides(max_position={BTC: 2.5}),
        RiskOverrides(max_position={BTC: -0.1}),
        RiskOverrides(max_position={BTC: math.nan}),
        RiskOverrides(max_position={"XYZUSDT": 1.0}),
        RiskOverrides(max_net_delta=160_001),
        RiskOverrides(max_net_delta=math.inf),
        RiskOverrides(max_slippage_bps=51),
        RiskOverrides(max_slippage_bps=-1),
        RiskOverrides(orders_per_second=11, orders_per_minute=100),
        RiskOverrides(orders_per_second=5, orders_per_minute=201),
        RiskOverrides(orders_per_second=0, orders_per_minute=100),
        RiskOverrides(orders_per_second=2.5, orders_per_minute=100),  # type: ignore[arg-type]
        RiskOverrides(risk_scale=1.01),
        RiskOverrides(risk_scale=-0.1),
        RiskOverrides(risk_scale=True),
        RiskOverrides(max_net_delta=5_000, risk_scale=1.01),  # all or nothing
    ],
)
def test_override_outside_its_hard_bounds_is_refused(overrides):
    gateway = make_gateway()
    before = gateway.snapshot()
    gateway.drain_events()
    outcome = gateway.set_limits(overrides, T0)
    assert not outcome.accepted
    (event,) = gateway.drain_events()
    assert isinstance(event, CommandRejected)
    assert (event.command, event.source) == ("set_limits", Source.OPERATOR)
    after = gateway.snapshot()
    assert (after.limits, after.risk_scale) == (before.limits, before.risk_scale)


def test_overrides_apply_together_and_say_what_is_in_force():
    gateway = make_gateway()
    overrides = RiskOverrides(
        max_position={BTC: 0.5},
        max_net_delta=5_000,
        max_slippage_bps=25,
        orders_per_second=3,
        orders_per_minute=100,
        risk_scale=0.5,
    )
    outcome = gateway.set_limits(overrides, T0)
    assert outcome == (
        True,
        "BTCUSDT max position 0.5 BTC; max net delta 5000 USDT; max slippage 25 bps; "
        "order rate 3/s, 100/min; risk scale 0.5",
    )


def answered_limits(gateway: RiskGateway) -> str:
    """The answer a full override must give, written from the limits in force."""
    snapshot = gateway.snapshot()
    limits = snapshot.limits
    sizes = "; ".join(
        f"{symbol} max position {exact(size)} {symbol.removesuffix('USDT')}"
        for symbol, size in limits.max_position.items()
    )
    return (
        f"{sizes}; max net delta {exact(limits.max_net_delta)} USDT; "
        f"max slippage {exact(limits.max_slippage_bps)} bps; "
        f"order rate {limits.orders_per_second}/s, {limits.orders_per_minute}/min; "
        f"risk scale {exact(snapshot.risk_scale)}"
    )


@pytest.mark.parametrize(
    ("btc", "eth", "net_delta", "slippage", "scale"),
    [
        (0.0, 0.6, 5_000, 25, 0.5),  # the form as the console sends it: every symbol
        (0.01, 0.6, 123_456.7, 12.345678, 0.1234567),  # digits :g would round away
        (1.5, 0.000_01, 0.0, 0.0, 0.0),
    ],
)
def test_every_override_answers_the_limit_it_put_in_force(btc, eth, net_delta, slippage, scale):
    """The answer (journalled as the audit trail) names each symbol's own new limit, every
    digit, and nothing else: it once named the last symbol's size for every symbol."""
    gateway = make_gateway()
    overrides = RiskOverrides(
        max_position={BTC: btc, ETH: eth},
        max_net_delta=net_delta,
        max_slippage_bps=slippage,
        orders_per_second=3,
        orders_per_minute=100,
        risk_scale=scale,
    )
    outcome = gateway.set_limits(overrides, T0)
    assert outcome.accepted
    assert dict(gateway.snapshot().limits.max_position) == {BTC: btc, ETH: eth}
    assert outcome.text == answered_limits(gateway)


def test_kev_answers_name_the_exact_figures():
    gateway = make_gateway()
    gateway.set_limits(RiskOverrides(risk_scale=0.5), T0)
    outcome = gateway.apply_kev_command(KevAction.HOLD, 0.5000001, 0.8734567, T0)
    assert any("Kev cannot raise the risk scale (0.5 -> 0.5000001)" in n for n in outcome.notes)
    assert outcome.hedge_ratio == 0.8734567
    outcome = gateway.apply_kev_command(KevAction.HOLD, None, 0.2499999, T0)
    assert outcome.notes == ("hedge ratio 0.2499999 clamped to 0.25",)


def test_risk_scale_scales_position_notional_and_net_delta():
    gateway = make_gateway()
    gateway.set_limits(RiskOverrides(risk_scale=0.5), T0)
    assert gateway.check(limit(BTC, BUY, 0.5), T0).approved
    assert gateway.check(limit(BTC, BUY, 0.1), T0).reason is DenialReason.POSITION_LIMIT
    gateway.set_limits(RiskOverrides(risk_scale=0.0), T0)
    assert gateway.check(limit(ETH, BUY, 0.1), T0).reason is DenialReason.POSITION_LIMIT


def rate(per_second: int, per_minute: int) -> RiskOverrides:
    return RiskOverrides(orders_per_second=per_second, orders_per_minute=per_minute)


def test_order_rate_override_keeps_the_recent_history():
    gateway = make_gateway()
    for number in range(3):
        intent = limit(ETH, BUY, 0.1)
        assert gateway.check(intent, T0 + number * MS).approved
        gateway.on_order_closed(intent.client_oid, T0)
    assert gateway.set_limits(
        RiskOverrides(orders_per_second=3, orders_per_minute=100), T0
    ).accepted
    assert gateway.check(limit(ETH, BUY, 0.1), T0 + 10 * MS).reason is DenialReason.ORDER_RATE
    assert gateway.set_limits(
        RiskOverrides(orders_per_second=10, orders_per_minute=100), T0
    ).accepted
    assert gateway.check(limit(ETH, BUY, 0.1), T0 + 10 * MS).approved


def test_slippage_override_moves_the_band_at_once():
    gateway = make_gateway()
    price = MIDS[BTC] * 1.002
    assert gateway.check(limit(BTC, BUY, 0.1, price=price), T0).reason is DenialReason.SLIPPAGE
    gateway.set_limits(RiskOverrides(max_slippage_bps=25), T0)
    assert gateway.check(limit(BTC, BUY, 0.1, price=price), T0).approved


def test_max_net_delta_override_applies_at_once():
    gateway = make_gateway()
    gateway.set_limits(RiskOverrides(max_net_delta=5_000), T0)
    assert gateway.check(limit(BTC, BUY, 0.1), T0).reason is DenialReason.NET_DELTA_LIMIT
    assert gateway.check(limit(ETH, BUY, 3.0), T0).approved  # 9k x 0.5


def test_kev_may_lower_the_risk_scale():
    gateway = make_gateway()
    gateway.drain_events()
    outcome = gateway.apply_kev_command(KevAction.HOLD, 0.4, None, T0)
    assert outcome.accepted
    assert outcome.risk_scale == 0.4
    assert limit_changes(gateway) == [("risk_scale", 1.0, 0.4, Source.KEV)]


def test_kev_cannot_raise_the_risk_scale():
    gateway = make_gateway()
    gateway.set_limits(RiskOverrides(risk_scale=0.5), T0)
    outcome = gateway.apply_kev_command(KevAction.HOLD, 0.8, None, T0)
    assert not outcome.accepted
    assert outcome.risk_scale == 0.5
    assert "cannot raise" in outcome.notes[0]


def test_kev_cannot_undo_its_own_lowering_either():
    gateway = make_gateway()
    gateway.apply_kev_command(KevAction.HOLD, 0.3, None, T0)
    assert not gateway.apply_kev_command(KevAction.HOLD, 0.6, None, T0).accepted
    assert gateway.snapshot().risk_scale == 0.3
    assert gateway.set_limits(RiskOverrides(risk_scale=1.0), T0).accepted  # the operator can


def test_kev_hedge_ratio_is_clamped_into_the_band_and_reported():
    gateway = make_gateway()
    gateway.drain_events()
    outcome = gateway.apply_kev_command(KevAction.HOLD, None, 3.0, T0)
    assert outcome.accepted
    assert outcome.hedge_ratio == 1.0
    assert outcome.notes == ("hedge ratio 3 clamped to 1",)
    assert limit_changes(gateway) == [("hedge_ratio", 0.5, 1.0, Source.KEV)]
    assert gateway.snapshot().positions[1].delta_weight == 1.0
    outcome = gateway.apply_kev_command(KevAction.HOLD, None, 0.1, T0)
    assert (outcome.hedge_ratio, outcome.notes) == (0.25, ("hedge ratio 0.1 clamped to 0.25",))


def test_hedge_ratio_changes_the_net_delta_at_once():
    gateway = make_gateway()
    gateway.on_position_sync(ETH, 20.0, MIDS[ETH], T0)
    assert gateway.snapshot().net_delta == pytest.approx(30_000)
    gateway.apply_kev_command(KevAction.HOLD, None, 1.0, T0)
    assert gateway.snapshot().net_delta == pytest.approx(60_000)
    assert gateway.check(limit(BTC, BUY, 0.4), T0).reason is DenialReason.NET_DELTA_LIMIT


def test_kev_beta_is_clamped_into_its_range_and_reported():
    gateway = make_gateway(betas={BTC: 1.1}, beta_band=(0.8, 1.2))  # BTCUSDT: [0.88, 1.32]
    gateway.drain_events()
    outcome = gateway.apply_kev_command(KevAction.HOLD, None, None, T0, (BTC, 1.4))
    assert (outcome.accepted, outcome.beta) == (True, 1.32)
    assert outcome.notes == ("beta BTCUSDT 1.4 clamped to 1.32",)
    assert limit_changes(gateway) == [("beta BTCUSDT", 1.1, 1.32, Source.KEV)]
    risk = gateway.snapshot()
    assert dict(risk.betas) == {BTC: 1.32}  # the hedge's weight is its hedge ratio
    assert risk.positions[0].delta_weight == 1.32
    outcome = gateway.apply_kev_command(KevAction.HOLD, None, None, T0, (BTC, 0.95))
    assert (outcome.beta, outcome.notes) == (0.95, ())
    assert limit_changes(gateway) == [("beta BTCUSDT", 1.32, 0.95, Source.KEV)]


def test_a_kev_beta_moves_the_book_delta_and_the_net_delta_check_at_once():
    gateway = make_gateway(beta_band=(0.8, 1.2))
    gateway.on_position_sync(BTC, 0.5, MIDS[BTC], T0)
    gateway.set_limits(RiskOverrides(max_net_delta=40_000), T0)
    assert gateway.book_delta() == pytest.approx(30_000)
    gateway.apply_kev_command(KevAction.HOLD, None, None, T0, (BTC, 1.2))
    assert gateway.book_delta() == pytest.approx(36_000)  # what the hedge now offsets
    assert gateway.snapshot().net_delta == pytest.approx(36_000)
    # 36k + 1.2 x 0.1 x 60k = 43.2k > 40k; at beta 1 it would be 36k.
    assert gateway.check(limit(BTC, BUY, 0.1), T0).reason is DenialReason.NET_DELTA_LIMIT


@pytest.mark.parametrize(
    ("config", "clamped"),
    [
        ({}, 1.0),  # the default beta_band (1, 1): betas stay as configured
        ({"hedge_symbol": None, "beta_band": (0.5, 2.0)}, 1.0),  # no hedge for a beta to steer
    ],
    ids=["default band", "no hedge"],
)
def test_a_kev_beta_without_room_to_move_stays_as_configured(config, clamped):
    gateway = make_gateway(**config)
    gateway.drain_events()
    outcome = gateway.apply_kev_command(KevAction.HOLD, None, None, T0, (BTC, 1.3))
    assert (outcome.accepted, outcome.beta) == (True, clamped)
    assert outcome.notes == ("beta BTCUSDT 1.3 clamped to 1",)
    assert limit_changes(gateway) == []


@pytest.mark.parametrize(
    ("beta", "note"),
    [
        ((ETH, 1.0), "a beta for 'ETHUSDT', which is not a quoted symbol of the book"),
        (("SOLUSDT", 1.0), "a beta for 'SOLUSDT', which is not a quoted symbol of the book"),
        ((BTC, math.nan), "BTCUSDT beta must be a number, got nan"),
        ((BTC, "1.1"), "BTCUSDT beta must be a number, got '1.1'"),
    ],
    ids=["the hedge", "not in the book", "nan", "a string"],
)
def test_a_malformed_kev_beta_refuses_the_command_whole(beta, note):
    gateway = make_gateway(beta_band=(0.5, 2.0))
    gateway.drain_events()
    outcome = gateway.apply_kev_command(KevAction.REDUCE, 0.5, 0.8, T0, beta)
    assert (outcome.accepted, outcome.notes) == (False, (note,))
    assert (outcome.state, outcome.risk_scale, outcome.hedge_ratio) == (
        TradingState.ACTIVE,
        1.0,
        0.5,
    )
    assert dict(gateway.snapshot().betas) == {BTC: 1.0}
    (event,) = gateway.drain_events()
    assert isinstance(event, CommandRejected)


def test_an_operator_beta_applies_at_once_as_the_operators():
    gateway = make_gateway(betas={BTC: 1.1}, beta_band=(0.8, 1.2))  # BTCUSDT: [0.88, 1.32]
    gateway.on_position_sync(BTC, 0.5, MIDS[BTC], T0)
    gateway.drain_events()
    outcome = gateway.set_limits(RiskOverrides(betas={BTC: 1.32}), T0)
    assert outcome == (True, "beta BTCUSDT 1.32")
    assert limit_changes(gateway) == [("beta BTCUSDT", 1.1, 1.32, Source.OPERATOR)]
    assert dict(gateway.snapshot().betas) == {BTC: 1.32}
    assert gateway.book_delta() == pytest.approx(1.32 * 30_000)  # what the hedge offsets


def test_kevs_later_beta_moves_the_operators_as_it_moves_the_operators_risk_scale():
    """The last word holds, each inside its own rules: Kev's beta after the operator's moves
    it within the same range, and the operator's next one moves it back."""
    gateway = make_gateway(beta_band=(0.8, 1.2))
    gateway.set_limits(RiskOverrides(betas={BTC: 0.9}), T0)
    gateway.drain_events()
    assert gateway.apply_kev_command(KevAction.HOLD, None, None, T0, (BTC, 1.1)).beta == 1.1
    assert gateway.set_limits(RiskOverrides(betas={BTC: 0.8}), T0).accepted
    assert limit_changes(gateway) == [
        ("beta BTCUSDT", 0.9, 1.1, Source.KEV),
        ("beta BTCUSDT", 1.1, 0.8, Source.OPERATOR),
    ]


@pytest.mark.parametrize(
    ("config", "betas", "problem"),
    [
        ({}, {BTC: 1.3}, "BTCUSDT beta must be within [0.8, 1.2], got 1.3"),
        ({}, {BTC: math.nan}, "BTCUSDT beta must be within [0.8, 1.2], got nan"),
        ({}, {BTC: "1.1"}, "BTCUSDT beta must be within [0.8, 1.2], got '1.1'"),
        ({}, {"SOLUSDT": 1.0}, "'SOLUSDT' is not a configured symbol"),
        (
            {},
            {ETH: 1.0},
            "a beta for ETHUSDT, the hedge: its weight in the net delta is the hedge ratio",
        ),
        (
            {"hedge_symbol": None},
            {BTC: 1.0},
            "a beta for BTCUSDT, but the book has no hedge for a beta to steer",
        ),
    ],
    ids=["out of its range", "nan", "a string", "not in the book", "the hedge", "no hedge"],
)
def test_an_operator_beta_outside_the_rules_is_refused_whole(config, betas, problem):
    gateway = make_gateway(beta_band=(0.8, 1.2), **config)
    gateway.drain_events()
    outcome = gateway.set_limits(RiskOverrides(max_net_delta=5_000, betas=betas), T0)
    assert outcome == (False, problem)
    (event,) = gateway.drain_events()
    assert isinstance(event, CommandRejected) and event.source is Source.OPERATOR
    risk = gateway.snapshot()
    assert (risk.betas[BTC], risk.limits.max_net_delta) == (1.0, 80_000)


@pytest.mark.parametrize(
    ("configured", "band", "beta"),
    [(1.1, (0.8, 1.2), 0.88), (1.5, (0.8, 1.2), 1.8), (1.3, (0.9, 1.2), 1.17)],
)
def test_a_beta_at_the_edge_of_its_range_is_inside_it(configured, band, beta):
    """The range is the decimals meant: 0.8 x 1.1 is 0.8800000000000001 in floats, and 1.2 x
    1.5 is 1.7999999999999998; neither the operator's 0.88 nor Kev's 1.8 is outside."""
    gateway = make_gateway(betas={BTC: configured}, beta_band=band)
    assert gateway.set_limits(RiskOverrides(betas={BTC: beta}), T0) == (
        True,
        f"beta BTCUSDT {beta}",
    )
    outcome = gateway.apply_kev_command(KevAction.HOLD, None, None, T0, (BTC, beta))
    assert (outcome.beta, outcome.notes) == (beta, ())


def test_an_operator_hedge_ratio_applies_at_once_and_kevs_next_one_moves_it():
    gateway = make_gateway()
    gateway.on_position_sync(ETH, 20.0, MIDS[ETH], T0)
    gateway.drain_events()
    assert gateway.set_limits(RiskOverrides(hedge_ratio=0.8), T0) == (True, "hedge ratio 0.8")
    assert gateway.snapshot().net_delta == pytest.approx(48_000)  # 0.8 x 20 ETH x 3000
    assert gateway.apply_kev_command(KevAction.HOLD, None, 0.6, T0).hedge_ratio == 0.6
    assert limit_changes(gateway) == [
        ("hedge_ratio", 0.5, 0.8, Source.OPERATOR),
        ("hedge_ratio", 0.8, 0.6, Source.KEV),
    ]


@pytest.mark.parametrize(
    ("config", "ratio", "problem"),
    [
        ({}, 1.1, "hedge ratio must be within [0.25, 1], got 1.1"),
        ({}, 0.2, "hedge ratio must be within [0.25, 1], got 0.2"),
        ({}, math.nan, "hedge ratio must be within [0.25, 1], got nan"),
        ({"hedge_symbol": None}, 0.5, "a hedge ratio, but the book has no hedge"),
    ],
    ids=["above its band", "below", "nan", "no hedge"],
)
def test_an_operator_hedge_ratio_outside_its_band_is_refused_whole(config, ratio, problem):
    gateway = make_gateway(**config)
    gateway.drain_events()
    outcome = gateway.set_limits(RiskOverrides(risk_scale=0.5, hedge_ratio=ratio), T0)
    assert outcome == (False, problem)
    (event,) = gateway.drain_events()
    assert isinstance(event, CommandRejected) and event.source is Source.OPERATOR
    risk = gateway.snapshot()
    assert (risk.hedge_ratio, risk.risk_scale) == (0.5, 1.0)


def test_kev_has_one_way_into_the_gateway():
    """Kev acts on the gateway only through `apply_kev_command`, the typed path the hub and
    the desk call: a second public method acting for Kev would answer by other rules."""
    acting_for_kev = [
        name
        for name, member in vars(RiskGateway).items()
        if not name.startswith("_")
        and callable(member)
        and "Source.KEV" in inspect.getsource(member)
    ]
    assert acting_for_kev == ["apply_kev_command"]


def test_kev_reduce_moves_active_to_reducing():
    gateway = make_gateway()
    outcome = gateway.apply_kev_command(KevAction.REDUCE, None, None, T0)
    assert outcome.accepted
    assert outcome.state is TradingState.REDUCING
    assert gateway.snapshot().state_reason == "Kev: reduce"


def test_kev_flatten_flattens_then_pauses():
    gateway = make_gateway()
    gateway.on_position_sync(BTC, 0.2, MIDS[BTC], T0)
    assert gateway.apply_kev_command("flatten", None, None, T0).state is TradingState.REDUCING
    (close,) = gateway.closing_intents()
    assert gateway.check(close, T0).approved
    gateway.on_fill(close.client_oid, BTC, SELL, 0.2, MIDS[BTC], 0.0, T0)
    assert gateway.state is TradingState.PAUSED


def test_kev_pause_quoting_pauses_from_active():
    gateway = make_gateway()
    outcome = gateway.apply_kev_command(KevAction.PAUSE_QUOTING, None, None, T0)
    assert (outcome.accepted, outcome.state) == (True, TradingState.PAUSED)


def test_kev_pause_quoting_is_refused_while_reducing():
    gateway = make_gateway()
    gateway.on_position_sync(BTC, 0.2, MIDS[BTC], T0)
    gateway.flatten(T0)
    outcome = gateway.apply_kev_command(KevAction.PAUSE_QUOTING, None, None, T0)
    assert not outcome.accepted
    assert outcome.state is TradingState.REDUCING


@pytest.mark.parametrize("action", [KevAction.REDUCE, KevAction.FLATTEN, KevAction.PAUSE_QUOTING])
@pytest.mark.parametrize("command", ["pause", "kill"])
def test_kev_cannot_leave_paused_or_halted(command, action):
    gateway = make_gateway()
    gateway.on_position_sync(BTC, 0.2, MIDS[BTC], T0)
    getattr(gateway, command)(T0)
    state = gateway.state
    gateway.drain_events()
    outcome = gateway.apply_kev_command(action, None, None, T0)
    assert gateway.state is state
    if state is TradingState.PAUSED and action is KevAction.PAUSE_QUOTING:
        assert outcome.accepted  # already paused: nothing to leave
    else:
        assert not outcome.accepted
        assert [e.source for e in gateway.drain_events()] == [Source.KEV]


@pytest.mark.parametrize(
    ("action", "risk_scale", "hedge_ratio"),
    [
        ("rearm", None, None),
        ("resume", None, None),
        (None, None, None),
        (KevAction.HOLD, 1.5, None),
        (KevAction.HOLD, math.nan, None),
        (KevAction.HOLD, None, math.nan),
        (KevAction.HOLD, None, math.inf),
        (KevAction.HOLD, None, "0.5"),
    ],
)
def test_malformed_kev_command_is_refused_whole(action, risk_scale, hedge_ratio):
    gateway = make_gateway()
    gateway.drain_events()
    outcome = gateway.apply_kev_command(action, risk_scale, hedge_ratio, T0)
    assert not outcome.accepted
    assert outcome.notes
    assert (outcome.state, outcome.risk_scale, outcome.hedge_ratio) == (
        TradingState.ACTIVE,
        1.0,
        0.5,
    )
    (event,) = gateway.drain_events()
    assert isinstance(event, CommandRejected)


def test_refused_kev_action_still_applies_the_safe_parts():
    gateway = make_gateway()
    gateway.pause(T0)
    outcome = gateway.apply_kev_command(KevAction.REDUCE, 0.5, 0.75, T0 + SECOND)
    assert not outcome.accepted
    assert (outcome.state, outcome.risk_scale, outcome.hedge_ratio) == (
        TradingState.PAUSED,
        0.5,
        0.75,
    )
    assert outcome.notes == ("Kev cannot leave PAUSED",)


def test_kev_has_no_way_to_rearm():
    gateway = make_gateway()
    gateway.kill(T0)
    for action in KevAction:
        gateway.apply_kev_command(action, 0.0, 1.0, T0)
    assert gateway.state is TradingState.HALTED
