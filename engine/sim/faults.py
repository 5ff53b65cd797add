"""Fault injection for the simulated exchange, switchable at runtime.

Spec grammar (command line, `POST /sim/faults`, or `FaultInjector.add`), each optionally suffixed
with `@T` to fire T seconds later (counted from the injector's start, or from when the spec is
added if the injector is already running):

- `disconnect`: abort every websocket connection, public and private (the client sees 1006).
- `silence:S`: no data pushes for S seconds (acks and pongs still answered); private
  order/fill/position pushes in that time are lost, as Bitget warns they can be.
- `malformed:N`: the next N public data pushes are garbage, cycling through non-JSON, truncated
  JSON, missing fields, a crossed book, a negative size and a NaN price.
- `slow-rest:S`: every REST answer waits S seconds first (`slow-rest:0` ends it).
- `rest-error:CODE:N`: the next N private REST calls fail with CODE: an HTTP status (429 gives
  Bitget's JSON 429; 5xx gives a gateway's non-JSON page) or a five-digit Bitget code (HTTP 400).
- `cut-frame`: every public websocket connection gets the first half of a data frame, then its
  TCP connection is closed: the client reads a truncated frame and sees 1006.
- `seq-gap:N`: the next N incremental `books` updates are lost before delivery, so subscribers
  see a `seq`/`pseq` gap.
- `cancel-error:CODE:N`: the next N cancel calls (cancel-order, batch-cancel, cancel-all) fail
  with CODE, as `rest-error` does; other calls go through.
- `clock-skew:S`: the exchange judges request timestamps, and answers server time, S seconds
  (signed) off its own clock, as when the trading host's clock steps; beyond 30 s signed calls
  are refused with 40008. `clock-skew:0` ends it.
- `clear`: cancel every active and scheduled fault.
"""

from __future__ import annotations

import enum
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import orjson

_MAX_SECONDS = 86_400.0
_MAX_COUNT = 1_000_000


class FaultKind(enum.StrEnum):
    DISCONNECT = "disconnect"
    SILENCE = "silence"
    MALFORMED = "malformed"
    SLOW_REST = "slow-rest"
    REST_ERROR = "rest-error"
    CUT_FRAME = "cut-frame"
    SEQ_GAP = "seq-gap"
    CANCEL_ERROR = "cancel-error"
    CLOCK_SKEW = "clock-skew"
    CLEAR = "clear"


class MalformedKind(enum.StrEnum):
    """Ways a pushed frame is corrupted, in the order `malformed:N` cycles through them."""

    NON_JSON = "non-json"
    TRUNCATED = "truncated"
    MISSING_FIELDS = "missing-fields"
    CROSSED_BOOK = "crossed-book"
    NEGATIVE_SIZE = "negative-size"
    NAN = "nan"


_USAGE = {
    FaultKind.DISCONNECT: "disconnect",
    FaultKind.SILENCE: "silence:SECONDS",
    FaultKind.MALFORMED: "malformed:COUNT",
    FaultKind.SLOW_REST: "slow-rest:SECONDS",
    FaultKind.REST_ERROR: "rest-error:CODE:COUNT",
    FaultKind.CUT_FRAME: "cut-frame",
    FaultKind.SEQ_GAP: "seq-gap:COUNT",
    FaultKind.CANCEL_ERROR: "cancel-error:CODE:COUNT",
    FaultKind.CLOCK_SKEW: "clock-skew:SECONDS",
    FaultKind.CLEAR: "clear",
}
_CODED = (FaultKind.REST_ERROR, FaultKind.CANCEL_ERROR)


class FaultSpecError(ValueError):
    """A fault spec that cannot be understood; the message names the spec."""


@dataclass(frozen=True, slots=True)
class FaultSpec:
    kind: FaultKind
    seconds: float = 0.0
    count: int = 0
    code: int = 0
    delay_s: float = 0.0
    """Seconds after the start (or after being added) at which the fault fires."""
    offset_s: float = 0.0
    """The signed clock offset of `clock-skew`."""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.seconds) and 0 <= self.seconds <= _MAX_SECONDS):
            raise ValueError(f"seconds must be within 0..{_MAX_SECONDS:g}, got {self.seconds!r}")
        if not 0 <= self.count <= _MAX_COUNT:
            raise ValueError(f"count must be within 0..{_MAX_COUNT}, got {self.count}")
        if not (math.isfinite(self.delay_s) and 0 <= self.delay_s <= _MAX_SECONDS):
            raise ValueError(f"delay must be within 0..{_MAX_SECONDS:g} s, got {self.delay_s!r}")
        _check_clock_offset(self.offset_s)
        if self.kind in _CODED:
            _check_injectable_code(self.code)

    def __str__(self) -> str:
        text = {
            FaultKind.SILENCE: f"silence:{self.seconds:g}",
            FaultKind.MALFORMED: f"malformed:{self.count}",
            FaultKind.SLOW_REST: f"slow-rest:{self.seconds:g}",
            FaultKind.REST_ERROR: f"rest-error:{self.code}:{self.count}",
            FaultKind.SEQ_GAP: f"seq-gap:{self.count}",
            FaultKind.CANCEL_ERROR: f"cancel-error:{self.code}:{self.count}",
            FaultKind.CLOCK_SKEW: f"clock-skew:{self.offset_s:g}",
        }.get(self.kind, str(self.kind))
        return f"{text}@{self.delay_s:g}" if self.delay_s else text


def _check_clock_offset(seconds: float) -> None:
    if not (math.isfinite(seconds) and abs(seconds) <= _MAX_SECONDS):
        raise ValueError(f"offset must be within ±{_MAX_SECONDS:g} s, got {seconds!r}")


def _check_injectable_code(code: int) -> None:
    if not (400 <= code <= 599 or 10_000 <= code <= 99_999):
        raise ValueError(
            f"code must be an HTTP status 400-599 or a five-digit Bitget code, got {code}"
        )


def parse_fault_spec(text: str) -> FaultSpec:
    """Parse one spec such as `silence:30@5`; raises `FaultSpecError` naming the spec."""
    spec_text = text.strip()
    body, at_sign, delay_text = spec_text.partition("@")
    name, *values = body.split(":")
    try:
        kind = FaultKind(name)
    except ValueError:
        known = ", ".join(_USAGE.values())
        raise FaultSpecError(
            f"bad fault spec {text!r}: unknown fault {name!r}; use {known}"
        ) from None
    usage = _USAGE[kind]
    try:
        delay_s = _seconds(delay_text) if at_sign else 0.0
        if kind in (FaultKind.DISCONNECT, FaultKind.CUT_FRAME, FaultKind.CLEAR):
            _expect(values, 0)
            return FaultSpec(kind, delay_s=delay_s)
        if kind in (FaultKind.SILENCE, FaultKind.SLOW_REST):
            _expect(values, 1)
            return FaultSpec(kind, seconds=_seconds(values[0]), delay_s=delay_s)
        if kind in (FaultKind.MALFORMED, FaultKind.SEQ_GAP):
            _expect(values, 1)
            return FaultSpec(kind, count=_count(values[0]), delay_s=delay_s)
        if kind is FaultKind.CLOCK_SKEW:
            _expect(values, 1)
            return FaultSpec(kind, offset_s=_signed_seconds(values[0]), delay_s=delay_s)
        _expect(values, 2)
        return FaultSpec(kind, code=int(values[0]), count=_count(values[1]), delay_s=delay_s)
    except ValueError as error:
        raise FaultSpecError(f"bad fault spec {text!r}: {error}; expected {usage}[@T]") from None


def _expect(values: list[str], count: int) -> None:
    if len(values) != count:
        raise ValueError(f"takes {count} value(s), got {len(values)}")


def _seconds(text: str) -> float:
    value = float(text)
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{text!r} is not a number of seconds >= 0")
    return value


def _signed_seconds(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is not a number of seconds")
    return value


def _count(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(f"count {text!r} must be at least 1")
    return value


class _InjectedErrors:
    """An error code the next `left` calls fail with (`rest-error`, `cancel-error`)."""

    __slots__ = ("code", "left")

    def __init__(self) -> None:
        self.code = 0
        self.left = 0

    def arm(self, code: int, count: int) -> None:
        _check_injectable_code(code)
        self.code = code
        self.left = count

    def take(self) -> int | None:
        """The code the next call must fail with, or None."""
        if self.left == 0:
            return None
        self.left -= 1
        return self.code

    def describe(self) -> dict[str, int] | None:
        return {"code": self.code, "left": self.left} if self.left else None


class FaultInjector:
    """Holds the active and scheduled faults; the exchange asks it before every action."""

    def __init__(
        self,
        on_disconnect: Callable[[], None],
        clock: Callable[[], float] = time.monotonic,
        on_cut_frame: Callable[[], None] | None = None,
    ) -> None:
        """`on_cut_frame` cuts the public connections mid-frame; without it `cut-frame`
        disconnects them."""
        self._on_disconnect = on_disconnect
        self._on_cut_frame = on_cut_frame or on_disconnect
        self._clock = clock
        self._started_at: float | None = None
        self.clear()

    def start(self) -> None:
        """Start counting `@T` delays; specs added before now are scheduled from here."""
        self._started_at = self._clock()
        for spec in self._unstarted:
            self._schedule(spec, self._started_at)
        self._unstarted.clear()
        self.poll()

    def add(self, spec: FaultSpec | str) -> FaultSpec:
        """Apply a fault now, or schedule it when it has a delay."""
        parsed = parse_fault_spec(spec) if isinstance(spec, str) else spec
        if self._started_at is None:
            self._unstarted.append(parsed)
        else:
            self._schedule(parsed, self._clock())
            self.poll()
        return parsed

    def poll(self) -> None:
        """Fire scheduled faults whose time has come."""
        now = self._clock()
        due = [spec for at, spec in self._scheduled if at <= now]
        self._scheduled = [(at, spec) for at, spec in self._scheduled if at > now]
        for spec in due:
            self._apply(spec)

    def _schedule(self, spec: FaultSpec, origin: float) -> None:
        self._scheduled.append((origin + spec.delay_s, spec))

    def _apply(self, spec: FaultSpec) -> None:
        match spec.kind:
            case FaultKind.DISCONNECT:
                self.disconnect()
            case FaultKind.SILENCE:
                self.silence(spec.seconds)
            case FaultKind.MALFORMED:
                self.malformed(spec.count)
            case FaultKind.SLOW_REST:
                self.slow_rest(spec.seconds)
            case FaultKind.REST_ERROR:
                self.rest_error(spec.code, spec.count)
            case FaultKind.CUT_FRAME:
                self.cut_frame()
            case FaultKind.SEQ_GAP:
                self.seq_gap(spec.count)
            case FaultKind.CANCEL_ERROR:
                self.cancel_error(spec.code, spec.count)
            case FaultKind.CLOCK_SKEW:
                self.clock_skew(spec.offset_s)
            case FaultKind.CLEAR:
                self.clear()

    # Actions, callable directly from tests.

    def disconnect(self) -> None:
        self._on_disconnect()

    def silence(self, seconds: float) -> None:
        self._silent_until = self._clock() + seconds

    def malformed(self, count: int) -> None:
        self._malformed_left = count
        self._malformed_index = 0

    def slow_rest(self, seconds: float) -> None:
        self._rest_delay_s = seconds

    def rest_error(self, code: int, count: int) -> None:
        self._rest_errors.arm(code, count)

    def cut_frame(self) -> None:
        self._on_cut_frame()

    def seq_gap(self, count: int) -> None:
        self._seq_gaps_left = count

    def cancel_error(self, code: int, count: int) -> None:
        self._cancel_errors.arm(code, count)

    def clock_skew(self, seconds: float) -> None:
        _check_clock_offset(seconds)
        self._clock_offset_s = seconds

    def clear(self) -> None:
        """No fault active or scheduled (the state a new injector starts in)."""
        self._scheduled: list[tuple[float, FaultSpec]] = []
        self._unstarted: list[FaultSpec] = []
        self._silent_until = 0.0
        self._malformed_left = 0
        self._malformed_index = 0
        self._rest_delay_s = 0.0
        self._rest_errors = _InjectedErrors()
        self._seq_gaps_left = 0
        self._cancel_errors = _InjectedErrors()
        self._clock_offset_s = 0.0

    # Queries made by the exchange.

    @property
    def silenced(self) -> bool:
        return self._clock() < self._silent_until

    @property
    def rest_delay_s(self) -> float:
        return self._rest_delay_s

    def take_malformed(self) -> MalformedKind | None:
        """The corruption for the next data push, or None when it goes out intact."""
        if self._malformed_left == 0:
            return None
        self._malformed_left -= 1
        kinds = list(MalformedKind)
        kind = kinds[self._malformed_index % len(kinds)]
        self._malformed_index += 1
        return kind

    def take_rest_error(self) -> int | None:
        """The code the next private REST call must fail with, or None."""
        return self._rest_errors.take()

    def take_cancel_error(self) -> int | None:
        """The code the next cancel call must fail with, or None."""
        return self._cancel_errors.take()

    def take_seq_gap(self) -> bool:
        """Whether the next incremental `books` update is to be lost."""
        if self._seq_gaps_left == 0:
            return False
        self._seq_gaps_left -= 1
        return True

    @property
    def clock_offset_ms(self) -> int:
        """How far off its own clock the exchange judges request timestamps."""
        return round(self._clock_offset_s * 1000)

    def describe(self) -> dict[str, object]:
        """The current fault state, for the control route and status lines."""
        now = self._clock()
        return {
            "silenceLeftSeconds": round(max(0.0, self._silent_until - now), 3),
            "malformedLeft": self._malformed_left,
            "slowRestSeconds": self._rest_delay_s,
            "restError": self._rest_errors.describe(),
            "cancelError": self._cancel_errors.describe(),
            "seqGapsLeft": self._seq_gaps_left,
            "clockSkewSeconds": self._clock_offset_s,
            "scheduled": [
                {"spec": str(spec), "inSeconds": round(at - now, 3)}
                for at, spec in sorted(self._scheduled, key=lambda item: item[0])
            ]
            + [{"spec": str(spec), "inSeconds": None} for spec in self._unstarted],
        }


def corrupt_frame(text: str, kind: MalformedKind) -> str:
    """A corrupted version of a pushed frame's JSON text.

    A trade frame has no book to cross, so `CROSSED_BOOK` gives it a negative size instead.
    """
    if kind is MalformedKind.NON_JSON:
        return "<html><body>502 Bad Gateway</body></html>\x00"
    if kind is MalformedKind.TRUNCATED:
        return text[: max(1, len(text) // 2)]
    frame = orjson.loads(text)
    if not frame.get("data"):
        frame["data"] = [{}]
    entry = frame["data"][0]
    is_depth = "bids" in entry or "asks" in entry
    if kind is MalformedKind.MISSING_FIELDS:
        del frame["data"]
    elif kind is MalformedKind.CROSSED_BOOK and is_depth:
        reference = _first_price(entry)
        decimals = len(reference.partition(".")[2])
        value = float(reference)
        entry["bids"] = [[f"{value * 1.01:.{decimals}f}", "1"]]
        entry["asks"] = [[f"{value * 0.99:.{decimals}f}", "1"]]
    elif kind in (MalformedKind.CROSSED_BOOK, MalformedKind.NEGATIVE_SIZE):
        _set_first(entry, is_depth, size="-1")
    else:
        _set_first(entry, is_depth, price="NaN")
    return orjson.dumps(frame).decode()


def _first_price(entry: dict[str, object]) -> str:
    for side in ("bids", "asks"):
        levels = entry.get(side)
        if isinstance(levels, list) and levels:
            return str(levels[0][0])
    return "100.0"


def _set_first(entry: dict[str, object], is_depth: bool, **values: str) -> None:
    if not is_depth:
        entry.update(values)
        return
    levels = entry.get("bids") or entry.get("asks")
    if isinstance(levels, list) and levels:
        level = levels[0]
        if "price" in values:
            level[0] = values["price"]
        if "size" in values:
            level[1] = values["size"]
    else:
        entry["bids"] = [[values.get("price", "1"), values.get("size", "1")]]
