"""An aiohttp app on 127.0.0.1, for stand-ins of the servers a test talks to."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Loopback:
    """`app` served on 127.0.0.1 at `port` (0: one the system picks), for the length of a test."""

    def __init__(self, app: web.Application, port: int = 0) -> None:
        self.runner = web.AppRunner(app, access_log=None, handle_signals=False)
        self.port = port
        self.url = ""

    async def start(self) -> None:
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.port).start()
        self.port = self.runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{self.port}"

    async def stop(self) -> None:
        await self.runner.cleanup()


def drop_connection() -> Handler:
    """A reply that closes the socket without answering: the client cannot know what happened."""

    async def reply(request: web.Request) -> web.StreamResponse:
        assert request.transport is not None
        request.transport.close()
        return web.Response(status=200)

    return reply


def catch_all(handler: Handler, **settings: Any) -> web.Application:
    """An app sending every method on every path to `handler` (`settings`: the app's own)."""
    app = web.Application(**settings)
    app.router.add_route("*", "/{tail:.*}", handler)
    return app


@contextlib.asynccontextmanager
async def serving(app: web.Application) -> AsyncIterator[Loopback]:
    """`app` on a started loopback server, stopped on the way out."""
    server = Loopback(app)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def serve(routes: dict[str, Handler]) -> Loopback:
    """A started loopback server answering GET on each path of `routes`."""
    app = web.Application()
    for path, handler in routes.items():
        app.router.add_get(path, handler)
    server = Loopback(app)
    await server.start()
    return server
