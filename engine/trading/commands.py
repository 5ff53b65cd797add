"""Every command that changes risk or orders: what is asked, by whom, and what became of it.

One `Command` type whatever its source (a console key, the run's exit policy, the engine's own
risk sequence, Kev), one way in (`TradingDesk.execute`), one `CommandResult` back.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import ClassVar

from engine.risk.commands import KevAction, KevCommandOutcome
from engine.risk.intents import Source
from engine.risk.overrides import RiskOverrides

OPERATOR_KILL_REASON = "operator kill switch"
OPERATOR_PAUSE_REASON = "operator pause"


class CommandSource(enum.Enum):
    """Who gave a command. `journaled`: the desk journals it as an operator command and emits
    `CommandExecuted` (Kev's are in KevHub's decision entries; the engine's own risk sequence
    runs when the journal cannot write). `sequence` is the source a kill or flatten's cancels
    and closing orders carry."""

    OPERATOR = ("operator", True, Source.OPERATOR)
    """A console key, or a headless run's operator."""
    EXIT_POLICY = ("exit policy", True, Source.OPERATOR)
    """The run ending: the operator's quit, a signal, the console gone."""
    RISK = ("risk", False, Source.RISK)
    """The engine itself: a journal that cannot write."""
    KEV = ("kev", False, Source.RISK)

    def __init__(self, label: str, journaled: bool, sequence: Source) -> None:
        self.label = label
        self.journaled = journaled
        self.sequence = sequence


@dataclass(frozen=True, slots=True)
class Kill:
    """The kill switch: HALTED, then cancel all and close all until the venue confirms flat;
    `reason` goes with every journaled step."""

    name: ClassVar[str] = "kill"
    reason: str = OPERATOR_KILL_REASON


@dataclass(frozen=True, slots=True)
class Flatten:
    """Cancel all, close all; REDUCING until flat, then PAUSED."""

    name: ClassVar[str] = "flatten"


@dataclass(frozen=True, slots=True)
class Pause:
    name: ClassVar[str] = "pause"


@dataclass(frozen=True, slots=True)
class Resume:
    name: ClassVar[str] = "resume"


@dataclass(frozen=True, slots=True)
class PauseSymbol:
    """Stand one symbol aside, the others go on: its quotes are pulled and the gateway refuses
    its risk-increasing orders (SYMBOL_PAUSED) until the same source resumes it. `reason`
    says why (the venue's contract status, when the engine's contract watch asks)."""

    name: ClassVar[str] = "pause_symbol"
    symbol: str
    reason: str = OPERATOR_PAUSE_REASON


@dataclass(frozen=True, slots=True)
class ResumeSymbol:
    """Lift this source's pause of one symbol; `reason` says what lifted it."""

    name: ClassVar[str] = "resume_symbol"
    symbol: str
    reason: str = "operator resume"


@dataclass(frozen=True, slots=True)
class Rearm:
    """Release the kill switch into PAUSED; `confirmation` is the phrase the operator typed
    (never journaled: an operator may paste anything into that field)."""

    name: ClassVar[str] = "rearm"
    confirmation: str


@dataclass(frozen=True, slots=True)
class SetLimits:
    """Operator overrides, validated as a whole against the hard bounds, applied all or none."""

    name: ClassVar[str] = "apply_overrides"
    overrides: RiskOverrides


@dataclass(frozen=True, slots=True)
class KevOrder:
    """Kev's portfolio command, inside the operator's limits (`RiskGateway.apply_kev_command`
    says what Kev may do): `beta` is a quoted symbol and its new beta. None leaves a value as
    it is."""

    name: ClassVar[str] = "kev"
    action: KevAction | str
    risk_scale: float | None = None
    hedge_ratio: float | None = None
    beta: tuple[str, float] | None = None


OperatorRequest = Kill | Flatten | Pause | Resume | PauseSymbol | ResumeSymbol | Rearm | SetLimits
"""What an operator asks for (the console's keys and dialogs)."""
Request = OperatorRequest | KevOrder


@dataclass(frozen=True, slots=True)
class Command:
    """What is asked (`request`) and by whom (`source`)."""

    request: Request
    source: CommandSource = CommandSource.OPERATOR

    @property
    def name(self) -> str:
        return self.request.name


@dataclass(frozen=True, slots=True)
class CommandResult:
    """The outcome of one command: `ok`, a line for the operator, and how long it took (kill
    and flatten: from the command to the venue confirming no orders and flat; 0: not measured).
    `kev` is what the gateway did with a Kev command."""

    command: str
    ok: bool
    message: str
    elapsed_ms: float = 0.0
    kev: KevCommandOutcome | None = None


def kev_result(outcome: KevCommandOutcome) -> CommandResult:
    """A Kev command's result: accepted when no part was refused, its notes as the message."""
    return CommandResult(KevOrder.name, outcome.accepted, "; ".join(outcome.notes), kev=outcome)
