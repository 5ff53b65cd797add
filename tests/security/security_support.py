"""What the security checks share: a loopback server that answers like llama-server with
whatever body a test hands it, and the real llama-server binary and tiny model (or a skip)."""

from __future__ import annotations

import orjson
from aiohttp import web
from support.loopback import Loopback, catch_all

CHAT = "/v1/chat/completions"


def chat_body(content: object, finish_reason: str = "stop", **extra: object) -> bytes:
    """A chat completion as llama-server writes it, with `content` as the model's text."""
    document = {
        "model": "hostile.gguf",
        "choices": [
            {"index": 0, "finish_reason": finish_reason, "message": {"role": "assistant",
                                                                      "content": content}}
        ],
        **extra,
    }  # fmt: skip
    return orjson.dumps(document)


class HostileLlama:
    """Answers `/v1/chat/completions` with the body last given to `answer`, `/health` with ok
    and `/props` with a small model; every chat request is counted."""

    def __init__(self) -> None:
        self._answer: tuple[int, bytes] | None = None
        self._server: Loopback | None = None
        self.url = ""
        self.chat_requests = 0

    def answer(self, body: bytes, status: int = 200) -> None:
        self._answer = (status, body)

    async def start(self) -> None:
        self._server = Loopback(catch_all(self._serve, client_max_size=64 * 1024 * 1024))
        await self._server.start()
        self.url = self._server.url

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop()
            self._server = None

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        if request.path == "/health":
            return web.json_response({"status": "ok"})
        if request.path == "/props":
            return web.json_response({"model_path": "/m/hostile.gguf", "total_slots": 1})
        if request.path != CHAT or self._answer is None:
            return web.json_response({"error": {"code": 404, "message": "not found"}}, status=404)
        self.chat_requests += 1
        await request.read()
        status, body = self._answer
        return web.Response(body=body, status=status, content_type="application/json")
