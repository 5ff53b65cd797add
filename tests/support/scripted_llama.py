"""A loopback aiohttp server that answers like llama-server, as a test scripts it.

For what a real llama-server will not do on cue: 503 while loading, HTTP errors, garbage,
schema violations, dropped connections, a precise delay. Every chat request body is kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable, Iterator

import orjson
from aiohttp import web

from support.loopback import Loopback, catch_all

Reply = Callable[[web.Request], Awaitable[web.StreamResponse]]

TIMINGS = {
    "cache_n": 236,
    "prompt_n": 88,
    "prompt_ms": 41.5,
    "predicted_n": 31,
    "predicted_ms": 210.25,
}


def completion(
    content: str | None,
    finish_reason: str = "stop",
    timings: dict | None = None,
    model: str = "scripted.gguf",
) -> Reply:
    document = {
        "model": model,
        "choices": [
            {
                "index": 0,
                "finish_reason": finish_reason,
                "message": {"role": "assistant", "content": content},
            }
        ],
        "timings": TIMINGS if timings is None else timings,
    }

    async def reply(request: web.Request) -> web.StreamResponse:
        return web.json_response(document, dumps=lambda value: orjson.dumps(value).decode())

    return reply


def command(**fields: object) -> Reply:
    document = {
        "act": "hold",
        "risk": 100,
        "hedge": 50,
        "beta": 100,
        "skew": 0,
        "ttl": 3000,
        "why": "calm",
    }
    document.update(fields)
    return completion(orjson.dumps(document).decode())


def error(status: int, message: str, kind: str = "server_error") -> Reply:
    async def reply(request: web.Request) -> web.StreamResponse:
        body = {"error": {"code": status, "message": message, "type": kind}}
        return web.json_response(body, status=status)

    return reply


def raw(text: str, status: int = 200) -> Reply:
    async def reply(request: web.Request) -> web.StreamResponse:
        return web.Response(text=text, status=status, content_type="text/html")

    return reply


def ok_health() -> Reply:
    async def reply(request: web.Request) -> web.StreamResponse:
        return web.json_response({"status": "ok"})

    return reply


def delayed(seconds: float, then: Reply, before: Callable[[], None] | None = None) -> Reply:
    """Wait, optionally run `before` (e.g. move a test clock), then answer."""

    async def reply(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(seconds)
        if before is not None:
            before()
        return await then(request)

    return reply


class ScriptedLlama:
    """Answers each path from its script in order; the last reply of a script repeats.
    `/health` answers ok and `/props` a small model unless scripted otherwise."""

    def __init__(self, port: int = 0) -> None:
        self.port = port
        self.requests: list[dict] = []
        self._scripts: dict[str, deque[Reply]] = defaultdict(deque)
        self._server: Loopback | None = None
        self.url = ""
        self.script("/health", ok_health())
        self.script(
            "/props",
            lambda request: _json(
                {
                    "model_path": "/models/scripted.gguf",
                    "total_slots": 1,
                    "build_info": "b0-test",
                    "default_generation_settings": {"n_ctx": 4096},
                }
            ),
        )

    def script(self, path: str, *replies: Reply) -> None:
        """Replace `path`'s script."""
        self._scripts[path] = deque(replies)

    async def start(self) -> None:
        self._server = Loopback(catch_all(self._serve), self.port)
        await self._server.start()
        self.port, self.url = self._server.port, self._server.url

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop()
            self._server = None

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        if request.path == "/v1/chat/completions":
            self.requests.append(orjson.loads(await request.read()))
        script = self._scripts.get(request.path)
        if not script:
            return web.json_response({"error": {"code": 404, "message": "not found"}}, status=404)
        reply = script.popleft() if len(script) > 1 else script[0]
        return await reply(request)


@contextlib.contextmanager
def on_a_thread(server: ScriptedLlama) -> Iterator[ScriptedLlama]:
    """`server` started on an event loop of its own, in a thread (real time), for an engine
    that runs its loop on market time; stopped on the way out."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(server.start(), loop).result(10)
    try:
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


async def _json(document: dict) -> web.StreamResponse:
    return web.json_response(document)
