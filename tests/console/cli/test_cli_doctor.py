"""`hft-console doctor` through the real entry point, against loopback stand-ins for Kev's
llama-server and Bitget's time endpoint (this machine has neither), and real credentials files.

`main` runs its own event loop, so it runs on a worker thread while the test's loop serves."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support.doctor import CHECK_NAMES, llama_routes, time_routes
from support.loopback import serve

from console.cli.main import main
from engine.kev.server import free_port

STATUSES = {"ok", "warn", "fail", "skip"}
SECRET = "CliDoctorSecretNeverShown"
TINY_PROPS = {
    "default_generation_settings": {"n_ctx": 4096},
    "total_slots": 1,
    "model_path": "/models/tiny.gguf",
}


@pytest.fixture
async def loopback() -> AsyncIterator[str]:
    """One server answering as llama-server and as Bitget's public time."""
    server = await serve({**llama_routes(props=TINY_PROPS), **time_routes()})
    yield server.url
    await server.stop()


def credentials_file(folder: Path, mode: int) -> Path:
    path = folder / "credentials.toml"
    path.write_text(
        f'[demo]\napi_key = "bg_cli0123456789wxyz"\napi_secret = "{SECRET}"\n'
        f'passphrase = "{SECRET}-pass"\n'
    )
    path.chmod(mode)
    return path


async def doctor(capsys, *args: str) -> tuple[int, str]:
    code = await asyncio.to_thread(main, ["doctor", *args])
    return code, capsys.readouterr().out


@pytest.fixture(autouse=True)
def no_credentials_in_the_environment(monkeypatch) -> None:
    for name in ("BITGET_API_KEY", "BITGET_API_SECRET", "BITGET_API_PASSPHRASE"):
        monkeypatch.delenv(name, raising=False)


async def test_json_lists_every_check_and_exits_0_when_none_failed(
    capsys, laya_model: Path, loopback: str, tmp_path: Path
) -> None:
    credentials = credentials_file(tmp_path, 0o600)
    code, out = await doctor(
        capsys,
        "--json",
        "--model",
        str(laya_model),
        "--kev-url",
        loopback,
        "--rest-url",
        loopback,
        "--credentials",
        str(credentials),
    )
    assert len(out.splitlines()) == 1  # one JSON object, for scripts
    document = json.loads(out)
    checks = {check["name"]: check for check in document["checks"]}
    assert len(checks) == 12
    assert all(check["status"] in STATUSES for check in checks.values())
    assert all(check["fix"] for check in checks.values() if check["status"] in ("warn", "fail"))
    assert checks["llama-server"]["status"] == "ok"
    assert "model tiny.gguf loaded, context 4096, 1 slot" in checks["llama-server"]["detail"]
    assert checks["bitget"]["status"] == "ok"
    assert checks["credentials"]["detail"].endswith("demo key bg_…wxyz, no [live] table")
    assert checks["providers"]["status"] == "ok"
    assert document["ok"] is True and document["counts"]["fail"] == 0
    assert code == 0
    assert SECRET not in out


async def test_the_table_shows_a_failed_check_with_its_fix_and_exits_1(
    capsys, laya_model: Path, loopback: str, tmp_path: Path
) -> None:
    credentials = credentials_file(tmp_path, 0o644)
    code, out = await doctor(
        capsys,
        "--model",
        str(laya_model),
        "--kev-url",
        loopback,
        "--rest-url",
        f"http://127.0.0.1:{free_port()}",
        "--credentials",
        str(credentials),
    )
    assert code == 1
    lines = out.splitlines()
    rows = [line for line in lines if line[:1] not in (" ", "")]
    assert [row.split()[1] for row in rows[:-1]] == CHECK_NAMES
    failed = next(index for index, line in enumerate(lines) if line.startswith("FAIL  credentials"))
    assert "mode 0644" in " ".join(lines[failed : failed + 3])
    start = next(i for i in range(failed + 1, len(lines)) if lines[i].strip().startswith("fix:"))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith(" " * 21))
    fix = "".join(line.strip() for line in lines[start:end])  # wrapped at the table's width
    assert fix.replace(" ", "") == f"fix:chmod600{credentials.resolve()}"
    assert next(row for row in rows if row.split()[1] == "bitget").startswith("warn")
    assert rows[-1].startswith("12 checks in ") and "1 failed" in rows[-1]
    assert SECRET not in out
