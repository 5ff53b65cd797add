"""The registry: names, order, selection; one scenario run through it."""

from __future__ import annotations

import pytest

from engine.tools.chaos.runner import all_scenarios, run_scenarios, select_scenarios

FEED = ["ws-drop-mid-frame", "silence-30s", "malformed-burst", "books-seq-gap"]
EXCHANGE = ["rest-429-storm", "rest-timeouts-during-kill", "cancel-5xx", "clock-skew-30s"]


def test_feed_then_exchange_then_host_and_names_unique() -> None:
    names = [scenario.name for scenario in all_scenarios()]
    assert names[:8] == FEED + EXCHANGE
    assert len(names) > 8  # the host scenarios follow
    assert len(set(names)) == len(names)


def test_selection_keeps_registry_order_and_refuses_unknown_names() -> None:
    chosen = select_scenarios(["cancel-5xx", "ws-drop-mid-frame"], silence_s=3)
    assert [s.name for s in chosen] == ["ws-drop-mid-frame", "cancel-5xx"]
    with pytest.raises(ValueError, match=r"unknown chaos scenario nope; known: .*books-seq-gap"):
        select_scenarios(["nope"])


async def test_run_scenarios_runs_the_named_ones() -> None:
    results = await run_scenarios(["books-seq-gap"])
    assert [result.name for result in results] == ["books-seq-gap"]
    assert results[0].checks
