"""Kev's answers on file: a replay with Kev writes each answer it got (`KevAnswerRecorder`),
and a rerun plays them back (`RecordedKevClient`) instead of asking llama-server, so that a
backtest with Kev is exact too (an LLM's answer and its latency are not repeatable).

The file is JSON Lines, one answer a line, in the order they were asked for: the request's
symbol, verdict and market time (to check that a rerun asks the same questions), and the
reply with its latency. Between them, a `link` line for each health probe: what the link to
llama-server was after it (online, loading, offline), so that a rerun has Kev offline, and
its questions unasked, exactly when the recorded run had (a file without them: always online).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO

import orjson

from engine.kev.client import KevFailure, KevHealth, KevReply, KevServerProps, KevTimings
from engine.kev.command import KevCommand, KevCommandSpec
from engine.risk.commands import KevAction

_FORMAT = "hft-console kev answers 1"


class KevAnswersError(ValueError):
    """A file of answers that cannot be played back; the message names the file and line."""


def reply_record(reply: KevReply) -> dict[str, object]:
    command = reply.command
    return {
        "command": None
        if command is None
        else {**command._asdict(), "action": command.action.value},
        "failure": None if reply.failure is None else reply.failure.value,
        "reason": reply.reason,
        "raw": reply.raw,
        "model": reply.model,
        "wall_ms": reply.wall_ms,
        "timings": None if reply.timings is None else reply.timings._asdict(),
        "finish_reason": reply.finish_reason,
    }


def reply_from_record(record: dict[str, object]) -> KevReply:
    command = record["command"]
    timings = record["timings"]
    failure = record["failure"]
    return KevReply(
        None
        if command is None
        else KevCommand(**{**command, "action": KevAction(command["action"])}),  # type: ignore[arg-type]
        None if failure is None else KevFailure(failure),
        str(record["reason"]),
        str(record["raw"]),
        str(record["model"]),
        float(record["wall_ms"]),  # type: ignore[arg-type]
        None if timings is None else KevTimings(**timings),  # type: ignore[arg-type]
        str(record["finish_reason"]),
    )


class KevAnswerRecorder:
    """Appends each answer to `path` (created anew; a line at a time, flushed)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._file: IO[bytes] | None = None
        self.count = 0

    def open(self) -> None:
        self._file = self.path.open("wb")
        self._file.write(orjson.dumps({"format": _FORMAT}) + b"\n")

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def record(self, symbol: str, verdict: str, context_ns: int, reply: KevReply) -> None:
        line = {"request": self.count, "symbol": symbol, "verdict": verdict}
        line.update({"context_ns": context_ns, "reply": reply_record(reply)})
        if self._write(line):
            self.count += 1

    def record_link(self, health: KevHealth) -> None:
        """The link after a health probe, as a rerun's probe is to find it."""
        self._write({"link": health.state, "detail": health.detail})

    def _write(self, line: dict[str, object]) -> bool:
        if self._file is None:
            return False
        self._file.write(orjson.dumps(line) + b"\n")
        self._file.flush()
        return True


class RecordedKevClient:
    """Answers as `KevClient` does, from a file a replay with Kev wrote: the server is always
    up, and the n-th question gets the n-th answer, provided it is the same question (same
    symbol and verdict, asked at the same market time); a rerun that has diverged gets a
    failure saying where, never another run's answer."""

    def __init__(self, path: str | os.PathLike[str], spec: KevCommandSpec) -> None:
        self.path = Path(path)
        self.spec = spec
        self._answers, self._links = _read_answers(self.path)
        self._next = 0
        self._next_link = 0
        self.diverged = ""

    async def start(self) -> None:
        return

    async def stop(self) -> None:
        return

    async def health(self) -> KevHealth:
        """The n-th probe finds the link the recorded run's n-th probe left (past the last
        one recorded, as the last one left it)."""
        if not self._links:
            return KevHealth("ok", f"answers recorded in {self.path.name}")
        index = min(self._next_link, len(self._links) - 1)
        self._next_link += 1
        return self._links[index]

    async def props(self) -> KevServerProps | None:
        model = next((line["reply"]["model"] for line in self._answers), "")
        return KevServerProps(str(model), 0, 1, "recorded")

    def answer(self, symbol: str, verdict: str, context_ns: int) -> KevReply:
        """The recorded answer to this question."""
        index = self._next
        if index >= len(self._answers):
            return self._diverged(
                f"{self.path.name} holds {len(self._answers)} answers; "
                f"question {index + 1} was not asked when it was recorded"
            )
        line = self._answers[index]
        asked = (line["symbol"], line["verdict"], line["context_ns"])
        if asked != (symbol, verdict, context_ns):
            return self._diverged(
                f"question {index + 1} is {symbol} {verdict} at {context_ns}, but "
                f"{self.path.name} recorded {asked[0]} {asked[1]} at {asked[2]}"
            )
        self._next += 1
        return reply_from_record(line["reply"])

    def _diverged(self, text: str) -> KevReply:
        self.diverged = self.diverged or f"the run diverged from the recorded answers: {text}"
        return KevReply(None, KevFailure.BAD_RESPONSE, self.diverged, "", "", 0.0, None, "")


def _read_answers(path: Path) -> tuple[list[dict], list[KevHealth]]:
    """The answers and the health probes' links, each in its order."""
    try:
        lines = path.read_bytes().splitlines()
    except OSError as error:
        raise KevAnswersError(f"--kev-answers {path}: {error.strerror or error}") from None
    if not lines or _header(lines[0]) != _FORMAT:
        raise KevAnswersError(f"--kev-answers {path}: not a file of Kev's answers")
    answers, links = [], []
    for number, raw in enumerate(lines[1:], start=2):
        try:
            line = orjson.loads(raw)
            if "link" in line:
                links.append(KevHealth(str(line["link"]), str(line["detail"])))
                continue
            reply_from_record(line["reply"])
            answers.append(line)
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as error:
            raise KevAnswersError(f"--kev-answers {path} line {number}: {error}") from None
    return answers, links


def _header(raw: bytes) -> object:
    try:
        return orjson.loads(raw).get("format")
    except (orjson.JSONDecodeError, AttributeError):
        return None
