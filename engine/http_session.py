"""What both HTTP clients (Bitget's REST, Kev's llama-server) share: one aiohttp session,
opened by `start` and closed by `stop`, also as `async with`."""

from __future__ import annotations

from types import TracebackType
from typing import Self

import aiohttp


class HttpSessionClient:
    """Holds one `aiohttp.ClientSession` from `start()` to `stop()`.

    A subclass says how its session is built (`_open_session`: pool, headers, timeouts).
    """

    _http: aiohttp.ClientSession | None = None

    def _open_session(self) -> aiohttp.ClientSession:
        raise NotImplementedError

    async def start(self) -> None:
        if self._http is not None:
            raise RuntimeError(f"{type(self).__name__} is already started")
        self._http = self._open_session()

    async def stop(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    def _session(self) -> aiohttp.ClientSession:
        if self._http is None:
            raise RuntimeError(f"{type(self).__name__} is not started")
        return self._http
