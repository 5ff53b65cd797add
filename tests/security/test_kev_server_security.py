"""Kev's llama-server: loopback by default, an API key end to end, no shell.

The real `hft-console kev serve` (a subprocess) with the real llama-server and the tiny model,
an API key in `$LLAMA_API_KEY` and a model path full of shell metacharacters: the server
listens on 127.0.0.1 only, refuses requests without the key (401) and answers `KevClient`
with it; the key is in no command line, log or output; the path reaches the server verbatim
and no shell ever runs.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import httpx
import pytest
from support.cli import CLI, REPO
from support.kev import real_llama_server
from support.secret_scan import needles

from engine.kev.client import KevClient, KevFailure
from engine.kev.command import KevCommandSpec
from engine.kev.config import KevClientConfig, LlamaServerConfig
from engine.kev.server import LlamaServerError, LlamaServerProcess, free_port
from engine.settings.schema import Settings

KEV_KEY = "kev_7d1e9a3c5b2f4e6d8a0c1b3d5f7e9a2c"
HOSTILE_NAME = "tiny; touch pwned-semicolon; $(touch pwned-dollar) `touch pwned-tick` q.gguf"
MARKERS = ("pwned-semicolon", "pwned-dollar", "pwned-tick")
CONTEXT = "BTCUSDT EMERGENCY p=0.83 mid 60000 spread 0.1 bps; risk ACTIVE scale 100% hedge 50%"


def leaks_key(blob: bytes | str) -> bool:
    data = blob.encode() if isinstance(blob, str) else blob
    return any(form in data for form in needles(KEV_KEY))


class Served(NamedTuple):
    process: subprocess.Popen[str]
    url: str
    port: int
    pid: int
    workdir: Path
    log_path: Path
    output: list[str]


def _llama_server_pid(pid_file: Path, deadline: float) -> int:
    while time.monotonic() < deadline:
        if pid_file.exists() and pid_file.read_text().strip():
            return int(pid_file.read_text())
        time.sleep(0.1)
    raise AssertionError("kev serve wrote no pid file")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """`hft-console kev serve` with the key in the environment and a hostile model path."""
    binary, model = real_llama_server()
    workdir = tmp_path_factory.mktemp("kev-serve")
    hostile_model = workdir / "models" / HOSTILE_NAME
    hostile_model.parent.mkdir()
    hostile_model.symlink_to(model)
    config = workdir / "config.toml"
    config.write_text("")
    port = free_port()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("HFT_CONSOLE_", "LLAMA_"))}
    environment = {
        **base,
        "PYTHONPATH": str(REPO),
        "HFT_CONSOLE_CONFIG": str(config),
        "XDG_RUNTIME_DIR": str(workdir),
        "XDG_CACHE_HOME": str(workdir / "cache"),
        "LLAMA_API_KEY": KEV_KEY,
    }
    command = [
        sys.executable, "-m", "console.cli", "kev", "serve", "--model", str(hostile_model),
        "--llama-server", str(binary), "--port", str(port), "--threads", "1",
        "--ready-timeout", "120",
    ]  # fmt: skip
    process = subprocess.Popen(
        command,
        cwd=workdir,  # where a shell would have created the markers
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    output: list[str] = []
    assert process.stdout is not None
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        output.append(line)
        if "is ready" in line:
            break
    if not any("is ready" in line for line in output):
        process.kill()
        pytest.fail("kev serve did not get ready:\n" + "".join(output))
    pid = _llama_server_pid(workdir / "hft-console" / "llama-server.pid", deadline)
    yield Served(
        process,
        f"http://127.0.0.1:{port}",
        port,
        pid,
        workdir,
        workdir / "cache" / "hft-console" / "llama-server.log",
        output,
    )
    process.send_signal(signal.SIGTERM)
    rest, _ = process.communicate(timeout=30)
    output.append(rest)


def _request(url: str, path: str, key: str | None, body: bytes | None = None) -> int:
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    method = "POST" if body is not None else "GET"
    response = httpx.request(method, url + path, content=body, headers=headers, timeout=60)
    return response.status_code


def _non_loopback_address() -> str | None:
    """This machine's address on its default route (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))
            address = probe.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


def _listening_addresses(port: int) -> set[str]:
    """Local addresses in LISTEN state on `port`, from /proc/net/tcp and tcp6."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            address, hex_port = fields[1].rsplit(":", 1)
            if int(hex_port, 16) == port and fields[3] == "0A":
                if len(address) == 8:
                    found.add(socket.inet_ntoa(bytes.fromhex(address)[::-1]))
                else:
                    found.add(f"ipv6:{address}")
    return found


def test_the_default_command_line_binds_loopback() -> None:
    server = Settings().llama_server_config("model.gguf")
    arguments = server.arguments(Path("llama-server"))
    assert arguments[arguments.index("--host") + 1] == "127.0.0.1"
    assert LlamaServerConfig(model="m.gguf").host == "127.0.0.1"


def test_a_non_loopback_bind_without_a_key_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LLAMA_API_KEY", raising=False)
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    for host in ("0.0.0.0", "::", "192.168.1.10", "kev.example.net"):
        server = LlamaServerProcess(
            LlamaServerConfig(
                model=str(model),
                host=host,
                pid_path=str(tmp_path / "pid"),
                log_path=str(tmp_path / "log"),
            )
        )
        with pytest.raises(LlamaServerError, match="without an API key"):
            server.start()
        assert server.pid is None  # refused before anything was spawned


def test_the_key_is_in_no_repr_and_no_argv() -> None:
    server = LlamaServerConfig(model="m.gguf", api_key=KEV_KEY)
    client = KevClientConfig(api_key=KEV_KEY)
    assert not leaks_key(repr(server)) and not leaks_key(repr(client))
    assert not leaks_key(" ".join(server.arguments(Path("llama-server"))))
    assert server.environment({"LLAMA_API_KEY": "other"})["LLAMA_API_KEY"] == KEV_KEY
    assert "LLAMA_API_KEY" not in LlamaServerConfig(model="m", api_key=None).environment(
        {"LLAMA_API_KEY": "inherited"}
    )
    with pytest.raises(ValueError, match="printable ASCII") as bad:
        KevClientConfig(api_key=KEV_KEY + "\n")
    assert not leaks_key(str(bad.value))


def test_kev_serve_listens_on_loopback_only(served: Served) -> None:
    assert _listening_addresses(served.port) == {"127.0.0.1"}
    assert _request(served.url, "/health", None) == 200
    address = _non_loopback_address()
    if address is None:
        pytest.skip("this machine has no non-loopback address to try")
    with socket.socket() as probe:
        probe.settimeout(2)
        assert probe.connect_ex((address, served.port)) != 0, f"reachable on {address}"


def test_without_the_key_the_server_answers_401(served: Served) -> None:
    body = b'{"messages":[{"role":"user","content":"hi"}],"max_tokens":1}'
    assert _request(served.url, "/v1/chat/completions", None, body) == 401
    assert _request(served.url, "/v1/chat/completions", "kev_wrong_key", body) == 401
    assert _request(served.url, "/props", None) == 401


async def test_kev_client_with_the_key_gets_answers(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = KevCommandSpec()
    keyless = KevClientConfig(base_url=served.url, api_key=None, request_timeout_s=60)
    async with KevClient(keyless, spec) as client:
        refused = await client.ask(CONTEXT)
    assert refused.failure is KevFailure.HTTP_ERROR and "HTTP 401" in refused.reason
    # The engine's way: the key from $LLAMA_API_KEY, as kev serve took it.
    monkeypatch.setenv("LLAMA_API_KEY", KEV_KEY)
    keyed = KevClientConfig(base_url=served.url, request_timeout_s=60)
    async with KevClient(keyed, spec) as client:
        assert (await client.health()).state == "ok"
        props = await client.props()
        reply = await client.ask(CONTEXT)
    assert props is not None and props.model == HOSTILE_NAME
    assert reply.failure not in (KevFailure.HTTP_ERROR, KevFailure.UNREACHABLE), reply.reason
    assert reply.raw.startswith("{")  # the model answered under the schema's grammar


def test_the_model_path_reaches_the_server_verbatim_and_no_shell_runs(served: Served) -> None:
    argv = Path(f"/proc/{served.pid}/cmdline").read_bytes().split(b"\0")[:-1]
    model = str(served.workdir / "models" / HOSTILE_NAME).encode()
    assert argv[argv.index(b"-m") + 1] == model
    assert Path(os.readlink(f"/proc/{served.pid}/exe")).name == "llama-server"
    parent = int(Path(f"/proc/{served.pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    assert parent == served.process.pid  # spawned by kev serve itself, no shell between
    for marker in MARKERS:
        assert not list(served.workdir.rglob(marker)), marker
        assert not (Path.cwd() / marker).exists() and not Path("/tmp", marker).exists()


def test_extra_arguments_reach_the_server_verbatim(tmp_path: Path) -> None:
    binary, model = real_llama_server()
    alias = "kev $(touch pwned-alias) `touch pwned-alias2`; touch pwned-alias3 | cat"
    server = LlamaServerProcess(
        LlamaServerConfig(
            model=str(model),
            binary=str(binary),
            port=free_port(),
            threads=1,
            extra_args=("--alias", alias),
            ready_timeout_s=120,
            api_key=None,
            pid_path=str(tmp_path / "pid"),
            log_path=str(tmp_path / "server.log"),
        )
    )
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        server.start()
        assert server.pid is not None
        argv = Path(f"/proc/{server.pid}/cmdline").read_bytes().split(b"\0")[:-1]
        assert argv[argv.index(b"--alias") + 1] == alias.encode()
    finally:
        server.stop()
        os.chdir(cwd)
    assert not list(tmp_path.glob("pwned-*"))


def test_the_key_is_in_no_command_line_log_or_output(served: Served) -> None:
    listing = subprocess.run(
        ["ps", "-eo", "pid,args"], capture_output=True, text=True, check=True
    ).stdout
    assert str(served.pid) in listing
    status = subprocess.run(
        [*CLI, "kev", "status", "--url", served.url],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "LLAMA_API_KEY": KEV_KEY},
        timeout=60,
    )
    assert f"server   {served.url}: ok" in status.stdout
    assert "model    " + HOSTILE_NAME in status.stdout  # /props needs the key: it was sent
    findings = {
        "ps listing": leaks_key(listing),
        "llama-server argv": leaks_key(Path(f"/proc/{served.pid}/cmdline").read_bytes()),
        "kev serve argv": leaks_key(Path(f"/proc/{served.process.pid}/cmdline").read_bytes()),
        "kev serve output": leaks_key("".join(served.output)),
        "llama-server log": leaks_key(served.log_path.read_bytes()),
        "kev status output": leaks_key(status.stdout + status.stderr),
    }
    assert {where for where, found in findings.items() if found} == set()
    assert "API key from $LLAMA_API_KEY required" in "".join(served.output)
