"""What every fuzz target shares: the invariant error, the per-target tally, deep JSON text.

A target is an object with `name`, `check_bytes(data)` (atheris and raw-byte hypothesis
inputs) and structured `check_*` methods (hypothesis strategies). A check raises
`InvariantViolation` when the code under test answered something it must never answer; any
other exception escaping a check is an unhandled exception of the code under test.
`FuzzTally.run` counts both instead of stopping, so the full run (scripts/fuzz) reports totals.
"""

from __future__ import annotations

import math
import os
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

from hypothesis import HealthCheck, Phase, settings

KEPT_EXAMPLES = 5
_PREVIEW_CHARS = 300


class InvariantViolation(AssertionError):
    """The code under test answered without raising, but broke one of its promises."""


def require(condition: bool, message: str) -> None:
    if not condition:
        raise InvariantViolation(message)


def require_finite(value: float, name: str, *, positive: bool = False) -> None:
    ok = isinstance(value, float | int) and math.isfinite(value) and (value > 0 or not positive)
    require(ok, f"{name} {value!r} is not a {'positive ' if positive else ''}finite number")


def deep_json(depth: int) -> bytes:
    """A JSON array nested `depth` deep: orjson reads up to 1024 levels, but Python's repr and
    str of such a value exceed the interpreter's recursion limit."""
    return b"[" * depth + b"]" * depth


@dataclass
class FuzzTally:
    """Inputs tried, unhandled exceptions and invariant violations of one target, with the
    first few failing inputs kept for reproduction."""

    target: str
    inputs: int = 0
    unhandled: int = 0
    violations: int = 0
    examples: list[str] = field(default_factory=list)

    def run(self, check: Callable[[object], None], value: object) -> None:
        self.inputs += 1
        try:
            check(value)
        except InvariantViolation as error:
            self.violations += 1
            self._keep("invariant", error, value)
        except Exception as error:
            self.unhandled += 1
            self._keep("unhandled", error, value)

    def _keep(self, kind: str, error: BaseException, value: object) -> None:
        if len(self.examples) >= KEPT_EXAMPLES:
            return
        where = traceback.extract_tb(error.__traceback__)[-1]
        try:
            preview = repr(value)[:_PREVIEW_CHARS]
        except RecursionError:
            preview = "(too deep to show)"
        self.examples.append(
            f"{kind}: {type(error).__name__}: {str(error)[:200]} at {where.filename}:"
            f"{where.lineno}; input {preview}"
        )


PROFILE_ENV = "HYPOTHESIS_PROFILE"
FULL_EXAMPLES = 100_000


def fuzz_settings(ci_examples: int) -> settings:
    """Hypothesis settings of a fuzz test: `ci_examples` under the `ci` profile (the default),
    FULL_EXAMPLES under `HYPOTHESIS_PROFILE=full`. Applied per test, never loaded globally, so
    the rest of the suite keeps its own settings."""
    full = os.environ.get(PROFILE_ENV, "ci") == "full"
    return settings(
        max_examples=FULL_EXAMPLES if full else ci_examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),
    )
