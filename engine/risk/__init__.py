"""The risk gateway: every order passes its checks before the executor sees it (pure logic)."""

from engine.risk.commands import CommandOutcome, KevAction, KevCommandOutcome
from engine.risk.events import (
    CommandRejected,
    DailyPnlReset,
    EventsDropped,
    OrderDenied,
    OutboxOverflow,
    PositionReconciled,
    RiskEvent,
    RiskLimitChanged,
    TradingState,
    TradingStateChanged,
)
from engine.risk.gateway import RiskGateway
from engine.risk.intents import (
    APPROVED,
    CancelIntent,
    CancelScope,
    ClosePositionsIntent,
    DenialReason,
    OrderIntent,
    OrderSide,
    OrderType,
    RiskDecision,
    Source,
    TimeInForce,
)
from engine.risk.limits import (
    EndpointLimits,
    OverrideBounds,
    RiskGatewayConfig,
    RiskLimits,
    SymbolLimits,
)
from engine.risk.overrides import RiskOverrides
from engine.risk.snapshot import LimitsInForce, PositionView, RiskSnapshot

__all__ = [
    "APPROVED",
    "CancelIntent",
    "CancelScope",
    "ClosePositionsIntent",
    "CommandOutcome",
    "CommandRejected",
    "DailyPnlReset",
    "DenialReason",
    "EndpointLimits",
    "EventsDropped",
    "KevAction",
    "KevCommandOutcome",
    "LimitsInForce",
    "OrderDenied",
    "OrderIntent",
    "OrderSide",
    "OrderType",
    "OutboxOverflow",
    "OverrideBounds",
    "PositionReconciled",
    "PositionView",
    "RiskDecision",
    "RiskEvent",
    "RiskGateway",
    "RiskGatewayConfig",
    "RiskLimitChanged",
    "RiskLimits",
    "RiskOverrides",
    "RiskSnapshot",
    "Source",
    "SymbolLimits",
    "TimeInForce",
    "TradingState",
    "TradingStateChanged",
]
