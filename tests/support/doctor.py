"""The doctor's stand-ins: llama-server and Bitget's time endpoint as routes for a loopback
server, the checks in their order, and credentials files with secrets that must never be shown."""

from __future__ import annotations

import time
from pathlib import Path

from aiohttp import web

from engine.tools.doctor.report import CheckResult
from support.loopback import Handler

CHECK_NAMES = [
    "python",
    "packages",
    "onnxruntime",
    "providers",
    "cuda-libraries",
    "gpu",
    "vram-budget",
    "llama-server",
    "kev-serve",
    "bitget",
    "credentials",
    "configuration",
]
API_KEY = "bg_doctor0123456789abcd"
API_SECRET = "DoctorSecretNeverPrinted42"
PASSPHRASE = "DoctorPassphraseNeverPrinted"
DEMO_TABLE = f'[demo]\napi_key = "{API_KEY}"\napi_secret = "{API_SECRET}"\n'
DEMO_TABLE += f'passphrase = "{PASSPHRASE}"\n'


def llama_routes(health: int = 200, props: dict | None = None) -> dict[str, Handler]:
    """llama-server's /health and /props as it answers them (503 while loading)."""

    async def health_handler(request: web.Request) -> web.StreamResponse:
        if health == 503:
            body = {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}
            return web.json_response(body, status=503)
        return web.json_response({"status": "ok"}, status=health)

    async def props_handler(request: web.Request) -> web.StreamResponse:
        if health != 200:
            return web.json_response({"error": {"code": health}}, status=health)
        return web.json_response(props or {})

    return {"/health": health_handler, "/props": props_handler}


LOADED_PROPS = {
    "default_generation_settings": {"n_ctx": 4096},
    "total_slots": 1,
    "model_path": "/models/qwen2.5-coder-7b-instruct-q4_k_m.gguf",
    "build_info": "b6500-abc123",
}


def time_routes(offset_ms: int = 0, body: str | None = None, status: int = 200):
    """Bitget's GET /api/v2/public/time, its clock `offset_ms` off the real one."""

    async def handler(request: web.Request) -> web.StreamResponse:
        if body is not None:
            return web.Response(text=body, status=status, content_type="text/html")
        now_ms = time.time_ns() // 1_000_000 + offset_ms
        document = {
            "code": "00000",
            "msg": "success",
            "requestTime": now_ms,
            "data": {"serverTime": str(now_ms)},
        }
        return web.json_response(document, status=status)

    return {"/api/v2/public/time": handler}


def write_credentials(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


def assert_no_secret(result: CheckResult) -> None:
    for secret in (API_SECRET, PASSPHRASE, API_KEY):
        assert secret not in result.detail and secret not in result.fix
