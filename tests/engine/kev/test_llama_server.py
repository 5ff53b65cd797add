"""The llama-server launcher: flags, pid file, refusals, and a real start and stop."""

from __future__ import annotations

import os
import signal
import socket
import urllib.request

import pytest

from engine.kev.config import LlamaServerConfig
from engine.kev.model_fetch import is_gguf, tiny_model_path
from engine.kev.server import (
    LlamaServerError,
    LlamaServerProcess,
    find_llama_server,
    free_port,
    llama_server_pid_path,
    read_llama_server_pid,
)


def test_the_reference_flags():
    config = LlamaServerConfig(model="/models/kev.gguf")
    assert config.arguments("/bin/llama-server") == [
        "/bin/llama-server",
        "-m",
        "/models/kev.gguf",
        "-ngl",
        "99",
        "-c",
        "4096",
        "-fa",
        "on",
        "--host",
        "127.0.0.1",
        "--port",
        "8001",
        "-np",
        "1",
        "--metrics",
    ]


def test_a_niced_server_runs_through_nice():
    config = LlamaServerConfig(model="m.gguf", niceness=10)
    assert config.arguments("/bin/llama-server")[:4] == ["nice", "-n", "10", "/bin/llama-server"]


def test_threads_and_extra_arguments_are_appended():
    config = LlamaServerConfig(model="m.gguf", threads=2, extra_args=("--cache-ram", "0"))
    assert config.arguments("llama-server")[-6:] == ["-t", "2", "-tb", "2", "--cache-ram", "0"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"port": 0},
        {"port": 70_000},
        {"flash_attention": "yes"},
        {"context_size": 0},
        {"threads": 0},
        {"gpu_layers": -1},
        {"ready_timeout_s": 0},
        {"niceness": 20},
    ],
)
def test_a_config_out_of_bounds_is_refused(kwargs):
    with pytest.raises(ValueError, match="LlamaServerConfig"):
        LlamaServerConfig(model="m.gguf", **kwargs)


def test_the_pid_file_lives_in_the_runtime_dir_when_there_is_one(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert llama_server_pid_path() == tmp_path / "hft-console" / "llama-server.pid"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    cached = tmp_path / "cache" / "hft-console" / "llama-server.pid"
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "gone"))  # set, but no such directory
    assert llama_server_pid_path() == cached
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert llama_server_pid_path() == cached


def test_a_pid_file_is_only_believed_for_a_live_llama_server(tmp_path):
    pid_file = tmp_path / "llama-server.pid"
    assert read_llama_server_pid(pid_file) is None
    pid_file.write_text("not a pid\n")
    assert read_llama_server_pid(pid_file) is None
    pid_file.write_text(f"{os.getpid()}\n")  # alive, but not a llama-server
    assert read_llama_server_pid(pid_file) is None


def test_an_explicit_binary_must_be_executable(tmp_path):
    script = tmp_path / "llama-server"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(LlamaServerError, match="is not an executable file"):
        find_llama_server(script)


def test_a_missing_model_is_refused_before_anything_starts(tmp_path):
    server = LlamaServerProcess(
        LlamaServerConfig(model=str(tmp_path / "none.gguf"), pid_path=str(tmp_path / "p"))
    )
    with pytest.raises(LlamaServerError, match=r"none\.gguf not found"):
        server.start()
    assert server.pid is None and not (tmp_path / "p").exists()


@pytest.fixture
def binary():
    try:
        return find_llama_server()
    except LlamaServerError as error:
        pytest.skip(f"no llama-server: {error}")


@pytest.fixture
def model():
    path = tiny_model_path()
    if not is_gguf(path):
        pytest.skip(f"the tiny model is not at {path}: run hft-console kev fetch-tiny-model")
    return path


def server_config(tmp_path, model, **kwargs) -> LlamaServerConfig:
    settings = {
        "model": str(model),
        "port": free_port(),
        "threads": 1,
        "ready_timeout_s": 60.0,
        "pid_path": str(tmp_path / "llama-server.pid"),
        "log_path": str(tmp_path / "llama-server.log"),
    }
    settings.update(kwargs)
    return LlamaServerConfig(**settings)


def test_a_busy_port_is_refused(tmp_path, binary, model):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        server = LlamaServerProcess(server_config(tmp_path, model, port=port))
        with pytest.raises(LlamaServerError, match=f"127.0.0.1:{port} is already in use"):
            server.start()


def test_start_serves_records_its_pid_and_stop_cleans_up(tmp_path, binary, model):
    server = LlamaServerProcess(server_config(tmp_path, model))
    with server:
        pid = server.pid
        assert server.running and server.ready_s is not None
        assert read_llama_server_pid(server.pid_path) == pid
        with urllib.request.urlopen(f"{server.url}/health", timeout=5) as answer:
            assert answer.status == 200
        second = LlamaServerProcess(server_config(tmp_path, model))
        with pytest.raises(LlamaServerError, match=f"already running as pid {pid}"):
            second.start()
    assert not server.pid_path.exists() and not server.running
    assert read_llama_server_pid(tmp_path / "llama-server.pid") is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_server_that_dies_while_starting_is_reported_with_its_log(tmp_path, binary):
    corrupt = tmp_path / "corrupt.gguf"
    corrupt.write_bytes(b"GGUF" + b"\x00" * 64)
    server = LlamaServerProcess(server_config(tmp_path, corrupt))
    with pytest.raises(LlamaServerError, match=r"exited with code .* while starting; its log"):
        server.start()
    assert not server.pid_path.exists() and server.pid is None


def test_stop_ends_even_a_stopped_server(tmp_path, binary, model):
    server = LlamaServerProcess(server_config(tmp_path, model, stop_timeout_s=5.0))
    server.start()
    os.kill(server.pid, signal.SIGSTOP)
    assert server.stop() == 0  # continued, then a clean shutdown on SIGTERM
    assert not server.running and not server.pid_path.exists()


def test_a_niced_server_yields_the_cpu(tmp_path, binary, model):
    with LlamaServerProcess(server_config(tmp_path, model, niceness=19)) as server:
        assert os.getpriority(os.PRIO_PROCESS, server.pid) == 19
        autogroup = f"/proc/{server.pid}/autogroup"
        if os.path.exists(autogroup):  # autogroup scheduling: the session's share counts
            with open(autogroup) as group:
                assert group.read().split()[-1] == "19"
