"""Kev's configuration, read without loading the client, the hub or the feature kernels: where
llama-server answers and how it is started, and how the hub queues and trusts its answers."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from engine.kev.queue import KevQueueOverflow
from engine.validation import require_count, require_integer, require_positive

DEFAULT_KEV_URL = "http://127.0.0.1:8001"


ENV_KEV_API_KEY = "LLAMA_API_KEY"
"""The variable llama-server itself reads its API key from: exported once, it protects the
server `kev serve` starts and lets the engine's client in, and it never shows in a command
line."""


@dataclass(frozen=True, slots=True)
class KevClientConfig:
    """`request_timeout_s` bounds a whole decision request (a decision later than its ttl is
    useless anyway); `max_tokens` must leave room for the longest valid command (a 120-character
    reason is about 35 tokens, the rest about 30). `api_key` (default: `$LLAMA_API_KEY`, unset
    or empty: none) goes out as a Bearer token and never into a repr."""

    base_url: str = DEFAULT_KEV_URL
    request_timeout_s: float = 3.0
    connect_timeout_s: float = 0.5
    probe_timeout_s: float = 1.0
    max_tokens: int = 96
    temperature: float = 0.0
    api_key: str | None = field(
        default_factory=lambda: os.environ.get(ENV_KEV_API_KEY) or None, repr=False
    )
    max_connections: int = 4

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(
                f"KevClientConfig.base_url must be http(s)://..., got {self.base_url!r}"
            )
        for name in ("request_timeout_s", "connect_timeout_s", "probe_timeout_s"):
            require_positive("KevClientConfig", name, getattr(self, name))
        require_integer("KevClientConfig", "max_tokens", self.max_tokens, 1, 4096)
        if not 0.0 <= self.temperature <= 2.0:
            raise ValueError(
                f"KevClientConfig.temperature must be within [0, 2], got {self.temperature!r}"
            )
        require_count("KevClientConfig", "max_connections", self.max_connections)
        if self.api_key is not None:
            check_api_key(self.api_key, "KevClientConfig.api_key")


def check_api_key(api_key: str, name: str) -> None:
    """Refuse a key that cannot travel as one HTTP header token; the message never quotes it."""
    if not (
        isinstance(api_key, str)
        and api_key
        and api_key.isascii()
        and api_key.isprintable()
        and " " not in api_key
        and "," not in api_key
    ):
        raise ValueError(
            f"{name} must be printable ASCII without spaces or commas (llama-server splits "
            "its keys on commas); check for a stray newline or quote"
        )


@dataclass(frozen=True, slots=True)
class KevHubConfig:
    """`max_in_flight`: concurrent requests (1: one GPU, one slot). `queue_capacity` symbols
    may wait, `overflow` says who is dropped beyond that. A command is stale when the mid moved
    more than `max_mid_move_bps` since its context. `decision_log_size` decisions are kept.
    `warmup_timeout_s` bounds the warm-up request sent whenever the server comes (back) online
    (a cold prompt cache on a CPU: about 20 s for the tiny model on one busy core, see
    docs/kev.md); None sends none."""

    max_in_flight: int = 1
    queue_capacity: int = 8
    overflow: KevQueueOverflow = KevQueueOverflow.DROP_OLDEST
    max_mid_move_bps: float = 5.0
    decision_log_size: int = 256
    health_interval_s: float = 2.0
    warmup_timeout_s: float | None = 90.0
    latency_scale: float = 1.0
    """In a replay, an answer takes effect its measured latency times this after its request,
    in market time (0.2 models a server five times faster)."""

    def __post_init__(self) -> None:
        for name in ("max_in_flight", "queue_capacity", "decision_log_size"):
            require_count("KevHubConfig", name, getattr(self, name))
        if not isinstance(self.overflow, KevQueueOverflow):
            raise ValueError(
                f"KevHubConfig.overflow must be a KevQueueOverflow, got {self.overflow!r}"
            )
        for name in ("max_mid_move_bps", "health_interval_s", "warmup_timeout_s", "latency_scale"):
            value = getattr(self, name)
            if name != "warmup_timeout_s" or value is not None:
                require_positive("KevHubConfig", name, value)


@dataclass(frozen=True, slots=True)
class LlamaServerConfig:
    """The server's flags. `gpu_layers=99` offloads every layer where a GPU exists (ignored on
    a CPU build); `threads` None lets llama-server choose. `niceness` > 0 starts it at a lower
    CPU priority: where it computes on the CPU cores the engine also needs, the engine wins.
    `pid_path` None means `llama_server_pid_path()`; `log_path` None means `llama-server.log`
    in the user cache. `api_key` (default: `$LLAMA_API_KEY`, unset or empty: none) is required
    by the server on every endpoint but `/health`; it never goes into a repr or the argv."""

    model: str
    binary: str | None = None
    host: str = "127.0.0.1"
    port: int = 8001
    context_size: int = 4096
    gpu_layers: int = 99
    flash_attention: str = "on"
    parallel: int = 1
    metrics: bool = True
    threads: int | None = None
    niceness: int = 0
    extra_args: tuple[str, ...] = field(default_factory=tuple)
    ready_timeout_s: float = 180.0
    stop_timeout_s: float = 10.0
    pid_path: str | None = None
    log_path: str | None = None
    api_key: str | None = field(
        default_factory=lambda: os.environ.get(ENV_KEV_API_KEY) or None, repr=False
    )

    def __post_init__(self) -> None:
        if self.api_key is not None:
            check_api_key(self.api_key, "LlamaServerConfig.api_key")
        if not 1 <= self.port <= 65_535:
            raise ValueError(f"LlamaServerConfig.port must be within [1, 65535], got {self.port}")
        if self.flash_attention not in ("on", "off", "auto"):
            raise ValueError(
                f"LlamaServerConfig.flash_attention must be on, off or auto, "
                f"got {self.flash_attention!r}"
            )
        for name in ("context_size", "parallel"):
            if getattr(self, name) < 1:
                raise ValueError(f"LlamaServerConfig.{name} must be >= 1")
        if self.gpu_layers < 0 or (self.threads is not None and self.threads < 1):
            raise ValueError("LlamaServerConfig.gpu_layers must be >= 0 and threads >= 1")
        if not 0 <= self.niceness <= 19:
            raise ValueError(
                f"LlamaServerConfig.niceness must be within [0, 19], got {self.niceness}"
            )
        if not (self.ready_timeout_s > 0 and self.stop_timeout_s > 0):
            raise ValueError("LlamaServerConfig timeouts must be positive")

    def arguments(self, binary: Path) -> list[str]:
        """The full command line (through `nice`, which execs the server under the same PID,
        when `niceness` is set)."""
        arguments = [
            str(binary),
            "-m",
            self.model,
            "-ngl",
            str(self.gpu_layers),
            "-c",
            str(self.context_size),
            "-fa",
            self.flash_attention,
            "--host",
            self.host,
            "--port",
            str(self.port),
            "-np",
            str(self.parallel),
        ]
        if self.metrics:
            arguments.append("--metrics")
        if self.threads is not None:
            arguments += ["-t", str(self.threads), "-tb", str(self.threads)]
        arguments += self.extra_args
        if self.niceness:
            return ["nice", "-n", str(self.niceness), *arguments]
        return arguments

    def environment(self, inherited: dict[str, str]) -> dict[str, str]:
        """The server's environment: `inherited` with the API key set, or removed when there
        is none (an inherited one would make the server ask for a key its clients lack)."""
        environment = {k: v for k, v in inherited.items() if k != ENV_KEV_API_KEY}
        if self.api_key is not None:
            environment[ENV_KEV_API_KEY] = self.api_key
        return environment
