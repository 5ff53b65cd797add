"""The private-REST chaos scenarios, each against its own simulator and engine."""

from __future__ import annotations

import pytest

from engine.tools.chaos.exchange_scenarios import exchange_scenarios
from engine.tools.chaos.scenario import format_results

SCENARIOS = {scenario.name: scenario for scenario in exchange_scenarios()}


@pytest.mark.parametrize(
    "name", ["rest-429-storm", "rest-timeouts-during-kill", "cancel-5xx", "clock-skew-30s"]
)
async def test_exchange_scenario_passes(name: str) -> None:
    result = await SCENARIOS[name].run()
    assert result.passed, format_results([result])
    assert result.recover_s is not None
