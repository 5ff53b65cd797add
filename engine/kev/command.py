"""What Kev writes: the command's JSON schema, its parsing and validation, and the staleness
rules a command must pass before it reaches the risk gateway.

Keys are short so that a whole command stays well under 64 output tokens (`docs/kev.md` has the
schema with examples). Percentages and tenths of a basis point are integers on purpose:
llama.cpp turns an integer's `minimum`/`maximum` into grammar, so the model cannot even write a
value outside its band, whereas a `number`'s bounds are not enforced while sampling. Every
bound is checked again here, because a server without grammar support (or a different one)
must not be trusted either.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import NamedTuple

import orjson

from engine.risk.commands import KevAction
from engine.risk.limits import RiskGatewayConfig
from engine.validation import require_integer

COMMAND_KEYS = ("act", "risk", "hedge", "beta", "skew", "ttl", "why")
"""In the order the grammar makes the model write them."""
REASON_CHARACTERS = "A-Za-z ,.;:'()/%&+!?-"
"""What `why` may hold: words and punctuation, no digits. The numbers are in the context and
in the command's own fields, and a digit costs a whole token, so a model stuck repeating digits
could otherwise spend its entire output budget on the reason."""


_REASON = re.compile(f"[{REASON_CHARACTERS}]*")


class KevCommandError(ValueError):
    """Kev's output is not a valid command; the message says exactly why."""


class KevCommand(NamedTuple):
    """A parsed, in-band command. `risk_scale` and `hedge_ratio` are fractions (0.85), the skew
    is in bps (positive raises both our quotes), `ttl_ms` is how long after its context the
    command may still be applied, `reasoning` is Kev's short explanation. `beta` is the
    flagged symbol's beta to the book (1.2); None only in an answer recorded before commands
    carried one (`engine.kev.answers`), which leaves the beta as it is."""

    action: KevAction
    risk_scale: float
    hedge_ratio: float
    skew_bps: float
    ttl_ms: int
    reasoning: str
    beta: float | None = None


def _require_range(name: str, band: tuple[int, int], low: int, high: int) -> None:
    if not (
        len(band) == 2
        and all(isinstance(value, int) and not isinstance(value, bool) for value in band)
        and low <= band[0] <= band[1] <= high
    ):
        raise ValueError(
            f"KevCommandSpec.{name} must be two integers lo <= hi within [{low}, {high}], "
            f"got {band!r}"
        )


@dataclass(frozen=True, slots=True)
class KevCommandSpec:
    """The bands a command must lie in, turned into the JSON schema sent with every request.

    `actions`: the actions Kev may choose (the operator can narrow them, e.g. to HOLD and
    REDUCE). `risk_pct`: the risk scale in percent. `hedge_pct`: the hedge ratio in percent;
    keep it inside the gateway's `hedge_ratio_band` (`for_gateway` does). `beta_pct`: the
    flagged symbol's beta in percent; `for_gateway` makes it span the quoted symbols' beta
    ranges (the gateway clamps each into its own). `max_skew_tenths_bps`:
    the quote skew's bound in tenths of a basis point (50 = +-5 bps). `ttl_ms`: the smallest and
    largest validity Kev may give. `reasoning_chars`: the longest `why`.
    """

    actions: tuple[KevAction, ...] = tuple(KevAction)
    risk_pct: tuple[int, int] = (0, 100)
    hedge_pct: tuple[int, int] = (0, 100)
    beta_pct: tuple[int, int] = (0, 1_000)
    max_skew_tenths_bps: int = 50
    ttl_ms: tuple[int, int] = (250, 10_000)
    reasoning_chars: int = 120

    def __post_init__(self) -> None:
        if not self.actions or len(set(self.actions)) != len(self.actions):
            raise ValueError(
                f"KevCommandSpec.actions must list distinct actions, got {self.actions!r}"
            )
        for action in self.actions:
            if not isinstance(action, KevAction):
                raise ValueError(f"KevCommandSpec.actions: {action!r} is not a KevAction")
        _require_range("risk_pct", self.risk_pct, 0, 100)
        _require_range("hedge_pct", self.hedge_pct, 0, 1_000)
        _require_range("beta_pct", self.beta_pct, 0, 1_000)
        _require_range("ttl_ms", self.ttl_ms, 1, 3_600_000)
        require_integer("KevCommandSpec", "max_skew_tenths_bps", self.max_skew_tenths_bps, 0)
        require_integer("KevCommandSpec", "reasoning_chars", self.reasoning_chars, 1, 1_000)

    def for_gateway(self, gateway: RiskGatewayConfig) -> KevCommandSpec:
        """This spec with the gateway's `hedge_ratio_band` as its hedge band, rounded inwards to
        whole percents so that no value Kev can write is clamped, and as its beta band the
        smallest span of whole percents holding every quoted symbol's beta range (rounded
        outwards, so that the whole percent a context shows for any beta can be repeated)."""
        low, high = gateway.hedge_ratio_band
        band = (math.ceil(round(low * 100, 9)), math.floor(round(high * 100, 9)))
        if band[0] > band[1]:
            raise ValueError(
                f"the gateway's hedge_ratio_band {gateway.hedge_ratio_band} holds no whole percent"
            )
        ranges = [
            gateway.beta_range(limits.symbol)
            for limits in gateway.limits.symbols
            if limits.symbol != gateway.hedge_symbol
        ]
        if not ranges:  # nothing quoted: no beta for Kev to set
            return dataclasses.replace(self, hedge_pct=band)
        beta_band = (
            math.floor(round(min(low for low, _ in ranges) * 100, 9)),
            math.ceil(round(max(high for _, high in ranges) * 100, 9)),
        )
        return dataclasses.replace(self, hedge_pct=band, beta_pct=beta_band)

    def json_schema(self) -> dict[str, object]:
        """The schema for llama-server's `response_format` (every key required, no others)."""

        def integer(band: tuple[int, int]) -> dict[str, object]:
            return {"type": "integer", "minimum": band[0], "maximum": band[1]}

        skew = self.max_skew_tenths_bps
        return {
            "type": "object",
            "properties": {
                "act": {"type": "string", "enum": [action.value for action in self.actions]},
                "risk": integer(self.risk_pct),
                "hedge": integer(self.hedge_pct),
                "beta": integer(self.beta_pct),
                "skew": integer((-skew, skew)),
                "ttl": integer(self.ttl_ms),
                "why": {
                    "type": "string",
                    "maxLength": self.reasoning_chars,
                    "pattern": f"^[{REASON_CHARACTERS}]{{0,{self.reasoning_chars}}}$",
                },
            },
            "required": list(COMMAND_KEYS),
            "additionalProperties": False,
        }

    def parse(self, text: str | bytes) -> KevCommand:
        """The command in `text`, or `KevCommandError` naming the first thing wrong with it.
        Invalid JSON raises `orjson.JSONDecodeError` (a ValueError) so callers can tell the
        two apart."""
        document = orjson.loads(text)
        if not isinstance(document, dict):
            raise KevCommandError(f"expected a JSON object, got {type(document).__name__}")
        missing = [key for key in COMMAND_KEYS if key not in document]
        if missing:
            raise KevCommandError(f"missing {', '.join(missing)}")
        extra = sorted(set(document) - set(COMMAND_KEYS))
        if extra:
            shown = ", ".join(key if len(key) <= 40 else f"{key[:40]}…" for key in extra)
            raise KevCommandError(f"unexpected key {shown}")
        act = document["act"]
        allowed = [action.value for action in self.actions]
        if act not in allowed:
            raise KevCommandError(f"act must be one of {'/'.join(allowed)}, got {_shown(act)}")
        risk = _integer_in(document, "risk", self.risk_pct)
        hedge = _integer_in(document, "hedge", self.hedge_pct)
        beta = _integer_in(document, "beta", self.beta_pct)
        skew_bound = self.max_skew_tenths_bps
        skew = _integer_in(document, "skew", (-skew_bound, skew_bound))
        ttl = _integer_in(document, "ttl", self.ttl_ms)
        why = document["why"]
        if not isinstance(why, str):
            raise KevCommandError(f"why must be a string, got {type(why).__name__}")
        if len(why) > self.reasoning_chars:
            raise KevCommandError(f"why has {len(why)} characters, at most {self.reasoning_chars}")
        if not _REASON.fullmatch(why):
            raise KevCommandError(f"why may hold letters, spaces and punctuation only, got {why!r}")
        return KevCommand(
            KevAction(act), risk / 100, hedge / 100, skew / 10, ttl, why.strip(), beta / 100
        )


def _integer_in(document: dict[str, object], key: str, band: tuple[int, int]) -> int:
    value = document[key]
    # JSON has one number type: 50.0 is the integer 50, 50.5 is not an integer.
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise KevCommandError(f"{key} must be an integer, got {_shown(value)}")
    if not band[0] <= value <= band[1]:
        raise KevCommandError(f"{key} {value} is outside [{band[0]}, {band[1]}]")
    return value


def _shown(value: object, limit: int = 40) -> str:
    """A value of Kev's output for an error message: a scalar's repr, cut short, a list or an
    object by its type only (its repr may be deeper than the recursion limit allows)."""
    if isinstance(value, list | dict):
        return f"a JSON {'array' if isinstance(value, list) else 'object'}"
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}…"


def stale_reason(
    ttl_ms: int,
    context_age_ms: float,
    mid_then: float,
    mid_now: float | None,
    max_mid_move_bps: float,
) -> str:
    """Why a command may no longer be applied, or "" when it may. Stale when its context is
    older than the command's own ttl, when the mid has since moved more than
    `max_mid_move_bps` either way, or when there is no usable mid to compare (a command about a
    market we cannot see any more is not applied)."""
    if context_age_ms > ttl_ms:
        return f"context is {context_age_ms:.0f} ms old, past its ttl of {ttl_ms} ms"
    if not (mid_then > 0.0 and math.isfinite(mid_then)):
        return f"the context's mid {mid_then!r} is unusable"
    if mid_now is None or not (mid_now > 0.0 and math.isfinite(mid_now)):
        return "no current mid to check the move against"
    moved_bps = abs(mid_now - mid_then) / mid_then * 1e4
    if moved_bps > max_mid_move_bps:
        return f"mid moved {moved_bps:.1f} bps since the context (limit {max_mid_move_bps:g})"
    return ""
