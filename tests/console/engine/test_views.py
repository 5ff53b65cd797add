"""The engine's state as the panes show it (console.engine.views): Kev's status, decisions and
latency, and its warm-up; a fill's line."""

from __future__ import annotations

import math

from console.engine.views import console_event, kev_decision_view, kev_latency, kev_status_view
from console.view import EventKind, KevOutcome, KevState, Severity
from engine.bitget.orders import OrderSide
from engine.kev.client import KevTimings
from engine.kev.command import KevCommand
from engine.kev.hub import KevDecision, KevStatus, KevWarmUpEnded
from engine.kev.hub import KevOutcome as HubOutcome
from engine.market.instruments import BTCUSDT, Instrument
from engine.pipeline import LayaStoodAside
from engine.risk.commands import KevAction
from engine.risk.events import SymbolPauseChanged
from engine.risk.intents import Source
from engine.trading.contract_watch import ContractChanged
from engine.trading.events import HedgeCapChanged, OrderFilled

# Kev: the hub's figures as the panes show them


def kev_decision(
    decision_id: int,
    outcome: HubOutcome,
    reason: str,
    command: KevCommand | None,
    wall_ms: float,
) -> KevDecision:
    return KevDecision(
        decision_id,
        1_723_111_200_000_000_000 + decision_id,
        "BTCUSDT",
        "EMERGENCY",
        outcome,
        reason,
        command,
        '{"action": "reduce"}' if command is None else "",
        "qwen2.5-0.5b",
        wall_ms,
        3.0,
        KevTimings(0, 120, 40.0, 20, 300.0),
        0,
    )


def test_kev_status_and_decisions_map_to_the_panes():
    assert kev_status_view(None).state is KevState.OFFLINE
    assert kev_status_view(None).detail.startswith("Kev is off")
    online = KevStatus("online", "", "qwen", 812.0, 0, 0, 3, 0, 0, 0, {})
    assert kev_status_view(online).state is KevState.ONLINE
    assert kev_status_view(online).last_latency_ms == 812.0
    busy = kev_status_view(KevStatus("busy", "", "qwen", 812.0, 2, 1, 3, 0, 0, 0, {}))
    assert busy.state is KevState.BUSY and busy.detail == "1 in flight, 2 waiting"
    loading = kev_status_view(KevStatus("loading", "503", "", None, 0, 0, 0, 0, 0, 0, {}))
    assert loading.state is KevState.OFFLINE and loading.detail == "loading: 503"

    reduce = KevCommand(KevAction.REDUCE, 0.5, 1.0, 0.0, 2_000, "depth thinned on the bid")
    accepted = kev_decision_view(kev_decision(1, HubOutcome.ACCEPTED, "risk 0.5", reduce, 900))
    assert (accepted.action, accepted.outcome, accepted.why) == (
        "reduce",
        KevOutcome.ACCEPTED,
        "risk 0.5",
    )
    assert accepted.reasoning == "depth thinned on the bid" and accepted.latency_ms == 900
    refused = kev_decision_view(
        kev_decision(2, HubOutcome.REFUSED, "raising the risk scale", reduce, 800)
    )
    assert refused.outcome is KevOutcome.REJECTED
    assert refused.why == "refused by the risk gateway: raising the risk scale"
    invalid = kev_decision_view(kev_decision(3, HubOutcome.REJECTED, "invalid JSON", None, 700))
    assert (invalid.action, invalid.reasoning) == ("none", '{"action": "reduce"}')
    stale = kev_decision_view(kev_decision(4, HubOutcome.STALE, "mid moved 9 bps", reduce, 60))
    assert stale.outcome is KevOutcome.STALE

    decisions = [kev_decision(n, HubOutcome.ACCEPTED, "", reduce, 100.0 * n) for n in range(1, 101)]
    latency = kev_latency(decisions, 3e6)
    assert (latency.count, latency.p50_us, latency.p99_us, latency.max_us) == (
        100,
        5e6,
        9.9e6,
        1e7,
    )
    assert latency.over_budget
    empty = kev_latency([], None)
    assert empty.count == 0 and math.isnan(empty.p50_us)


def test_kev_warm_up_shows_in_the_status_and_the_events():
    detail = "warming the prompt cache (up to 90 s)"
    warming = kev_status_view(KevStatus("warming", detail, "tiny.gguf", None, 1, 0, 1, 0, 0, 0, {}))
    assert (warming.state, warming.detail) == (KevState.OFFLINE, detail)  # no decision yet
    text = "prompt cache warmed in 19.2 s (560 prompt tokens evaluated, 0 cached)"
    warmed = console_event(KevWarmUpEnded(True, 19_200.0, text, 7), 0, {})
    assert warmed == (EventKind.KEV, Severity.INFO, f"Kev: {text}", 7)
    failed = "warm-up failed after 90.0 s: timeout: no answer within 90 s"
    assert console_event(KevWarmUpEnded(False, 90_000.0, failed, 8), 0, {}) == (
        EventKind.KEV,
        Severity.WARNING,
        f"Kev: {failed}",
        8,
    )


# Fills: the price on the contract's grid, at its decimals


def test_a_fill_line_writes_its_price_on_the_grid_without_float_noise():
    fill = OrderFilled(
        "c1", "BTCUSDT", OrderSide.BUY, 61602.600000000006, 0.003, 0.0185, True, "t", 7
    )
    _, _, text, _ = console_event(fill, 0, {"BTCUSDT": BTCUSDT})
    assert text == "BTCUSDT buy 0.003 BTC @ 61,602.6 maker, fee -0.0185 USDT (c1)"


def test_a_fill_line_writes_its_price_at_its_own_contracts_decimals():
    nexo = Instrument("NEXOUSDT", tick_size=0.001, size_step=0.1)
    fill = OrderFilled("c2", "NEXOUSDT", OrderSide.SELL, 1.21, 40.0, 0.0097, True, "t", 7)
    _, _, text, _ = console_event(fill, 0, {"NEXOUSDT": nexo})
    assert text == "NEXOUSDT sell 40 NEXO @ 1.210 maker, fee -0.0097 USDT (c2)"
    _, _, text, _ = console_event(fill, 0, {})  # a symbol whose contract is not known
    assert text == "NEXOUSDT sell 40 NEXO @ 1.21 maker, fee -0.0097 USDT (c2)"


def test_a_contract_changed_at_the_venue_is_a_warning_in_the_events():
    new = Instrument("BTCUSDT", 0.5, 0.001)
    shown = console_event(ContractChanged(BTCUSDT, new, 9), 0, {"BTCUSDT": BTCUSDT})
    assert shown == (
        EventKind.SYSTEM,
        Severity.WARNING,
        "BTCUSDT contract changed at the venue: tick 0.1 -> 0.5; new orders follow it",
        9,
    )


def test_a_symbol_laya_stands_aside_on_for_its_model_is_a_fault_in_the_events():
    reason = "LayaModelError: /m/nexo.onnx is not a loadable ONNX model"
    shown = console_event(LayaStoodAside("NEXOUSDT", reason, 9), 0, {})
    assert shown == (
        EventKind.FAULT,
        Severity.ERROR,
        f"Laya stands aside on NEXOUSDT, no quotes: its model: {reason}",
        9,
    )


def test_a_symbol_stood_aside_is_a_state_warning_and_let_back_an_info():
    aside = SymbolPauseChanged("ADAUSDT", True, "its status is 'maintain'", Source.RISK, 9)
    back = SymbolPauseChanged("ADAUSDT", False, "ADAUSDT trades again", Source.RISK, 10)
    assert console_event(aside, 0, {}) == (EventKind.STATE, Severity.WARNING, aside.text, 9)
    assert console_event(back, 0, {}) == (EventKind.STATE, Severity.INFO, back.text, 10)


def test_the_hedge_at_its_cap_is_a_state_warning_and_back_under_it_an_info():
    capped = HedgeCapChanged("BTCUSDT", True, 0.02, 412.3, 9)
    assert console_event(capped, 0, {}) == (
        EventKind.STATE,
        Severity.WARNING,
        "BTCUSDT hedge at its cap 0.02 BTC: +412 USDT of the book's net delta left unhedged",
        9,
    )
    back = HedgeCapChanged("BTCUSDT", False, 0.02, 0.0, 10)
    assert console_event(back, 0, {}) == (EventKind.STATE, Severity.INFO, back.text, 10)
