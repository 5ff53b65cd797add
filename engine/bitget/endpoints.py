"""Where Bitget's v2 API is and what it allows: hosts, paths, rate limits, the signing window and
the private channels. The clients and the simulator read this one table."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

PUBLIC_WS_PATH = "/v2/ws/public"
PRIVATE_WS_PATH = "/v2/ws/private"
BITGET_REST_URL = "https://api.bitget.com"
BITGET_PUBLIC_URL = f"wss://ws.bitget.com{PUBLIC_WS_PATH}"
BITGET_PRIVATE_URL = f"wss://ws.bitget.com{PRIVATE_WS_PATH}"
BITGET_DEMO_PUBLIC_URL = f"wss://wspap.bitget.com{PUBLIC_WS_PATH}"
BITGET_DEMO_PRIVATE_URL = f"wss://wspap.bitget.com{PRIVATE_WS_PATH}"

PRODUCT_TYPE = "USDT-FUTURES"
MARGIN_COIN = "USDT"

_ORDER_PATH = "/api/v2/mix/order"
PLACE_ORDER = f"{_ORDER_PATH}/place-order"
CANCEL_ORDER = f"{_ORDER_PATH}/cancel-order"
BATCH_CANCEL_ORDERS = f"{_ORDER_PATH}/batch-cancel-orders"
CANCEL_ALL_ORDERS = f"{_ORDER_PATH}/cancel-all-orders"
CLOSE_POSITIONS = f"{_ORDER_PATH}/close-positions"
ORDERS_PENDING = f"{_ORDER_PATH}/orders-pending"
ORDER_DETAIL = f"{_ORDER_PATH}/detail"
ORDER_FILLS = f"{_ORDER_PATH}/fills"
ALL_POSITION = "/api/v2/mix/position/all-position"
SERVER_TIME = "/api/v2/public/time"
CONTRACTS = "/api/v2/mix/market/contracts"
TICKERS = "/api/v2/mix/market/tickers"

RATE_WINDOW_S = 1.0
RATE_LIMITS_PER_S: Mapping[str, int] = MappingProxyType(
    {
        PLACE_ORDER: 10,
        CANCEL_ORDER: 10,
        BATCH_CANCEL_ORDERS: 10,
        CANCEL_ALL_ORDERS: 10,
        CLOSE_POSITIONS: 1,
        ALL_POSITION: 5,
        ORDERS_PENDING: 10,
        ORDER_DETAIL: 10,
        ORDER_FILLS: 10,
        SERVER_TIME: 20,
        CONTRACTS: 20,
        TICKERS: 20,
    }
)
"""Bitget's per-UID (per-IP for server time, the contract table and the tickers) request
limits, each over a 1 s window (§6)."""

SIGNING_WINDOW_MS = 30_000
"""Bitget refuses a signed request or login whose timestamp is further than this from its clock."""

ORDERS_CHANNEL = "orders"
FILL_CHANNEL = "fill"
POSITIONS_CHANNEL = "positions"
PRIVATE_CHANNELS = (ORDERS_CHANNEL, FILL_CHANNEL, POSITIONS_CHANNEL)
ALL_SYMBOLS = "default"
"""The `instId` of a private subscription that covers every symbol."""
