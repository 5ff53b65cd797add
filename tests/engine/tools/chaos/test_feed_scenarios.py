"""The feed chaos scenarios, each against its own simulator and engine (short silence)."""

from __future__ import annotations

import pytest

from engine.tools.chaos.feed_scenarios import FILLS_UNHEARD, feed_scenarios
from engine.tools.chaos.scenario import ScenarioResult, format_results

SCENARIOS = {scenario.name: scenario for scenario in feed_scenarios(silence_s=3.0)}


def _explain(result: ScenarioResult) -> str:
    return format_results([result])


@pytest.mark.parametrize("name", ["ws-drop-mid-frame", "malformed-burst", "books-seq-gap"])
async def test_feed_scenario_passes(name: str) -> None:
    result = await SCENARIOS[name].run()
    assert result.passed, _explain(result)
    assert result.recover_s is not None


async def test_silence_blocks_risk_and_recovers() -> None:
    """The simulator's silence also loses private pushes: a fill made meanwhile is never
    heard, and the engine must recover it from the exchange (journaled, orders and positions
    reconciled) like everything else the silence is about."""
    result = await SCENARIOS["silence-30s"].run()
    assert result.passed, _explain(result)
    assert result.recover_s is not None, _explain(result)
    unheard = int(result.note.rpartition(f"{FILLS_UNHEARD} ")[2])
    assert unheard > 0, f"no fill during the silence: recovery not exercised\n{_explain(result)}"


def test_a_silence_too_short_to_notice_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 3 s"):
        feed_scenarios(silence_s=1.0)
