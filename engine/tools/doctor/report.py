"""A check's verdict and the report of them all."""

from __future__ import annotations

import enum
import json
import textwrap
from dataclasses import asdict, dataclass

_DETAIL_MAX = 300


class CheckStatus(enum.StrEnum):
    OK = "ok"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check's verdict. `fix` is one line, required when the status is warn or fail."""

    name: str
    status: CheckStatus
    detail: str
    fix: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", CheckStatus(self.status))
        if not self.name:
            raise ValueError("CheckResult.name must not be empty")
        if self.status in (CheckStatus.WARN, CheckStatus.FAIL) and not self.fix:
            raise ValueError(f"CheckResult {self.name}: a {self.status} result needs a fix")
        if "\n" in self.fix:
            raise ValueError(f"CheckResult {self.name}: the fix must be one line")


@dataclass(frozen=True, slots=True)
class DoctorReport:
    """All checks in their fixed order, and how long the doctor took."""

    results: tuple[CheckResult, ...]
    elapsed_s: float

    @property
    def failed(self) -> bool:
        return any(result.status is CheckStatus.FAIL for result in self.results)

    def counts(self) -> dict[str, int]:
        return {
            status.value: sum(result.status is status for result in self.results)
            for status in CheckStatus
        }

    def to_json(self) -> str:
        return json.dumps(
            {
                "ok": not self.failed,
                "counts": self.counts(),
                "elapsed_s": round(self.elapsed_s, 3),
                "checks": [asdict(result) for result in self.results],
            }
        )

    def format_table(self, width: int = 100) -> str:
        """One row per check (status, name, detail), the fix under it, a summary last."""
        width = max(60, width)
        name_width = max((len(result.name) for result in self.results), default=0)
        indent = " " * (4 + 2 + name_width + 2)
        lines = []
        for result in self.results:
            label = "FAIL" if result.status is CheckStatus.FAIL else result.status.value
            first = f"{label:<4}  {result.name:<{name_width}}  "
            lines += textwrap.wrap(
                result.detail or "-",
                width,
                initial_indent=first,
                subsequent_indent=indent,
                break_on_hyphens=False,
            )
            if result.fix:
                lines += textwrap.wrap(
                    f"fix: {result.fix}",
                    width,
                    initial_indent=indent,
                    subsequent_indent=indent + "     ",
                    break_on_hyphens=False,
                )
        counts = self.counts()
        lines.append(
            f"{len(self.results)} checks in {self.elapsed_s:.1f} s: {counts['ok']} ok, "
            f"{counts['warn']} warn, {counts['fail']} failed, {counts['skip']} skipped"
        )
        return "\n".join(lines)


def shorten(text: str, limit: int = _DETAIL_MAX) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
