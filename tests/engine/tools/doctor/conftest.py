"""The loopback servers the doctor's tests check against."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from support.doctor import LOADED_PROPS, llama_routes, time_routes
from support.loopback import Loopback, serve


@pytest.fixture
async def llama() -> AsyncIterator[Loopback]:
    server = await serve(llama_routes(props=LOADED_PROPS))
    yield server
    await server.stop()


@pytest.fixture
async def bitget_time() -> AsyncIterator[Loopback]:
    server = await serve(time_routes())
    yield server
    await server.stop()
