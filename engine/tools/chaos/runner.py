"""Every chaos scenario by name, and running a chosen few in order: feed first, then the
exchange, then the host (Kev's server, NVML, the journal's disk)."""

from __future__ import annotations

from collections.abc import Sequence

from engine.tools.chaos.exchange_scenarios import exchange_scenarios
from engine.tools.chaos.feed_scenarios import feed_scenarios
from engine.tools.chaos.host_scenarios import SCENARIOS as HOST_SCENARIOS
from engine.tools.chaos.scenario import Scenario, ScenarioResult


def all_scenarios(silence_s: float = 30.0) -> tuple[Scenario, ...]:
    """The registry, in running order; `silence_s` is the feed silence's length."""
    return (*feed_scenarios(silence_s), *exchange_scenarios(), *HOST_SCENARIOS)


def select_scenarios(
    names: Sequence[str] | None = None, silence_s: float = 30.0
) -> tuple[Scenario, ...]:
    """The named scenarios in registry order (all of them for None or an empty list); an
    unknown name raises ValueError listing the known ones."""
    registry = all_scenarios(silence_s)
    if not names:
        return registry
    known = {scenario.name for scenario in registry}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(
            f"unknown chaos scenario {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    wanted = set(names)
    return tuple(scenario for scenario in registry if scenario.name in wanted)


async def run_scenarios(
    names: Sequence[str] | None = None, silence_s: float = 30.0
) -> list[ScenarioResult]:
    """Run the named scenarios one after another (each starts and stops its own engine)."""
    return [await scenario.run() for scenario in select_scenarios(names, silence_s)]
