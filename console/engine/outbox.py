"""`Outbox`: the engine process's messages to the console, written by a thread of its own, so
a console that stops reading never blocks the engine loop. A newer picture replaces an unsent
one; events beyond `events_kept` drop, oldest first, and the console counts the gap."""

from __future__ import annotations

import threading
from collections import deque
from multiprocessing.connection import Connection

from console.engine.protocol import Events, Picture, ToConsole, encode


class Outbox:
    """Engine -> console messages (see the module docstring), pickled on the engine loop; the
    thread only writes bytes."""

    def __init__(self, connection: Connection, events_kept: int) -> None:
        self._connection = connection
        self._events_kept = events_kept
        self._ready = threading.Condition()
        self._picture: tuple[bytes, frozenset[str]] | None = None
        self._queue: deque[tuple[bytes, int]] = deque()
        self._queued_events = 0
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="engine-outbox", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def put(self, message: ToConsole) -> None:
        """Queued in order, never replaced (`Events` may drop when too many wait)."""
        payload = encode(message)
        events = len(message.events) if isinstance(message, Events) else 0
        with self._ready:
            self._queue.append((payload, events))
            self._queued_events += events
            while self._queued_events > self._events_kept:
                self._drop_oldest_events()
            self._ready.notify()

    def _drop_oldest_events(self) -> None:
        for index, (_, count) in enumerate(self._queue):
            if count:
                del self._queue[index]
                self._queued_events -= count
                return

    def put_picture(self, picture: Picture) -> None:
        """Sent when the queue is empty, unless a newer picture replaces it first."""
        payload = encode(picture)
        with self._ready:
            self._picture = (payload, frozenset(picture.parts))
            self._ready.notify()

    def take_back_picture(self) -> frozenset[str]:
        """The parts of a picture not sent yet (withdrawn: the next one must carry them)."""
        with self._ready:
            picture, self._picture = self._picture, None
        return picture[1] if picture is not None else frozenset()

    def close(self, timeout_s: float) -> None:
        """Send what is queued (up to `timeout_s`), then close the connection."""
        with self._ready:
            self._closing = True
            self._ready.notify()
        self._thread.join(timeout_s)
        self._connection.close()

    def _run(self) -> None:
        while True:
            with self._ready:
                while not (self._queue or self._picture or self._closing):
                    self._ready.wait()
                if self._queue:
                    payload, events = self._queue.popleft()
                    self._queued_events -= events
                elif self._picture is not None:
                    payload, self._picture = self._picture[0], None
                else:
                    return
            try:
                self._connection.send_bytes(payload)
            except OSError:  # the console is gone: the engine notices on its own side
                return
