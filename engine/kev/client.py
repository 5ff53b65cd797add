"""KevClient: llama-server's OpenAI-compatible chat endpoint, constrained to Kev's command.

Every request sends the same system prompt first (with `cache_prompt`, llama-server then only
evaluates the context that follows it), the command's JSON schema in the nested
`response_format: {"type": "json_schema", "json_schema": {"schema": ...}}` form (the flat form
is silently ignored by llama-server), a bounded `max_tokens` and temperature 0.

`ask` never raises for anything the server or the network does: a model still loading (503),
a refused connection, a timeout, an HTTP error, an unreadable answer, output cut at
`max_tokens`, invalid JSON and a schema violation each come back as a `KevReply` without a
command, with a `KevFailure` and a reason.

The HTTP client is aiohttp, not httpx (docs/architecture.md, "The HTTP client", says why).
"""

from __future__ import annotations

import enum
import time
from typing import NamedTuple

import aiohttp
import orjson

from engine.http_session import HttpSessionClient
from engine.kev.command import KevCommand, KevCommandError, KevCommandSpec
from engine.kev.config import KevClientConfig
from engine.kev.context import system_prompt

_ERROR_TEXT_MAX = 200


class KevFailure(enum.Enum):
    """Why a reply carries no command. The first three mean the server is not usable now."""

    LOADING = "loading"
    UNREACHABLE = "unreachable"
    TIMEOUT = "timeout"
    HTTP_ERROR = "http_error"
    BAD_RESPONSE = "bad_response"
    TRUNCATED = "truncated"
    INVALID_JSON = "invalid_json"
    SCHEMA_VIOLATION = "schema_violation"


SERVER_DOWN = frozenset({KevFailure.LOADING, KevFailure.UNREACHABLE, KevFailure.TIMEOUT})


class KevTimings(NamedTuple):
    """llama-server's own figures for one request: prompt tokens taken from the cache
    (`cache_n`) and evaluated now (`prompt_n`), generated tokens (`predicted_n`) and the
    milliseconds spent on each phase."""

    cache_n: int
    prompt_n: int
    prompt_ms: float
    predicted_n: int
    predicted_ms: float


class KevReply(NamedTuple):
    """One answer: a command, or `failure` and `reason`. `raw` is the model's text (empty when
    there was none), `wall_ms` the request's round trip as this client saw it."""

    command: KevCommand | None
    failure: KevFailure | None
    reason: str
    raw: str
    model: str
    wall_ms: float
    timings: KevTimings | None
    finish_reason: str


class KevHealth(NamedTuple):
    """`/health`: `ok`, `loading` (503 while the model loads), `unreachable` or `error`."""

    state: str
    detail: str


class KevServerProps(NamedTuple):
    """What `/props` says about the loaded model."""

    model: str
    context_size: int
    slots: int
    build: str


def _error_text(body: bytes) -> str:
    """The server's error message from an OpenAI-style error body, else the body's start."""
    try:
        document = orjson.loads(body)
        message = document["error"]["message"]
        if isinstance(message, str):
            return message[:_ERROR_TEXT_MAX]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        pass
    return body[:_ERROR_TEXT_MAX].decode("utf-8", "replace").strip() or "(empty body)"


def _timings(document: dict) -> KevTimings | None:
    timings = document.get("timings")
    if not isinstance(timings, dict):
        return None
    try:
        return KevTimings(
            int(timings.get("cache_n", 0)),
            int(timings["prompt_n"]),
            float(timings["prompt_ms"]),
            int(timings["predicted_n"]),
            float(timings["predicted_ms"]),
        )
    except (KeyError, TypeError, ValueError):
        return None


class KevClient(HttpSessionClient):
    """One keep-alive connection pool to llama-server. `start`/`stop` own the pool."""

    def __init__(self, config: KevClientConfig, spec: KevCommandSpec) -> None:
        self.config = config
        self.spec = spec
        self.system_prompt = system_prompt(spec)
        self._url = config.base_url.rstrip("/")
        # The part of every request body that never changes.
        self._fixed = {
            "max_tokens": config.max_tokens,
            "temperature": config.temperature,
            "cache_prompt": True,
            "stream": False,
            # The schema's grammar allows whitespace after the closing brace, and a small
            # model pads it with newlines and tabs up to the limit (two dozen tokens). So the
            # brace is the stop word; no value of a command can contain one, and `ask` puts it
            # back (llama-server drops the stop word from the content).
            "stop": ["}"],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "kev_command", "schema": spec.json_schema()},
            },
        }
        self._request_timeout = aiohttp.ClientTimeout(
            total=config.request_timeout_s, connect=config.connect_timeout_s
        )
        self._probe_timeout = aiohttp.ClientTimeout(
            total=config.probe_timeout_s, connect=config.connect_timeout_s
        )

    def __repr__(self) -> str:
        return f"KevClient(base_url={self._url!r})"

    def _open_session(self) -> aiohttp.ClientSession:
        headers = {"Content-Type": "application/json"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        return aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=self.config.max_connections),
            headers=headers,
            # A local server only: an inherited proxy setting must not reroute it.
            trust_env=False,
        )

    def request_body(self, context: str, max_tokens: int | None = None) -> bytes:
        """The exact bytes `ask` sends for `context`."""
        body = {
            "messages": [
                {"role": "system", "content": self.system_prompt},
                {"role": "user", "content": context},
            ],
            **self._fixed,
        }
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        return orjson.dumps(body)

    async def ask(
        self, context: str, max_tokens: int | None = None, timeout_s: float | None = None
    ) -> KevReply:
        """Kev's command for one context (`max_tokens` and `timeout_s` override the configured
        bound and `request_timeout_s`)."""
        session = self._session()
        body = self.request_body(context, max_tokens)
        limit_s = self.config.request_timeout_s if timeout_s is None else timeout_s
        timeout = (
            self._request_timeout
            if timeout_s is None
            else aiohttp.ClientTimeout(total=timeout_s, connect=self.config.connect_timeout_s)
        )
        started = time.perf_counter()

        def failed(failure: KevFailure, reason: str, raw: str = "", model: str = "") -> KevReply:
            wall_ms = (time.perf_counter() - started) * 1e3
            return KevReply(None, failure, reason, raw, model, wall_ms, None, "")

        try:
            async with session.post(
                f"{self._url}/v1/chat/completions", data=body, timeout=timeout
            ) as response:
                status = response.status
                payload = await response.read()
        except TimeoutError:
            return failed(KevFailure.TIMEOUT, f"no answer within {limit_s:g} s")
        except aiohttp.ClientConnectorError as error:
            return failed(
                KevFailure.UNREACHABLE, f"cannot connect to {self._url}: {error.os_error}"
            )
        except aiohttp.ClientError as error:
            return failed(KevFailure.UNREACHABLE, f"{type(error).__name__}: {error}")
        wall_ms = (time.perf_counter() - started) * 1e3
        if status == 503:
            return failed(KevFailure.LOADING, f"server not ready: {_error_text(payload)}")
        if status != 200:
            return failed(KevFailure.HTTP_ERROR, f"HTTP {status}: {_error_text(payload)}")
        try:
            document = orjson.loads(payload)
            choice = document["choices"][0]
            content = choice["message"]["content"]
            finish_reason = choice.get("finish_reason") or ""
            if not isinstance(content, str):
                raise TypeError(f"content is {type(content).__name__}")
        except (orjson.JSONDecodeError, KeyError, IndexError, TypeError) as error:
            return failed(
                KevFailure.BAD_RESPONSE, f"unreadable answer ({error}): {payload[:120]!r}"
            )
        model = document.get("model")
        # llama-server names the model by its path; the file name is what identifies it.
        model = model.rsplit("/", 1)[-1] if isinstance(model, str) else ""
        timings = _timings(document)

        def rejected(failure: KevFailure, reason: str) -> KevReply:
            return KevReply(None, failure, reason, content, model, wall_ms, timings, finish_reason)

        if finish_reason == "length":
            limit = max_tokens if max_tokens is not None else self.config.max_tokens
            return rejected(KevFailure.TRUNCATED, f"output cut at max_tokens={limit}")
        if finish_reason == "stop" and content.lstrip().startswith("{"):
            content = content.rstrip()
            if not content.endswith("}"):
                content += "}"  # the stop word
        try:
            command = self.spec.parse(content)
        except KevCommandError as error:
            return rejected(KevFailure.SCHEMA_VIOLATION, str(error))
        except orjson.JSONDecodeError as error:
            return rejected(KevFailure.INVALID_JSON, f"not JSON: {error}")
        return KevReply(command, None, "", content, model, wall_ms, timings, finish_reason)

    async def health(self) -> KevHealth:
        """`/health`: never raises."""
        try:
            async with self._session().get(
                f"{self._url}/health", timeout=self._probe_timeout
            ) as response:
                payload = await response.read()
                status = response.status
        except TimeoutError:
            return KevHealth("unreachable", f"no answer within {self.config.probe_timeout_s:g} s")
        except aiohttp.ClientError as error:
            return KevHealth("unreachable", f"{type(error).__name__}: {error}")
        if status == 200:
            return KevHealth("ok", "")
        if status == 503:
            return KevHealth("loading", _error_text(payload))
        return KevHealth("error", f"HTTP {status}: {_error_text(payload)}")

    async def props(self) -> KevServerProps | None:
        """`/props` (model path, context size, slots, build); None when unavailable."""
        document = await self._get_json("/props")
        if not isinstance(document, dict):
            return None
        settings = document.get("default_generation_settings")
        context_size = settings.get("n_ctx", 0) if isinstance(settings, dict) else 0
        model_path = str(document.get("model_path") or document.get("model_alias") or "")
        return KevServerProps(
            model_path.rsplit("/", 1)[-1],
            int(context_size or 0),
            int(document.get("total_slots") or 0),
            str(document.get("build_info") or ""),
        )

    async def metrics(self) -> dict[str, float]:
        """`/metrics` (Prometheus text, only with `--metrics`) as name -> value; empty when
        the endpoint is off or unreachable."""
        try:
            async with self._session().get(
                f"{self._url}/metrics", timeout=self._probe_timeout
            ) as response:
                if response.status != 200:
                    return {}
                text = await response.text()
        except (TimeoutError, aiohttp.ClientError):
            return {}
        figures: dict[str, float] = {}
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            name, _, value = line.rpartition(" ")
            try:
                figures[name] = float(value)
            except ValueError:
                continue
        return figures

    async def _get_json(self, path: str) -> object:
        try:
            async with self._session().get(
                f"{self._url}{path}", timeout=self._probe_timeout
            ) as response:
                if response.status != 200:
                    return None
                return orjson.loads(await response.read())
        except (TimeoutError, aiohttp.ClientError, orjson.JSONDecodeError):
            return None
