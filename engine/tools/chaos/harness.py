"""The rig a chaos scenario runs in: its own simulated exchange on loopback and a headless
EngineNode trading it in sim mode, and the checks every scenario shares: the engine still
running, nothing the exchange acknowledged lost, orders and positions reconciled.

The simulator runs in the scenario's process so that what it holds (orders, fills, positions)
is read directly, at the same instant as the engine's view, without a REST call of its own
that a fault would hit.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from engine.bitget.orders import OrderSide, OrderType, TimeInForce
from engine.bitget.public_ws import BitgetPublicFeed
from engine.config import EngineConfig
from engine.feed.events import BookSnapshot, FeedState
from engine.feed.sink import FeedNotice
from engine.journal import EntryKind, read_journal
from engine.laya.config import DEFAULT_MODEL_PATH, LayaClassifierConfig
from engine.laya.decide import QuoteIntent
from engine.market.matching import FIRST_ORDER_ID, Order
from engine.node import EngineNode
from engine.pipeline import PipelineSinks
from engine.risk.intents import OrderIntent, RiskDecision, Source
from engine.sim.market import MarketGeneratorConfig
from engine.sim.server import SimExchange, SimExchangeConfig
from engine.tools.bench.trading import NEVER_EMERGENCY
from engine.tools.chaos.scenario import Check, CheckList, ScenarioResult
from engine.trading.config import QuotingStrategyConfig, TradingConfig
from engine.trading.desk import TradingDesk
from engine.trading.executor import OrderExecutor
from engine.trading.strategy import Grid
from engine.trading.tracked_order import OrderRole

_SIZE_TOLERANCE = 1e-9
_POLL_S = 0.01


@dataclass(frozen=True, slots=True)
class ChaosRigConfig:
    """The simulator and engine of one scenario. The engine quotes close to the touch with
    Laya's model running on every book but never calling EMERGENCY, so orders rest and fill
    while the fault hits; Kev is off (its own scenarios kill its server)."""

    feed_channels: tuple[str, ...] = ("books15", "trade")
    rest_timeout_s: float = 3.0
    book_interval_ms: int = 50
    seed: int = 11
    model_path: Path = DEFAULT_MODEL_PATH
    ready_timeout_s: float = 60.0
    """How long the engine may take to start and rest its first two quotes."""
    strategy: QuotingStrategyConfig = field(
        default_factory=lambda: QuotingStrategyConfig(
            half_spread_bps=0.05, emergency_cooldown_ms=200
        )
    )

    def __post_init__(self) -> None:
        if not 10 <= self.book_interval_ms <= 1_000:
            raise ValueError(
                f"book_interval_ms must be within 10..1000, got {self.book_interval_ms}"
            )
        for name in ("rest_timeout_s", "ready_timeout_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")


@dataclass(frozen=True, slots=True)
class AccountView:
    """What one side believes: our open orders (clientOids) and positions (signed, base coin;
    flat symbols left out)."""

    open_orders: frozenset[str]
    positions: Mapping[str, float]


class PipelineTaps:
    """What a scenario watches between the pipeline and the desk: each function in `decided`
    sees every decided book, each in `notices` every feed notice, right after the desk did
    (the rig builds its engine with `around`); a scenario adds its own and takes it away."""

    def __init__(self) -> None:
        self.decided: list[Callable[[BookSnapshot, QuoteIntent], None]] = []
        self.notices: list[Callable[[FeedNotice], None]] = []

    def around(self, desk: PipelineSinks) -> PipelineSinks:
        desk_on_book, desk_on_notice = desk.on_decided, desk.on_notice
        assert desk_on_book is not None and desk_on_notice is not None  # the rig trades

        def on_decided(snapshot: BookSnapshot, intent: QuoteIntent) -> None:
            desk_on_book(snapshot, intent)
            for tap in self.decided:
                tap(snapshot, intent)

        def on_notice(event: FeedNotice) -> None:
            desk_on_notice(event)
            for tap in self.notices:
                tap(event)

        return dataclasses.replace(desk, on_decided=on_decided, on_notice=on_notice)


class ChaosRig:
    """Starts the simulator, then the engine on it, and waits until quotes rest; `stop` tears
    both down and removes the journal's directory."""

    def __init__(self, config: ChaosRigConfig | None = None) -> None:
        self.config = config or ChaosRigConfig()
        self.sim = SimExchange(
            SimExchangeConfig(
                book_interval_ms=self.config.book_interval_ms,
                warmup_ms=2_000,
                market=MarketGeneratorConfig(seed=self.config.seed),
            )
        )
        self._directory: tempfile.TemporaryDirectory[str] | None = None
        self._node: EngineNode | None = None
        self.taps = PipelineTaps()

    async def __aenter__(self) -> ChaosRig:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def start(self) -> None:
        config = self.config
        self._directory = tempfile.TemporaryDirectory(prefix="hft-chaos-")
        await self.sim.start()
        trading = TradingConfig(
            strategies=(config.strategy,),
            journal_path=Path(self._directory.name) / "journal.sqlite",
            rest_url=self.sim.rest_url,
            rest_timeout_s=config.rest_timeout_s,
        )
        laya = LayaClassifierConfig(
            model_path=config.model_path, prefer_gpu=False, thresholds=NEVER_EMERGENCY
        )
        self._node = EngineNode(
            EngineConfig(
                live_url=self.sim.ws_url,
                feed_channels=config.feed_channels,
                laya=laya,
                trading=trading,
                kev_client=None,
                laya_keep_warm_ms=None,
            ),
            wrap_sinks=self.taps.around,
        )
        await self._node.start()
        waited = await self.until(lambda: len(self.our_open_at_sim()) >= 2, config.ready_timeout_s)
        if waited is None:
            raise RuntimeError(
                f"chaos rig: the engine rested no quotes within {config.ready_timeout_s:g} s"
            )

    async def stop(self) -> None:
        try:
            if self._node is not None:
                await self._node.stop()
        finally:
            await self.sim.stop()
            if self._directory is not None:
                self._directory.cleanup()
                self._directory = None

    # The engine's parts

    @property
    def node(self) -> EngineNode:
        if self._node is None:
            raise RuntimeError("chaos rig not started")
        return self._node

    @property
    def desk(self) -> TradingDesk:
        desk = self.node.desk
        assert desk is not None
        return desk

    @property
    def executor(self) -> OrderExecutor:
        return self.desk.executor

    @property
    def feed(self) -> BitgetPublicFeed:
        feed = self.node.feed
        assert isinstance(feed, BitgetPublicFeed)
        return feed

    @property
    def prefix(self) -> str:
        """The clientOid prefix of this engine session's orders."""
        return f"{self.executor.config.client_oid_prefix}{self.desk.session}"

    # The exchange's side

    def our_sim_orders(self) -> list[Order]:
        """Every order of ours the simulator took, open or closed (ids are consecutive across
        symbols; orders it placed itself, such as flash closes, have no clientOid of ours)."""
        engines = [self.sim.engine(symbol) for symbol in self.desk.config.symbols]
        orders: list[Order] = []
        order_id = FIRST_ORDER_ID
        while True:
            found = [order for engine in engines if (order := engine.order(str(order_id)))]
            if not found:
                return [order for order in orders if order.client_oid.startswith(self.prefix)]
            orders.extend(found)
            order_id += 1

    def our_open_at_sim(self) -> set[str]:
        return {
            o.client_oid for o in self.sim.open_orders() if o.client_oid.startswith(self.prefix)
        }

    def venue_view(self) -> AccountView:
        positions = {p.symbol: p.size for p in self.sim.positions() if p.size}
        return AccountView(frozenset(self.our_open_at_sim()), positions)

    def engine_view(self) -> AccountView:
        executor = self.executor
        executor.invalidate_risk_view()
        positions = {p.symbol: p.size for p in executor.risk_view().positions if p.size}
        return AccountView(frozenset(view.client_oid for view in executor.open_orders()), positions)

    # Waiting and probing

    async def until(self, condition: Callable[[], bool], timeout_s: float) -> float | None:
        """Seconds until `condition` held, or None when `timeout_s` passed first."""
        started = time.monotonic()
        while not condition():
            if time.monotonic() - started > timeout_s:
                return None
            await asyncio.sleep(_POLL_S)
        return time.monotonic() - started

    def all_live(self) -> bool:
        return all(self.feed.state(symbol) is FeedState.LIVE for symbol in self.node.config.symbols)

    def denials(self) -> Counter[str]:
        counts = self.desk.gateway.snapshot().denial_counts
        return Counter({reason.name: count for reason, count in counts.items() if count})

    def probe(self, symbol: str) -> RiskDecision:
        """Offer the gateway a small passive order that adds to `symbol`'s position (2% from
        the mark, so it would not fill), as an operator would; approved, it is cancelled."""
        executor = self.executor
        executor.invalidate_risk_view()
        view = next(p for p in executor.risk_view().positions if p.symbol == symbol)
        grid = Grid(self.desk.config.instrument(symbol))
        limits = next(s for s in self.desk.gateway.config.limits.symbols if s.symbol == symbol)
        size = grid.floor_size(limits.max_order_size / 5)
        side = OrderSide.BUY if view.size >= 0 else OrderSide.SELL
        mark = view.mark_price
        price = (
            grid.floor_price(mark * 0.98) if side is OrderSide.BUY else grid.ceil_price(mark * 1.02)
        )
        intent = OrderIntent(
            symbol,
            side,
            size,
            price,
            OrderType.LIMIT,
            executor.new_client_oid(OrderRole.OPERATOR),
            Source.OPERATOR,
            TimeInForce.POST_ONLY,
            False,
            "chaos probe: a risk-increasing order",
        )
        decision = executor.submit(intent, OrderRole.OPERATOR)
        if decision.approved:
            executor.cancel(intent.client_oid, Source.OPERATOR, "chaos probe done")
        executor.drain_risk_events()
        return decision


# Shared checks


def reconciliation_checks(engine: AccountView, venue: AccountView) -> list[Check]:
    """The engine's open orders and positions against the venue's."""
    only_engine = sorted(engine.open_orders - venue.open_orders)
    only_venue = sorted(venue.open_orders - engine.open_orders)
    orders = Check(
        "orders: the engine's open orders are the venue's",
        not only_engine and not only_venue,
        f"{len(venue.open_orders)} open at the venue"
        + (f"; only in the engine {only_engine}" if only_engine else "")
        + (f"; only at the venue {only_venue}" if only_venue else ""),
    )
    symbols = sorted(set(engine.positions) | set(venue.positions))
    apart = {
        symbol: (engine.positions.get(symbol, 0.0), venue.positions.get(symbol, 0.0))
        for symbol in symbols
        if abs(engine.positions.get(symbol, 0.0) - venue.positions.get(symbol, 0.0))
        > _SIZE_TOLERANCE
    }
    positions = Check(
        "positions: the engine's equal the venue's",
        not apart,
        ", ".join(f"{s} engine {e:+g} venue {v:+g}" for s, (e, v) in apart.items())
        or (", ".join(f"{s} {venue.positions.get(s, 0.0):+g}" for s in symbols) or "flat"),
    )
    return [orders, positions]


async def reconcile(rig: ChaosRig, checks: CheckList, timeout_s: float = 10.0) -> None:
    """Orders and positions reconcile: the two views agree at a moment with nothing in flight
    (retried for `timeout_s`; the last views are reported when they never agree)."""
    views: list[tuple[AccountView, AccountView]] = []

    def agree() -> bool:
        views.append((rig.engine_view(), rig.venue_view()))
        del views[:-1]
        return all(check.ok for check in reconciliation_checks(*views[-1]))

    await rig.until(agree, timeout_s)
    for check in reconciliation_checks(*views[-1]):
        checks.check(check.what, check.ok, check.detail)


async def nothing_lost(rig: ChaosRig, checks: CheckList, timeout_s: float = 5.0) -> None:
    """Every order the exchange took was journaled before it was sent, none twice, and every
    fill the exchange made of ours reached the journal."""
    orders = rig.our_sim_orders()
    counts = Counter(order.client_oid for order in orders)
    duplicated = sorted(oid for oid, n in counts.items() if n > 1)
    checks.check(
        "no order placed twice (clientOid)",
        not duplicated,
        f"{len(orders)} orders at the venue" + (f"; duplicated {duplicated}" if duplicated else ""),
    )
    journal = rig.desk.journal
    path = journal.config.path
    fills = [fill for fill in rig.sim.fills() if fill.client_oid.startswith(rig.prefix)]
    missing_orders: list[str] = []
    missing_fills: list[str] = []

    def journaled() -> bool:
        journal.flush()
        approved = {
            entry.payload.get("client_oid")
            for entry in read_journal(path, kinds=[EntryKind.ORDER_APPROVED])
        }
        filled = {
            entry.payload.get("trade_id") for entry in read_journal(path, kinds=[EntryKind.FILL])
        }
        missing_orders[:] = sorted(counts.keys() - approved)
        missing_fills[:] = sorted(fill.trade_id for fill in fills if fill.trade_id not in filled)
        return not missing_orders and not missing_fills

    await rig.until(journaled, timeout_s)
    checks.check(
        "every order at the venue was journaled before it was sent",
        not missing_orders,
        f"missing {missing_orders}" if missing_orders else f"{len(counts)} orders",
    )
    checks.check(
        "every fill the venue made of ours is journaled",
        not missing_fills,
        f"missing trade ids {missing_fills}" if missing_fills else f"{len(fills)} fills",
    )


async def still_running(rig: ChaosRig, checks: CheckList, timeout_s: float = 5.0) -> None:
    """The engine keeps running: frames still arrive and reach the books, every symbol is
    live, and no feed task ended in an internal error."""
    node = rig.node
    frames = node.parser.stats.frames
    waited = await rig.until(
        lambda: node.parser.stats.frames > frames + 10 and rig.all_live(), timeout_s
    )
    states = ", ".join(f"{s} {rig.feed.state(s).value}" for s in node.config.symbols)
    checks.check(
        "the engine keeps running: frames flow, every symbol live", waited is not None, states
    )
    stats = rig.feed.stats
    checks.check(
        "no internal or handler error in the feed",
        stats.internal_errors == 0 and stats.handler_errors == 0,
        f"internal {stats.internal_errors}, handler {stats.handler_errors}"
        + (f" ({stats.last_handler_error})" if stats.last_handler_error else ""),
    )


ScenarioBody = Callable[[ChaosRig, CheckList], Awaitable[tuple[float | None, str]]]
"""A scenario's part inside the rig: injects, checks, returns (recover_s, note)."""


async def run_in_rig(name: str, config: ChaosRigConfig, body: ScenarioBody) -> ScenarioResult:
    """Start a rig, run `body` in it, tear it down whatever happens; an exception (the rig
    would not start, the engine raised) is a failed check that says what was raised."""
    started = time.monotonic()
    checks = CheckList()
    recover_s: float | None = None
    note = ""
    rig = ChaosRig(config)
    try:
        await rig.start()
        recover_s, note = await body(rig, checks)
    except Exception as error:
        checks.check("the scenario ran to its end", False, f"{type(error).__name__}: {error}")
    finally:
        try:
            await rig.stop()
        except Exception as error:
            checks.check("the engine and simulator stop", False, f"{type(error).__name__}: {error}")
    return checks.result(name, recover_s, time.monotonic() - started, note)
