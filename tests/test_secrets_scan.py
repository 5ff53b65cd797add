"""No secret reaches the journal file, the logs, or any text we print.

Known key, secret and passphrase strings go through the real paths that could leak them: the
REST client against the real simulated exchange (retries, an order with an unknown outcome, a
clock resync, refused keys), a journal fed payloads that carry them, the credentials loader
and the live confirmation. Then the SQLite files' bytes, every log record and every repr, str
and traceback are scanned for each secret, raw and in the encodings a leak would take. Last,
the console itself: the engine running with the keys, the screen dumped as SVG.
"""

from __future__ import annotations

import asyncio
import base64
import html
import logging
import os
import re
import time
import traceback
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from urllib.parse import quote

import pytest
from support.secret_scan import (
    API_KEY,
    API_SECRET,
    PASSPHRASE,
    SECRETS,
    WRONG_PASSPHRASE,
    leaks,
    sim_with_keys,
)

from console.cli.live_guard import confirm_live
from engine.bitget.credentials import (
    ENV_API_KEY,
    ENV_API_SECRET,
    ENV_PASSPHRASE,
    Credentials,
    CredentialsError,
    load_credentials,
)
from engine.bitget.endpoints import PLACE_ORDER
from engine.bitget.rest import (
    BitgetApiError,
    BitgetRestClient,
    BitgetRestConfig,
    BitgetRestError,
    build_signed_request,
    place_order_body,
)
from engine.journal import Journal, JournalConfig
from engine.sim.server import SimExchange

FAST_RETRIES = {
    "retry_initial_s": 0.01,
    "retry_max_s": 0.05,
    "reconcile_grace_s": 0.05,
    "request_timeout_s": 2.0,
    "connect_timeout_s": 1.0,
}


def test_the_scanner_finds_each_form_it_looks_for() -> None:
    for secret in SECRETS:
        raw = secret.encode()
        for blob in (
            b"x" + raw + b"y",
            b"Authorization: " + base64.b64encode(b"ab" + raw + b"cd"),
            b"{" + base64.urlsafe_b64encode(b"z" + raw) + b"}",
            raw.hex().encode(),
            quote("k=" + secret, safe="").encode(),
        ):
            assert leaks(blob) == [secret], blob
    assert leaks(b"..." + base64.b64decode(API_SECRET) + b"...") == [API_SECRET]
    assert leaks("bg_9f2…7a9c <redacted>") == []


@pytest.fixture
async def sim() -> AsyncIterator[SimExchange]:
    async with sim_with_keys(5) as exchange:
        yield exchange


def _texts_of_error(error: BaseException) -> list[str]:
    return [str(error), repr(error), "".join(traceback.format_exception(error))]


async def _exercise_the_rest_client(sim: SimExchange, texts: list[str]) -> list[BaseException]:
    """Every logging path the sim can provoke; returns the errors raised on the way."""
    credentials = Credentials(API_KEY, API_SECRET, PASSPHRASE)
    errors: list[BaseException] = []
    config = BitgetRestConfig(base_url=sim.rest_url, **FAST_RETRIES)

    def skewed_ns() -> int:
        """A local clock 60 s ahead: 40008, a resync (with its warning), then success."""
        return time.time_ns() + 60_000_000_000

    async with BitgetRestClient(config, credentials, wall_clock_ns=skewed_ns) as client:
        assert sim.market is not None
        price = f"{sim.market.book('BTCUSDT', 1).best_bid - 300:.1f}"
        await client.positions()
        sim.faults.add("rest-error:429:2")  # retried with backoff, each retry logged
        await client.pending_orders("BTCUSDT")
        sim.faults.add("rest-error:503:1")  # outcome unknown: clientOid lookup, then re-send
        ack = await client.place_order("BTCUSDT", "buy", "0.010", price=price)
        await client.cancel_order("BTCUSDT", client_oid=ack.client_oid)
        sim.faults.add("rest-error:503:10")  # gives up: outcome unknown raised
        try:
            await client.place_order("BTCUSDT", "buy", "0.010", price=price)
        except BitgetRestError as error:
            errors.append(error)
        sim.faults.add("clear")
        texts += [repr(client), str(client), repr(client.config), repr(client.stats())]
        request = build_signed_request(
            credentials, "POST", PLACE_ORDER, "1700000000000", body={"symbol": "BTCUSDT"}
        )
        texts += [repr(request), str(request)]
    for wrong in (
        Credentials(API_KEY, API_SECRET, WRONG_PASSPHRASE),
        Credentials(API_KEY, WRONG_PASSPHRASE, PASSPHRASE),
        Credentials("bg_" + "0" * 32, API_SECRET, PASSPHRASE),
    ):
        async with BitgetRestClient(config, wrong) as client:
            with pytest.raises(BitgetApiError) as refused:
                await client.positions()
            errors.append(refused.value)
            texts += [repr(wrong), str(wrong)]
    texts += [repr(credentials), str(credentials), repr(config)]
    return errors


def _exercise_the_journal(path: Path, errors: Iterable[BaseException]) -> Journal:
    journal = Journal(JournalConfig(path))
    for secret in (API_KEY, API_SECRET, PASSPHRASE, WRONG_PASSPHRASE):
        journal.register_secret(secret)
    journal.start()
    credentials = Credentials(API_KEY, API_SECRET, PASSPHRASE)
    body = place_order_body("BTCUSDT", "buy", "0.010", price="60000.0", client_oid="scan-1")
    request = build_signed_request(credentials, "POST", PLACE_ORDER, "1700000000000", body=body)
    at_ns = 1_700_000_000_000_000_000
    journal.append_durable("order_intent", {"body": body, "headers": dict(request.headers)}, at_ns)
    for number, error in enumerate(errors, start=1):
        journal.append("fault", {"error": str(error), "type": type(error).__name__}, at_ns + number)
    journal.append(
        "fault",
        {
            "error": f"HMAC over the body failed with secret {API_SECRET} / {PASSPHRASE}",
            PASSPHRASE: [API_SECRET, {"nested": f"key={API_KEY}"}],
        },
        at_ns + 100,
    )
    journal.flush()
    return journal


def _sqlite_bytes(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir()) if path.is_file()}


async def test_no_secret_in_the_journal_the_logs_or_any_text(
    sim: SimExchange, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    texts: list[str] = []
    errors = await _exercise_the_rest_client(sim, texts)
    for error in errors:
        texts += _texts_of_error(error)

    journal_dir = tmp_path / "journal"
    journal = _exercise_the_journal(journal_dir / "events.sqlite", errors)
    while_running = _sqlite_bytes(journal_dir)
    assert any(name.endswith("-wal") for name in while_running)
    entries = journal.query()
    journal.stop()
    after_stop = _sqlite_bytes(journal_dir)

    # The credentials file loader and the live confirmation, the other places keys pass.
    config_dir = tmp_path / "config"
    config_dir.mkdir(mode=0o700)
    credentials_file = config_dir / "credentials.toml"
    credentials_file.write_text(
        f'[live]\napi_key = "{API_KEY}"\napi_secret = "{API_SECRET}"\npassphrase = "{PASSPHRASE}"\n'
    )
    os.chmod(credentials_file, 0o644)
    with pytest.raises(CredentialsError) as too_open:
        load_credentials(environ={}, path=credentials_file)
    texts += _texts_of_error(too_open.value)
    os.chmod(credentials_file, 0o600)
    loaded = load_credentials(environ={}, path=credentials_file)
    texts += [repr(loaded), str(loaded)]
    environment = {ENV_API_KEY: API_KEY, ENV_API_SECRET: API_SECRET, ENV_PASSPHRASE: ""}
    with pytest.raises(CredentialsError) as partial:
        load_credentials(environ=environment)
    texts += _texts_of_error(partial.value)
    screen: list[str] = []
    confirm_live(
        account="main",
        symbols=["BTCUSDT"],
        api_key=loaded.api_key,
        read=lambda prompt: screen.append(prompt) or PASSPHRASE,
        write=screen.append,
    )
    texts += screen

    # The paths really ran: retries, the unknown outcome, the resync, the refusals, redaction.
    log_text = caplog.text
    assert "retrying in" in log_text
    assert "looking up clientOid" in log_text
    assert "local clock is" in log_text
    assert {getattr(e, "code", None) for e in errors} >= {"40012", "40009", "40037"}
    assert any(getattr(e, "outcome_unknown", False) for e in errors)
    assert len(entries) == 2 + len(errors)
    assert "<redacted>" in str(entries[0].payload["headers"])
    assert "bg_…7a9c" in "".join(screen)

    records = [
        "\n".join(
            [
                record.getMessage(),
                repr(record.args),
                logging.Formatter().formatException(record.exc_info) if record.exc_info else "",
            ]
        )
        for record in caplog.records
    ]
    findings = {
        **{f"journal file {name} (running)": leaks(blob) for name, blob in while_running.items()},
        **{f"journal file {name} (stopped)": leaks(blob) for name, blob in after_stop.items()},
        "journal entries as read back": leaks(repr(entries)),
        "log output": leaks(log_text),
        **{f"log record {n}": leaks(text) for n, text in enumerate(records)},
        **{f"text {n}: {text[:60]!r}": leaks(text) for n, text in enumerate(texts)},
    }
    assert {where: found for where, found in findings.items() if found} == {}


async def test_no_secret_on_the_console_screen(sim: SimExchange, tmp_path: Path) -> None:
    """The real engine (its own process) trading the simulator with the keys loaded, under
    the console: the screen shows the masked key and nothing more of any secret; neither do
    the console's events or the engine's log."""
    from console.app import ConsoleConfig, HftConsoleApp
    from console.engine.config import EngineAdapterConfig
    from console.engine.handle import ShutdownPolicy
    from console.engine.node_handle import EngineNodeHandle
    from console.widgets.events import EventsPane
    from engine.config import EngineConfig
    from engine.laya.config import LayaClassifierConfig
    from engine.trading.config import TradingConfig

    engine = EngineConfig(
        live_url=sim.ws_url,
        laya=LayaClassifierConfig(prefer_gpu=False),
        trading=TradingConfig(journal_path=tmp_path / "journal.sqlite", rest_url=sim.rest_url),
        status_interval_s=0.05,
    )
    log = tmp_path / "console.log"
    credentials = Credentials(API_KEY, API_SECRET, PASSPHRASE)
    handle = EngineNodeHandle(engine, EngineAdapterConfig(gpu=None), credentials, log_path=log)
    await asyncio.to_thread(handle.start)
    try:
        app = HftConsoleApp(handle, ConsoleConfig())
        async with app.run_test(size=(160, 48)) as pilot:
            pane = app.query_one(EventsPane)
            for _ in range(200):
                await pilot.pause(0.05)
                if any("API key bg_" in strip.text for strip in pane.lines):
                    break
            pane.auto_scroll = False
            await pilot.pause()  # the scroll to the end that earlier lines asked for
            pane.scroll_home(animate=False, immediate=True)  # the start's notes lead the log
            await pilot.pause()
            svg = app.export_screenshot()
        events = [event.text for event in handle.events_since(-1)[0]]
    finally:
        await asyncio.to_thread(handle.shutdown, ShutdownPolicy.FLATTEN)
    # The screen's text: the SVG's text runs, spaces as the SVG writes them (no-break).
    shown = html.unescape("".join(re.findall(r"<text[^>]*>([^<]*)</text>", svg)))
    shown = shown.replace("\xa0", " ")
    assert "with API key bg_…7a9c" in shown  # the path that shows the key ran, masked
    findings = {
        "screen (SVG)": leaks(svg),
        "screen (text)": leaks(shown),
        "events": leaks("\n".join(events)),
        "engine log": leaks(log.read_bytes()),
    }
    assert {where: found for where, found in findings.items() if found} == {}
