"""What travels on the socket between the console process and the engine process, both ways.

One message per `Connection.send_bytes`, pickled (`encode`, `decode`).

- console -> engine: the `EngineSetup` first, then `Request`s, each under a fresh id that its
  `Answer` carries back: a `Command`, `Stats` (the fast path's figures) or `Shutdown`.
- engine -> console: `Started` or `StartFailed` once; `Picture`s with only the snapshot parts
  that changed since the last one sent; `Events` in order; `Progress` when a kill or flatten has
  set its state before its answer; an `Answer` to every request.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from dataclasses import dataclass

from console.engine.config import EngineAdapterConfig
from console.engine.handle import ShutdownPolicy
from console.view import ConsoleEvent
from engine.config import EngineConfig
from engine.trading.commands import Command


@dataclass(frozen=True, slots=True)
class EngineSetup:
    """What the console sends the engine process first. `key` is the API key, secret and
    passphrase (None: the simulator's own); `log_path` takes the process's log records and,
    once the engine runs, its stdout and stderr (None: they stay where they are)."""

    engine: EngineConfig
    adapter: EngineAdapterConfig
    exit_policy: ShutdownPolicy
    key: tuple[str, str, str] | None
    key_note: str
    log_path: str | None


@dataclass(frozen=True, slots=True)
class Stats:
    """Asks for the fast path's figures (`hft-console bench`'s shape)."""


@dataclass(frozen=True, slots=True)
class Shutdown:
    """Asks the engine to stop as `policy` says; `reason` says why the run ends (journaled)."""

    policy: ShutdownPolicy
    reason: str


@dataclass(frozen=True, slots=True)
class Request:
    """One request; its `Answer` (and a kill's or flatten's `Progress`) carry `request_id`."""

    request_id: int
    asked: Command | Stats | Shutdown


@dataclass(frozen=True, slots=True)
class Started:
    """The engine runs and its first picture went ahead of this."""


@dataclass(frozen=True, slots=True)
class StartFailed:
    """`refused`: the engine would not start beside another (`EngineLocked`); `why` is the
    one line to say."""

    why: str
    refused: bool = False


@dataclass(frozen=True, slots=True)
class Picture:
    """The snapshot's parts that changed (`ConsoleSnapshot` field -> value); `status_line`
    (None: unchanged) is the engine's one-line status; `finished`: a replay reached its end."""

    at_ns: int
    parts: Mapping[str, object]
    status_line: str | None
    finished: bool


@dataclass(frozen=True, slots=True)
class Events:
    events: tuple[ConsoleEvent, ...]


@dataclass(frozen=True, slots=True)
class Progress:
    """The kill or flatten asked under `request_id` has set its state; its answer follows."""

    request_id: int


@dataclass(frozen=True, slots=True)
class Answer:
    """`ok`: the `payload` is the request's `CommandResult`, its figures, or for a shutdown its
    `CommandResult` and the final figures; not ok: what failed in the engine, as text."""

    request_id: int
    ok: bool
    payload: object


ToEngine = EngineSetup | Request
ToConsole = Started | StartFailed | Picture | Events | Progress | Answer


def encode(message: ToEngine | ToConsole) -> bytes:
    return pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)


def decode(payload: bytes) -> ToEngine | ToConsole:
    return pickle.loads(payload)
