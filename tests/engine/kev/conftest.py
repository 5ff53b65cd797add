"""Fixtures: a scripted llama-server on loopback and a real one with the tiny model."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from support.kev import tiny_llama_server
from support.scripted_llama import ScriptedLlama

from engine.kev.server import (
    LlamaServerProcess,
)


@pytest.fixture
async def scripted() -> AsyncIterator[ScriptedLlama]:
    server = ScriptedLlama()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory) -> Iterator[LlamaServerProcess]:
    """A real llama-server with the tiny model, on one thread (the other core stays for the
    test process, as a GPU box leaves the CPU to the engine), for the whole session."""
    server = tiny_llama_server(tmp_path_factory.mktemp("llama-server"))
    server.start()
    yield server
    server.stop()
