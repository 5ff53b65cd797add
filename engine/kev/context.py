"""What Kev reads: the fixed system prompt (the prompt cache's shared prefix) and the compact
context of one request.

The fast path builds a `KevSnapshot` (`snapshot_of`: the verdict, its probabilities, the mid
and a copy of the feature row the next frame overwrites); the context reads ten key features
from it. Everything
else (positions, PnL, limits, the trading state, the pair's hedge analytics) is read when the
request is built, off the fast path. Numbers are rounded to what matters for a decision, so a
context is about 150 tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.kev.command import KevCommandSpec
from engine.kev.hedge import HedgeStats
from engine.kev.queue import KevRequest, KevSnapshot
from engine.laya.feature_set import FEATURE_COUNT
from engine.laya.features import FEATURE_NAMES
from engine.laya.verdict import Verdict
from engine.risk.snapshot import RiskSnapshot

KEY_FEATURES = (
    "obi_1",
    "obi_5",
    "obi_15",
    "microprice_offset_bps",
    "spread_bps",
    "vpin",
    "flow_imbalance_1s",
    "flow_imbalance_5s",
    "realized_vol_5s_bps",
    "realized_vol_60s_bps",
)
"""The features a `KevSnapshot` carries, in this order (names as in docs/features.md)."""
KEY_FEATURE_INDEX = np.array([FEATURE_NAMES.index(name) for name in KEY_FEATURES], np.intp)
_VERDICT_NAMES = tuple(verdict.name for verdict in Verdict)
_new_tuple = tuple.__new__  # skips NamedTuple's Python-level __new__ on the fast path


def snapshot_of(
    symbol: str,
    exchange_ts_ms: int,
    verdict: int,
    probabilities: Sequence[float],
    mid: float,
    features: np.ndarray,
) -> KevSnapshot:
    """The snapshot of one verdict, cheap enough for the fast path. `features` is the
    extractor's row, which the next book overwrites, so it is copied (one 512-byte copy is
    the cheapest way out of numpy); `probabilities` is kept as given, so pass a fresh sequence
    (the pipeline's `tolist()` row is one)."""
    return _new_tuple(
        KevSnapshot, (symbol, exchange_ts_ms, verdict, probabilities, mid, features.copy())
    )


def system_prompt(spec: KevCommandSpec) -> str:
    """The instructions, identical for every request of a spec (the cached prefix). The legend
    of the context lives here, so each request carries only numbers; the two examples show the
    compact form (the schema allows whitespace, and every newline and indent is a token)."""
    actions = "|".join(action.value for action in spec.actions)
    skew = spec.max_skew_tenths_bps
    low_hedge, high_hedge = spec.hedge_pct
    example_hedge = (low_hedge + high_hedge) // 2
    low_beta, high_beta = spec.beta_pct
    # Beta 1 where the band holds it: a model copying an example then asks for no change.
    example_beta = min(max(100, low_beta), high_beta)
    return (
        "You are Kev, the risk supervisor of a market-making engine on Bitget USDT-M "
        "perpetuals. A fast classifier flagged the market below. Decide whether to tighten "
        "trading; you can never raise risk or resume trading.\n"
        "The context: trading state, risk %, hedge ratio %, limits (net delta USDT, the "
        "day's two loss limits); positions (size, notional USDT, unrealized pnl), net delta, "
        "the day's pnl; the flagged symbol's beta % and its fit % (hedge ratio over pair "
        "beta); the pair: beta, spread z-score, Engle-Granger statistic vs its 5% "
        "critical value (below it: cointegrated), half-life; then symbol, verdict, p: % hold "
        "buy sell emergency, verdicts while queued; imb: book imbalance % at 1, 5, 15 levels; "
        "vpin %; flow: trade flow imbalance % over 1s, 5s; micro: microprice offset bp; "
        "spread bp; vol: realized volatility bp/sqrt(s) over 5s, 60s.\n"
        "Reply with one compact JSON object:\n"
        f"act: {actions}. hold keeps trading; reduce lets positions only shrink; flatten "
        "closes all; pause_quoting stops new orders.\n"
        f"risk: percent of the operator's limits, {spec.risk_pct[0]}-{spec.risk_pct[1]}; "
        "repeat the current value to keep it.\n"
        f"hedge: hedge ratio percent, {low_hedge}-{high_hedge}; the pair beta is a guide.\n"
        f"beta: the flagged symbol's beta percent, {low_beta}-{high_beta}; its fit is a guide; "
        "repeat the current value to keep it (ignored when no beta is shown).\n"
        f"skew: quote skew in 0.1 bp, {-skew} to {skew}; positive moves quotes up.\n"
        f"ttl: ms the advice stays valid, {spec.ttl_ms[0]}-{spec.ttl_ms[1]}.\n"
        f"why: a few words, no digits, at most {spec.reasoning_chars} characters.\n"
        "Hold unless there is real danger: EMERGENCY, one-sided book and flow, high "
        "volatility, losses near a limit, a broken hedge. Examples:\n"
        f'{{"act":"hold","risk":100,"hedge":{example_hedge},"beta":{example_beta},"skew":0,'
        '"ttl":5000,"why":"lean only, book and flow balanced"}\n'
        f'{{"act":"reduce","risk":60,"hedge":{example_hedge},"beta":{example_beta},"skew":-10,'
        '"ttl":8000,"why":"emergency, sell flow one-sided, vol high"}'
    )


def _compact(value: float) -> str:
    """A size with at most six significant digits and no trailing zeros."""
    return f"{value:.6g}"


def _percent(value: float) -> str:
    """A probability or a [-1, 1] feature as whole percent: two tokens instead of five."""
    return f"{value * 100:.0f}"


def format_context(
    request: KevRequest,
    risk: RiskSnapshot,
    hedge: HedgeStats | None,
    age_ms: float,
) -> str:
    """The user message for one request (the legend is in the system prompt); `age_ms` is how
    long its symbol has waited. A digit is a token to small models, so numbers carry only the
    digits that matter."""
    snapshot = request.snapshot
    key_features = snapshot.features.reshape(-1)[KEY_FEATURE_INDEX].tolist()
    obi1, obi5, obi15, micro, spread, vpin, flow1, flow5, vol5, vol60 = key_features
    probabilities = " ".join(_percent(p) for p in snapshot.probabilities)
    counts = " ".join(
        f"{_VERDICT_NAMES[k]} {count}" for k, count in enumerate(request.verdict_counts) if count
    )
    held = [view for view in risk.positions if view.size]
    positions = (
        ", ".join(
            f"{view.symbol} {_compact(view.size)} {view.notional:+.0f} {view.unrealized_pnl:+.1f}"
            for view in held
        )
        if held
        else "flat"
    )
    limits = risk.limits
    # Slow-changing lines first: the prompt cache reuses every token up to the first change.
    lines = [
        f"{risk.state.name}{' flattening' if risk.flatten_requested else ''} "
        f"risk {displayed_percent(risk.risk_scale)} hedge {displayed_percent(risk.hedge_ratio)} "
        f"limits {risk.max_net_delta:.0f} -{limits.daily_loss_soft:g} -{limits.daily_loss_hard:g}",
        f"pos {positions} delta {risk.net_delta:+.0f} pnl {risk.daily_pnl:+.1f}",
    ]
    pair = []
    # A quoted symbol's beta, only where a hedge trades it (the gateway holds it still without).
    beta = risk.betas.get(snapshot.symbol) if risk.hedge_symbol is not None else None
    if beta is not None:
        pair.append(f"beta {displayed_percent(beta)}")
        if hedge is not None and hedge.hedge_ratio > 0.0:
            pair.append(f"fit {risk.hedge_ratio / hedge.hedge_ratio * 100:.0f}")
    if hedge is not None:
        half_life = f"{hedge.half_life_s:.0f}s" if hedge.half_life_s is not None else "none"
        pair.append(
            f"pair {hedge.hedge_ratio:.2f} z {hedge.spread_z:+.1f} "
            f"eg {hedge.engle_granger:.1f}/{hedge.critical_5pct:.1f} {half_life}"
        )
    if pair:
        lines.append(" ".join(pair))
    lines += [
        f"{snapshot.symbol} {_VERDICT_NAMES[snapshot.verdict]} p {probabilities}; "
        f"{age_ms / 1000:.1f}s: {counts}",
        f"imb {_percent(obi1)} {_percent(obi5)} {_percent(obi15)} vpin {_percent(vpin)} "
        f"flow {_percent(flow1)} {_percent(flow5)} micro {micro:.1f} spread {spread:.1f} "
        f"vol {vol5:.1f} {vol60:.1f}",
    ]
    return "\n".join(lines)


def warmup_context(symbol: str, risk: RiskSnapshot, hedge: HedgeStats | None, now_ns: int) -> str:
    """A neutral context for the prompt cache's warm-up: the trading lines as they are now (the
    first real context repeats them, so the cache covers them too) and a market where nothing
    is flagged (a certain HOLD on flat features)."""
    neutral = KevSnapshot(
        symbol, now_ns // 1_000_000, int(Verdict.HOLD), (1.0, 0.0, 0.0, 0.0), 0.0, _FLAT_FEATURES
    )
    return format_context(
        KevRequest(neutral, now_ns, now_ns, 0, (1, 0, 0, 0), False), risk, hedge, 0.0
    )


_FLAT_FEATURES = np.zeros((1, FEATURE_COUNT), np.float32)


def displayed_percent(fraction: float) -> int:
    """How a fraction is shown to Kev: whole percent, rounded down, so that repeating the
    shown value can never raise it."""
    return int(fraction * 100 + 1e-9)
