"""The Bitget client tests' kit: quick retry settings and credentials for the scripted and the
simulated exchange."""

from __future__ import annotations

from typing import Any

from engine.bitget.credentials import Credentials
from engine.sim.server import SimExchange

FAST_RETRIES: dict[str, Any] = {
    "retry_initial_s": 0.01,
    "retry_max_s": 0.05,
    "reconcile_grace_s": 0.05,
    "request_timeout_s": 2.0,
    "connect_timeout_s": 1.0,
}
"""Client settings that keep retry tests quick without changing what they exercise."""
SCRIPTED_CREDENTIALS = Credentials("bg_test_key_0001", "scripted-secret-x9", "scripted-pass-q7")


def sim_credentials(sim: SimExchange) -> Credentials:
    config = sim.config
    return config.credentials()
