"""The llama-server and kev-serve checks, against loopback stand-ins for llama-server."""

from __future__ import annotations

from support.doctor import (
    llama_routes,
)
from support.loopback import serve

from engine.kev.config import KevClientConfig
from engine.kev.server import free_port
from engine.tools.doctor.kev import check_kev_serve, check_llama_server
from engine.tools.doctor.report import CheckStatus


async def test_a_serving_llama_server_reports_its_model_context_and_slots(llama) -> None:
    result = await check_llama_server(llama.url, timeout_s=1.0)
    assert result.status is CheckStatus.OK
    assert result.detail.startswith(
        f"{llama.url}: model qwen2.5-coder-7b-instruct-q4_k_m.gguf loaded, context 4096, 1 slot"
    )
    assert "build b6500-abc123" in result.detail


async def test_a_loading_llama_server_warns() -> None:
    server = await serve(llama_routes(health=503))
    try:
        result = await check_llama_server(server.url, timeout_s=1.0)
    finally:
        await server.stop()
    assert result.status is CheckStatus.WARN
    assert "still loading its model (503)" in result.detail


async def test_a_healthy_server_without_a_model_warns() -> None:
    server = await serve(llama_routes(props={"total_slots": 1}))
    try:
        result = await check_llama_server(server.url, timeout_s=1.0)
    finally:
        await server.stop()
    assert result.status is CheckStatus.WARN and "names no loaded model" in result.detail


async def test_no_llama_server_means_kev_is_offline() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = await check_llama_server(url, timeout_s=1.0)
    assert result.status is CheckStatus.WARN
    assert result.detail.startswith(f"nothing answers at {url}")
    assert "kev serve" in result.fix
    assert KevClientConfig().base_url in (await check_llama_server(None, 0.5)).detail


def test_kev_serve_names_its_binary_and_model_or_how_to_get_them() -> None:
    result = check_kev_serve()
    assert ("binary " in result.detail) or ("llama-server not found" in result.detail)
    assert "model" in result.detail
    if result.status is CheckStatus.WARN:
        assert "kev-local" in result.fix or "fetch-tiny-model" in result.fix
