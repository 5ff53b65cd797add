"""What a chaos scenario is and what it reports: named checks, each passed or failed with why,
and the time the engine took to recover from the fault."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Check:
    """One asserted expectation: `what` is the rule, `detail` what was seen."""

    what: str
    ok: bool
    detail: str = ""


@dataclass(frozen=True, slots=True)
class ScenarioResult:
    """`recover_s`: from the fault's end (or its start, for a one-shot fault) to the engine
    back in its normal state; None where the scenario has nothing to recover from."""

    name: str
    checks: tuple[Check, ...]
    recover_s: float | None
    elapsed_s: float
    note: str = ""

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(check.ok for check in self.checks)

    @property
    def failures(self) -> tuple[Check, ...]:
        return tuple(check for check in self.checks if not check.ok)


@dataclass(frozen=True, slots=True)
class Scenario:
    """`expected`: the behaviour the checks assert, in one line. `run` builds everything it
    needs (simulator, engine, servers) and tears it all down, whatever happens."""

    name: str
    expected: str
    run: Callable[[], Awaitable[ScenarioResult]]


class CheckList:
    """Collects checks while a scenario runs; `check` returns `ok` so a scenario can branch."""

    def __init__(self) -> None:
        self._checks: list[Check] = []

    def check(self, what: str, ok: bool, detail: str = "") -> bool:
        self._checks.append(Check(what, bool(ok), detail))
        return bool(ok)

    def result(
        self, name: str, recover_s: float | None, elapsed_s: float, note: str = ""
    ) -> ScenarioResult:
        return ScenarioResult(name, tuple(self._checks), recover_s, elapsed_s, note)


def format_results(results: Sequence[ScenarioResult]) -> str:
    """The chaos table: scenario, pass/fail, time to recover, checks passed, and each failed
    check's rule and what was seen under it."""
    width = max([len("scenario"), *(len(result.name) for result in results)])
    lines = [f"{'scenario':<{width}}  result  recover s  checks  elapsed s"]
    for result in results:
        recover = f"{result.recover_s:9.2f}" if result.recover_s is not None else f"{'-':>9}"
        passed = sum(check.ok for check in result.checks)
        verdict = "pass" if result.passed else "FAIL"
        lines.append(
            f"{result.name:<{width}}  {verdict:<6}  {recover}  {passed:>2}/{len(result.checks):<3}"
            f"  {result.elapsed_s:9.1f}"
        )
        for check in result.failures:
            lines.append(f"    failed: {check.what}: {check.detail}")
    failed = sum(not result.passed for result in results)
    lines.append(f"{len(results) - failed} of {len(results)} scenarios passed")
    return "\n".join(lines)
