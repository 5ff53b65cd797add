"""Helpers for end-to-end tests: the engine on a simulator, and what the simulator saw."""

from __future__ import annotations

from pathlib import Path

from support.bitget import sim_credentials

from engine.bitget.rest import BitgetRestClient, BitgetRestConfig
from engine.config import EngineConfig
from engine.laya.config import LayaClassifierConfig
from engine.market.matching import FIRST_ORDER_ID, Order
from engine.sim.server import SimExchange
from engine.tools.bench.trading import ALWAYS_EMERGENCY, NEVER_EMERGENCY
from engine.trading.config import QuotingStrategyConfig, TradingConfig

__all__ = ["ALWAYS_EMERGENCY", "NEVER_EMERGENCY"]


def engine_config(
    sim: SimExchange,
    model: Path,
    journal: Path,
    *,
    thresholds: tuple[float, ...] = NEVER_EMERGENCY,
    rest_timeout_s: float = 3.0,
    **strategy: object,
) -> EngineConfig:
    """The engine on `sim` (started apart, on loopback), quoting close to the touch."""
    settings: dict[str, object] = {"half_spread_bps": 0.05, "emergency_cooldown_ms": 200}
    settings.update(strategy)
    trading = TradingConfig(
        strategies=(QuotingStrategyConfig(**settings),),  # type: ignore[arg-type]
        journal_path=journal,
        rest_url=sim.rest_url,
        rest_timeout_s=rest_timeout_s,
    )
    laya = LayaClassifierConfig(model_path=model, prefer_gpu=False, thresholds=thresholds)
    return EngineConfig(live_url=sim.ws_url, laya=laya, trading=trading)


def sim_orders(sim: SimExchange) -> list[Order]:
    """Every order the simulator ever took (its ids are consecutive across symbols)."""
    engines = [sim.engine(symbol) for symbol in ("BTCUSDT", "ETHUSDT")]
    orders = []
    order_id = FIRST_ORDER_ID
    while True:
        found = [engine.order(str(order_id)) for engine in engines]
        known = [order for order in found if order is not None]
        if not known:
            return orders
        orders.extend(known)
        order_id += 1


async def sim_rest(sim: SimExchange) -> BitgetRestClient:
    """A REST client of our own, to ask the simulator what it holds."""
    client = BitgetRestClient(BitgetRestConfig(base_url=sim.rest_url), sim_credentials(sim))
    await client.start()
    return client
